"""NEON's own Python client, pointed at the simulator only through NEON_API_URL, downloads
one product for two sites and three months, and every file it writes matches the simulator; and
its stacker, unmodified, stacks what it downloaded into NEON's usual tables: typed from the
variables files, with the columns it adds, site-all and lab tables de-duplicated."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import os
import pickle
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import httpx
import pytest

PRODUCT, SITES = "DP1.00001.001", ["ABBY", "HARV"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("neonutilities") is None,
                       reason="neonutilities is not installed (pip install neonutilities; needs pandas, pyarrow, "
                              "h5py, google-crc32c from PyPI)"),
]


def _three_shared_months(sim) -> list[str]:
    w = sim.world
    cutoff = w.latest_release["cutoff"]
    a, b = (set(w.availability(PRODUCT)[s]) for s in SITES)
    shared = sorted(m for m in a & b if "2022-01" <= m <= cutoff)
    for i in range(len(shared) - 2):
        if shared[i][:4] == shared[i + 2][:4]:
            return shared[i:i + 3]
    raise AssertionError("no three shared months")


def test_zips_by_product_downloads_files_whose_bytes_match_the_simulator(sim_server, token, tmp_path):
    months = _three_shared_months(sim_server)
    script = textwrap.dedent(f"""
        import neonutilities as nu
        nu.zips_by_product(dpid={PRODUCT!r}, site={SITES!r}, startdate={months[0]!r}, enddate={months[-1]!r},
                           package="basic", token={token!r}, savepath={str(tmp_path)!r}, check_size=False,
                           progress=False)
    """)
    env = dict(os.environ, NEON_API_URL=sim_server.base_url + "/")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]

    zips = sorted(Path(tmp_path).rglob("*.zip"))
    assert len(zips) == len(SITES) * len(months), (done.stderr[-2000:], [z.name for z in zips])
    with httpx.Client(base_url=sim_server.base_url, headers={"X-API-Token": token}, timeout=60) as api:
        for site in SITES:
            for ym in months:
                listing = api.get(f"/data/{PRODUCT}/{site}/{ym}").json()["data"]
                md5s = {f["name"]: f["md5"] for f in listing["files"] if "/basic/" in f["url"]}
                package = api.get(f"/data/package/{PRODUCT}/{site}/{ym}", params={"package": "basic"})
                name = package.headers["content-disposition"].split("filename=")[1].strip('"')
                written = Path(tmp_path) / f"filesToStack{PRODUCT[4:9]}" / name
                assert written.read_bytes() == package.content
                with zipfile.ZipFile(io.BytesIO(written.read_bytes())) as zf:
                    inside = {n: hashlib.md5(zf.read(n)).hexdigest() for n in zf.namelist()}
                assert inside == md5s

    # the token went to the API only; nothing reached the storage host
    assert sim_server.requests.count(r"^/api/v0/data/package/") >= len(zips)
    assert all("x-api-token" in r.headers for r in sim_server.requests.matching(r"^/api/v0/data/"))


# ------------------------------------------------------------------------------------ stacking
# single-aspirated air temperature: 1- and 30-minute tables, three tower levels at each of these sites
# (KONZ has no data in 2023-01, so 5 site-months)
AIR, AIR_SITES, AIR_MONTHS = "DP1.00002.001", ["BARR", "CPER", "KONZ"], ("2023-01", "2023-02")
LITTER, LITTER_SITES, LITTER_MONTHS = "DP1.10033.001", ["HARV", "SCBI", "KONZ"], ("2025-04", "2026-05")
# What neonutilities logs when the variables file does not type a table (it then guesses or reads strings).
FALLBACKS = ("schema did not match", "Data types will be inferred", "set to string", "Failed to stack",
             "casting failed", "variables file not found")
DTYPES = {"real": "float64", "integer": "int64", "string": "str"}


def _stack(sim, token, tmp_path, dpid, sites, months, include_provisional=False):
    """zips_by_product then stack_by_table, unmodified, in a fresh interpreter pointed at the simulator
    (NEON_API_URL); the citation it fetches from data.neonscience.org hits a closed local proxy instead."""
    out = tmp_path / "stacked.pickle"
    script = textwrap.dedent(f"""
        import pickle
        import neonutilities as nu
        nu.zips_by_product(dpid={dpid!r}, site={sites!r}, startdate={months[0]!r}, enddate={months[1]!r},
                           package="basic", token={token!r}, savepath={str(tmp_path)!r}, check_size=False,
                           include_provisional={include_provisional!r}, progress=False)
        tables = nu.stack_by_table({str(tmp_path / f"filesToStack{dpid[4:9]}")!r}, savepath="envt", progress=False)
        with open({str(out)!r}, "wb") as fh:
            pickle.dump(tables, fh)
    """)
    env = dict(os.environ, NEON_API_URL=sim.base_url + "/", HTTPS_PROXY="http://127.0.0.1:9",
               HTTP_PROXY="http://127.0.0.1:9", NO_PROXY="127.0.0.1,localhost")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not [line for line in done.stderr.splitlines() if any(f in line for f in FALLBACKS)], done.stderr[-3000:]
    with open(out, "rb") as fh:
        return pickle.load(fh)


def _served(sim, dpid, sites, months, include_provisional=False):
    """Every package zips_by_product downloads: [(site, month, release, {file name: bytes})]."""
    files, w = sim.state.files, sim.world
    out = []
    for site in sites:
        for ym in w.availability(dpid)[site]:
            release = w.release_for_month(dpid, site, ym, None)
            if months[0] <= ym <= months[1] and (include_provisional or release != "PROVISIONAL"):
                out.append((site, ym, release, {s.name: files.content(s)
                                                for s in files.package_files(dpid, site, ym, "basic", release)}))
    return out


def _rows(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode())))[1:]


def _count(body: bytes) -> int:
    """Data rows of a simulated CSV (one line each: no value holds a line break)."""
    return body.count(b"\n") - 1


def _fields(packages) -> dict[str, list[dict]]:
    [body] = {b for _, _, _, got in packages for n, b in got.items() if ".variables." in n}  # one per release
    out: dict[str, list[dict]] = {}
    for v in csv.DictReader(io.StringIO(body.decode())):
        if v["downloadPkg"] == "basic":
            out.setdefault(v["table"], []).append(v)
    return out


def _check_types(df, fields, table):
    for f in fields:
        dtype = str(df[f["fieldName"]].dtype)
        if f["dataType"] == "dateTime" and "HH" in f["pubFormat"]:
            assert dtype == "datetime64[s, UTC]", (table, f["fieldName"], dtype)
        elif f["dataType"] in DTYPES:
            assert dtype == DTYPES[f["dataType"]], (table, f["fieldName"], dtype)


def _newest(names_bodies):
    """neonutilities' choice among copies of a site-all or lab table: the newest publication *day*
    (YYYYMMDD of the file name); copies published the same day tie."""
    day = max(re.search(r"20\d{6}", n).group(0) for n, _ in names_bodies)
    return [b for n, b in names_bodies if re.search(r"20\d{6}", n).group(0) == day]


def test_stack_by_table_stacks_sensor_data_per_position_with_positions_across_sites(sim_server, token, tmp_path):
    tables = _stack(sim_server, token, tmp_path, AIR, AIR_SITES, AIR_MONTHS)
    packages = _served(sim_server, AIR, AIR_SITES, AIR_MONTHS)
    assert len(packages) == 5
    fields = _fields(packages)
    num = AIR[4:9]
    assert {"SAAT_1min", "SAAT_30min", f"sensor_positions_{num}", f"variables_{num}", f"readme_{num}",
            f"issueLog_{num}"} <= set(tables)
    for table in ("SAAT_1min", "SAAT_30min"):
        df = tables[table]
        sources = [(site, n, b) for site, _, _, got in packages for n, b in got.items() if f".{table}." in n]
        assert len(df) == sum(_count(b) for _, _, b in sources)
        assert list(df.columns) == (["domainID", "siteID", "horizontalPosition", "verticalPosition"]
                                    + [f["fieldName"] for f in fields[table]] + ["publicationDate", "release"])
        _check_types(df, fields[table], table)
        want = {(site, n.split(".")[6], n.split(".")[7]) for site, n, _ in sources}
        assert len(want) == 3 * len(AIR_SITES)
        assert set(zip(df.siteID, df.horizontalPosition, df.verticalPosition, strict=True)) == want
        assert set(df.domainID) == {"D18", "D10", "D06"} and set(df.release) == {"RELEASE-2026"}
        assert set(df.publicationDate) == {"20260123T000749Z"}
        means = [float(v) for _, _, b in sources for line in b.decode().splitlines()[1:]
                 if (v := line.split(",")[2])]  # sensor values hold no commas
        assert df.tempSingleMean.count() == len(means)
        assert abs(df.tempSingleMean.sum() - sum(means)) < 1e-6 * len(means)
    # sensor_positions: one file per site (the same in both months), stacked across sites
    sp = tables[f"sensor_positions_{num}"]
    per_site = {site: b for site, _, _, got in packages for n, b in got.items() if ".sensor_positions." in n}
    assert len(sp) == sum(len(_rows(b)) for b in per_site.values())
    assert list(sp.columns) == ["domainID", "siteID"] + [f["fieldName"] for f in fields["sensor_positions"]] + [
        "publicationDate", "release"]
    _check_types(sp, fields["sensor_positions"], "sensor_positions")
    for site in AIR_SITES:
        mine = sp[sp.siteID == site]
        counts = mine["HOR.VER"].value_counts()
        assert sorted(counts) == [1] * (len(counts) - 1) + [2]  # one sensor moved
        moved = mine[mine["HOR.VER"] == counts.idxmax()].sort_values("positionStartDateTime")
        assert moved.positionEndDateTime.iloc[0] == moved.positionStartDateTime.iloc[1]
    srf_ids = {int(r[0]) for _, _, _, got in packages for n, b in got.items() if ".science_review_flags." in n
               for r in _rows(b)}
    assert srf_ids and sorted(tables[f"science_review_flags_{num}"].srfID) == sorted(srf_ids)


def test_stack_by_table_stacks_observational_tables_keeping_the_newest_site_all_and_lab_files(
        sim_server, token, tmp_path):
    tables = _stack(sim_server, token, tmp_path, LITTER, LITTER_SITES, LITTER_MONTHS, include_provisional=True)
    packages = _served(sim_server, LITTER, LITTER_SITES, LITTER_MONTHS, include_provisional=True)
    assert {r for _, _, r, _ in packages} == {"RELEASE-2026", "PROVISIONAL"}
    fields = _fields(packages)
    num = LITTER[4:9]
    files = sim_server.state.files
    for t in files.product_tables(LITTER):
        copies = [(site, n, b) for site, _, _, got in packages for n, b in got.items() if f".{t.name}." in n]
        if not copies:
            assert t.name not in tables
            continue
        df = tables[t.name]
        if t.ttype == "site-date":  # every month's file
            want = [sum(len(_rows(b)) for _, _, b in copies)]
        elif t.ttype == "site-all":  # the newest file of each site
            newest = {s: _newest([(n, b) for site, n, b in copies if site == s]) for s in {c[0] for c in copies}}
            assert all(len(v) == 1 for v in newest.values()), "a same-day tie: neonutilities would pick by glob order"
            want = [sum(len(_rows(v[0])) for v in newest.values())]
        else:  # the newest file of the lab, whichever site-month package it came in
            want = [len(_rows(b)) for b in _newest([(n, b) for _, n, b in copies])]
        assert len(df) in want, (t.name, len(df), want)
        # observational and lab tables carry their own siteID: only publicationDate and release are added
        assert list(df.columns) == [f["fieldName"] for f in fields[t.name]] + ["publicationDate", "release"]
        _check_types(df, fields[t.name], t.name)
        if not t.is_lab:
            assert set(df.siteID) <= set(LITTER_SITES)
    mass = tables["ltr_massdata"]
    assert set(mass.release) == {"RELEASE-2026", "PROVISIONAL"}
    by_release = mass.groupby("release").size().to_dict()
    assert by_release == {r: sum(len(_rows(b)) for _, _, rel, got in packages if rel == r
                                 for n, b in got.items() if ".ltr_massdata." in n) for r in by_release}
    pertrap = tables["ltr_pertrap"]
    assert pertrap.groupby("siteID").uid.nunique().to_dict() == pertrap.groupby("siteID").size().to_dict()
    assert {f"variables_{num}", f"validation_{num}", f"categoricalCodes_{num}", f"readme_{num}"} <= set(tables)
    # flags repeat in every month's file (those raised by its publication); neonutilities keeps one row per srfID
    srf_ids = {int(r[0]) for _, _, _, got in packages for n, b in got.items() if ".science_review_flags." in n
               for r in _rows(b)}
    assert srf_ids and sorted(tables[f"science_review_flags_{num}"].srfID) == sorted(srf_ids)
