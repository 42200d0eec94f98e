"""eco_search_taxonomy against the simulator: type codes, ranks, the exact name and its genus
fallback, verbose rows and their cap, paging by the upstream's next link, caching, bad inputs."""

from __future__ import annotations

import pytest

from tests.tools.conftest import error_of
from tests.tools.sample_support import bio_cfg, run, used  # noqa: F401  (fixture)


async def test_a_type_code_lists_its_taxa_with_darwin_core_keys_verbatim(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_search_taxonomy", {"taxon_type_code": "TICK", "limit": 5})
    body = out.ok
    assert len(body["items"]) == 5 and all(r["taxonTypeCode"] == "TICK" for r in body["items"])
    assert {"dwc:scientificName", "dwc:vernacularName", "dwc:family", "taxonID"} <= set(body["items"][0])
    assert body["page"]["total"] == 71 and body["page"]["nextOffset"] == 5
    assert body["filters"] == {"taxonTypeCode": "TICK"} and body["fuzzyFallbackUsed"] is False
    assert used(out) == 1


async def test_paging_follows_the_next_link_to_the_end(bio_cfg):  # noqa: F811
    ids, offset, calls = [], 0, 0
    while offset is not None:
        body = (await run(bio_cfg, "eco_search_taxonomy", {"taxon_type_code": "TICK", "limit": 20,
                                                           "offset": offset})).ok
        ids += [r["taxonID"] for r in body["items"]]
        offset = body["page"]["nextOffset"]
        calls += 1
    assert calls == 4 and len(ids) == len(set(ids)) == 71


async def test_a_second_identical_search_is_served_from_the_cache(bio_cfg):  # noqa: F811
    await run(bio_cfg, "eco_search_taxonomy", {"family": "Fagaceae", "limit": 3})
    again = await run(bio_cfg, "eco_search_taxonomy", {"family": "Fagaceae", "limit": 3})
    assert again.requests == 0 and again.meta["cacheHits"] == 1


async def test_rank_filters_narrow_and_are_sent_under_neon_names(bio_cfg):  # noqa: F811
    body = (await run(bio_cfg, "eco_search_taxonomy", {"genus": "Quercus", "class_": "Magnoliopsida",
                                                       "limit": 50})).ok
    assert body["filters"] == {"genus": "Quercus", "class": "Magnoliopsida"}
    assert len(body["items"]) == 10 and all(r["dwc:genus"] == "Quercus" for r in body["items"])


async def test_scientific_name_is_an_exact_match(bio_cfg):  # noqa: F811
    body = (await run(bio_cfg, "eco_search_taxonomy", {"scientific_name": "Quercus alba"})).ok
    assert [r["dwc:scientificName"] for r in body["items"]] == ["Quercus alba"]
    assert body["fuzzyFallbackUsed"] is False


async def test_an_unmatched_genus_species_falls_back_to_the_genus_filtered_by_the_given_text(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_search_taxonomy", {"scientific_name": "Quercus a"})
    body = out.ok
    assert body["fuzzyFallbackUsed"] is True
    assert sorted(r["dwc:scientificName"] for r in body["items"]) == [
        "Quercus acutissima", "Quercus agrifolia", "Quercus alba"]
    assert body["page"]["total"] == 3 and body["filters"]["genus"] == "Quercus"
    assert any("exactly" in n for n in body["notes"])
    assert used(out) == 2  # the exact name, then the genus


async def test_the_fallback_can_be_turned_off(bio_cfg):  # noqa: F811
    body = (await run(bio_cfg, "eco_search_taxonomy", {"scientific_name": "Quercus a",
                                                       "fuzzy_genus_fallback": False})).ok
    assert body["items"] == [] and body["fuzzyFallbackUsed"] is False


async def test_a_single_unmatched_word_is_not_retried(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_search_taxonomy", {"scientific_name": "Zzzznotaname"})
    assert out.ok["items"] == [] and out.ok["fuzzyFallbackUsed"] is False and used(out) == 1


async def test_verbose_rows_carry_every_rank_without_nulls_and_the_limit_is_capped_at_100(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_search_taxonomy", {"taxon_type_code": "BIRD", "verbose": True, "limit": 300})
    body = out.ok
    # 100 verbose rows outgrow the result budget: the page says where the kept rows end.
    assert body["page"]["limit"] == 100 and body["page"]["truncated"] is True
    assert 0 < len(body["items"]) < 100 and body["page"]["nextOffset"] == len(body["items"])
    assert any("100" in n for n in body["notes"])
    first = body["items"][0]
    assert "dwc:nameAccordingToTitle" in first and None not in first.values()
    brief = (await run(bio_cfg, "eco_search_taxonomy", {"taxon_type_code": "BIRD", "limit": 1})).ok["items"][0]
    assert "dwc:nameAccordingToTitle" not in brief


async def test_a_type_code_with_a_rank_is_refused_before_any_request(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_search_taxonomy", {"taxon_type_code": "PLANT", "genus": "Quercus"})
    err = error_of(out, "invalid_argument", "taxon_type_code")
    assert "genus" in err["message"] and err["details"]["conflicts"] == ["genus"]
    assert out.requests == 0


@pytest.mark.parametrize(("args", "field"), [
    ({"taxon_type_code": "DINOSAUR"}, "taxon_type_code"), ({"limit": 501}, "limit"), ({"limit": 0}, "limit"),
    ({"offset": -5}, "offset"), ({"genus": ""}, "genus"), ({"verbose": "yes please"}, "verbose"),
    ({"species": "alba"}, "species"),
])
async def test_bad_inputs_are_invalid_argument_naming_the_field(bio_cfg, args, field):  # noqa: F811
    out = await run(bio_cfg, "eco_search_taxonomy", args)
    error_of(out, "invalid_argument", field)
    assert out.requests == 0
