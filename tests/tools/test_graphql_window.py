"""eco_graphql against the simulator: every guard rail refuses before any request, unknown fields
are refused locally in NEON's wording, large answers are cut to the budget with the paths named,
no token is ever sent, nothing is cached and callers' bad queries never touch the breaker."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
from mcp import Client

from eco_core import config as eco_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of, sim_config
from upstream.client import get_client
from upstream.graphql_window import SCHEMA_FILE, shorten, window_schema

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "fixtures" / "upstream_samples" / "graphql"
SITE = "{ site(siteCode: \"%s\") { siteCode siteName domainCode } }"


def _graphql_requests(sim) -> int:
    return sim.requests.count("^/graphql")


def _a_site(sim) -> str:
    return sorted(sim.world.sites)[0]


async def _refused(run_tool, sim, arguments, field):
    before = _graphql_requests(sim)
    out = await run_tool("eco_graphql", arguments)
    err = error_of(out, "invalid_argument", field)
    assert out.requests == 0 and _graphql_requests(sim) == before
    return err


# -- guard rails -----------------------------------------------------------------------------

async def test_depth_is_counted_through_nested_fragments_and_inline_fragments(run_tool, sim):
    # 1 + 2 + 3 + 1 inline + 2 = depth 9 (fragments and the inline fragment add nothing themselves).
    query = """{ locationHierarchy(name: "X") { ...A } }
    fragment A on Location { locationChildHierarchy { locationChildHierarchy { ...B } } }
    fragment B on LocationChildHierarchy { locationChildHierarchy { locationChildHierarchy {
        ... on LocationChildHierarchy { locationChildHierarchy { locationChildHierarchy {
        locationChildHierarchy { locationName } } } } } } }"""
    err = await _refused(run_tool, sim, {"query": query}, "query")
    assert err["details"]["depth"] == 9 and err["details"]["limit"] == 8
    assert "depth 9" in err["message"] and "limits.graphql_max_depth" in err["message"]


async def test_a_query_exactly_at_the_depth_limit_is_sent(run_tool, sim):
    query = """{ locationHierarchy(name: "CODE") { ...A } }
    fragment A on Location { locationChildHierarchy { ... on LocationChildHierarchy { locationChildHierarchy {
      locationChildHierarchy { locationChildHierarchy { locationChildHierarchy { locationChildHierarchy {
      locationName } } } } } } } }""".replace("CODE", _a_site(sim))
    out = await run_tool("eco_graphql", {"query": query})
    assert out.requests == 1, out.result.structured_content


async def test_a_fragment_cycle_is_refused_not_followed(run_tool, sim):
    query = ("{ sites { ...F } } fragment F on Site { siteCode ...G } "
             "fragment G on Site { siteName ...H } fragment H on Site { ...F }")
    err = await _refused(run_tool, sim, {"query": query}, "query")
    assert err["details"]["fragmentCycle"] == ["F", "G", "H", "F"]


async def test_two_operations_without_an_operation_name_are_refused_naming_both(run_tool, sim):
    query = "query Sites { sites { siteCode } } query Products { products { productCode } }"
    err = await _refused(run_tool, sim, {"query": query}, "operation_name")
    assert err["details"]["validNames"] == ["Sites", "Products"]


async def test_operation_name_must_name_an_operation_of_the_query(run_tool, sim):
    err = await _refused(run_tool, sim, {"query": "query Sites { sites { siteCode } }", "operation_name": "Site"},
                         "operation_name")
    assert err["details"]["validNames"] == ["Sites"]


async def test_operation_name_picks_one_of_several_operations(run_tool, sim):
    query = "query Sites { sites { siteCode } } query One { site(siteCode: \"CODE\") { siteCode } }".replace(
        "CODE", _a_site(sim))
    out = await run_tool("eco_graphql", {"query": query, "operation_name": "One"})
    assert out.ok["data"] == {"site": {"siteCode": _a_site(sim)}}


async def test_a_mutation_is_refused_as_not_read_only(run_tool, sim):
    err = await _refused(run_tool, sim, {"query": "mutation { products { productCode } }"}, "query")
    assert "mutation" in err["message"] and "read-only" in err["message"]


async def test_a_subscription_is_refused(run_tool, sim):
    err = await _refused(run_tool, sim, {"query": "subscription { sites { siteCode } }"}, "query")
    assert err["details"]["operation"] == "subscription"


async def test_a_root_field_outside_the_list_is_refused_naming_it_and_the_allowed_ones(run_tool, sim):
    err = await _refused(run_tool, sim, {"query": "{ sitez { siteCode } }"}, "sitez")
    assert "sites" in err["details"]["didYouMean"]
    assert err["details"]["allowed"] == list(window_schema().root_fields)


async def test_a_root_field_hidden_in_a_fragment_on_query_is_still_checked(run_tool, sim):
    await _refused(run_tool, sim, {"query": "{ ...Q } fragment Q on Query { releases { release } }"}, "releases")


async def test_a_second_introspection_field_is_refused(run_tool, sim):
    query = "{ __type(name: \"Site\") { name } other: __type(name: \"Location\") { name } }"
    err = await _refused(run_tool, sim, {"query": query}, "__type")
    assert err["details"]["introspectionFields"] == ["__type", "__type"]


async def test_one_introspection_field_is_allowed(run_tool, sim):
    out = await run_tool("eco_graphql", {"query": "{ __type(name: \"Site\") { name kind } }"})
    assert out.ok["data"] == {"__type": {"name": "Site", "kind": "OBJECT"}} and out.requests == 1


async def test_a_query_of_8001_characters_is_refused_naming_the_length_and_the_limit(run_tool, sim):
    base = "{ sites { siteCode } }"
    err = await _refused(run_tool, sim, {"query": base + " " * (8001 - len(base))}, "query")
    assert "8001" in err["message"] and "8000" in err["message"] and err["details"]["maximum"] == 8000


async def test_a_query_of_8000_characters_is_sent(run_tool, sim):
    base = SITE % _a_site(sim)
    out = await run_tool("eco_graphql", {"query": base + " " * (8000 - len(base))})
    assert out.requests == 1 and out.ok["data"]["site"]["siteCode"] == _a_site(sim)


async def test_variables_must_be_an_object(run_tool, sim):
    await _refused(run_tool, sim, {"query": "{ sites { siteCode } }", "variables": [1, 2]}, "variables")


async def test_exactly_one_of_query_and_introspect_type(run_tool, sim):
    await _refused(run_tool, sim, {}, "query")
    await _refused(run_tool, sim, {"query": "{ sites { siteCode } }", "introspect_type": "Site"}, "introspect_type")


async def test_introspect_type_must_be_a_graphql_name(run_tool, sim):
    await _refused(run_tool, sim, {"introspect_type": "Site { x }"}, "introspect_type")


async def test_syntax_errors_are_refused_locally_with_the_position(run_tool, sim):
    err = await _refused(run_tool, sim, {"query": "{ sites { siteCode }"}, "query")
    assert "line 1" in err["message"]


# -- local validation ------------------------------------------------------------------------

async def test_an_unknown_field_is_refused_locally_in_neons_words_with_did_you_mean(run_tool, sim):
    query = "{ products(release: \"RELEASE-2025\") { productCode productScienceTeamAbbr } }"
    before = _graphql_requests(sim)
    out = await run_tool("eco_graphql", {"query": query})
    err = error_of(out, "graphql_error")
    assert out.requests == 0 and _graphql_requests(sim) == before
    recorded = json.loads((SAMPLES / "error_field_undefined_DataProduct_productScienceTeamAbbr.json").read_text())
    assert err["details"]["errors"][0]["message"] == recorded["errors"][0]["message"]
    assert recorded["errors"][0]["message"] in err["message"]
    assert err["details"]["errors"][0]["extensions"] == recorded["errors"][0]["extensions"]
    assert "productScienceTeam" in err["details"]["didYouMean"]


async def test_a_wrongly_typed_argument_is_refused_locally(run_tool, sim):
    before = _graphql_requests(sim)
    out = await run_tool("eco_graphql", {"query": "{ product(productCode: 3) { productCode } }"})
    err = error_of(out, "graphql_error")
    assert "String cannot represent a non string value: 3" in err["message"]
    assert out.requests == 0 and _graphql_requests(sim) == before


# -- the request ----------------------------------------------------------------------------

async def test_a_small_query_answers_neons_data_with_a_schema_hint(run_tool, sim):
    code = _a_site(sim)
    out = await run_tool("eco_graphql", {"query": SITE % code})
    body = out.ok
    site = sim.world.sites[code]
    assert body["data"] == {"site": {"siteCode": code, "siteName": site["siteName"], "domainCode": site["domainCode"]}}
    assert body["truncated"] is False and body["truncatedPaths"] == [] and body["errors"] is None
    assert body["bytesTotal"] == len(json.dumps({"data": body["data"], "errors": None}, separators=(",", ":")))
    assert "eco://reference/graphql-schema" in body["schemaHint"]
    assert "site, filterSites" in body["schemaHint"] and "products" not in body["schemaHint"]
    assert out.requests == 1 and body["source"]["endpoints"] == ["POST /graphql"]


async def test_results_are_never_cached(run_tool, sim):
    before = _graphql_requests(sim)
    for _ in range(2):
        out = await run_tool("eco_graphql", {"query": SITE % _a_site(sim)})
        assert out.requests == 1 and out.meta["cacheHits"] == 0
    assert _graphql_requests(sim) == before + 2


async def test_variables_and_the_operation_name_reach_neon(run_tool, sim):
    query = "query One($code: String!) { site(siteCode: $code) { siteCode } }"
    out = await run_tool("eco_graphql", {"query": query, "variables": {"code": _a_site(sim)}, "operation_name": "One"})
    assert out.ok["data"] == {"site": {"siteCode": _a_site(sim)}}


async def test_an_upstream_rejection_is_graphql_error_with_neons_message(run_tool, sim):
    out = await run_tool("eco_graphql", {"query": "{ product(productCode: \"DP1.99999.001\") { productCode } }"})
    err = error_of(out, "graphql_error")
    assert "Product code not found" in err["message"] and out.requests == 1
    assert err["details"]["errors"][0]["extensions"]["classification"] == "DataFetchingException"


async def test_errors_sent_alongside_data_are_passed_through(run_tool, sim):
    query = "{ site(siteCode: \"%s\") { siteCode } demoProduct(productCode: \"DP1.99999.001\") { productCode } }"
    body = (await run_tool("eco_graphql", {"query": query % _a_site(sim)})).ok
    assert body["data"] == {"site": {"siteCode": _a_site(sim)}, "demoProduct": None}
    assert len(body["errors"]) == 1 and "Product code not found" in body["errors"][0]["message"]
    assert body["errors"][0]["path"] == ["demoProduct"]


async def test_a_large_response_is_cut_to_the_budget_with_the_paths_reported(run_tool, sim):
    query = "{ products { productCode productName productDescription keywords siteCodes { siteCode availableMonths } } }"
    body = (await run_tool("eco_graphql", {"query": query, "max_bytes": 20000})).ok
    assert body["truncated"] is True and body["bytesTotal"] > 20000
    assert "$.products" in body["truncatedPaths"]
    kept = json.dumps({"data": body["data"], "errors": body["errors"]}, separators=(",", ":"), ensure_ascii=False)
    assert len(kept.encode()) <= 20000
    products = body["data"]["products"]
    assert 0 < len(products) < len(sim.world.products)
    assert all(set(p) == {"productCode", "productName", "productDescription", "keywords", "siteCodes"} for p in products)
    assert any("cut" in n for n in body["notes"])


async def test_a_budget_above_the_general_result_limit_is_honoured(run_tool, sim):
    query = "{ products { productCode productName productDescription keywords } }"
    body = (await run_tool("eco_graphql", {"query": query, "max_bytes": 60000})).ok
    kept = len(json.dumps({"data": body["data"], "errors": None}, separators=(",", ":"), ensure_ascii=False).encode())
    assert body["bytesTotal"] > 60000 and body["truncated"]
    assert 50000 < kept <= 60000 and body["errors"] is None and body["truncatedPaths"] == ["$.products"]


def test_shorten_cuts_the_largest_list_first_and_reports_nested_paths():
    data = {"small": [1, 2, 3], "big": [{"inner": list(range(400))}, {"inner": [1]}]}
    cut, paths, total = shorten(data, None, 600)
    # $.big keeps its first item; then the list inside it is the largest that can give.
    assert total > 600 and paths == ["$.big", "$.big[0].inner"] and cut["small"] == [1, 2, 3]
    assert cut["big"][0]["inner"][:3] == [0, 1, 2]
    assert len(json.dumps({"data": cut, "errors": None}, separators=(",", ":"))) <= 600
    assert cut is data  # cut in place: the reply is the caller's own fresh copy


# -- token, breaker ---------------------------------------------------------------------------

async def test_no_token_is_sent_to_graphql_even_when_one_is_configured_for_every_request(sim_cfg, sim):
    canary = sim.issue_token()
    cfg = sim_config(sim, eco__api_token=canary, eco__token_for_public_endpoints=True)
    with eco_config.use_config(cfg):
        call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28", token_source="config")
        graphql, product = default_registry().get("eco_graphql"), default_registry().get("eco_get_product")
        assert graphql is not None and product is not None
        before = len(sim.requests)
        for args in ({"query": SITE % _a_site(sim)}, {"introspect_type": "NotInTheLocalSchema"}):
            await execute(graphql, args, call, token=canary)
        await execute(product, {"product": "DP1.00001.001", "include": ["abstract"]}, call, token=canary)
        sent = sim.requests.snapshot()[before:]
    gql = [r for r in sent if r.path.startswith("/graphql")]
    rest = [r for r in sent if not r.path.startswith("/graphql")]
    assert len(gql) == 2 and rest, [r.path for r in sent]
    assert rest[-1].headers.get("x-api-token") == canary  # the configuration does send it elsewhere
    for r in gql:
        assert "x-api-token" not in r.headers and canary not in json.dumps(r.to_json())


async def test_ten_bad_queries_leave_the_breaker_closed(run_tool, sim):
    client = get_client()
    for i in range(10):
        out = await run_tool("eco_graphql", {"query": f"{{ site(siteCode: \"ZZ{i:02d}\") {{ siteCode }} }}"})
        error_of(out, "graphql_error")
    state = client.breaker_state()
    assert state["state"] == "closed" and state["consecutiveFailures"] == 0
    assert client.graphql_available


# -- introspect_type -------------------------------------------------------------------------

async def test_introspect_type_is_answered_from_the_local_schema_as_neon_answers_it(run_tool, sim):
    out = await run_tool("eco_graphql", {"introspect_type": "Site"})
    body = out.ok
    recorded = json.loads((SAMPLES / "introspection___type_Site.json").read_text())["data"]["__type"]
    mine = body["data"]["__type"]
    assert out.requests == 0 and body["source"]["origin"] == "local"
    assert [(f["name"], f["type"]["name"], f["type"]["kind"]) for f in mine["fields"]] == [
        (f["name"], f["type"]["name"], f["type"]["kind"]) for f in recorded["fields"]]
    assert "site, filterSites" in body["schemaHint"]


async def test_an_input_type_is_described_with_its_input_fields(run_tool, sim):
    body = (await run_tool("eco_graphql", {"introspect_type": "SiteFilter"})).ok
    assert body["data"]["__type"]["kind"] == "INPUT_OBJECT"
    assert "siteCodes" in [f["name"] for f in body["data"]["__type"]["inputFields"]]


async def test_a_type_neither_schema_knows_is_not_found_with_did_you_mean(run_tool, sim):
    out = await run_tool("eco_graphql", {"introspect_type": "Sites"})
    err = error_of(out, "not_found", "introspect_type")
    assert "Site" in err["details"]["didYouMean"] and out.requests == 1


# -- the schema the window keeps ------------------------------------------------------------

def test_the_window_validates_against_the_schema_the_simulator_serves_and_it_is_packaged():
    assert SCHEMA_FILE.read_text() == (ROOT / "upstream_sim" / "reference" / "schema_reconstructed.graphql").read_text()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert SCHEMA_FILE.name in data["upstream"]
    assert window_schema().root_fields == (
        "products", "product", "demoProduct", "filterProducts", "sites", "site", "filterSites", "location",
        "locationHierarchy", "findLocations", "prototypeDatasets", "prototypeDataset")


# -- over HTTP --------------------------------------------------------------------------------

async def test_describe_then_query_workflow_over_http(http_server, sim_cfg, sim, active_config):  # noqa: F811
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            tool = tools["eco_graphql"]
            described = assert_valid_tool_result(tool, await client.call_tool("eco_graphql", {"introspect_type": "Site"}))
            fields = [f["name"] for f in described["data"]["__type"]["fields"]][:3]
            result = await client.call_tool("eco_graphql", {"query": "{ sites { F } }".replace("F", " ".join(fields)),
                                                            "max_bytes": 3000})
            body = assert_valid_tool_result(tool, result)
            assert result.meta["io.eco-mcp/upstream"]["requests"] == 1
            assert body["truncated"] and body["truncatedPaths"] == ["$.sites"]
            assert set(body["data"]["sites"][0]) == set(fields)
            jsonschema.Draft202012Validator(tool.output_schema).validate(body)

