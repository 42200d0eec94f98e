"""The eco:// resources and templates, through the SDK's MCP client over HTTP and over a stdio
subprocess, against the simulator's full catalog: every read with its mimeType and ttlMs, the
guides held to the live registry, the references equal to the catalog, templates equal to their
tools' results, unknown URIs and codes, and completions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference

from catalog.index import get_index
from catalog.models import LocationRow
from mcp_gateway import resources
from mcp_gateway.registry import Registry, default_registry, discover_specs
from tests.catalog.conftest import catalog_module, fresh_index, mini_client  # noqa: F401  (fixtures)
from tests.gateway.conftest import PYTHON, REPO
from tests.gateway.registry_names import unknown_names
from tests.tools.conftest import sim_cfg, sim_config  # noqa: F401  (fixtures)

HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS
GUIDES = ["agent-workflow", "api-token", "citing-neon-data", "product-code-anatomy"]
# The envelope's freshness fields move between two reads of the same record.
VOLATILE = ("indexAgeSeconds", "fetchedAt", "ageSeconds")


@pytest.fixture
def http_cfg(sim, sim_cfg, active_config):  # noqa: F811
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)  # the server thread's upstream client reads the active configuration
    return cfg


def _text(result: Any) -> str:
    (content,) = result.contents
    return content.text


def _steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


async def test_every_listed_resource_reads_with_its_mime_type_and_ttl_over_http(http_server, http_cfg):
    with http_server(http_cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            listed = await client.list_resources()
            assert listed.ttl_ms == HOUR_MS and listed.cache_scope == "public"
            by_uri = {str(r.uri): r for r in listed.resources}
            assert set(by_uri) == {r.uri for r in resources.listed(default_registry())}
            assert ("eco://reference/graphql-schema" in by_uri) == (default_registry().get("eco_graphql") is not None)
            assert {f"eco://guide/{g}" for g in GUIDES} | {"eco://reference/vocabularies", "eco://reference/sites",
                                                          "eco://reference/releases"} <= set(by_uri)
            for uri, listing in by_uri.items():
                read = await client.read_resource(uri, cache_mode="bypass")
                (content,) = read.contents
                assert str(content.uri) == uri and content.mime_type == listing.mime_type
                assert read.cache_scope == "public"
                derived = uri in ("eco://reference/sites", "eco://reference/releases")
                assert read.ttl_ms == (HOUR_MS if derived else DAY_MS), uri
                if listing.mime_type == "application/json":
                    assert json.loads(content.text)
                else:
                    assert listing.mime_type == "text/markdown" and content.text.startswith("# ")

            templates = await client.list_resource_templates()
            assert templates.ttl_ms == HOUR_MS and templates.cache_scope == "public"
            uris = {t.uri_template for t in templates.resource_templates}
            assert {"eco://products/{productCode}", "eco://sites/{siteCode}"} <= uris
            assert ("eco://releases/{release}" in uris) == (default_registry().get("eco_get_release") is not None)


@pytest.mark.parametrize("slug", GUIDES)
async def test_a_guide_names_only_registered_tools_arguments_and_error_codes(slug, http_server, http_cfg):
    with http_server(http_cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            text = _text(await client.read_resource(f"eco://guide/{slug}"))
    assert unknown_names(text, default_registry()) == []
    assert "<!--" not in text


def test_the_name_check_catches_an_unknown_tool_argument_and_code():
    reg = default_registry()
    text = "Call `eco_teleport`, then eco_get_product(product=\"x\", colour=\"red\") and expect `warp_failed`."
    assert unknown_names(text, reg) == ["tool eco_teleport", "eco_get_product(colour=)", "`warp_failed`"]
    assert unknown_names("Use `eco_get_product` to see `productName`.", reg) == []


def test_a_guide_block_about_a_tool_that_is_not_registered_is_left_out():
    text = "intro\n<!-- if eco_a eco_b -->\nuse eco_a and eco_b\n<!-- end -->\n<!-- if eco_a -->\nuse eco_a\n<!-- end -->\nout"
    assert resources.render_guide(text, ["eco_a"]) == "intro\nuse eco_a\nout\n"
    assert resources.render_guide(text, ["eco_a", "eco_b"]) == "intro\nuse eco_a and eco_b\nuse eco_a\nout\n"
    with pytest.raises(ValueError):
        resources.render_guide("<!-- if eco_a -->\nno end", ["eco_a"])


async def test_vocabularies_equal_the_catalog_and_the_tools_schemas(http_server, http_cfg):
    with http_server(http_cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            vocab = json.loads(_text(await client.read_resource("eco://reference/vocabularies")))
    idx = await sync_to_async(get_index)()
    assert vocab["themes"] == sorted({t for p in idx.products for t in p.themes}) and vocab["themes"]
    assert vocab["scienceTeams"] == sorted({p.team_abbr for p in idx.products if p.team_abbr})
    assert {"TIS", "TOS", "AIS", "AOS"} <= set(vocab["scienceTeams"])
    assert [d["domainCode"] for d in vocab["domains"]] == sorted(idx.domains) and len(idx.domains) == 20
    assert vocab["releases"] == sorted((r.tag for r in idx.releases), reverse=True)
    assert vocab["latestRelease"] == vocab["releases"][0] and "PROVISIONAL" not in vocab["releases"]
    types_in_db = await sync_to_async(lambda: sorted(set(LocationRow.objects.values_list("location_type", flat=True))))()
    assert [t["locationType"] for t in vocab["locationTypes"]] == types_in_db and "SITE" in types_in_db
    reg = default_registry()
    assert vocab["productStatuses"] == ["ACTIVE", "FUTURE", "RETIRED", "ALL"]
    assert vocab["taxonTypes"] == resources.tool_enum(reg, "eco_search_taxonomy", "taxon_type_code")
    assert vocab["fileKinds"] == resources.tool_enum(reg, "eco_list_files", "kind")
    if reg.get("eco_search_taxonomy") is not None:
        assert "MOSQUITO_PATHOGENS" in vocab["taxonTypes"]


async def test_sites_and_releases_references_come_from_the_catalog_without_upstream_requests(
        http_server, http_cfg, sim):
    with http_server(http_cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            before = len(sim.requests)
            sites = json.loads(_text(await client.read_resource("eco://reference/sites", cache_mode="bypass")))
            releases = json.loads(_text(await client.read_resource("eco://reference/releases", cache_mode="bypass")))
            assert len(sim.requests) == before
    idx = await sync_to_async(get_index)()
    assert sites["count"] == len(idx.sites) == 81
    harv = next(s for s in sites["sites"] if s["siteCode"] == "HARV")
    entry = idx.site_by_code["HARV"]
    assert (harv["siteName"], harv["domainCode"], harv["stateCode"], harv["latitude"], harv["longitude"]) == (
        entry.name, entry.domain_code, entry.state_code, entry.latitude, entry.longitude)
    assert [r["release"] for r in releases["releases"]] == sorted((r.tag for r in idx.releases), reverse=True)
    assert releases["latestRelease"] == releases["releases"][0]["release"]
    counts = {r.tag: r.product_count for r in idx.releases}
    assert all(r["productCount"] == counts[r["release"]] and r["generationDate"] for r in releases["releases"])


@pytest.mark.parametrize(("uri", "tool", "arguments"), [
    ("eco://products/DP1.00041.001", "eco_get_product", {"product": "DP1.00041.001"}),
    ("eco://sites/HARV", "eco_get_site", {"site": "HARV"}),
    ("eco://releases/RELEASE-2025", "eco_get_release", {"release": "RELEASE-2025"}),
])
async def test_a_template_reads_exactly_as_its_tool_result(uri, tool, arguments, http_server, http_cfg):
    if default_registry().get(tool) is None:
        pytest.skip(f"{tool} is not registered, so its template is not listed")
    with http_server(http_cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            await client.call_tool(tool, arguments)  # warm the detail cache: both reads below are served alike
            read = await client.read_resource(uri, cache_mode="bypass")
            called = await client.call_tool(tool, arguments)
    (content,) = read.contents
    assert content.mime_type == "application/json" and read.ttl_ms == HOUR_MS
    assert not called.is_error
    assert _steady(json.loads(content.text)) == _steady(called.structured_content)


@pytest.mark.parametrize(("uri", "suggestion"), [
    ("eco://guide/agent-workflw", "eco://guide/agent-workflow"),
    ("eco://reference/site", "eco://reference/sites"),
    ("eco://products/DP1.00041.009", None),
    ("eco://sites/HARX", "HARV"),
])
async def test_an_unknown_uri_or_code_is_invalid_params_not_found_with_suggestions(
        uri, suggestion, http_server, http_cfg):
    with http_server(http_cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
    err = caught.value.error
    assert err.code == -32602 and err.data["code"] == "not_found", err
    assert isinstance(err.data["didYouMean"], list)
    if suggestion is not None:
        assert suggestion in err.data["didYouMean"], err.data


async def test_the_graphql_schema_reference_lists_exactly_the_root_fields_eco_graphql_allows(http_server, http_cfg):
    if default_registry().get("eco_graphql") is None:
        pytest.skip("eco_graphql is not registered, so its schema reference is not listed")
    from upstream.graphql_window import window_schema

    with http_server(http_cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            ref = json.loads(_text(await client.read_resource("eco://reference/graphql-schema")))
    ws = window_schema()
    assert [f["name"] for f in ref["rootFields"]] == list(ws.root_fields)
    product = next(f for f in ref["rootFields"] if f["name"] == "product")
    assert {"name": "productCode", "type": "String!"} in product["args"]
    assert "productCode" in [
        f["name"] for f in ref["objects"]["DataProduct"]]
    assert "productScienceTeamAbbr" not in [f["name"] for f in ref["objects"]["DataProduct"]]


def test_the_release_template_is_listed_only_while_eco_get_release_is_registered():
    specs = [s for s in discover_specs() if s.name != "eco_get_release"]
    without = [t.uri_template for t in resources.templates(Registry(specs))]
    assert "eco://releases/{release}" not in without and "eco://products/{productCode}" in without
    stand_in = next(s for s in specs if s.name == "eco_get_product")
    from dataclasses import replace
    with_release = Registry([*specs, replace(stand_in, name="eco_get_release")])
    assert "eco://releases/{release}" in [t.uri_template for t in resources.templates(with_release)]


async def test_completions_offer_product_site_and_release_codes(http_server, http_cfg):
    with http_server(http_cfg) as srv:
        async with Client(srv.url) as client:  # auto mode discovers the capabilities
            assert client.server_capabilities.completions is not None
            products = await client.complete(ResourceTemplateReference(type="ref/resource",
                                                                       uri="eco://products/{productCode}"),
                                             {"name": "productCode", "value": "dp1.0004"})
            sites = await client.complete(ResourceTemplateReference(type="ref/resource", uri="eco://sites/{siteCode}"),
                                          {"name": "siteCode", "value": "HA"})
            listed = await client.complete(PromptReference(type="ref/prompt", name="eco_plan_download"),
                                           {"name": "sites", "value": "HARV,BA"})
            release = await client.complete(PromptReference(type="ref/prompt", name="eco_cite_dataset"),
                                            {"name": "release", "value": "RELEASE-20"})
            free = await client.complete(PromptReference(type="ref/prompt", name="eco_find_data"),
                                         {"name": "question", "value": "so"})
    idx = await sync_to_async(get_index)()
    assert "DP1.00041.001" in products.completion.values
    assert all(v.startswith("DP1.0004") for v in products.completion.values)
    assert products.completion.total == sum(p.code.startswith("DP1.0004") for p in idx.products)
    assert "HARV" in sites.completion.values and all(v.startswith("HA") for v in sites.completion.values)
    assert "HARV,BART" in listed.completion.values
    assert release.completion.values == sorted((r.tag for r in idx.releases), reverse=True)
    assert free.completion.values == []


async def test_resources_and_prompts_are_served_over_a_stdio_subprocess(stdio_env, sim, catalog_module):  # noqa: F811
    env = {**stdio_env, "ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url}
    params = StdioServerParameters(command=PYTHON, args=["manage.py", "eco_mcp_stdio"], cwd=str(REPO), env=env)
    async with Client(params, mode="2026-07-28") as client:
        guide = await client.read_resource("eco://guide/agent-workflow")
        (content,) = guide.contents
        assert content.mime_type == "text/markdown" and guide.ttl_ms == DAY_MS
        assert unknown_names(content.text, default_registry()) == []
        sites = json.loads(_text(await client.read_resource("eco://reference/sites")))
        assert sites["count"] == 81
        product = json.loads(_text(await client.read_resource("eco://products/DP1.00041.001")))
        called = await client.call_tool("eco_get_product", {"product": "DP1.00041.001"})
        assert _steady(product) == _steady(called.structured_content)
        prompt = await client.get_prompt("eco_plan_download", {"product": "DP1.00041.001", "sites": "HARV",
                                                               "start_month": "2023-01"})
        text = prompt.messages[0].content.text
        assert "eco_get_availability" in text and "signed URLs" not in text
        assert ("eco_download_files" in text) == (default_registry().get("eco_download_files") is not None)
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("eco_plan_download", {"product": "DP1.00041.001", "sites": "HARV"})
        assert missing.value.error.code == -32602 and "start_month" in missing.value.error.message


async def test_a_resource_whose_catalog_database_is_unreachable_is_catalog_unavailable_not_an_internal_error():
    from django.db import OperationalError

    async def unreachable(scope: Any) -> str:
        raise OperationalError("connection to server at db.internal failed: password for eco-secret-user")

    spec = resources.ResourceSpec(uri="eco://reference/test", name="t", description="t", read=unreachable)
    with pytest.raises(MCPError) as caught:
        await spec.fetch(None)  # type: ignore[arg-type]
    data = caught.value.error.data
    assert data["code"] == "catalog_unavailable" and "database" in data["hint"]
    assert "eco-secret-user" not in json.dumps(data) + caught.value.error.message
