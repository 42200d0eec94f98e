"""eco_get_prototype_dataset against the simulator, through the gateway's pipeline."""

from __future__ import annotations

import pytest

from eco_core.wire import Envelope, ToolInput
from mcp_gateway import registry as registry_mod
from mcp_gateway.registry import Registry, ToolSpec
from tests.tools.conftest import error_of
from upstream_sim.biodata import RECORDED_PROTO_UUID

TITLED = "eco_get_prototype_dataset"


@pytest.fixture
def ds(sim):
    return sim.state.prototypes.datasets[RECORDED_PROTO_UUID]


@pytest.fixture
def cited(sim):
    # The simulator gives one dataset citations and related products.
    return next(d for d in sim.state.prototypes.datasets.values() if d["publicationCitations"])


async def test_default_gives_files_with_signed_urls_and_locations_but_not_the_other_sections(run_tool, ds, sim):
    out = await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID})
    body = out.ok
    assert out.requests == 2  # the record, and the data endpoint for the signed URLs
    assert body["uuid"] == RECORDED_PROTO_UUID and body["projectTitle"] == ds["projectTitle"]
    assert body["datasetAbstract"] == ds["datasetAbstract"] and body["abstractTruncated"] is False
    assert body["doi"] == {"doi": ds["doi"]["url"].split("doi.org/")[1], "url": ds["doi"]["url"],
                           "generationDate": ds["doi"]["generationDate"]}
    assert body["keywords"] == ds["keywords"] and body["siteCodes"] == ["BLUE"]
    assert [f["fileName"] for f in body["files"]] == [f["fileName"] for f in ds["_files"]]
    first = body["files"][0]
    assert first["url"].startswith(sim.storage_base.split("/storage")[0]) and "X-Goog-Signature" in first["url"]
    assert first["md5"] and first["size"] > 0 and first["type"] == "EML"
    assert body["urlsElided"] is False
    assert body["locations"][0]["siteCode"] == "BLUE" and body["locations"][0]["domain"] == ds["locations"][0]["domain"]
    assert body["projectDescription"] is None and body["publicationCitations"] is None
    assert body["relatedDataProducts"] is None
    assert body["filesPage"] == {"offset": 0, "limit": 100, "returned": 3, "total": 3, "nextOffset": None,
                                 "truncated": False}
    assert body["dataUrl"].endswith(f"/prototype/data/{RECORDED_PROTO_UUID}")


async def test_without_urls_the_files_come_from_the_record_alone_and_urls_are_elided(run_tool):
    out = await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID, "include_urls": False})
    body = out.ok
    assert out.requests == 1
    assert body["urlsElided"] is True and len(body["files"]) == 3
    assert all(f["url"] is None for f in body["files"])


async def test_descriptions_are_given_only_when_asked_and_clipped_to_the_text_budget(run_tool, ds):
    original = ds["designDescription"]
    ds["designDescription"] = "tracer " * 100
    try:
        out = await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID, "include": ["descriptions"], "text_budget": 100})
    finally:
        ds["designDescription"] = original
    body = out.ok
    assert out.requests == 1  # no files section, so no data endpoint
    assert body["files"] is None and body["filesPage"] is None and body["locations"] is None
    assert len(body["designDescription"]) <= 100 and body["designDescription"].startswith("tracer tracer")
    assert body["projectDescription"] == ds["projectDescription"]
    assert body["studyAreaDescription"] == ds["studyAreaDescription"]
    assert body["metadataDescription"] == ds["metadataDescription"]
    assert body["versionDescription"] is None


async def test_a_long_abstract_is_clipped_and_marked(run_tool, ds, sim):
    original = ds["datasetAbstract"]
    ds["datasetAbstract"] = "word " * 200
    try:
        body = (await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID, "text_budget": 100, "include": ["locations"]})).ok
    finally:
        ds["datasetAbstract"] = original
    assert body["abstractTruncated"] is True and len(body["datasetAbstract"]) <= 100


async def test_citations_and_related_sections_carry_the_upstream_lists(run_tool, cited):
    body = (await run_tool(TITLED, {"uuid": cited["uuid"], "include": ["citations", "related"]})).ok
    assert body["publicationCitations"] == cited["publicationCitations"]
    assert body["relatedDataProducts"][0]["dataProductCode"] == cited["relatedDataProducts"][0]["dataProductCode"]
    assert body["locations"] is None and body["files"] is None


async def test_all_gives_every_section(run_tool, cited):
    body = (await run_tool(TITLED, {"uuid": cited["uuid"], "include": ["all"]})).ok
    for key in ("files", "locations", "publicationCitations", "relatedDataProducts", "projectDescription"):
        assert body[key] is not None, key
    assert sorted(body["resolved"]["include"]) == ["citations", "descriptions", "files", "locations", "related"]


async def test_files_are_paged_with_a_next_step_for_the_rest(run_tool):
    body = (await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID, "files_limit": 2})).ok
    assert len(body["files"]) == 2 and body["filesPage"]["nextOffset"] == 2
    step = next(s for s in body["nextSteps"] if s["tool"] == TITLED)
    rest = (await run_tool(TITLED, step["arguments"])).ok
    assert len(rest["files"]) == 1 and rest["filesPage"]["nextOffset"] is None


async def test_next_steps_cite_it_and_name_the_download_tool_only_where_it_is_listed(run_tool, monkeypatch):
    async def noop(args, call):  # pragma: no cover - never called
        raise AssertionError

    base = registry_mod.default_registry()
    plain = await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID})
    cite = plain.ok["nextSteps"][0]
    assert cite["tool"] == "eco_get_citation" and cite["arguments"] == {"prototype_uuid": RECORDED_PROTO_UUID}
    has_download = base.get("eco_download_files") is not None
    assert any(s["tool"] == "eco_download_files" for s in plain.ok["nextSteps"]) is has_download

    # With a stdio-only download tool registered: named on stdio, never over HTTP.
    download = ToolSpec(name="eco_download_files", title="d", description="d", surface="downloads",
                        input_model=ToolInput, output_model=Envelope, read=noop, stdio_only=True)
    specs = [s for s in base._specs.values() if s.name != "eco_download_files"] + [download]
    monkeypatch.setattr(registry_mod, "_default", Registry(specs))
    stdio = (await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID})).ok
    http = (await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID}, transport="http")).ok
    step = next(s for s in stdio["nextSteps"] if s["tool"] == "eco_download_files")
    assert step["arguments"] == {"prototype_uuid": RECORDED_PROTO_UUID}
    assert not any(s["tool"] == "eco_download_files" for s in http["nextSteps"])

    # Without it registered: never named, even on stdio.
    monkeypatch.setattr(registry_mod, "_default",
                        Registry([s for s in specs if s.name != "eco_download_files"]))
    bare = (await run_tool(TITLED, {"uuid": RECORDED_PROTO_UUID})).ok
    assert not any(s["tool"] == "eco_download_files" for s in bare["nextSteps"])


async def test_an_unknown_uuid_is_not_found(run_tool):
    out = await run_tool(TITLED, {"uuid": "00000000-0000-4000-8000-000000000000"})
    error_of(out, "not_found")


@pytest.mark.parametrize(("args", "field"), [
    ({"uuid": "not-a-uuid"}, "uuid"), ({"uuid": "../../products"}, "uuid"), ({}, "uuid"),
    ({"uuid": RECORDED_PROTO_UUID, "files_limit": 501}, "files_limit"),
    ({"uuid": RECORDED_PROTO_UUID, "text_budget": 99}, "text_budget"),
    ({"uuid": RECORDED_PROTO_UUID, "include": ["abstract"]}, "include"),
])
async def test_bad_inputs_are_invalid_argument_naming_the_field_before_any_request(run_tool, args, field):
    out = await run_tool(TITLED, args)
    error_of(out, "invalid_argument", field)
    assert out.requests == 0


async def test_the_next_page_of_files_keeps_the_callers_page_size_and_ends_at_the_total(run_tool, ds):
    args = {"uuid": RECORDED_PROTO_UUID, "files_limit": 2, "include_urls": False}
    names = []
    for _ in range(5):
        body = (await run_tool(TITLED, args)).ok
        names += [f["fileName"] for f in body["files"]]
        step = next((s for s in body["nextSteps"] if s["tool"] == TITLED), None)
        if step is None:
            break
        assert step["arguments"]["files_offset"] == body["filesPage"]["nextOffset"]
        args = step["arguments"]
        assert args["files_limit"] == 2
    assert names == [f["fileName"] for f in ds["_files"]]
