"""eco_list_sample_classes against the simulator: every supported class (cached), one tag's
classes, the query filter, paging, and the bad inputs."""

from __future__ import annotations

import json

import pytest

from tests.tools.conftest import error_of
from tests.tools.sample_support import bio_cfg, run, used  # noqa: F401  (fixture)
from upstream_sim import refdata
from upstream_sim.biodata import Samples

SUPPORTED = [e["key"] for e in refdata.supported_classes()]


async def test_without_a_tag_every_supported_class_is_listed_with_its_description(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_list_sample_classes")
    body = out.ok
    assert [i["key"] for i in body["items"]] == SUPPORTED
    assert [i["description"] for i in body["items"]] == [e["value"] for e in refdata.supported_classes()]
    assert body["sourceEndpoint"] == "supportedClasses" and body["sampleTag"] is None
    assert body["page"]["total"] == len(SUPPORTED) and body["page"]["nextOffset"] is None
    assert used(out) == 1


async def test_supported_classes_are_cached_so_a_second_call_asks_nothing(bio_cfg):  # noqa: F811
    await run(bio_cfg, "eco_list_sample_classes")
    again = await run(bio_cfg, "eco_list_sample_classes", {"query": "soil"})
    assert again.requests == 0 and again.meta["cacheHits"] == 1


async def test_query_matches_key_or_description_case_insensitively(bio_cfg):  # noqa: F811
    entries = refdata.supported_classes()
    word = "SUBSAMPLE"
    out = (await run(bio_cfg, "eco_list_sample_classes", {"query": word})).ok
    expected = [e["key"] for e in entries if word.lower() in (e["key"] + " " + (e["value"] or "")).lower()]
    assert [i["key"] for i in out["items"]] == expected and expected
    by_key = (await run(bio_cfg, "eco_list_sample_classes", {"query": SUPPORTED[1].split(".")[0]})).ok
    assert SUPPORTED[1] in [i["key"] for i in by_key["items"]]


async def test_pages_continue_at_next_offset_until_the_end(bio_cfg):  # noqa: F811
    first = (await run(bio_cfg, "eco_list_sample_classes", {"limit": 3})).ok
    assert first["page"]["nextOffset"] == 3
    assert any(s["tool"] == "eco_list_sample_classes" and s["arguments"]["offset"] == 3 for s in first["nextSteps"])
    seen = [i["key"] for i in first["items"]]
    offset = 3
    while offset is not None:
        page = (await run(bio_cfg, "eco_list_sample_classes", {"limit": 3, "offset": offset})).ok
        seen += [i["key"] for i in page["items"]]
        offset = page["page"]["nextOffset"]
    assert seen == SUPPORTED


async def test_a_tag_in_two_classes_lists_both_from_the_classes_endpoint(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_list_sample_classes", {"sample_tag": Samples.SHARED_TAG})
    body = out.ok
    assert sorted(i["key"] for i in body["items"]) == ["cfc_fieldData_in.sampleID",
                                                       "sls_soilCoreCollection_in.sampleID"]
    assert body["sourceEndpoint"] == "classes" and body["sampleTag"] == Samples.SHARED_TAG
    assert body["nextSteps"][0]["tool"] == "eco_get_sample"


async def test_a_tag_with_no_class_is_an_empty_list_not_an_error(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_list_sample_classes", {"sampleTag": "NO.SUCH.TAG"})
    body = out.ok
    assert body["items"] == [] and body["page"]["total"] == 0 and body["sourceEndpoint"] == "classes"
    assert any("no class" in n for n in body["notes"])


@pytest.mark.parametrize(("args", "field"), [
    ({"limit": 0}, "limit"), ({"limit": 501}, "limit"), ({"offset": -1}, "offset"),
    ({"sample_tag": ""}, "sample_tag"), ({"query": 5}, "query"), ({"colour": "red"}, "colour"),
])
async def test_bad_inputs_are_invalid_argument_naming_the_field(bio_cfg, args, field):  # noqa: F811
    out = await run(bio_cfg, "eco_list_sample_classes", args)
    error_of(out, "invalid_argument", field)
    assert out.requests == 0


async def test_the_result_is_valid_json_within_the_budget(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_list_sample_classes", {"limit": 500})
    assert len(json.dumps(out.ok)) < bio_cfg.limits.max_result_bytes
