"""From a question to a cited number, as an agent would get there, through the SDK's real MCP client
on both transports: "What was the mean monthly soil temperature at HARV in 2024 at the shallowest
depth?" from the eco_find_data prompt and nextSteps alone, in at most five tool calls on stdio
(search, describe, stack, query, citation) and six over HTTP (one more to wait for the build). The
first search is the one the prompt writes; every later call is a step the answer before it offers
(the agent picks, as the prompt says, the stack of the coarsest averaging interval). The monthly
means carry their unit, leave out the rows NEON's quality assessment failed (finalQF = 1), and
equal pandas over neonutilities.stack_by_table's output of the same files with the same filter
(names and MD5s checked against the dataset's record); the answer cites exactly the releases of
the rows it read, whose BibTeX the last call fetches.

Over HTTP the stack is built by a real Celery worker (PostgreSQL, Redis as broker) into the
server's dataset store, and the query reads it there; over stdio a subprocess server stacks into
its download directory."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pandas as pd
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

QUESTION = "What was the mean monthly soil temperature at HARV in 2024 at the shallowest depth?"
SITE, YEAR = "HARV", "2024"
MAX_CALLS = {"stdio": 5, "http": 6}
SEARCH = re.compile(r"eco_search_products\(([^)]*)\)")

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def _step(body: dict[str, Any], tool: str) -> dict[str, Any]:
    steps = [s["arguments"] for s in body["nextSteps"] if s["tool"] == tool]
    assert steps, (tool, body["nextSteps"])
    return steps[0]


def first_search(prompt: str) -> dict[str, str]:
    """The search the prompt writes out, as the agent copies it: eco_search_products(k="v", ...)."""
    m = SEARCH.search(prompt)
    assert m, prompt
    return dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))


async def agent(client: Client, call: Call) -> dict[str, Any]:
    """The calls an agent makes from the prompt, then each from a step of the answer before it."""
    prompt = (await client.get_prompt("eco_find_data", {"question": QUESTION})).messages[0].content.text
    found = await call("eco_search_products", first_search(prompt))
    product = found["items"][0]["productCode"]
    described = await call("eco_describe_tables", _step(found, "eco_describe_tables"))
    # As the prompt says: the sensor table of the coarsest averaging interval (a monthly mean needs
    # no finer one), which one of describe's stack steps proposes.
    sensor = max((t for t in described["tables"] if t["averagingMinutes"]), key=lambda t: t["averagingMinutes"])
    selection = next(s["arguments"] for s in described["nextSteps"]
                     if s["tool"] == "eco_stack_tables" and s["arguments"].get("tables") == [sensor["name"]])
    stacked = await call("eco_stack_tables", selection)
    while stacked.get("state", "ready") != "ready":  # over HTTP: built on the server; the answer says how to wait
        assert stacked["state"] == "building", stacked
        stacked = await call("eco_stack_tables", _step(stacked, "eco_stack_tables"))
    ask = _step(stacked, "eco_query_tables")
    answer = await call("eco_query_tables", ask)
    cites = [await call("eco_get_citation", s["arguments"]) for s in answer["nextSteps"]
             if s["tool"] == "eco_get_citation"]
    return {"product": product, "table": sensor["name"], "selection": selection, "stacked": stacked, "ask": ask,
            "answer": answer, "cites": cites, "prompt": prompt}


def shallowest_monthly(answer: dict[str, Any]) -> tuple[dict[tuple[str, str], float], str | None]:
    """The agent's reading of the query's answer: the rows of the shallowest sensor (the vertical
    position of the zOffset nearest the surface), as (month, the day its position period began) ->
    mean (a sensor moved within a month has a row for each height), and the mean's unit."""
    cols = [c["name"] for c in answer["columns"]]
    z, month, vertical = cols.index("zOffset"), cols.index("month"), cols.index("verticalPosition")
    since = cols.index("positionStartDateTime")
    mean = next(i for i, c in enumerate(cols) if c.endswith("Monthly"))
    top = max(answer["rows"], key=lambda r: r[z])[vertical]
    rows = [r for r in answer["rows"] if r[vertical] == top]
    return {(r[month][:7], r[since][:10]): r[mean] for r in rows}, answer["columns"][mean]["units"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """pandas over neonutilities.stack_by_table's output of the simulator's files for the
    selection (the 30-minute table of released data, as zips_by_product(timeindex=30) fetches it
    by default): month -> the mean soil temperature at the shallowest depth of the rows whose
    finalQF is 0, the releases of those rows, the unit, and each file's MD5."""
    tmp = tmp_path_factory.mktemp("nu")
    folder = tmp / "filesToStack00041"
    sources = write_packages(files_for(1), "DP1.00041.001", [SITE], f"{YEAR}-01", f"{YEAR}-12", folder,
                             keep="ST_30_minute", include_provisional=False)
    theirs = neonutilities_stack(folder, tmp / "nu.pickle")
    positions = theirs["sensor_positions_00041"]
    positions = positions[positions["siteID"] == SITE]
    shallowest = str(positions.loc[positions["zOffset"].idxmax(), "HOR.VER"]).split(".")[1]
    st = theirs["ST_30_minute"]
    st = st[(st["siteID"] == SITE) & (st["verticalPosition"].astype(str) == shallowest)]
    periods = positions[positions["HOR.VER"].astype(str).str.endswith(f".{shallowest}")]

    def by_period(rows: Any) -> dict[tuple[str, str], float]:
        """Month and position period -> mean: each row in the period its sensor was at a height."""
        out: dict[tuple[str, str], float] = {}
        for _, p in periods.iterrows():
            t = rows["startDateTime"]
            inside = rows[(t >= p["positionStartDateTime"]) & (pd.isna(p["positionEndDateTime"])
                                                                | (t < p["positionEndDateTime"]))]
            for month, mean in inside.groupby(inside["startDateTime"].dt.strftime("%Y-%m"))["soilTempMean"].mean(
                    ).items():
                out[(month, p["positionStartDateTime"].strftime("%Y-%m-%d"))] = mean
        return out

    passed = st[st["finalQF"] == 0]
    monthly, unfiltered = by_period(passed), by_period(st)
    md5 = {s.name: hashlib.md5(s.path.read_bytes()).hexdigest() for s in sources}
    variables = theirs["variables_00041"]
    unit = variables[(variables["table"] == "ST_30_minute") & (variables["fieldName"] == "soilTempMean")]["units"]
    return {"monthly": monthly, "unfiltered": unfiltered, "md5": md5, "vertical": shallowest,
            "releases": set(passed["release"]), "flagged": int((st["finalQF"] != 0).sum()), "unit": unit.iloc[0]}


def check(end: dict[str, Any], calls: list[str], folder: Path, reference: dict[str, Any], transport: str) -> None:
    assert end["product"] == "DP1.00041.001" and end["table"] == "ST_30_minute"
    assert len(calls) <= MAX_CALLS[transport], calls
    assert calls[:3] == ["eco_search_products", "eco_describe_tables", "eco_stack_tables"]
    assert calls[-2:] == ["eco_query_tables", "eco_get_citation"]
    # The window of the question reached the stack through the steps alone; released data only.
    assert (end["selection"]["start_month"], end["selection"]["end_month"]) == (f"{YEAR}-01", f"{YEAR}-12")
    assert end["stacked"]["releases"] == sorted(reference["releases"])
    # The same files on both sides: the dataset was stacked from exactly the files pandas read.
    record = json.loads((folder / "dataset.json").read_text())
    stacked_from = {s["name"]: s["md5"] for s in record["sources"] if "ST_30_minute" in s["name"]}
    assert stacked_from == {n: m for n, m in reference["md5"].items() if "ST_30_minute" in n}
    assert len(stacked_from) == 2 * 12  # two depths, twelve months
    got, unit = shallowest_monthly(end["answer"])
    want = reference["monthly"]
    assert sorted(got) == sorted(want) and sorted({m for m, _ in want}) == [f"{YEAR}-{m:02d}" for m in range(1, 13)]
    assert len(want) == 13  # the shallow sensor moved on 2024-08-21: August has a mean for each height
    for month, value in want.items():
        assert got[month] == pytest.approx(value, rel=1e-9, abs=1e-9), month
    # A number with its unit, the variables file's; flagged rows left out, and there were some.
    assert unit == reference["unit"] == "celsius"
    assert "finalQF = 0" in end["ask"]["sql"] and reference["flagged"] > 0
    assert any(got[m] != pytest.approx(reference["unfiltered"][m], rel=1e-12) for m in want)
    # Cited: exactly the releases of the rows read, with the DOI, and the BibTeX the last call fetched.
    answer = end["answer"]
    assert {c["release"] for c in answer["citations"]} == reference["releases"]
    assert all(c["doi"] and c["doiUrl"] == f"https://doi.org/{c['doi']}" for c in answer["citations"])
    assert {c["release"] for c in end["cites"]} == reference["releases"]
    assert all(c["bibtex"].startswith("@") for c in end["cites"])
    cited = _step(answer, "eco_get_citation")
    assert cited["product"] == end["product"] and cited["site_codes"] == [SITE]


def counted(client: Client, calls: list[str], transport: str) -> Call:
    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        calls.append(tool)
        assert len(calls) <= MAX_CALLS[transport], calls
        result = await client.call_tool(tool, args)
        assert not result.is_error, (tool, args, result.structured_content)
        return result.structured_content

    return call


async def test_the_question_becomes_a_cited_number_with_its_unit_in_at_most_five_calls_over_stdio(
        stdio_env, sim, tmp_path, reference):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    params = sim_stdio(stdio_env, sim, sim.issue_token(), downloads)
    calls: list[str] = []
    async with Client(params, mode="2026-07-28") as client:
        end = await agent(client, counted(client, calls, "stdio"))
    assert calls == ["eco_search_products", "eco_describe_tables", "eco_stack_tables", "eco_query_tables",
                     "eco_get_citation"]
    check(end, calls, Path(end["stacked"]["folder"]), reference, "stdio")


async def test_the_question_becomes_a_cited_number_with_its_unit_in_at_most_six_calls_over_http(
        http_server, sim_cfg, fresh_sim, active_config, broker, store, tmp_path, rows_cleared, reference):
    token = fresh_sim.issue_token()
    worker = Worker(tmp_path, fresh_sim, broker, store).start().wait_ready()
    cfg = active_config(server_config(fresh_sim, store))
    calls: list[str] = []
    bodies: list[dict[str, Any]] = []
    try:
        with http_server(cfg) as srv:
            async with caller(srv.url, token) as client:
                call = counted(client, calls, "http")

                async def kept(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                    bodies.append(body := await call(tool, args))
                    return body

                try:
                    end = await agent(client, kept)
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
    check(end, calls, store / end["stacked"]["datasetId"], reference, "http")
