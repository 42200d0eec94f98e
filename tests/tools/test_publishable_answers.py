"""Issue 42: the number an agent gets by following the service is one a scientist would publish. Each
item through the SDK's real MCP client (in process on a stdio configuration; the side tables over
HTTP too), each figure against a second computation: neonutilities' stack, pandas over the
Parquet or source files, the variables file, the simulator's own calendar.

  1 released data by default in eco_stack_tables      4 (the vintages helper's)
  2 units through SQL                                 5 side tables queryable by name
  3 quality flags in suggestions and notes            6 citations follow the rows read
  7 the tables path is visible from availability, describe, the prompt, instructions and citations
"""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import contextlib
import csv
import importlib.resources
import importlib.util
import io
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from mcp import Client

from mcp_gateway.server import build_server
from tables import dataset
from tests.catalog.celery_worker import require_postgres
from tests.downloads.conftest import dl_dir, sim_token, token_config  # noqa: F401  (fixtures)
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tables.neon_support import assert_same_table, neonutilities_stack, write_packages
from tests.tables.query_support import CITATIONS, SOIL, stack_soil
from tests.tools.conftest import sim_config
from tests.tools.stack_server_support import record_ready, rows_cleared, store  # noqa: F401  (fixtures)
from upstream_sim.state import files_for, world_for

LITTER, SITES, WINDOW = "DP1.10033.001", ["HARV", "SCBI", "KONZ"], ("2025-04", "2026-05")
ISSUES = [{"id": 1, "parentIssueID": None, "issueDate": "2024-01-02T00:00:00Z", "resolvedDate": None,
           "dateRangeStart": "2023-01-01T00:00:00Z", "dateRangeEnd": None, "locationAffected": "HARV",
           "issue": "Traps replaced", "resolution": "None needed"},
          {"id": 2, "parentIssueID": 1, "issueDate": "2024-03-02T00:00:00Z", "resolvedDate": "2024-04-01T00:00:00Z",
           "dateRangeStart": None, "dateRangeEnd": None, "locationAffected": "All", "issue": "Late entry",
           "resolution": "Entered"}]
needs_neonutilities = pytest.mark.skipif(importlib.util.find_spec("neonutilities") is None,
                                         reason="neonutilities is not installed")


@contextlib.asynccontextmanager
async def stdio_client(sim: Any, token: str, dl: Path, active_config: Any, **mode: Any) -> AsyncIterator[Client]:
    """The SDK client on a stdio server in process (mode auto discovers, and so reads the instructions)."""
    cfg = active_config(token_config(sim, token, dl, server__transport="stdio"))
    async with Client(build_server(cfg), **(mode or {"mode": "2026-07-28"})) as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, (tool, args, result.structured_content)
    return result.structured_content


def steps(body: dict[str, Any], tool: str) -> list[dict[str, Any]]:
    return [s for s in body["nextSteps"] if s["tool"] == tool]


def cols(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in body["columns"]}


# -- 1 -------------------------------------------------------------------------------------------

@pytest.mark.slow
@needs_neonutilities
async def test_a_stack_holds_released_data_by_default_as_neonutilities_and_keeps_provisional_rows_apart(
        sim_cfg, sim, sim_token, dl_dir, active_config, tmp_path):
    selection = {"product": LITTER, "site_codes": SITES, "start_month": WINDOW[0], "end_month": WINDOW[1]}
    async with stdio_client(sim, sim_token, dl_dir, active_config) as client:
        released = await call(client, "eco_stack_tables", selection)
        both = await call(client, "eco_stack_tables", {**selection, "include_provisional": True})
    # neonUtilities' default (include.provisional = FALSE) over the same files.
    folder = tmp_path / "filesToStack10033"
    write_packages(files_for(1), LITTER, SITES, WINDOW[0], WINDOW[1], folder, include_provisional=False)
    theirs = neonutilities_stack(folder, tmp_path / "nu.pickle")
    assert released["releases"] == ["RELEASE-2026"]
    data = [t for t in released["tables"] if t["name"].startswith("ltr_")]
    assert data
    for t in data:
        mine = pq.read_table(Path(released["folder"]) / t["file"]).to_pandas()
        assert_same_table(mine, theirs[t["name"]], t["name"])
    # The note counts the provisional site-months left out, as the simulator's calendar has them.
    w = world_for(1)
    left = sum(1 for s in SITES for ym in w.availability(LITTER).get(s, [])
               if WINDOW[0] <= ym <= WINDOW[1] and w.release_for_month(LITTER, s, ym, None) == "PROVISIONAL")
    assert left > 0
    [note] = [n for n in released["notes"] if "provisional" in n]
    assert f"Left out {left} provisional site-months" in note and "include_provisional=true" in note
    # Asked for both: the release column keeps them apart; its released rows are the default stack.
    assert both["releases"] == ["PROVISIONAL", "RELEASE-2026"]
    assert not [n for n in both["notes"] if n.startswith("Left out")]
    # (A table published once per site, not per month, is read from its newest copy, as neonUtilities
    # does: its rows carry that copy's release.)
    for t in [t for t in data if t["layout"] == "site-date"]:
        mixed = pq.read_table(Path(both["folder"]) / t["file"]).to_pandas()
        assert set(mixed["release"]) <= {"PROVISIONAL", "RELEASE-2026"}
        only = mixed[mixed["release"] == "RELEASE-2026"].reset_index(drop=True)
        assert_same_table(only, pq.read_table(Path(released["folder"]) / t["file"]).to_pandas(), t["name"])
    assert any((pq.read_table(Path(both["folder"]) / t["file"]).to_pandas()["release"] == "PROVISIONAL").any()
               for t in data)


# -- 2, 3, 6: one soil dataset of a released and a provisional month --------------------------------

@pytest.fixture
def soil(dl_dir: Path) -> tuple[str, Path, Path]:
    """HARV's soil temperature for 2025-06 (RELEASE-2026) and 2025-07 (PROVISIONAL), stacked into the
    download directory; its id, folder and the source packages."""
    ds_id, _ = stack_soil(dl_dir, window=("2025-06", "2025-07"))
    return ds_id, dl_dir / dataset.FOLDER / ds_id, dl_dir.parent / f"{dl_dir.name}-src"


def source_rows(src: Path, table: str) -> pd.DataFrame:
    """The table's rows read straight from NEON's CSV files (not from the stack)."""
    frames = [pd.read_csv(p) for p in sorted(src.rglob(f"*.{table}.*.csv"))]
    assert frames
    return pd.concat(frames, ignore_index=True)


async def test_each_result_column_has_the_unit_its_sql_gives_it_or_says_why_not(
        sim_cfg, sim, sim_token, dl_dir, active_config, soil):
    ds_id, folder, _ = soil
    variables = {(r["table"], r["fieldName"]): r["units"]
                 for r in csv.DictReader(io.StringIO((folder / "variables.csv").read_text()))}
    sql = ("SELECT siteID, date_trunc('month', startDateTime) AS month, avg(soilTempMean) AS mean, "
           "max(soilTempMaximum) - min(soilTempMinimum) AS spread, count(*) AS n, "
           "avg(soilTempMean * 1.8 + 32) AS fahrenheit, stddev(soilTempMean) FROM ST_30_minute WHERE finalQF = 0 "
           "GROUP BY ALL ORDER BY ALL")
    async with stdio_client(sim, sim_token, dl_dir, active_config) as client:
        body = await call(client, "eco_query_tables", {"dataset_id": ds_id, "sql": sql})
    got = cols(body)
    celsius = variables[("ST_30_minute", "soilTempMean")]
    assert celsius == "celsius"
    assert got["mean"]["units"] == got["spread"]["units"] == celsius
    assert got["stddev(soilTempMean)"]["units"] == celsius
    assert got["n"]["units"] == variables[("ST_30_minute", "soilTempNumPts")] == "number"
    assert got["fahrenheit"]["units"] is None and "no unit" in got["fahrenheit"]["unitsReason"]
    assert got["month"]["units"] is None and "time" in got["month"]["unitsReason"]
    assert got["siteID"]["units"] is None and "no unit" in got["siteID"]["unitsReason"]


async def test_suggested_sql_leaves_out_flagged_rows_and_an_unfiltered_aggregate_counts_them(
        sim_cfg, sim, sim_token, dl_dir, active_config, soil):
    ds_id, _, src = soil
    rows = source_rows(src, "ST_30_minute")
    flagged = int((rows["finalQF"] != 0).sum())
    assert 0 < flagged < len(rows)
    async with stdio_client(sim, sim_token, dl_dir, active_config) as client:
        stacked = await call(client, "eco_stack_tables", {"dataset_id": ds_id})
        [ask] = steps(stacked, "eco_query_tables")
        suggested = await call(client, "eco_query_tables", ask["arguments"])
        raw = await call(client, "eco_query_tables", {"dataset_id": ds_id, "sql": "SELECT avg(soilTempMean) AS m "
                                                      "FROM ST_30_minute"})
        kept = await call(client, "eco_query_tables", {"dataset_id": ds_id, "sql": "SELECT avg(soilTempMean) AS m "
                                                       "FROM ST_30_minute WHERE finalQF = 0"})
    # The suggestion filters and says so; its answer has no flagged-rows note.
    assert "WHERE finalQF = 0" in ask["arguments"]["sql"] and "flagged rows left out" in ask["why"]
    assert not [n for n in suggested["notes"] if "finalQF set" in n]
    # The unfiltered mean: a note with the count of flagged rows read, as the source files have it.
    [note] = [n for n in raw["notes"] if "finalQF set" in n]
    assert note.startswith(f"{flagged} of the {len(rows)} rows read") and "soilTempMean" in note
    assert not [n for n in kept["notes"] if "finalQF set" in n]
    assert raw["rows"][0][0] == pytest.approx(rows["soilTempMean"].mean(), rel=1e-12)
    assert kept["rows"][0][0] == pytest.approx(rows[rows["finalQF"] == 0]["soilTempMean"].mean(), rel=1e-12)


async def test_an_answer_cites_the_releases_of_the_rows_it_read(sim_cfg, sim, sim_token, dl_dir, active_config, soil):
    ds_id, folder, _ = soil
    table = pq.read_table(folder / "ST_30_minute.parquet").to_pandas()
    june = set(table[table["startDateTime"] < pd.Timestamp("2025-07-01", tz="UTC")]["release"])
    assert june == {"RELEASE-2026"} and set(table["release"]) == {"RELEASE-2026", "PROVISIONAL"}

    async def ask(sql: str) -> dict[str, Any]:
        return await call(client, "eco_query_tables", {"dataset_id": ds_id, "sql": sql})

    async with stdio_client(sim, sim_token, dl_dir, active_config) as client:
        provisional = await ask("SELECT avg(soilTempMean) FROM ST_30_minute WHERE release = 'PROVISIONAL'")
        released = await ask("SELECT avg(soilTempMean) FROM ST_30_minute_positioned WHERE finalQF = 0 AND "
                             "startDateTime < TIMESTAMP '2025-07-01'")
        joined = await ask("SELECT count(*) FROM ST_30_minute a JOIN sensor_positions p USING (siteID) "
                           "WHERE a.release = 'PROVISIONAL'")
        none = await ask("SELECT avg(soilTempMean) FROM ST_30_minute WHERE siteID = 'NOPE'")
    assert [c["release"] for c in provisional["citations"]] == ["PROVISIONAL"]
    [cite] = steps(provisional, "eco_get_citation")
    assert cite["arguments"]["provisional"] is True and "release" not in cite["arguments"]
    assert {c["release"] for c in released["citations"]} == june
    assert [s["arguments"]["release"] for s in steps(released, "eco_get_citation")] == ["RELEASE-2026"]
    # A join: which rows fed the count is not decidable from the query; every release, said so.
    assert {c["release"] for c in joined["citations"]} == {"PROVISIONAL", "RELEASE-2026"}
    assert any("not decidable" in n and "a join" in n for n in joined["notes"])
    assert none["citations"] == [] and any("nothing to cite" in n for n in none["notes"])


# -- 5: side tables on both transports ---------------------------------------------------------------

def stack_litter(downloads: Path, into: Path) -> tuple[str, dict[str, Any], list[Any]]:
    """Litterfall at two sites stacked with its issue log into `into`/<id>; id, record, sources."""
    sites, window = ["HARV", "SCBI"], ("2023-06", "2023-07")
    sources = write_packages(files_for(1), LITTER, sites, *window, downloads.parent / "litter-src")
    ds_id = dataset.dataset_id(LITTER, sites, *window, "basic", None, False, None)
    selection = {"product": LITTER, "siteCodes": sites, "startMonth": window[0], "endMonth": window[1],
                 "package": "basic", "release": None, "includeProvisional": False, "tables": None}
    built = dataset.build(into / ds_id, dataset.table_sources(sources), root=downloads, product=LITTER,
                          package="basic", wanted=None, selection=selection, citations=CITATIONS, issue_log=ISSUES)
    return ds_id, built.record, sources


async def assert_side_tables(client: Client, ds_id: str, record: dict[str, Any], sources: list[Any]) -> None:
    async def rows(sql: str) -> list[list[Any]]:
        return (await call(client, "eco_query_tables", {"dataset_id": ds_id, "sql": sql, "limit": 5000}))["rows"]

    for kind, name in (("validation", "validation"), ("categorical_codes", "categoricalCodes")):
        src = dataset.newest(sources, kind)
        assert src is not None
        assert await rows(f"SELECT count(*) FROM {name}") == [[len(list(csv.DictReader(io.StringIO(
            src.path.read_text(encoding="utf-8-sig")))))]]
    readmes = await rows("SELECT siteID, file, text FROM readme ORDER BY siteID")
    assert [r[0] for r in readmes] == ["HARV", "SCBI"]
    for site, file, text in readmes:  # each site's newest readme, as published
        newest = max((s for s in sources if s.parsed.kind == "readme" and s.parsed.site == site),
                     key=lambda s: s.parsed.published)
        assert file == newest.name and text == newest.path.read_text(encoding="utf-8") and f"{site}" in text
    assert await rows("SELECT id, issue FROM issue_log ORDER BY id") == [["1", "Traps replaced"], ["2", "Late entry"]]
    # The columns the stack adds are described, as neonUtilities describes them.
    added = {r["fieldName"]: r for r in csv.DictReader(io.StringIO(
        (importlib.resources.files("neonutilities") / "__resources__" / "added_fields.csv").read_text()))}
    described = await rows("SELECT \"table\", fieldName, description FROM variables WHERE downloadPkg = "
                           "'appended by stackByTable'")
    for t in record["tables"].values():
        got = {f: d for tab, f, d in described if tab == t["name"]}
        assert {"release", "publicationDate"} <= set(got), t["name"]
        assert all(got[f] == added[f]["description"] for f in got)


@needs_neonutilities
async def test_every_side_table_is_queryable_by_name_over_stdio(sim_cfg, sim, sim_token, dl_dir, active_config):
    ds_id, record, sources = stack_litter(dl_dir, dl_dir / dataset.FOLDER)
    async with stdio_client(sim, sim_token, dl_dir, active_config) as client:
        await assert_side_tables(client, ds_id, record, sources)


@needs_neonutilities
async def test_every_side_table_is_queryable_by_name_over_http(
        http_server, sim_cfg, sim, active_config, tmp_path, store, rows_cleared, django_db_blocker):
    require_postgres()
    ds_id, record, sources = stack_litter(tmp_path / "downloads", store)
    record_ready(django_db_blocker, ds_id, record, store / ds_id)
    cfg = active_config(sim_config(sim, server__transport="http", tables__store_directory=str(store)))
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            await assert_side_tables(client, ds_id, record, sources)


# -- 7: the path is visible ------------------------------------------------------------------------

async def test_the_tables_path_is_visible_from_instructions_prompt_availability_and_describe(
        sim_cfg, sim, sim_token, dl_dir, active_config):
    window = {"start_month": "2024-01", "end_month": "2024-06"}
    async with stdio_client(sim, sim_token, dl_dir, active_config, mode="auto") as client:
        instructions = client.instructions or ""
        prompt = (await client.get_prompt("eco_find_data", {
            "question": "What was the mean monthly soil temperature at HARV in 2024 at the shallowest depth?"}
        )).messages[0].content.text
        search = dict(re.findall(r'(\w+)="([^"]*)"', re.search(r"eco_search_products\(([^)]*)\)", prompt).group(1)))
        found = await call(client, "eco_search_products", search)
        avail = await call(client, "eco_get_availability", {"product": SOIL, "site": "HARV", **window})
        described = await call(client, "eco_describe_tables", {"product": SOIL, "site_code": "HARV",
                                                               "tables": ["ST_30_minute"], **window})
    assert re.search(r"tables path: eco_describe_tables .*eco_stack_tables .*eco_query_tables", instructions)
    assert search["query"] == "soil temperature" and found["items"][0]["productCode"] == SOIL
    [describe] = steps(avail, "eco_describe_tables")
    [stack] = steps(avail, "eco_stack_tables")
    assert describe["arguments"] == {"product": SOIL, "site_code": "HARV", **window}
    assert stack["arguments"] == {"product": SOIL, "site_codes": ["HARV"], **window}
    [stack] = steps(described, "eco_stack_tables")
    assert stack["arguments"] == {"product": SOIL, "site_codes": ["HARV"], **window, "tables": ["ST_30_minute"]}
    assert [t["type"] for t in described["tables"]] == ["sensor"]
    # The quality flags, as the variables file names them (finalQFSciRvw is the expanded package's).
    flags = sorted(f["name"] for f in described["fields"] if f["name"].endswith(("finalQF", "FinalQF")))
    assert flags == ["finalQF"] and any(f"ST_30_minute: {', '.join(flags)}" in n for n in described["notes"])


async def test_citation_steps_keep_the_selections_releases_and_dois_have_one_form(
        sim_cfg, sim, sim_token, dl_dir, active_config, soil):
    ds_id = soil[0]
    w = world_for(1)
    old = next(t for t in w.release_tags if t != "RELEASE-2026")
    month = next(ym for ym in w.availability(SOIL)["HARV"] if w.release_for_month(SOIL, "HARV", ym, old) == old)
    async with stdio_client(sim, sim_token, dl_dir, active_config) as client:
        pinned = await call(client, "eco_list_files", {"product": SOIL, "site_codes": ["HARV"], "start_month": month,
                                                       "release": old, "detail": "summary"})
        mixed = await call(client, "eco_list_files", {"product": SOIL, "site_codes": ["HARV"],
                                                      "start_month": "2025-06", "end_month": "2025-07",
                                                      "detail": "summary"})
        product = await call(client, "eco_get_product", {"product": SOIL})
        cited = await call(client, "eco_get_citation", {"product": SOIL})
        answered = await call(client, "eco_query_tables", {"dataset_id": ds_id, "sql": "SELECT count(*) FROM "
                                                           "ST_30_minute"})
    assert [s["arguments"] for s in steps(pinned, "eco_get_citation")] == [{"product": SOIL, "release": old}]
    assert sorted(map(str, (s["arguments"] for s in steps(mixed, "eco_get_citation")))) == sorted(map(str, [
        {"product": SOIL, "provisional": True}, {"product": SOIL, "release": "RELEASE-2026"}]))
    dois = [(r["doi"], r["doiUrl"]) for r in product["releases"] if r["doi"]]
    dois += [(product["urls"]["doi"], product["urls"]["doiUrl"]), (cited["doi"], cited["doiUrl"])]
    dois += [(c["doi"], c["doiUrl"]) for c in answered["citations"] if c["doi"]]
    assert len(dois) >= 4
    assert all(not d.startswith("http") and url == f"https://doi.org/{d}" for d, url in dois), dois
