"""eco_list_releases against the simulator: newest first, from the release catalog (no request
once warm), signed artifact URLs only on request."""

from __future__ import annotations

from mcp_gateway.registry import default_registry


async def test_releases_are_listed_newest_first_with_dates_counts_and_manifests_without_a_request(run_tool, sim):
    out = await run_tool("eco_list_releases")
    body = out.ok
    tags = [i["release"] for i in body["items"]]
    assert tags == sorted(sim.world.release_tags, reverse=True)
    assert body["latestRelease"] == tags[0] == "RELEASE-2026"
    newest = body["items"][0]
    world = sim.world.release_by_key["RELEASE-2026"]
    assert newest["uuid"] == world["uuid"] and newest["generationDate"].startswith(world["generationDate"][:10])
    assert newest["productCount"] == sum("RELEASE-2026" in sim.world.product_releases(c) for c in sim.world.products)
    assert newest["artifacts"] and all(a["url"] is None and a["name"] for a in newest["artifacts"])
    assert body["page"]["total"] == len(tags) and body["page"]["nextOffset"] is None
    assert any("include_artifact_urls" in n for n in body["notes"])
    assert out.requests == 0
    assert body["nextSteps"][0]["tool"] == "eco_get_release"
    assert body["nextSteps"][0]["arguments"]["release"] == "RELEASE-2026"


async def test_artifact_urls_come_signed_from_one_request_only_when_asked(run_tool):
    out = await run_tool("eco_list_releases", {"include_artifact_urls": True})
    arts = [a for i in out.ok["items"] for a in i["artifacts"]]
    assert arts and all(a["url"] and "X-Goog-Signature" in a["url"] for a in arts)
    assert out.requests <= 1
    again = await run_tool("eco_list_releases", {"include_artifact_urls": True})
    assert again.requests == 0 and again.ok["items"] == out.ok["items"]  # as the input's description says


def test_the_artifact_urls_switch_is_described_as_what_it_does():
    described = default_registry().get("eco_list_releases").tool.input_schema["properties"]["include_artifact_urls"]
    assert "cached" in described["description"] and "7 days after" in described["description"]


async def test_an_unknown_argument_is_invalid_and_named(run_tool):
    err = (await run_tool("eco_list_releases", {"include_urls": True})).error
    assert err["code"] == "invalid_argument" and "include_urls" in err["message"]
