"""Real values of the simulator's catalog for the fuzzing (tests/reliability/fuzzing.py), so that
valid cases get past "not found" into the reads."""

from __future__ import annotations

from typing import Any


def vocabulary(sim: Any) -> dict[str, list[Any]]:
    """Real values of the simulator's catalog, by property name (`tool.property` for a name one
    tool uses differently), so valid cases can find something: a tool registered tomorrow with a
    `product` or `site_codes` field gets real codes without a change here. A tool's own name maps
    to whole argument sets known to work; the fuzzing adds the nextSteps of its successes there."""
    state = sim.state
    world = state.world
    products = ["DP1.00041.001", "DP1.00041", "Soil temperature", "DP1.10003.001", "DP1.00001.001", "dp1.00041.001",
                *list(world.products)[5:9]]
    sites = ["HARV", "BART", "BLUE", "harv", "Harvard Forest", "ABBY", "SRER", "TOOL"]
    months = ["2019-06", "2020-01", "2021-07", "2022-12", "2023-06", "2024-03", "1999-01"]
    releases = [*world.release_tags, "latest", "LATEST", "PROVISIONAL", "RELEASE-1999"]
    specs = [s["specNumber"] for code in ("DP1.00041.001", "DP1.10003.001") for s in world.products[code]["specs"]]
    samples = state.samples.samples
    prototypes = list(state.prototypes.datasets)
    harv = state.locations.get("HARV")
    towers = [c["locationName"] for c in state.locations.children(harv)][:4] if harv else []
    proto_files = [f["fileName"] for f in state.prototypes.datasets[prototypes[0]]["_files"]] if prototypes else []
    return {
        "product": products, "product_code": products, "product_codes": products[:4],
        "site": sites, "site_code": sites, "site_codes": sites[:5], "domain_code": ["D01", "d05", "D20"],
        "state_code": ["MA", "az"], "release": releases, "start_month": months, "end_month": months,
        "available_from": months, "available_to": months, "query": ["soil temperature", "HARV", "bird", "Harvard"],
        "theme": ["Soil", "atmos", "Biogeochemistry"], "root": ["REALM", "D01", "HARV", *towers[:1]],
        "name": ["REALM", "D01", "HARV", *towers], "location_type": ["SITE", "TOWER", "OS Plot - mam", "DOMAIN"],
        "uuid": prototypes, "prototype_uuid": prototypes, "file_names": proto_files, "spec_number": specs,
        "sample_tag": [s["sampleTag"] for s in samples[:3]] + ["A00000123456", "SHARED.TAG.2019"],
        "sample_class": [samples[0]["sampleClass"], "sls_soilCoreCollection_in.sampleID"],
        "sample_uuid": [samples[1]["sampleUuid"]], "barcode": ["A00000123456"],
        "archive_guid": [s["archiveGuid"] for s in samples[:2] if s["archiveGuid"]],
        "kingdom": ["Plantae", "Animalia"], "genus": ["Quercus"], "scientific_name": ["Quercus rubra", "Quercus"],
        "family": ["Fagaceae"], "accessed_on": ["2024-05-01", "2024-02-30"], "pages": ["1", "1-2", "9-3"],
        "url": [f"{sim.base_url}/documents/{specs[0]}" if specs else sim.base_url, "https://example.org/x.pdf"],
        "dest_subdir": ["fuzz", "a/b"], "fields": ["collectDate", "siteID"], "max_bytes": [1, 1000, 50_000],
        "eco_graphql.query": ['{ products { productCode productName } }',
                              '{ site(siteCode: "HARV") { siteCode siteName } }', "{ __schema { types { name } } }",
                              'mutation { x }', '{ nope }', "{ " * 20 + "}" * 20,
                              "query A { products { productCode } } query B { sites { siteCode } }"],
        "operation_name": ["A", "B", "C"],
        "introspect_type": ["Site", "DataProduct", "Nope"],
        # Tools whose inputs exclude each other: one working call each to start from.
        "eco_get_availability": [{"product": "DP1.00041.001"}, {"site": "HARV"},
                                 {"product": "DP1.00041.001", "site": "HARV"}],
        "eco_get_citation": [{"product": "DP1.00041.001"}, *({"prototype_uuid": u} for u in prototypes[:1])],
        "eco_graphql": [{"query": "{ products { productCode } }"}, {"introspect_type": "Site"}],
        "eco_get_document": [{"spec_number": s} for s in specs[:2]],
        "eco_get_sample": [{"barcode": "A00000123456"}, {"sample_tag": samples[0]["sampleTag"]}],
        "eco_find_locations": [{"root": "HARV"}, {"site_codes": ["HARV"], "location_type": "TOWER"}],
        "eco_download_files": [*({"spec_number": s} for s in specs[:1]), *({"prototype_uuid": u} for u in prototypes[:1]),
                               {"product": "DP1.00041.001", "site_codes": ["HARV"], "start_month": "2020-01"}],
    }
