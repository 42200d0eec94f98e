"""The three eco_* prompts through the SDK's MCP client over HTTP (the stdio subprocess is in
test_resources.py): listed with their arguments, rendered in the spec's tool order, naming only
registered tools and arguments, and refusing missing or malformed arguments with -32602."""

from __future__ import annotations

import re

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_gateway.prompts import PROMPTS
from mcp_gateway.registry import default_registry
from tests.gateway.registry_names import unknown_names

DAY_MS = 24 * 3600 * 1000
FULL = {
    "eco_find_data": {"question": "How warm is the soil in winter?", "region": "Harvard",
                      "timeframe": "2022", "organism_or_variable": "soil temperature"},
    "eco_cite_dataset": {"product": "DP1.00041.001", "release": "RELEASE-2025", "site_codes": "HARV,BART"},
    "eco_plan_download": {"product": "DP1.00041.001", "sites": "HARV, BART", "start_month": "2023-01",
                          "end_month": "2023-03", "package": "expanded"},
}
ORDER = {
    "eco_find_data": ["eco_search_products", "eco_search_sites", "eco_get_availability", "eco_describe_tables",
                      "eco_stack_tables", "eco_query_tables", "eco_list_files", "eco_get_citation", "eco_plot_tables"],
    "eco_cite_dataset": ["eco_get_product", "eco_get_availability", "eco_get_citation"],
    "eco_plan_download": ["eco_ping", "eco_get_availability", "eco_list_files", "eco_get_citation"],
}
REQUIRED = {"eco_find_data": ["question"], "eco_cite_dataset": ["product"],
            "eco_plan_download": ["product", "sites", "start_month"]}


async def test_prompts_are_listed_with_their_arguments_and_a_day_long_cache_hint(http_server):
    with http_server() as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            listed = await client.list_prompts()
    assert listed.ttl_ms == DAY_MS and listed.cache_scope == "public"
    by_name = {p.name: p for p in listed.prompts}
    assert set(by_name) == set(FULL)
    for name, prompt in by_name.items():
        assert [a.name for a in prompt.arguments or [] if a.required] == REQUIRED[name]
        assert {a.name for a in prompt.arguments or []} == set(FULL[name])


@pytest.mark.parametrize("name", sorted(FULL))
async def test_a_prompt_steers_through_registered_tools_in_the_spec_order_over_http(name, http_server):
    reg = default_registry()
    with http_server() as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            full = await client.get_prompt(name, FULL[name])
            minimal = await client.get_prompt(name, {k: FULL[name][k] for k in REQUIRED[name]})
    for result in (full, minimal):
        (message,) = result.messages
        text = message.content.text
        assert message.role == "user"
        assert unknown_names(text, reg) == []
        present = [t for t in ORDER[name] if reg.get(t) is not None]
        positions = [text.index(t) for t in present]
        assert positions == sorted(positions), (present, text)
        # Over HTTP nothing is downloaded: the download tool is never offered.
        assert "eco_download_files" not in text
    if name == "eco_plan_download":
        assert 'site_codes=["HARV", "BART"]' in full.messages[0].content.text
        assert "token" in full.messages[0].content.text


def test_the_stdio_rendering_offers_the_download_tool_and_http_the_signed_urls():
    spec = next(p for p in PROMPTS if p.name == "eco_plan_download")
    tools = [*default_registry().names(), "eco_download_files", "eco_list_files"]
    stdio = spec.text(FULL["eco_plan_download"], "stdio", tools)
    http = spec.text(FULL["eco_plan_download"], "http", tools)
    assert "eco_download_files(" in stdio and "signed URLs" not in stdio
    assert "eco_download_files" not in http and "signed URLs" in http
    without = spec.text(FULL["eco_plan_download"], "stdio", default_registry().names())
    assert ("eco_download_files" in without) == (default_registry().get("eco_download_files") is not None)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_find_data_leads_from_the_question_to_a_cited_answer_through_tools_listed_on_its_transport(transport):
    reg = default_registry()
    listed = {s.name for s in reg.listed(http=transport == "http")}
    spec = next(p for p in PROMPTS if p.name == "eco_find_data")
    (message,) = spec.messages(FULL["eco_find_data"], transport, reg)
    text = message.content.text
    named = set(re.findall(r"\beco_[a-z_]+\b", text))
    assert named <= listed, named - listed
    path = ["eco_search_products", "eco_describe_tables", "eco_stack_tables", "eco_query_tables", "eco_get_citation",
            "eco_plot_tables"]
    assert set(path) <= named, set(path) - named
    starts = [text.index(f"{t}(") for t in path]
    assert starts == sorted(starts), text
    # How a stack is waited for is the transport's: answered when done, or built on the server.
    if transport == "stdio":
        assert "answers when done" in text and "wait_seconds" not in text
    else:
        assert "eco_stack_tables(dataset_id=..., wait_seconds=20)" in text and "answers when done" not in text
        assert "eco_download_files" not in text
    # A tool the transport does not list is never named: its steps are dropped.
    without = spec.text(FULL["eco_find_data"], transport, sorted(listed - {"eco_stack_tables"}))
    assert "eco_stack_tables" not in without and "eco_describe_tables(" in without


@pytest.mark.parametrize(("name", "arguments", "field"), [
    ("eco_find_data", {}, "question"),
    ("eco_find_data", {"question": "   "}, "question"),
    ("eco_cite_dataset", {"release": "RELEASE-2025"}, "product"),
    ("eco_cite_dataset", {"product": "DP1.00041.001", "release": "PROVISIONAL"}, "release"),
    ("eco_plan_download", {"product": "DP1.00041.001", "sites": "HARV"}, "start_month"),
    ("eco_plan_download", {"product": "DP1.00041.001", "start_month": "2023-01"}, "sites"),
    ("eco_plan_download", {"product": "DP1.00041.001", "sites": "HARV", "start_month": "2023-13"}, "start_month"),
    ("eco_plan_download", {"product": "DP1.00041.001", "sites": "HARV", "start_month": "2023-05",
                           "end_month": "2023-01"}, "end_month"),
    ("eco_plan_download", {"product": "DP1.00041.001", "sites": "HARV", "start_month": "2023-05",
                           "package": "full"}, "package"),
    ("eco_plan_download", {"product": "DP1.00041.001", "sites": ",".join(["HARV"] * 31),
                           "start_month": "2023-05"}, "sites"),
    ("eco_find_data", {"question": "q", "colour": "red"}, "colour"),
])
async def test_a_missing_or_malformed_prompt_argument_is_invalid_params_naming_it(name, arguments, field, http_server):
    with http_server() as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            with pytest.raises(MCPError) as caught:
                await client.get_prompt(name, arguments)
    err = caught.value.error
    assert err.code == -32602 and field in err.message, err
    assert err.data == {"code": "invalid_argument", "argument": field}


async def test_an_unknown_prompt_is_invalid_params_with_a_suggestion(http_server):
    with http_server() as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            with pytest.raises(MCPError) as caught:
                await client.get_prompt("eco_find_dat", {"question": "q"})
    assert caught.value.error.code == -32602
    assert caught.value.error.data["didYouMean"][0] == "eco_find_data"
