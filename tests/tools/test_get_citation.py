"""eco_get_citation against the simulator. The module's catalog is rebuilt from REST with record
faults, so three products behave as NEON's odd cases do: MISMATCH's DOI in RELEASE-2026 differs
between its product record and the release record, DROPPED is missing from RELEASE-2026, and
UNRELEASED is in no release at all (all its data provisional)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from pybtex.database import parse_string

from catalog import index
from catalog.services.refresh import refresh_catalog
from eco_core.config import load_config
from tests.catalog.conftest import MiniClient
from tests.tools.conftest import error_of
from upstream_sim.biodata import RECORDED_PROTO_UUID
from upstream_sim.rest import MISMATCH_DOI

MISMATCH, DROPPED, UNRELEASED = "DP1.00001.001", "DP1.00010.001", "DP1.00007.001"


@pytest.fixture(scope="module", autouse=True)
def odd_catalog(catalog_module, django_db_blocker, sim):
    sim.faults.add(kind="doi_mismatch", product=MISMATCH, release="RELEASE-2026")
    sim.faults.add(kind="release_omits", product=DROPPED, release="RELEASE-2026")
    sim.faults.add(kind="release_omits", product=UNRELEASED)
    client = MiniClient(sim.base_url, sim.graphql_url)
    cfg = load_config(env={}, warn=False)
    with django_db_blocker.unblock():
        for catalog in ("products", "releases"):
            assert async_to_sync(refresh_catalog)(catalog, client=client, source="rest", cfg=cfg).ok
        index.reset()
    sim.faults.clear()
    yield


def _doi(sim, code: str, tag: str) -> str:
    return sim.world.product_doi(code, tag)["url"].removeprefix("https://doi.org/")


async def test_latest_cites_the_newest_release_with_the_doi_wording_and_no_request(run_tool, sim):
    code = "DP1.00041.001"
    out = await run_tool("eco_get_citation", {"product": code, "accessed_on": "2026-03-05"})
    body = out.ok
    doi = _doi(sim, code, "RELEASE-2026")
    name = sim.world.products[code]["productName"]
    assert body["release"] == "RELEASE-2026" and body["doi"] == doi and body["doiUrl"] == f"https://doi.org/{doi}"
    assert body["citationText"] == (
        f"NEON (National Ecological Observatory Network). {name} ({code}), RELEASE-2026. https://doi.org/{doi}. "
        f"Dataset accessed from https://data.neonscience.org/data-products/{code}/RELEASE-2026 on March 5, 2026.")
    assert body["provisional"] is False and body["accessedOn"] == "2026-03-05"
    assert body["dataPolicyUrl"] == "https://www.neonscience.org/data-samples/data-policies-citation"
    assert any("CC BY 4.0" in n for n in body["notes"]) and not any("mismatch" in n for n in body["notes"])
    assert out.requests == 0
    assert body["nextSteps"][0]["tool"] == "eco_get_release"
    assert body["nextSteps"][0]["arguments"] == {"release": "RELEASE-2026", "product_code": code}


async def test_a_product_named_by_name_in_an_explicit_release_gets_that_release_doi(run_tool, sim):
    body = (await run_tool("eco_get_citation", {"product": "Soil temperature", "release": "RELEASE-2022",
                                                "format": "text"})).ok
    assert body["productCode"] == "DP1.00041.001" and body["release"] == "RELEASE-2022"
    assert body["doi"] == _doi(sim, "DP1.00041.001", "RELEASE-2022") and body["bibtex"] is None


async def test_a_doi_that_disagrees_with_the_release_record_is_reported_in_notes(run_tool, sim):
    body = (await run_tool("eco_get_citation", {"product": MISMATCH})).ok
    assert body["doi"] == _doi(sim, MISMATCH, "RELEASE-2026")
    note = next(n for n in body["notes"] if "mismatch" in n)
    assert body["doi"] in note and MISMATCH_DOI.removeprefix("https://doi.org/") in note


async def test_latest_skips_a_newest_release_that_lacks_the_product(run_tool, sim):
    body = (await run_tool("eco_get_citation", {"product": DROPPED})).ok
    assert body["release"] == "RELEASE-2025" and body["doi"] == _doi(sim, DROPPED, "RELEASE-2025")
    assert any("RELEASE-2026 does not carry" in n for n in body["notes"])
    err = error_of(await run_tool("eco_get_citation", {"product": DROPPED, "release": "RELEASE-2026"}),
                   "not_found", "release")
    assert err["details"]["validReleases"] == [t for t in sim.world.product_releases(DROPPED) if t != "RELEASE-2026"]


async def test_a_product_in_no_release_can_only_be_cited_provisionally(run_tool):
    error_of(await run_tool("eco_get_citation", {"product": UNRELEASED}), "not_found", "provisional")
    err = error_of(await run_tool("eco_get_citation", {"product": UNRELEASED, "release": "RELEASE-2025"}),
                   "not_found", "release")
    assert err["details"]["validReleases"] == []
    body = (await run_tool("eco_get_citation", {"product": UNRELEASED, "provisional": True,
                                                "accessed_on": "2026-01-02"})).ok
    assert body["provisional"] is True and body["doi"] is None and body["release"] is None
    assert "provisional data" in body["citationText"] and "may change" in body["citationText"]
    assert "January 2, 2026" in body["citationText"]
    assert body["nextSteps"][0]["tool"] == "eco_get_availability"


async def test_site_codes_are_named_in_the_citation(run_tool):
    body = (await run_tool("eco_get_citation", {"product": "DP1.00041.001", "site_codes": ["harv", "ABBY"]})).ok
    assert "(sites HARV, ABBY)" in body["citationText"] and "sites HARV, ABBY" in body["bibtex"]


async def test_a_prototype_dataset_is_cited_with_its_own_doi(run_tool, sim):
    out = await run_tool("eco_get_citation", {"prototype_uuid": RECORDED_PROTO_UUID})
    body = out.ok
    assert body["prototypeUuid"] == RECORDED_PROTO_UUID and body["projectTitle"] and body["productCode"] is None
    assert body["projectTitle"] in body["citationText"]
    if body["doi"]:
        assert body["doiUrl"] in body["citationText"]
    parse_string(body["bibtex"], "bibtex")
    assert out.requests == 1


async def test_every_simulated_product_gets_bibtex_a_real_parser_accepts(run_tool, sim):
    for code in sorted(sim.world.products):
        provisional = code == UNRELEASED or not sim.world.product_releases(code)
        out = await run_tool("eco_get_citation", {"product": code, "format": "bibtex", "provisional": provisional})
        if not sim.world.availability(code):
            error_of(out, "not_found", "product")  # no data yet: nothing to cite
            continue
        body = out.ok
        entries = parse_string(body["bibtex"], "bibtex").entries
        ((key, entry),) = entries.items()
        assert key.startswith(f"NEON:{code}:")
        assert entry.type == "misc" and entry.fields["url"].startswith("https://")
        if not provisional:
            assert entry.fields["doi"] == body["doi"]
        assert body["citationText"] is None


def test_special_characters_are_escaped_so_the_title_survives_parsing():
    from catalog.citation_text import bibtex_entry

    text = bibtex_entry("k", {"title": "Soil {CO2} & 50% of #1_a ~ $x^2$ \\", "url": "https://x/{a}"})
    entry = parse_string(text, "bibtex").entries["k"]
    assert entry.fields["title"] == r"Soil \{CO2\} \& 50\% of \#1\_a \textasciitilde{} \$x\textasciicircum{}2\$ \textbackslash{}"
    assert "{" not in entry.fields["url"]


@pytest.mark.parametrize(("args", "code", "field"), [
    ({}, "invalid_argument", "product"),
    ({"product": "DP1.00041.001", "prototype_uuid": RECORDED_PROTO_UUID}, "invalid_argument", "product"),
    ({"product": "DP1.00041.001", "provisional": True, "release": "RELEASE-2025"}, "invalid_argument", "provisional"),
    ({"product": "DP1.00041.001", "release": "PROVISIONAL"}, "invalid_argument", "release"),
    ({"product": "DP1.00041.001", "release": "RELEASE-1999"}, "not_found", "release"),
    ({"product": "DP1.00041.001", "accessed_on": "2026-13-01"}, "invalid_argument", "accessed_on"),
    ({"product": "DP1.00041.001", "accessed_on": "yesterday"}, "invalid_argument", "accessed_on"),
    ({"product": "DP1.00041.001", "format": "ris"}, "invalid_argument", "format"),
    ({"product": "DP1.00041.001", "site_codes": ["ZZZZ"]}, "not_found", "site_codes[0]"),
    ({"product": "DP1.00041.001", "site_codes": ["HARV"] * 82}, "invalid_argument", "site_codes"),
    ({"product": "DP9.99999.001"}, "not_found", "product"),
    ({"product": "DP1.99999.001"}, "not_found", "product"),
    ({"prototype_uuid": "not-a-uuid"}, "invalid_argument", "prototype_uuid"),
    ({"prototype_uuid": "00000000-0000-0000-0000-000000000000"}, "not_found", None),
    ({"prototype_uuid": RECORDED_PROTO_UUID, "release": "RELEASE-2025"}, "invalid_argument", "release"),
])
async def test_bad_inputs_get_their_stable_code_naming_the_field(run_tool, args, code, field):
    error_of(await run_tool("eco_get_citation", args), code, field)
