"""Data files, packages, signed storage URLs and documents."""

from __future__ import annotations

import hashlib
import io
import re
import zipfile

import httpx
import pypdf

NAME = re.compile(
    r"^NEON\.D\d{2}\.[A-Z]{4}\.(DP[0-4]\.\d{5}\.\d{3})\."
    r"(?:(\d{3}\.\d{3}\.\d{3})\.\w+\.\d{4}-\d{2}\.(basic|expanded)\.\d{8}T\d{6}Z\.csv"
    r"|(variables|readme|sensor_positions|science_review_flags|validation|categoricalCodes)\.\d{8}T\d{6}Z\.(csv|txt)"
    r"|EML\.\d{8}-\d{8}\.\d{8}T\d{6}Z\.xml"
    r"|\w+\.\d{4}-\d{2}\.(basic|expanded)\.\d{8}T\d{6}Z\.csv"
    r"|\w+\.(basic|expanded)\.\d{8}T\d{6}Z\.csv)$")


def test_a_site_month_lists_basic_and_expanded_files_in_neons_name_grammar(api):
    d = api.get("/data/DP1.00001.001/HARV/2023-03").json()["data"]
    assert d["release"] == "RELEASE-2026"
    assert [p["type"] for p in d["packages"]] == ["basic", "expanded"]
    names = [f["name"] for f in d["files"]]
    assert all(NAME.match(n) for n in names), [n for n in names if not NAME.match(n)]
    kinds = {k for n in names for k in ("variables", "readme", "sensor_positions", "EML") if f".{k}." in n}
    assert kinds == {"variables", "readme", "sensor_positions", "EML"}
    assert any(".000.060.030.2DWSD_30min." in n for n in names)  # HOR.VER.TMI
    assert any(".expanded." in n for n in names) and any("/expanded/" in f["url"] for f in d["files"])


def test_observational_products_carry_validation_and_categorical_code_files(api, sim_server):
    months = sim_server.world.availability("DP1.10003.001")["HARV"]
    d = api.get(f"/data/DP1.10003.001/HARV/{months[0]}").json()["data"]
    names = [f["name"] for f in d["files"]]
    assert any(".DP0.10003.001.validation." in n for n in names)
    assert any(".DP0.10003.001.categoricalCodes." in n for n in names)
    assert any("brd_countdata" in n for n in names)


def test_every_listed_file_downloads_with_the_listed_size_and_md5(api):
    d = api.get("/data/DP1.00001.001/ABBY/2023-02").json()["data"]
    for f in d["files"][:8] + d["files"][-5:]:
        body = httpx.get(f["url"], timeout=30).content
        assert (len(body), hashlib.md5(body).hexdigest()) == (f["size"], f["md5"]), f["name"]


def test_provisional_months_are_served_with_release_provisional_and_no_release_path(api, sim_server):
    month = next(m for m in sim_server.world.availability("DP1.00001.001")["ABBY"] if m >= "2025-07")
    d = api.get(f"/data/DP1.00001.001/ABBY/{month}").json()["data"]
    assert d["release"] == "PROVISIONAL"
    assert "/release/tag/" not in d["files"][0]["url"]


def test_a_file_path_under_data_redirects_to_its_signed_storage_url(api, sim_server):
    f = api.get("/data/DP1.00001.001/ABBY/2023-02").json()["data"]["files"][0]
    r = api.get(f"/data/DP1.00001.001/ABBY/2023-02/{f['name']}")
    assert r.status_code == 302 and r.headers["location"].startswith(sim_server.storage_base)


def test_signed_urls_expire_after_seven_days(api, sim_server):
    f = api.get("/data/DP1.00001.001/ABBY/2023-02").json()["data"]["files"][-1]
    assert "X-Goog-Expires=604800" in f["url"]
    try:
        sim_server.advance_clock(6 * 86400)
        assert httpx.get(f["url"], timeout=30).status_code == 200
        sim_server.advance_clock(2 * 86400)
        expired = httpx.get(f["url"], timeout=30)
        assert expired.status_code == 400 and "ExpiredToken" in expired.text
    finally:
        sim_server.state.clock_offset = 0.0
    tampered = f["url"].replace("X-Goog-Signature=", "X-Goog-Signature=00")
    assert httpx.get(tampered, timeout=30).status_code == 403


def test_package_zips_hold_exactly_the_listed_files_and_name_themselves(api):
    d = api.get("/data/DP1.00001.001/ABBY/2023-02").json()["data"]
    head = api.head(d["packages"][0]["url"])
    assert head.status_code == 200
    name = head.headers["content-disposition"].split("filename=")[1].strip('"')
    assert name.endswith(".RELEASE-2026.zip")
    body = api.get(d["packages"][0]["url"]).content
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        got = {n: hashlib.md5(zf.read(n)).hexdigest() for n in zf.namelist()}
    assert got == {f["name"]: f["md5"] for f in d["files"] if "/basic/" in f["url"]}


def test_data_query_by_get_and_post_agree_and_exclude_provisional_unless_asked(api):
    body = {"productCode": "DP1.10003.001", "siteCodes": ["HARV"], "startDateMonth": "2015-01",
            "endDateMonth": "2026-08", "package": "basic"}
    posted = api.post("/data/query", json=body).json()["data"]
    got = api.get("/data/query", params={"productCode": "DP1.10003.001", "siteCode": "HARV",
                                         "startDateMonth": "2015-01", "endDateMonth": "2026-08"}).json()["data"]
    strip = lambda d: [[p["month"] for p in r["packages"]] for r in d["releases"]]  # noqa: E731
    assert strip(posted) == strip(got)
    assert all(r["release"] != "PROVISIONAL" for r in posted["releases"])
    with_prov = api.post("/data/query", json=dict(body, includeProvisional=True)).json()["data"]
    assert with_prov["releases"][-1]["release"] == "PROVISIONAL"
    assert with_prov["releases"][-1]["generationDate"] is None
    old = api.post("/data/query", json=dict(body, release="RELEASE-2023")).json()["data"]
    assert [r["release"] for r in old["releases"]] == ["RELEASE-2023"]


def test_a_ten_megabyte_file_is_served_whole(api, sim_server):
    month = sim_server.world.availability("DP4.00200.001")["HARV"][0]
    f = api.get(f"/data/DP4.00200.001/HARV/{month}").json()["data"]["files"][0]
    assert f["name"].endswith(".h5") and f["size"] > 10_000_000
    body = httpx.get(f["url"], timeout=60).content
    assert hashlib.md5(body).hexdigest() == f["md5"]


def test_documents_are_multi_page_pdfs_with_text_head_and_404(api, anon):
    spec = api.get("/products/DP1.00001.001").json()["data"]["specs"][0]
    r = httpx.get(spec["specUrl"], timeout=30)
    assert r.status_code == 200 and r.headers["content-type"] == "application/pdf"
    assert len(r.content) == spec["specSize"]
    assert r.headers["content-disposition"] == f'attachment; filename="{spec["specNumber"]}.pdf"'
    reader = pypdf.PdfReader(io.BytesIO(r.content))
    assert len(reader.pages) >= 3 and spec["specNumber"] in reader.pages[0].extract_text()
    head = httpx.head(spec["specUrl"], timeout=30)
    assert head.status_code == 200 and int(head.headers["content-length"]) == spec["specSize"]
    assert anon.get("/documents/NEON.DOC.999999vZ").status_code == 404


def test_storage_serves_byte_ranges_for_resumed_downloads(api):
    f = api.get("/data/DP1.00001.001/ABBY/2023-02").json()["data"]["files"][0]
    whole = httpx.get(f["url"], timeout=30).content
    part = httpx.get(f["url"], headers={"Range": "bytes=100-"}, timeout=30)
    assert part.status_code == 206 and part.content == whole[100:]
    assert part.headers["content-range"] == f"bytes 100-{len(whole) - 1}/{len(whole)}"


def test_data_query_reads_include_provisional_as_a_boolean_or_a_string(api):
    body = {"productCode": "DP1.10003.001", "siteCodes": ["HARV"], "startDateMonth": "2025-01",
            "endDateMonth": "2026-08"}
    for flag, want in ((False, False), ("false", False), (True, True), ("true", True)):
        rels = api.post("/data/query", json=dict(body, includeProvisional=flag)).json()["data"]["releases"]
        assert any(r["release"] == "PROVISIONAL" for r in rels) is want, flag
