"""eco_list_files against the simulator: GET for one site-month, one POST otherwise, the caps
before any request, the filters, the details, one file's URL and the URL elision order."""

# ruff: noqa: F811  (pytest fixtures imported from tests.downloads.conftest are parameters here)
from __future__ import annotations

import time

import pytest

from downloads.kinds import classify
from families.files import url_expiry
from tests.downloads.conftest import call_tool, dl_dir, sim_token  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of

SOIL = "DP1.00041.001"  # sensor product: HOR.VER.TMI in its names, basic and expanded packages
MONTH = "2020-06"       # in RELEASE-2026 at HARV and BART


def sim_files(sim, site: str, month: str, package: str = "basic", release: str = "RELEASE-2026") -> dict[str, tuple]:
    files = sim.state.files
    return {s.name: files.meta(s)[:2] for s in files.package_files(SOIL, site, month, package, release)}


async def test_one_site_and_month_uses_the_get_listing_with_its_package_links(call_tool, fresh_sim):
    out = await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH,
                                             "limit": 200})
    body = out.ok
    assert out.requests == 1
    assert fresh_sim.requests.count(rf"^/api/v0/data/{SOIL}/HARV/{MONTH}$") == 1
    assert fresh_sim.requests.count(r"^/api/v0/data/query") == 0
    expected = sim_files(fresh_sim, "HARV", MONTH)
    assert {f["name"]: (f["size"], f["md5"]) for f in body["files"]} == expected
    assert all(f["release"] == "RELEASE-2026" and f["siteCode"] == "HARV" and f["month"] == MONTH
               for f in body["files"])
    assert [p["type"] for p in body["packages"]] == ["basic"]
    assert body["summary"]["files"] == len(expected) and body["summary"]["bytes"] == sum(s for s, _ in expected.values())
    assert body["window"] == {"startMonth": MONTH, "endMonth": MONTH} and body["urlsElided"] is False


async def test_wider_selection_is_one_post_query(call_tool, fresh_sim):
    out = await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV", "BART"], "start_month": "2020-05",
                                             "end_month": MONTH, "detail": "site_months"})
    body = out.ok
    assert out.requests == 1
    [query] = fresh_sim.requests.matching(r"^/api/v0/data/query$")
    assert query.method == "POST"
    assert fresh_sim.requests.count(rf"^/api/v0/data/{SOIL}/") == 0
    rows = {(r["siteCode"], r["month"]): r for r in body["siteMonths"]}
    assert set(rows) == {(s, m) for s in ("BART", "HARV") for m in ("2020-05", MONTH)}
    harv = sim_files(fresh_sim, "HARV", MONTH)
    assert rows[("HARV", MONTH)]["files"] == len(harv)
    assert rows[("HARV", MONTH)]["bytes"] == sum(s for s, _ in harv.values())
    assert body["files"] is None and body["summary"]["siteMonths"] == 4


async def test_without_a_token_it_is_auth_required_before_any_request(call_tool, fresh_sim):
    out = await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH},
                          token=None)
    error_of(out, "auth_required")
    assert fresh_sim.requests.count(r"^/api/v0/data") == 0


async def test_more_site_months_than_the_cap_is_query_too_large_before_any_request(call_tool, fresh_sim):
    out = await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV", "BART"],
                                             "start_month": "2000-01", "end_month": "2024-12"})
    err = error_of(out, "query_too_large", "site-months")
    assert (err["details"]["siteMonths"], err["details"]["maxSiteMonths"]) == (2 * 300, 500)
    assert out.requests == 0 and fresh_sim.requests.count(r"^/api/v0/data") == 0


async def test_more_sites_than_the_configured_cap_is_an_invalid_site_codes_before_any_request(call_tool, fresh_sim):
    out = await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV"] * 31, "start_month": MONTH})
    err = error_of(out, "invalid_argument", "site_codes")
    assert (err["details"]["maximum"], err["details"]["setting"]) == (30, "limits.max_sites_per_call")
    fewer = await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV", "BART"], "start_month": MONTH},
                            limits__max_sites_per_call=1)
    assert error_of(fewer, "invalid_argument", "site_codes")["details"]["maximum"] == 1
    assert out.requests == fewer.requests == 0 and fresh_sim.requests.count(r"^/api/v0/data") == 0


@pytest.mark.parametrize("args, field", [
    ({"start_month": "2020-13"}, "start_month"),
    ({"start_month": MONTH, "end_month": "2020-01"}, "end_month"),
    ({"start_month": MONTH, "kind": "pictures"}, "kind"),
    ({"start_month": MONTH, "limit": 201}, "limit"),
    ({"start_month": MONTH, "release": "PROVISIONAL"}, "release"),
    ({"start_month": MONTH, "product": ""}, "product"),
])
async def test_bad_inputs_name_their_field(call_tool, args, field):
    out = await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV"], **args})
    error_of(out, "invalid_argument", field)


async def test_kind_and_sensor_position_filters_keep_only_matching_files(call_tool, sim):
    base = {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH, "limit": 200}
    every = (await call_tool("eco_list_files", base)).ok["files"]
    data = [f for f in every if f["kind"] == "data"]
    first = data[0]
    picked = (await call_tool("eco_list_files", {**base, "kind": "data", "hor": first["hor"], "ver": first["ver"],
                                                 "tmi": first["tmi"]})).ok["files"]
    assert picked and all((f["hor"], f["ver"], f["tmi"]) == (first["hor"], first["ver"], first["tmi"]) for f in picked)
    assert len(picked) < len(data) or len({(f["hor"], f["ver"]) for f in data}) == 1
    variables = (await call_tool("eco_list_files", {**base, "kind": "variables"})).ok["files"]
    assert [f["name"] for f in variables] == [f["name"] for f in every if ".variables." in f["name"]]
    table = (await call_tool("eco_list_files", {**base, "table": first["table"].upper()})).ok["files"]
    assert {f["name"] for f in table} == {f["name"] for f in data if f["table"] == first["table"]}
    named = (await call_tool("eco_list_files", {**base, "name_contains": "README"})).ok["files"]
    assert [classify(f["name"]).kind for f in named] == ["readme"]


async def test_summary_detail_gives_totals_only(call_tool):
    body = (await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH,
                                               "detail": "summary"})).ok
    assert body["files"] is None and body["siteMonths"] is None and body["page"] is None
    assert body["summary"]["files"] == sum(body["summary"]["byKind"].values())
    assert body["summary"]["byRelease"] == {"RELEASE-2026": body["summary"]["files"]}


async def test_filename_gives_that_files_url_and_an_unknown_one_is_not_found(call_tool, sim):
    name = next(n for n in sim_files(sim, "HARV", MONTH) if ".readme." in n)
    base = {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH}
    [one] = (await call_tool("eco_list_files", {**base, "filename": name})).ok["files"]
    assert one["name"] == name and one["url"].startswith(sim.storage_base)
    error_of(await call_tool("eco_list_files", {**base, "filename": "NEON.nothing.csv"}), "not_found", "filename")
    wide = await call_tool("eco_list_files", {**base, "end_month": "2020-07", "filename": name})
    error_of(wide, "invalid_argument", "filename")


async def test_urls_expire_about_a_week_out_and_the_curl_hint_carries_no_token(call_tool, sim_token):
    body = (await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH})).ok
    expires = time.mktime(time.strptime(body["urlExpiresAt"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert 6.9 * 86400 < expires - time.time() <= 7 * 86400 + 60
    assert min(url_expiry(f["url"]) or 0 for f in body["files"]) == pytest.approx(expires, abs=1)
    assert body["curlHint"].startswith("curl ") and body["files"][0]["url"] in body["curlHint"]
    assert sim_token not in str(body)


async def test_under_the_byte_budget_urls_go_from_the_end_of_the_page_before_files(call_tool):
    args = {"product": SOIL, "site_codes": ["HARV", "BART"], "start_month": "2020-01", "end_month": MONTH,
            "limit": 30}
    full = (await call_tool("eco_list_files", args)).ok
    assert full["urlsElided"] is False and all(f["url"] for f in full["files"])
    tight = (await call_tool("eco_list_files", args, limits__max_result_bytes=20000)).ok
    files = tight["files"]
    assert tight["urlsElided"] is True and len(files) == len(full["files"]) == 30
    with_url = [bool(f["url"]) for f in files]
    assert with_url[0] and not with_url[-1]
    assert with_url == sorted(with_url, reverse=True)  # a prefix keeps its URLs, the rest lost them
    assert [f["name"] for f in files] == [f["name"] for f in full["files"]]


async def test_provisional_months_are_left_out_on_request(call_tool, sim):
    months = sim.world.availability(SOIL)["HARV"]
    recent = months[-1]  # newer than the latest release
    base = {"product": SOIL, "site_codes": ["HARV"], "start_month": recent}
    with_prov = (await call_tool("eco_list_files", base)).ok
    assert with_prov["files"] and {f["release"] for f in with_prov["files"]} == {"PROVISIONAL"}
    without = (await call_tool("eco_list_files", {**base, "include_provisional": False})).ok
    assert without["files"] == [] and without["summary"]["files"] == 0


async def test_the_download_step_it_suggests_is_accepted_by_the_download_tool(call_tool, sim):
    name = next(n for n in sim_files(sim, "HARV", MONTH) if ".readme." in n)
    body = (await call_tool("eco_list_files", {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH,
                                               "filename": name, "detail": "files"})).ok
    step = next(s for s in body["nextSteps"] if s["tool"] == "eco_download_files")
    assert step["arguments"] == {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH, "name_contains": name}
    done = (await call_tool("eco_download_files", step["arguments"])).ok
    assert [f["name"] for f in done["files"]] == [name]


async def test_the_expanded_package_lists_its_own_files(call_tool, sim):
    base = {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH, "limit": 200}
    body = (await call_tool("eco_list_files", {**base, "package": "expanded"})).ok
    expanded = sim_files(sim, "HARV", MONTH, "expanded")
    assert {f["name"]: (f["size"], f["md5"]) for f in body["files"]} == expanded
    assert set(expanded) != set(sim_files(sim, "HARV", MONTH, "basic"))


async def test_a_named_release_lists_that_releases_files_and_the_default_is_each_months_latest(call_tool, sim):
    base = {"product": SOIL, "site_codes": ["HARV"], "start_month": MONTH, "limit": 200}
    latest = (await call_tool("eco_list_files", base)).ok["files"]
    older = (await call_tool("eco_list_files", {**base, "release": "RELEASE-2024"})).ok["files"]
    assert {f["release"] for f in latest} == {"RELEASE-2026"} and {f["release"] for f in older} == {"RELEASE-2024"}
    assert {f["name"]: (f["size"], f["md5"]) for f in older} == sim_files(sim, "HARV", MONTH, release="RELEASE-2024")
    # A window from a released month to the newest one: each month under its own latest release.
    newest = sim.world.availability(SOIL)["HARV"][-1]
    summary = (await call_tool("eco_list_files", {**base, "end_month": newest, "detail": "summary"})).ok["summary"]
    assert set(summary["byRelease"]) == {"RELEASE-2026", "PROVISIONAL"}


async def test_following_each_pages_next_step_lists_every_file_once(call_tool):
    args = {"product": SOIL, "site_codes": ["HARV", "BART"], "start_month": "2020-04", "end_month": MONTH,
            "limit": 200}
    every = [f["name"] for f in (await call_tool("eco_list_files", args)).ok["files"]]
    assert len(every) > 14 and len(every) % 7  # several pages, the last one short
    got: list[str] = []
    step: dict | None = {**args, "limit": 7}
    while step is not None:
        body = (await call_tool("eco_list_files", step)).ok
        got += [f["name"] for f in body["files"]]
        nxt = [s for s in body["nextSteps"] if s["tool"] == "eco_list_files" and "offset" in s["arguments"]]
        if body["page"]["nextOffset"] is None:
            assert nxt == []
            step = None
        else:
            [only] = nxt
            assert only["arguments"]["offset"] == body["page"]["nextOffset"] and only["arguments"]["limit"] == 7
            step = only["arguments"]
    assert got == every
