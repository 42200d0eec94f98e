"""An agent that trusts every `nextSteps` entry: through the SDK's real MCP client over HTTP, with
the simulator behind the real server and the caller's own token in its header, a seed call per
tool family, then every suggested call, breadth-first, each identical call made once. Every
suggestion must name a tool HTTP lists, with arguments its inputSchema accepts; every followed call
must succeed and match its outputSchema; a step that continues the same list must start at the
answer's `nextOffset`, and paging a list to its end must neither repeat nor skip an item. Misses
(a name that is nothing) are seeds too: every `didYouMean` entry is fed back into the same argument
and walked like a step, as is every `didYouMean` of a search that found nothing, as its query."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import json
import re
from collections import deque
from typing import Any

import jsonschema
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.downloads.conftest import call_tool, dl_dir, sim_token, token_config  # noqa: F401  (fixtures)
from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.stack_server_support import rows_cleared  # noqa: F401  (fixture)

PRODUCT = "DP1.10003.001"  # breeding landbird point counts: at HARV, with files in 2020-05
SEEDS: list[tuple[str, dict[str, Any]]] = [
    ("eco_ping", {}),
    ("eco_search_products", {"query": "temperature", "limit": 3}),
    ("eco_get_product", {"product": PRODUCT}),
    ("eco_search_sites", {"domain_code": "D01", "limit": 3}),
    ("eco_get_site", {"site": "HARV", "products_limit": 5}),
    ("eco_get_availability", {"product": PRODUCT, "site": "HARV"}),
    ("eco_find_locations", {"root": "HARV", "limit": 5}),
    ("eco_get_location", {"name": "HARV"}),
    ("eco_list_releases", {}),
    ("eco_get_release", {"release": "latest", "products_limit": 5}),
    ("eco_get_citation", {"product": PRODUCT}),
    ("eco_search_prototype_datasets", {"theme": "organisms", "limit": 2}),
    ("eco_get_document", {"spec_number": "NEON.DOC.004771vE", "product": PRODUCT}),  # its user guide
    ("eco_list_sample_classes", {"query": "bet", "limit": 3}),
    ("eco_get_sample", {"barcode": "A00000123456"}),
    ("eco_search_taxonomy", {"taxon_type_code": "TICK", "limit": 5}),
    ("eco_graphql", {"introspect_type": "Site"}),
    ("eco_list_files", {"product": PRODUCT, "site_codes": ["HARV"], "start_month": "2020-05", "limit": 3}),
    ("eco_describe_tables", {"product": PRODUCT, "limit": 3}),
    # REALM and the domains take children by type: their steps must say which.
    ("eco_get_location", {"name": "REALM"}),
    ("eco_get_location", {"name": "D01"}),
    ("eco_find_locations", {"root": "REALM", "location_type": "DOMAIN"}),
]
# (tool, arguments, the argument naming nothing): each answers not_found with suggestions.
MISSES: list[tuple[str, dict[str, Any], str]] = [
    ("eco_find_locations", {"root": "HARVV"}, "root"),
    ("eco_get_location", {"name": "HARVV"}, "name"),
    ("eco_get_location", {"name": "Bartlett Experimental Forest"}, "name"),
    ("eco_get_site", {"site": "Harvrd Forst"}, "site"),
    ("eco_get_product", {"product": "breeding landbrd pointcount"}, "product"),
    ("eco_get_release", {"release": "RELEASE-20"}, "release"),
    ("eco_search_sites", {"query": "Harvard Quabbin zzzz"}, "query"),
    ("eco_search_products", {"query": "zzqx soyl tempreture"}, "query"),
]
MAX_CALLS = 260
# Suggestions that are right to make and still fail, by (tool, error code). Empty: none found.
LEGITIMATE_ERRORS: set[tuple[str, str]] = set()


def _key(tool: str, arguments: dict[str, Any]) -> str:
    return tool + json.dumps(arguments, sort_keys=True)


def _pages(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every page object of an answer, by its key ("page", "productsPage", "filesPage", ...)."""
    return {k: v for k, v in payload.items() if (k == "page" or k.endswith("Page")) and isinstance(v, dict)}


def _offset_change(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, int] | None:
    """(key, new value) when `after` is `before` with only one ..offset argument moved."""
    keys = set(before) | set(after)
    moved = [k for k in keys if before.get(k) != after.get(k)]
    if len(moved) == 1 and moved[0].endswith("offset") and isinstance(after.get(moved[0]), int):
        return moved[0], after[moved[0]]
    return None


async def test_every_next_step_from_a_seed_per_family_names_a_listed_tool_validates_and_succeeds_over_http(
        http_server, sim_cfg, sim, sim_token, active_config, tmp_path, rows_cleared):
    # Stacks a step asks for are built in the server's store: the test's own folder.
    cfg = token_config(sim, None, server__transport="http", server__allow_insecure_header_token=True,
                       tables__store_directory=str(tmp_path / "store"))
    active_config(cfg)
    with http_server(cfg) as srv:
        transport = streamable_http_client(srv.url, http_client=create_mcp_http_client(headers={"X-API-Token": sim_token}))
        async with Client(transport, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert len(tools) == 23 and "eco_download_files" not in tools and "eco_stack_tables" in tools
            assert {name for name, _ in SEEDS} <= set(tools)

            # The instructions an agent reads first name only tools it can call.
            # (Asked on the wire: a client pinned to a revision holds a stand-in discover result.)
            discovered = types.DiscoverResult.model_validate(await client.session.send_discover("2026-07-28"))
            named = set(re.findall(r"\beco_[a-z_]+\b", discovered.instructions or ""))
            assert named and named <= set(tools), named - set(tools)

            queue: deque[tuple[str, dict[str, Any], str]] = deque((t, a, "seed") for t, a in SEEDS)
            queue.extend((t, a, f"miss:{field}") for t, a, field in MISSES)
            seen: set[str] = set()
            called: set[str] = set()
            problems: list[str] = []
            calls = 0
            while queue and calls < MAX_CALLS:
                tool, arguments, origin = queue.popleft()
                if _key(tool, arguments) in seen:
                    continue
                seen.add(_key(tool, arguments))
                calls += 1
                called.add(tool)
                result = await client.call_tool(tool, arguments)
                body = result.structured_content or {}
                if origin.startswith("miss:"):
                    # Fed back, each suggestion is walked like a step (it must succeed).
                    field = origin.removeprefix("miss:")
                    offered = (body.get("error", {}).get("details") or body).get("didYouMean") or []
                    if not offered:
                        problems.append(f"{tool}({arguments}) suggests nothing: {body}")
                    for value in offered:
                        fed = {**arguments, field: [value] if isinstance(arguments[field], list) else value}
                        queue.append((tool, fed, f"didYouMean of {tool}({arguments})"))
                    if result.is_error:
                        continue
                if origin.startswith("didYouMean") and not result.is_error and body.get("items") == []:
                    problems.append(f"{tool}({arguments}) from {origin} finds nothing")
                if result.is_error:
                    code = (result.structured_content or {}).get("error", {}).get("code")
                    if (tool, code) not in LEGITIMATE_ERRORS:
                        problems.append(f"{tool}({arguments}) from {origin} failed: {result.structured_content}")
                    continue
                payload = assert_valid_tool_result(tools[tool], result)
                if tool == "eco_list_files" and origin == "seed" and payload["files"]:
                    # An agent narrowing the listing to one file it saw (a filename once broke the steps).
                    one = {k: v for k, v in arguments.items() if k != "limit"} | {"filename": payload["files"][0]["name"]}
                    queue.append((tool, one, "one file of the seed listing"))
                next_offsets = {p["nextOffset"] for p in _pages(payload).values() if p.get("nextOffset") is not None}
                for step in payload["nextSteps"]:
                    target, args = step["tool"], step["arguments"]
                    where = f"{tool}({arguments}) suggests {target}({args})"
                    if target not in tools:
                        problems.append(f"{where}: not a tool HTTP lists")
                        continue
                    errors = [e.message for e in jsonschema.Draft202012Validator(
                        tools[target].input_schema).iter_errors(args)]
                    if errors:
                        problems.append(f"{where}: arguments rejected by its inputSchema: {errors}")
                        continue
                    moved = _offset_change(arguments, args) if target == tool else None
                    if moved is not None and moved[1] not in next_offsets:
                        problems.append(f"{where}: {moved[0]}={moved[1]} but the answer's nextOffset is {next_offsets}")
                    # A step to a tool not called yet goes first: the walk reaches every tool within
                    # MAX_CALLS however many steps the answers before it offer.
                    (queue.append if target in called else queue.appendleft)((target, args, f"{tool}({arguments})"))
            assert not problems, "\n".join(problems)
            assert called == set(tools), (calls, len(queue))  # the prototype detail is reached only through a suggestion


async def _page_through(client: Client, tool: Any, arguments: dict[str, Any], page_key: str,
                        items_key: str, id_key: str, offset_arg: str) -> list[str]:
    """The ids of every item, following each answer's own step onto the next page to the end."""
    ids: list[str] = []
    while True:
        payload = assert_valid_tool_result(tool, await client.call_tool(tool.name, arguments))
        ids += [item[id_key] for item in payload[items_key]]
        page = payload[page_key]
        assert page["returned"] == len(payload[items_key])
        if page["nextOffset"] is None:
            assert not [s for s in payload["nextSteps"] if s["tool"] == tool.name
                        and _offset_change(arguments, s["arguments"])], "a next page step after the last page"
            return ids
        [step] = [s["arguments"] for s in payload["nextSteps"]
                  if s["tool"] == tool.name and _offset_change(arguments, s["arguments"]) == (offset_arg, page["nextOffset"])]
        arguments = step


async def test_following_the_next_page_step_to_the_end_lists_every_item_once_over_http(
        http_server, sim_cfg, sim, sim_token, active_config):
    cfg = token_config(sim, None, server__transport="http", server__allow_insecure_header_token=True)
    active_config(cfg)
    with http_server(cfg) as srv:
        transport = streamable_http_client(srv.url, http_client=create_mcp_http_client(headers={"X-API-Token": sim_token}))
        async with Client(transport, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            cases = [
                ("eco_search_products", {"query": "temperature"}, "page", "items", "productCode", "offset", "limit"),
                ("eco_search_sites", {"site_type": "CORE"}, "page", "items", "siteCode", "offset", "limit"),
                ("eco_get_site", {"site": "HARV"}, "dataProductsPage", "dataProducts", "productCode",
                 "products_offset", "products_limit"),
                ("eco_find_locations", {"root": "HARV"}, "page", "items", "locationName", "offset", "limit"),
                ("eco_get_release", {"release": "latest"}, "productsPage", "dataProducts", "productCode",
                 "products_offset", "products_limit"),
            ]
            for name, base, page_key, items_key, id_key, offset_arg, limit_arg in cases:
                biggest = tools[name].input_schema["properties"][limit_arg]["maximum"]
                everything = await _page_through(client, tools[name], {**base, limit_arg: biggest}, page_key,
                                                 items_key, id_key, offset_arg)
                assert len(everything) > 7, (name, everything)  # several small pages below
                paged = await _page_through(client, tools[name], {**base, limit_arg: 3}, page_key,
                                            items_key, id_key, offset_arg)
                assert paged == everything, name  # same order: nothing repeated, nothing skipped


async def test_over_stdio_a_listing_without_a_filename_still_suggests_downloading_what_it_selected(call_tool):
    # The HTTP rule (no download step) must not take the step away where the tool runs.
    selection = {"product": PRODUCT, "site_codes": ["HARV"], "start_month": "2020-05"}
    body = (await call_tool("eco_list_files", {**selection, "limit": 3})).ok
    assert [s["arguments"] for s in body["nextSteps"] if s["tool"] == "eco_download_files"] == [selection]
