"""eco_graphql sizes a query as if its fragments were expanded without expanding them: 25
fragments each spreading the next twice (issue 41: 939 characters that froze the server for 48 s)
are 2^24 aliased fields counted as a number and refused as query_too_large before any request,
wherever the bomb hides (another operation, a nested selection); a bomb of fields no alias or
list estimate catches is refused for its expanded size; over HTTP, four of them at once leave
/healthz answering (its latency is measured by bench/bench_graphql.py)."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import asyncio
from typing import Any

import httpx
from mcp import Client

from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of, sim_config
from upstream.graphql_window import QueryBounds, check_query, window_schema


def bomb(levels: int, leaf: str = "a: products { productCode }", on: str = "Query") -> str:
    """`{...F0} fragment F0 on Query {...F1 ...F1} ... fragment F<levels> on Query {<leaf>}`."""
    parts = [f"fragment F{i} on {on} {{...F{i + 1} ...F{i + 1}}}" for i in range(levels)]
    return " ".join(["{...F0}", *parts, f"fragment F{levels} on {on} {{{leaf}}}"])


ISSUE_BOMB = bomb(24, "a:products{productCode}")  # as the issue spells it


def expanded_counts(query: str) -> tuple[int, int]:
    """(fields, aliases) by really expanding every spread: the second computation, for small bombs."""
    from graphql import FieldNode, FragmentDefinitionNode, FragmentSpreadNode, InlineFragmentNode, parse

    doc = parse(query)
    frags = {d.name.value: d for d in doc.definitions if isinstance(d, FragmentDefinitionNode)}

    def walk(sel: Any) -> tuple[int, int]:
        fields = aliases = 0
        for s in sel.selections if sel else ():
            if isinstance(s, FieldNode):
                f, a = walk(s.selection_set)
                fields, aliases = fields + 1 + f, aliases + int(s.alias is not None) + a
            else:
                inner = frags[s.name.value].selection_set if isinstance(s, FragmentSpreadNode) else s.selection_set
                assert isinstance(s, (FragmentSpreadNode, InlineFragmentNode))
                f, a = walk(inner)
                fields, aliases = fields + f, aliases + a
        return fields, aliases

    return walk(doc.definitions[0].selection_set)


def _refused(query: str, **kw: Any) -> Any:
    try:
        check_query(query, operation_name=kw.pop("operation_name", None), max_chars=8000, max_depth=8,
                    bounds=QueryBounds(), **kw)
    except Exception as exc:
        return exc
    raise AssertionError("the query was accepted")


async def test_the_issue_fragment_bomb_is_query_too_large_with_its_expanded_size_and_nothing_is_sent(run_tool, sim):
    assert len(ISSUE_BOMB) == 939
    before = sim.requests.count("^/graphql")
    out = await run_tool("eco_graphql", {"query": ISSUE_BOMB})
    err = error_of(out, "query_too_large", "query")
    # F24 holds 2 fields (one aliased), spread 2^24 times.
    assert err["details"]["aliases"] == 2 ** 24 and err["details"]["fields"] == 2 ** 25
    assert err["details"]["maxFields"] == 8000 and "fragments are expanded" in err["message"]
    assert out.requests == 0 and sim.requests.count("^/graphql") == before


def test_a_bomb_of_sixty_levels_is_counted_not_expanded():
    # 2^60 copies could never be walked: the figure is only reachable by counting.
    err = _refused(bomb(60))
    assert err.code == "query_too_large" and err.details["aliases"] == 2 ** 60


def test_the_counts_equal_those_of_the_really_expanded_query_for_small_bombs():
    from upstream.graphql_fields import CostEstimate

    ws = window_schema()
    for levels, leaf in ((0, "a: products { productCode }"), (3, "a: site(siteCode: \"HARV\") { s: siteCode }"),
                         (5, "__typename b: sites { siteCode domainCode }")):
        query = bomb(levels, leaf)
        from graphql import FragmentDefinitionNode, parse

        doc = parse(query)
        frags = {d.name.value: d for d in doc.definitions if isinstance(d, FragmentDefinitionNode)}
        cost = CostEstimate(ws.schema, frags, list_estimate=20, variables=None).cost(doc.definitions[0])
        assert (cost.fields, cost.aliases) == expanded_counts(query), (levels, leaf)


def test_a_bomb_in_an_operation_not_chosen_is_refused_too():
    # Local validation and NEON read every operation of the document, not only the one run.
    query = bomb(24).replace("{...F0}", 'query Small { site(siteCode: "HARV") { siteCode } } query Big { ...F0 }')
    err = _refused(query, operation_name="Small")
    assert err.code == "query_too_large" and err.details["aliases"] == 2 ** 24


def test_a_bomb_of_plain_fields_is_refused_for_its_expanded_size():
    # 2^16 __typename: no alias, a small estimate of values each, but 65,536 fields to send.
    err = _refused(bomb(16, "__typename"))
    assert err.code == "query_too_large" and err.details["fields"] == 2 ** 16 and err.details["aliases"] == 0


def test_a_bomb_inside_a_nested_list_is_refused():
    query = bomb(30, "productCode", on="DataProduct").replace("{...F0}", "{ products { ...F0 } }", 1)
    err = _refused(query)
    assert err.code == "query_too_large" and err.details["fields"] == 1 + 2 ** 30


def test_a_deep_selection_reached_through_a_bomb_is_invalid_argument_for_its_depth():
    leaf = "locationHierarchy(name: \"HARV\") { " + "locationChildHierarchy { " * 8 + "locationName" + " }" * 9
    err = _refused(bomb(24, leaf))
    assert err.code == "invalid_argument" and err.details["depth"] == 10 and err.details["limit"] == 8


async def test_four_fragment_bombs_at_once_over_http_without_a_token_are_refused_and_healthz_answers(
        http_server, sim, active_config):
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    before = sim.requests.count("^/graphql")
    health: list[int] = []
    with http_server(cfg) as srv:
        # The SDK's client with no token header: eco_graphql needs none.
        async with httpx.AsyncClient(base_url=srv.base) as web, Client(srv.url, mode="2026-07-28") as client:
            done = asyncio.Event()

            async def probe() -> None:
                while not done.is_set():
                    health.append((await web.get("/healthz")).status_code)
                    await asyncio.sleep(0.005)

            probing = asyncio.create_task(probe())
            try:
                results = await asyncio.gather(*(client.call_tool("eco_graphql", {"query": ISSUE_BOMB})
                                                 for _ in range(4)))
            finally:
                done.set()
                await probing
    for result in results:
        assert result.is_error
        err = result.structured_content["error"]
        assert err["code"] == "query_too_large" and err["details"]["aliases"] == 2 ** 24, err
    assert health and set(health) == {200}
    assert sim.requests.count("^/graphql") == before
