"""A scientist pinning and citing a release, through the SDK's real MCP client over HTTP against
the real server, with the simulator behind it: list the releases -> the latest with its sites ->
cite a product in it -> that product as published in the release, each next call taken from the
previous answer's nextSteps, every answer checked against its outputSchema from tools/list."""

from __future__ import annotations

from pybtex.database import parse_string

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session, next_step, upstream_requests

TOOLS = {"eco_list_releases", "eco_get_release", "eco_get_citation"}
# NEON's release-wide lists carry every product's or site's full record: never asked for.
RELEASE_WIDE_LISTS = r"/releases/[^/]+/(sites|products)/?$"


async def test_list_releases_then_the_latest_with_sites_then_a_citation_of_one_of_its_products_over_http(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        assert TOOLS <= set(tools)

        sim.requests.clear()
        listed = await client.call_tool("eco_list_releases", {})
        releases = assert_valid_tool_result(tools["eco_list_releases"], listed)
        tags = [i["release"] for i in releases["items"]]
        assert tags == sorted(sim.world.release_tags, reverse=True)
        latest = releases["latestRelease"]
        assert latest == tags[0]
        assert all(a["url"] is None for i in releases["items"] for a in i["artifacts"])
        assert upstream_requests(listed) == 0 and len(sim.requests) == 0  # the release catalog answers

        detail_args = next_step(releases, "eco_get_release")
        assert detail_args == {"release": latest, "include": ["products", "sites"]}
        sim.requests.clear()
        got = await client.call_tool("eco_get_release", detail_args)
        release = assert_valid_tool_result(tools["eco_get_release"], got)
        assert release["release"] == latest
        assert release["uuid"] == sim.world.release_by_key[latest]["uuid"]
        assert [s["siteCode"] for s in release["sites"]] == sorted(sim.world.sites)
        assert all(s["siteName"] and s["domainCode"] for s in release["sites"])
        in_latest = sorted(c for c in sim.world.products if latest in sim.world.product_releases(c))
        assert release["productsPage"]["total"] == len(in_latest) == release["productCount"]
        assert [p["productCode"] for p in release["dataProducts"]] == in_latest[:50]
        # The sites cost exactly one codes-only GraphQL query; the products none.
        assert upstream_requests(got) == 1
        graphql = sim.requests.matching(r"^/graphql")
        assert len(sim.requests) == len(graphql) == 1 and graphql[0].method == "POST"
        assert sim.requests.count(RELEASE_WIDE_LISTS) == 0

        cite_args = next_step(release, "eco_get_citation")
        code = cite_args["product"]
        listed_doi = next(p["doi"] for p in release["dataProducts"] if p["productCode"] == code)
        assert cite_args == {"product": code, "release": latest}
        sim.requests.clear()
        cited = await client.call_tool("eco_get_citation", {**cite_args, "format": "all",
                                                            "accessed_on": "2026-04-01"})
        citation = assert_valid_tool_result(tools["eco_get_citation"], cited)
        doi = sim.world.product_doi(code, latest)["url"].removeprefix("https://doi.org/")
        assert citation["doi"] == listed_doi == doi and citation["doiUrl"] == f"https://doi.org/{doi}"
        assert not any("mismatch" in n for n in citation["notes"])  # the two records agree
        name = sim.world.products[code]["productName"]
        assert citation["productCode"] == code and citation["release"] == latest
        assert citation["provisional"] is False
        assert citation["citationText"] == (
            f"NEON (National Ecological Observatory Network). {name} ({code}), {latest}. "
            f"https://doi.org/{doi}. Dataset accessed from "
            f"https://data.neonscience.org/data-products/{code}/{latest} on April 1, 2026.")
        ((key, entry),) = parse_string(citation["bibtex"], "bibtex").entries.items()
        assert key.startswith(f"NEON:{code}:") and entry.type == "misc"
        assert entry.fields["doi"] == doi and entry.fields["url"].startswith("https://")
        assert upstream_requests(cited) == 0 and len(sim.requests) == 0  # catalogs only

        # The citation points back at the product as published in the release.
        published_args = next_step(citation, "eco_get_release")
        assert published_args == {"release": latest, "product_code": code}
        sim.requests.clear()
        pub = await client.call_tool("eco_get_release", published_args)
        published = assert_valid_tool_result(tools["eco_get_release"], pub)
        assert published["product"]["productCode"] == code and published["product"]["doi"] == doi
        assert published["sites"] is None
        assert upstream_requests(pub) == 1
        (asked,) = sim.requests.snapshot()
        assert asked.method == "GET" and asked.path.endswith(f"/releases/{latest}/products/{code}")
        assert sim.requests.count(RELEASE_WIDE_LISTS) == 0
