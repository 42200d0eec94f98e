"""From a question to a cited number, as an agent would get there, through the SDK's real MCP client
on both transports: "What was the mean monthly soil temperature at HARV in 2023 at the shallowest
depth?" in at most six tool calls (search, describe, stack, [wait for the build over HTTP], query,
citation), each call made from the answer before it (its nextSteps, or the values it holds). The
monthly means equal pandas over neonutilities.stack_by_table's output of the same files (names
and MD5s checked against the dataset's record), and the answer carries its release citation, whose
BibTeX the last call fetches.

Over HTTP the stack is built by a real Celery worker (PostgreSQL, Redis as broker) into the
server's dataset store, and the query reads it there; over stdio a subprocess server stacks into
its download directory."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.gateway.conftest import fake_catalog, http_server, sim_stdio, stdio_env  # noqa: F401  (fixtures)
from tests.tables.neon_support import neonutilities_stack, write_packages
from tests.tools.stack_server_support import (  # noqa: F401  (fixtures)
    Worker,
    broker,
    broker_view,
    caller,
    no_server_path,
    rows_cleared,
    server_config,
    store,
)
from upstream_sim.state import files_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("neonutilities") is None, reason="neonutilities is not installed"),
]

QUESTION = "What was the mean monthly soil temperature at HARV in 2023 at the shallowest depth?"
# What the agent reads from the question: what is measured, where and when.
WHAT, SITE, YEAR = "soil temperature", "HARV", "2023"
MAX_CALLS = 6

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def _step(body: dict[str, Any], tool: str) -> dict[str, Any]:
    steps = [s["arguments"] for s in body["nextSteps"] if s["tool"] == tool]
    assert steps, (tool, body["nextSteps"])
    return steps[0]


async def agent(call: Call) -> dict[str, Any]:
    """The calls an agent makes, each from the answer before it; what it ends with."""
    found = await call("eco_search_products", {"query": WHAT, "site": SITE, "available_from": f"{YEAR}-01",
                                               "available_to": f"{YEAR}-12"})
    product = found["items"][0]["productCode"]
    described = await call("eco_describe_tables", {"product": product, "site_code": SITE})
    # The sensor table of the coarsest averaging interval: a monthly mean needs no finer one.
    sensor = max((t for t in described["tables"] if t["averagingMinutes"]), key=lambda t: t["averagingMinutes"])
    selection = {**_step(described, "eco_stack_tables"), "start_month": f"{YEAR}-01", "end_month": f"{YEAR}-12",
                 "tables": [sensor["name"]]}
    stacked = await call("eco_stack_tables", selection)
    while stacked.get("state", "ready") != "ready":  # over HTTP: built on the server; the answer says how to wait
        assert stacked["state"] == "building", stacked
        stacked = await call("eco_stack_tables", _step(stacked, "eco_stack_tables"))
    ask = _step(stacked, "eco_query_tables")
    answer = await call("eco_query_tables", ask)
    cite = await call("eco_get_citation", _step(answer, "eco_get_citation"))
    return {"product": product, "table": sensor["name"], "stacked": stacked, "ask": ask, "answer": answer,
            "cite": cite}


def shallowest_monthly(answer: dict[str, Any]) -> dict[str, float]:
    """The agent's reading of the query's answer: the rows of the shallowest sensor (the zOffset
    nearest the surface), as month -> mean."""
    cols = [c["name"] for c in answer["columns"]]
    z, month = cols.index("zOffset"), cols.index("month")
    mean = next(i for i, c in enumerate(cols) if c.endswith("Monthly"))
    top = max(r[z] for r in answer["rows"])
    return {r[month][:7]: r[mean] for r in answer["rows"] if r[z] == top}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """pandas over neonutilities.stack_by_table's output of the simulator's files for the
    selection (the 30-minute table, as zips_by_product(timeindex=30) fetches it): month -> the mean
    soil temperature at the shallowest depth, and each file's MD5."""
    tmp = tmp_path_factory.mktemp("nu")
    folder = tmp / "filesToStack00041"
    sources = write_packages(files_for(1), "DP1.00041.001", [SITE], f"{YEAR}-01", f"{YEAR}-12", folder,
                             keep="ST_30_minute")
    theirs = neonutilities_stack(folder, tmp / "nu.pickle")
    positions = theirs["sensor_positions_00041"]
    positions = positions[positions["siteID"] == SITE]
    shallowest = str(positions.loc[positions["zOffset"].idxmax(), "HOR.VER"]).split(".")[1]
    st = theirs["ST_30_minute"]
    st = st[(st["siteID"] == SITE) & (st["verticalPosition"].astype(str) == shallowest)]
    monthly = st.groupby(st["startDateTime"].dt.strftime("%Y-%m"))["soilTempMean"].mean()
    md5 = {s.name: hashlib.md5(s.path.read_bytes()).hexdigest() for s in sources}
    return {"monthly": monthly.to_dict(), "md5": md5, "vertical": shallowest}


def check(end: dict[str, Any], calls: list[str], folder: Path, reference: dict[str, Any]) -> None:
    assert end["product"] == "DP1.00041.001" and end["table"] == "ST_30_minute"
    assert len(calls) <= MAX_CALLS, calls
    assert calls[:3] == ["eco_search_products", "eco_describe_tables", "eco_stack_tables"]
    assert calls[-2:] == ["eco_query_tables", "eco_get_citation"]
    # The same files on both sides: the dataset was stacked from exactly the files pandas read.
    record = json.loads((folder / "dataset.json").read_text())
    stacked_from = {s["name"]: s["md5"] for s in record["sources"] if "ST_30_minute" in s["name"]}
    assert stacked_from == {n: m for n, m in reference["md5"].items() if "ST_30_minute" in n}
    assert len(stacked_from) == 2 * 12  # two depths, twelve months
    got = shallowest_monthly(end["answer"])
    want = reference["monthly"]
    assert sorted(got) == sorted(want) == [f"{YEAR}-{m:02d}" for m in range(1, 13)]
    for month, value in want.items():
        assert got[month] == pytest.approx(value, rel=1e-9, abs=1e-9), month
    # Cited: the release(s) the rows come from, with the DOI, and the BibTeX the last call fetched.
    answer = end["answer"]
    assert answer["citations"] and all(c["doi"] or c["release"] == "PROVISIONAL" for c in answer["citations"])
    assert {c["release"] for c in answer["citations"]} <= set(end["stacked"]["releases"])
    assert end["cite"]["bibtex"].startswith("@")
    cited = _step(answer, "eco_get_citation")
    assert cited["product"] == end["product"] and cited["site_codes"] == [SITE]


def counted(client: Client, calls: list[str]) -> Call:
    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        calls.append(tool)
        assert len(calls) <= MAX_CALLS, calls
        result = await client.call_tool(tool, args)
        assert not result.is_error, (tool, args, result.structured_content)
        return result.structured_content

    return call


async def test_the_question_becomes_a_cited_number_in_at_most_six_calls_over_stdio(
        stdio_env, sim, tmp_path, reference):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    params = sim_stdio(stdio_env, sim, sim.issue_token(), downloads)
    calls: list[str] = []
    async with Client(params, mode="2026-07-28") as client:
        end = await agent(counted(client, calls))
    assert calls == ["eco_search_products", "eco_describe_tables", "eco_stack_tables", "eco_query_tables",
                     "eco_get_citation"]
    check(end, calls, Path(end["stacked"]["folder"]), reference)


async def test_the_question_becomes_a_cited_number_in_at_most_six_calls_over_http(
        http_server, sim_cfg, fresh_sim, active_config, broker, store, tmp_path, rows_cleared, reference):
    token = fresh_sim.issue_token()
    worker = Worker(tmp_path, fresh_sim, broker, store).start().wait_ready()
    cfg = active_config(server_config(fresh_sim, store))
    calls: list[str] = []
    bodies: list[dict[str, Any]] = []
    try:
        with http_server(cfg) as srv:
            async with caller(srv.url, token) as client:
                call = counted(client, calls)

                async def kept(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                    bodies.append(body := await call(tool, args))
                    return body

                try:
                    end = await agent(kept)
                except AssertionError as e:  # where the build stood, for a run that waited too long
                    raise AssertionError(f"{e}; answers {[(b.get('state'), b.get('notes')) for b in bodies[2:]]}; "
                                         f"{broker_view()}; worker log: {worker.log()[-6000:]}") from e
    finally:
        worker.stop()
    # Built by the worker; the first stack call answered at once, the next waited for the build.
    assert calls == ["eco_search_products", "eco_describe_tables", "eco_stack_tables", "eco_stack_tables",
                     "eco_query_tables", "eco_get_citation"]
    assert "Task tables.build_dataset[" in worker.log()
    assert end["stacked"]["folder"] is None
    for body in bodies[2:4]:
        no_server_path(body, store)
    assert str(store) not in json.dumps(end["answer"]) and str(tmp_path) not in json.dumps(end["answer"])
    check(end, calls, store / end["stacked"]["datasetId"], reference)
