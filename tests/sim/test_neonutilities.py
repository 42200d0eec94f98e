"""NEON's own Python client, pointed at the simulator only through NEON_API_URL, downloads
one product for two sites and three months, and every file it writes matches the simulator."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
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
