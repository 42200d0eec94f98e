"""eco_stack_tables against the simulator: the tables it stacks equal, row for row, what NEON's own
client makes of the same selection (zips_by_product then stack_by_table); a second call fetches
and rebuilds nothing; a file re-published upstream is fetched again and rebuilds exactly its
table; caps and confinement are refused before any byte; progress reaches a client that asks."""

# ruff: noqa: F811  (pytest fixtures imported from tests.downloads.conftest are parameters here)
from __future__ import annotations

import importlib.util
import logging
import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from mcp import Client

from mcp_gateway.server import build_server
from tests.downloads.conftest import call_tool, dl_dir, sim_token, token_config  # noqa: F401  (fixtures)
from tests.tables.neon_support import assert_same_table, variables_units
from tests.tools.conftest import error_of

LITTER, SITES, WINDOW = "DP1.10033.001", ["HARV", "SCBI", "KONZ"], ("2025-04", "2026-05")
AIR, AIR_SITES, AIR_WINDOW = "DP1.00002.001", ["BARR", "CPER", "KONZ"], ("2023-01", "2023-12")
SMALL = {"product": LITTER, "site_codes": ["HARV"], "start_month": "2023-06", "end_month": "2023-07"}
STORAGE = r"^/storage/"


def _neonutilities(sim, token: str, tmp_path: Path, dpid: str, sites: list[str], months: tuple[str, str],
                   drop: str | None = None) -> dict:
    """NEON's client, unmodified, pointed at the simulator: its ZIPs, then its stacker. `drop`: data
    files matching this pattern are removed from the unzipped packages before stacking."""
    out = tmp_path / "nu.pickle"
    script = textwrap.dedent(f"""
        import pickle, zipfile
        from pathlib import Path
        import neonutilities as nu
        nu.zips_by_product(dpid={dpid!r}, site={sites!r}, startdate={months[0]!r}, enddate={months[1]!r},
                           package="basic", token={token!r}, savepath={str(tmp_path)!r}, check_size=False,
                           include_provisional=True, progress=False)
        folder = Path({str(tmp_path / f"filesToStack{dpid[4:9]}")!r})
        if {drop!r}:
            for z in sorted(folder.glob("*.zip")):
                with zipfile.ZipFile(z) as zf:
                    zf.extractall(folder / z.name[:-4])
                z.unlink()
            for p in folder.glob("*/" + {drop!r}):
                p.unlink()
        tables = nu.stack_by_table(str(folder), savepath="envt", progress=False)
        with open({str(out)!r}, "wb") as fh:
            pickle.dump(tables, fh)
    """)
    env = dict(os.environ, NEON_API_URL=sim.base_url + "/", HTTPS_PROXY="http://127.0.0.1:9",
               HTTP_PROXY="http://127.0.0.1:9", NO_PROXY="127.0.0.1,localhost")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out, "rb") as fh:
        return pickle.load(fh)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("neonutilities") is None, reason="neonutilities is not installed")
async def test_the_stacked_tables_equal_neonutilities_from_the_same_selection(call_tool, sim, sim_token, dl_dir,
                                                                                tmp_path):
    body = (await call_tool("eco_stack_tables", {"product": LITTER, "site_codes": SITES, "start_month": WINDOW[0],
                                                 "end_month": WINDOW[1], "include_provisional": True})).ok
    theirs = _neonutilities(sim, sim_token, tmp_path, LITTER, SITES, WINDOW)
    folder = Path(body["folder"])
    assert folder.parent == dl_dir / "datasets" and folder.name == body["datasetId"]
    num = LITTER[4:9]
    names = {t["name"] for t in body["tables"]}
    assert names == {k.removesuffix(f"_{num}") for k in theirs
                     if not k.startswith(("variables_", "readme_", "validation_", "categoricalCodes_", "issueLog_",
                                          "citation_"))}
    for t in body["tables"]:
        key = f"{t['name']}_{num}" if t["name"] == "science_review_flags" else t["name"]
        mine = pq.read_table(folder / t["file"]).to_pandas()
        assert_same_table(mine, theirs[key], t["name"])
        assert t["rows"] == len(mine) and [c["name"] for c in t["columns"]] == list(mine.columns)
    mass = next(t for t in body["tables"] if t["name"] == "ltr_massdata")
    cols = {c["name"]: c for c in mass["columns"]}
    assert cols["dryMass"] == {"name": "dryMass", "type": "double", "units": "gram"}
    assert cols["collectDate"]["type"] == "timestamp" and cols["release"] == {"name": "release", "type": "string",
                                                                              "units": None}
    assert mass["timeSpan"]["startColumn"] == "collectDate" and WINDOW[0] <= mass["timeSpan"]["start"][:7]
    assert body["releases"] == ["PROVISIONAL", "RELEASE-2026"]
    cites = {c["release"]: c for c in body["citations"]}
    assert cites["RELEASE-2026"]["doi"] and "@misc{" in cites["RELEASE-2026"]["bibtex"]
    assert cites["PROVISIONAL"]["doi"] is None and "provisional" in cites["PROVISIONAL"]["text"]
    assert {"variables", "readme", "validation", "categorical_codes"} <= set(body["files"])
    record = (folder / "dataset.json").read_text()
    assert '"md5"' in record and "RELEASE-2026" in record
    # Stacked: the next step is a query of the dataset (the first rows of a table), then its dictionary.
    assert [s["tool"] for s in body["nextSteps"]] == ["eco_query_tables", "eco_describe_tables"]
    ask = body["nextSteps"][0]["arguments"]
    assert ask["dataset_id"] == body["datasetId"]
    asked = (await call_tool("eco_query_tables", ask)).ok
    assert asked["returned"] == 10 and asked["citations"]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("neonutilities") is None, reason="neonutilities is not installed")
async def test_a_sensor_product_over_three_sites_and_twelve_months_equals_neonutilities_from_the_same_selection(
        call_tool, sim, sim_token, dl_dir, tmp_path):
    # The 30-minute table: its 1-minute files are left out of neonutilities' input (the tool is
    # asked for SAAT_30min only), or its stacking alone would take minutes.
    body = (await call_tool("eco_stack_tables", {"product": AIR, "site_codes": AIR_SITES, "start_month": AIR_WINDOW[0],
                                                 "end_month": AIR_WINDOW[1], "tables": ["SAAT_30min"]})).ok
    theirs = _neonutilities(sim, sim_token, tmp_path, AIR, AIR_SITES, AIR_WINDOW, drop="*.SAAT_1min.*")
    folder = Path(body["folder"])
    num = AIR[4:9]
    assert {t["name"] for t in body["tables"]} == {"SAAT_30min", "sensor_positions", "science_review_flags"}
    assert {t["name"] for t in body["tables"]} == {k.removesuffix(f"_{num}") for k in theirs if not k.startswith(
        ("variables_", "readme_", "validation_", "categoricalCodes_", "issueLog_", "citation_"))}
    units = variables_units((folder / "variables.csv").read_bytes())
    for t in body["tables"]:
        key = t["name"] if t["name"] == "SAAT_30min" else f"{t['name']}_{num}"
        mine = pq.read_table(folder / t["file"]).to_pandas()
        assert_same_table(mine, theirs[key], t["name"])
        assert t["rows"] == len(mine)
        for c in t["columns"]:  # the variables file's units, or none for the columns neonUtilities adds
            assert c["units"] == (None if units.get((t["name"], c["name"]), "NA") in ("", "NA")
                                  else units[(t["name"], c["name"])]), (t["name"], c)
    saat = pq.read_table(folder / "SAAT_30min.parquet").to_pandas()
    positions = set(zip(saat.siteID, saat.horizontalPosition, saat.verticalPosition, strict=True))
    assert len({site for site, _, _ in positions}) == 3 and len(positions) >= 9  # several positions per site
    sp = pq.read_table(folder / "sensor_positions.parquet").to_pandas()
    assert (sp.groupby("siteID")["HOR.VER"].value_counts() == 2).sum() == 3  # one moved sensor per site
    meta = pq.read_schema(folder / "SAAT_30min.parquet").field("tempSingleMean").metadata
    assert meta[b"units"].decode() == units[("SAAT_30min", "tempSingleMean")]


async def test_a_second_call_fetches_and_rebuilds_nothing_and_a_changed_file_rebuilds_only_its_table(
        call_tool, fresh_sim, dl_dir):
    first = (await call_tool("eco_stack_tables", SMALL)).ok
    assert first["totals"]["downloaded"] == first["totals"]["sourceFiles"] > 0
    assert all(t["rebuilt"] for t in first["tables"])
    folder = Path(first["folder"])
    mtimes = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.parquet")}
    fresh_sim.requests.clear()
    again = (await call_tool("eco_stack_tables", SMALL)).ok
    assert fresh_sim.requests.count(STORAGE) == 0
    assert again["totals"]["downloaded"] == 0 and again["totals"]["tablesRebuilt"] == 0
    assert any("answered from its dataset.json" in n for n in again["notes"])
    assert not any(t["rebuilt"] for t in again["tables"])
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("*.parquet")} == mtimes
    assert [t["rows"] for t in again["tables"]] == [t["rows"] for t in first["tables"]]

    files = fresh_sim.state.files
    name = next(s.name for s in files.package_files(LITTER, "HARV", "2023-07", "basic", "RELEASE-2026")
                if ".ltr_massdata." in s.name)
    try:
        files.change(name)
        fresh_sim.requests.clear()
        third = (await call_tool("eco_stack_tables", SMALL, cache__enabled=False)).ok
        fetched = [r.path for r in fresh_sim.requests.matching(STORAGE)]
        assert len(fetched) == 1 and fetched[0].endswith(name)
        assert [t["name"] for t in third["tables"] if t["rebuilt"]] == ["ltr_massdata"]
        after = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.parquet")}
        assert {n for n in after if after[n] != mtimes[n]} == {"ltr_massdata.parquet"}
    finally:
        files.revisions.pop(name, None)
        files._meta.pop(name, None)  # the simulator's cached size and MD5
        files.bytes_cache.drop(name)


async def test_caps_and_confinement_are_refused_before_any_byte(call_tool, fresh_sim, dl_dir, tmp_path):
    out = await call_tool("eco_stack_tables", {**SMALL, "max_bytes": 1})
    assert error_of(out, "download_limit_exceeded")["details"]["bytes"] > 1
    out = await call_tool("eco_stack_tables", SMALL, downloads__max_stack_files=3)
    assert error_of(out, "download_limit_exceeded")["details"]["maxFiles"] == 3
    assert fresh_sim.requests.count(STORAGE) == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (dl_dir / "datasets").symlink_to(outside)
    fresh_sim.requests.clear()
    out = await call_tool("eco_stack_tables", SMALL)
    error_of(out, "download_denied")
    assert fresh_sim.requests.count(r"^/api/v0/data") == 0 and fresh_sim.requests.count(STORAGE) == 0
    assert list(outside.iterdir()) == [] and sorted(p.name for p in dl_dir.iterdir()) == ["datasets"]


async def test_bad_selections_name_their_field(call_tool, fresh_sim):
    error_of(await call_tool("eco_stack_tables", {**SMALL, "tables": ["ltr_nope"]}), "not_found", "tables")
    error_of(await call_tool("eco_stack_tables", {**SMALL, "site_codes": ["HARV"] * 31}), "invalid_argument",
             "site_codes")
    error_of(await call_tool("eco_stack_tables", {**SMALL, "end_month": "2023-01"}), "invalid_argument", "end_month")
    error_of(await call_tool("eco_stack_tables", SMALL, token=None), "auth_required")
    error_of(await call_tool("eco_stack_tables", SMALL, downloads__enabled=False), "feature_unavailable")
    error_of(await call_tool("eco_stack_tables", {**SMALL, "end_month": None}), "not_found", "start_month")  # no data
    assert fresh_sim.requests.count(STORAGE) == 0


async def test_a_client_that_sends_a_progress_token_gets_progress_notifications(sim, sim_token, dl_dir,
                                                                                 active_config, sim_cfg, caplog):
    cfg = token_config(sim, sim_token, dl_dir, server__transport="stdio")
    active_config(cfg)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(build_server(cfg), mode="2026-07-28") as client:
        result = await client.call_tool("eco_stack_tables", {**SMALL, "tables": ["ltr_massdata"]},
                                        progress_callback=on_progress)
        assert not result.is_error, result.structured_content
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="eco.tables"):
            quiet = await client.call_tool("eco_stack_tables", {**SMALL, "tables": ["ltr_pertrap"]})
        assert not quiet.is_error
    # Without a token the progress still reaches the operator's log (stderr on stdio): files,
    # bytes, then tables done.
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stack progress")]
    assert any("downloaded" in m and "bytes" in m for m in logged), logged
    assert any(re.search(r"stacking: (\d+)/\1 tables", m) for m in logged), logged
    assert seen, "no progress notification"
    assert any("downloaded" in (m or "") for _, _, m in seen) and any("stacking" in (m or "") for _, _, m in seen)
    assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen) and all(t and p <= t for p, t, _ in seen)
