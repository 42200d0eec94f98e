"""eco_download_files against the simulator: data files, ZIPs, a prototype and a document, each
verified; every refusal leaves the download directory exactly as it was; a corrupted transfer,
a resumed one, the manifest and what changed upstream; the token never reaches storage; HTTP."""

# ruff: noqa: F811  (pytest fixtures imported from tests.downloads.conftest are parameters here)
from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from downloads.manifest import NAME as MANIFEST
from mcp_gateway.registry import default_registry
from tests.downloads.conftest import call_tool, dl_dir, sim_token, snapshot  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of

BIRDS = "DP1.10003.001"  # observational: about a dozen small files a site-month
SITE, MONTH = "HARV", "2020-05"
SEL = {"product": BIRDS, "site_codes": [SITE], "start_month": MONTH}


def expected(sim, month: str = MONTH) -> dict[str, bytes]:
    files = sim.state.files
    served = sim.world.release_for_month(BIRDS, SITE, month, None)
    return {s.name: files.content(s) for s in files.package_files(BIRDS, SITE, month, "basic", served)}


def storage_requests(sim) -> list:
    return sim.requests.matching(r"^/storage/")


async def test_data_files_land_verified_under_product_site_month_and_the_token_stays_off_storage(
        call_tool, fresh_sim, dl_dir, sim_token):
    out = await call_tool("eco_download_files", SEL)
    body = out.ok
    want = expected(fresh_sim)
    folder = dl_dir / BIRDS / SITE / MONTH
    assert sorted(p.name for p in folder.iterdir()) == sorted(want)
    for name, data in want.items():
        assert (folder / name).read_bytes() == data
    assert {f["status"] for f in body["files"]} == {"downloaded"} and all(f["verified"] for f in body["files"])
    assert body["requested"] == body["totals"]["files"] == len(want)
    assert body["totals"]["bytesTransferred"] == sum(len(d) for d in want.values())
    # one listing request beyond the transfers, and no token on any storage request
    assert fresh_sim.requests.count(r"^/api/v0/data") == 1
    stored = storage_requests(fresh_sim)
    assert len(stored) == len(want)
    assert all("x-api-token" not in r.headers and "apiToken" not in r.query for r in stored)
    assert not list(dl_dir.rglob("*.part"))


async def test_the_manifest_records_every_file_with_release_doi_and_citation(call_tool, sim, dl_dir):
    await call_tool("eco_download_files", SEL)
    entries = json.loads((dl_dir / MANIFEST).read_text())["files"]
    want = expected(sim)
    assert sorted(entries) == sorted(f"{BIRDS}/{SITE}/{MONTH}/{n}" for n in want)
    entry = entries[f"{BIRDS}/{SITE}/{MONTH}/{next(iter(want))}"]
    data = next(iter(want.values()))
    assert entry["md5"] == hashlib.md5(data).hexdigest() and entry["size"] == len(data)
    assert (entry["product"], entry["site"], entry["month"], entry["release"]) == (BIRDS, SITE, MONTH, "RELEASE-2026")
    assert entry["doi"] and entry["doi"].split("/")[-1] in entry["citation"] and BIRDS in entry["citation"]
    assert entry["fetchedAt"].endswith("Z")


async def test_a_second_call_skips_identical_files_and_fetches_only_what_changed_upstream(call_tool, fresh_sim, dl_dir):
    await call_tool("eco_download_files", SEL)
    again = (await call_tool("eco_download_files", SEL)).ok
    assert {f["status"] for f in again["files"]} == {"skipped"}
    fresh_sim.requests.clear()
    name = next(n for n in expected(fresh_sim) if ".readme." in n)
    fresh_sim.state.files.change(name)
    try:
        body = (await call_tool("eco_download_files", SEL)).ok
        by_name = {f["name"]: f for f in body["files"]}
        assert by_name[name]["status"] == "replaced" and by_name[name]["changedUpstream"] is True
        assert {f["status"] for n, f in by_name.items() if n != name} == {"skipped"}
        assert body["totals"]["changedUpstream"] == 1
        assert len(storage_requests(fresh_sim)) == 1
        new = fresh_sim.state.files.content(next(s for s in fresh_sim.state.files.package_files(
            BIRDS, SITE, MONTH, "basic", "RELEASE-2026") if s.name == name))
        assert (dl_dir / BIRDS / SITE / MONTH / name).read_bytes() == new
        entry = json.loads((dl_dir / MANIFEST).read_text())["files"][f"{BIRDS}/{SITE}/{MONTH}/{name}"]
        assert entry["md5"] == hashlib.md5(new).hexdigest()
    finally:
        fresh_sim.state.files.revisions.pop(name, None)
        fresh_sim.state.files._meta.pop(name, None)
        fresh_sim.state.files.bytes_cache.drop(name)


async def test_package_zips_are_one_per_site_month_and_hold_the_files(call_tool, sim, dl_dir):
    body = (await call_tool("eco_download_files", {**SEL, "as_zip": True})).ok
    [f] = body["files"]
    assert f["source"] == "zip" and f["verified"] and f["path"].startswith(f"{BIRDS}/{SITE}/{MONTH}/")
    with zipfile.ZipFile(dl_dir / f["path"]) as zf:
        assert {i.filename: zf.read(i) for i in zf.infolist()} == expected(sim)


async def test_a_prototype_datasets_files_need_no_token_and_are_md5_verified(call_tool, sim, dl_dir):
    ds = next(iter(sim.state.prototypes.datasets.values()))
    body = (await call_tool("eco_download_files", {"prototype_uuid": ds["uuid"]}, token=None)).ok
    assert len(body["files"]) == len(ds["_files"])
    for f in body["files"]:
        path = dl_dir / f["path"]
        assert f["path"].startswith(f"prototypes/{ds['uuid']}/")
        assert hashlib.md5(path.read_bytes()).hexdigest() == f["md5"]
    one = ds["_files"][0]["fileName"]
    picked = (await call_tool("eco_download_files", {"prototype_uuid": ds["uuid"], "file_names": [one]},
                              token=None)).ok
    assert [f["name"] for f in picked["files"]] == [one] and picked["files"][0]["status"] == "skipped"


async def test_a_document_is_saved_as_its_spec_number_under_documents(call_tool, sim, dl_dir):
    sim.state.documents.lookup("x")  # builds the simulator's document index
    number = next(iter(sim.state.documents._index))
    body = (await call_tool("eco_download_files", {"spec_number": number}, token=None)).ok
    [f] = body["files"]
    assert f["path"] == f"documents/{number}.pdf"
    assert (dl_dir / f["path"]).read_bytes() == sim.state.documents.pdf(number)


@pytest.mark.parametrize("args, code, field", [
    ({**SEL, "dest_subdir": "../escape"}, "download_denied", "dest_subdir"),
    ({**SEL, "dest_subdir": "/tmp/abs"}, "download_denied", "dest_subdir"),
    ({**SEL, "dest_subdir": "out"}, "download_denied", "dest_subdir"),  # a symlink pointing out
    ({**SEL, "max_bytes": 1000}, "download_limit_exceeded", "max_bytes"),
])
async def test_each_refusal_leaves_the_directory_exactly_as_it_was(call_tool, fresh_sim, dl_dir, tmp_path, args,
                                                                  code, field):
    outside = tmp_path / "outside"
    outside.mkdir()
    (dl_dir / "out").symlink_to(outside)
    (dl_dir / "keep.txt").write_text("mine")
    before = snapshot(dl_dir)
    err = error_of(await call_tool("eco_download_files", args), code, field)
    assert snapshot(dl_dir) == before and list(outside.iterdir()) == []
    assert len(storage_requests(fresh_sim)) == 0
    if code == "download_limit_exceeded":
        assert err["details"]["files"] == len(expected(fresh_sim)) and err["details"]["bytes"] > 1000


async def test_a_plan_over_the_file_cap_is_refused_with_its_totals(call_tool, fresh_sim, dl_dir):
    before = snapshot(dl_dir)
    err = error_of(await call_tool("eco_download_files", SEL, downloads__max_files_per_call=3),
                   "download_limit_exceeded")
    assert err["details"]["files"] == len(expected(fresh_sim)) and err["details"]["maxFiles"] == 3
    assert snapshot(dl_dir) == before and len(storage_requests(fresh_sim)) == 0


async def test_if_exists_error_refuses_before_any_transfer(call_tool, fresh_sim, dl_dir):
    await call_tool("eco_download_files", SEL)
    before = snapshot(dl_dir)
    fresh_sim.requests.clear()
    error_of(await call_tool("eco_download_files", {**SEL, "if_exists": "error"}), "download_denied", "if_exists")
    assert snapshot(dl_dir) == before and len(storage_requests(fresh_sim)) == 0


async def test_a_redirect_to_a_foreign_host_is_refused_and_nothing_is_written(call_tool, fresh_sim, dl_dir):
    name = next(iter(expected(fresh_sim)))
    fresh_sim.faults.add("redirect", route=r"^/storage/", target="http://evil.example.net/steal")
    before = snapshot(dl_dir)
    err = error_of(await call_tool("eco_download_files", {**SEL, "name_contains": name}),
                   "download_denied")
    assert "evil.example.net" in err["message"]
    assert snapshot(dl_dir) == before


async def test_a_corrupted_transfer_is_checksum_mismatch_with_no_file_left(call_tool, fresh_sim, dl_dir):
    name = next(n for n in expected(fresh_sim) if ".variables." in n)
    fresh_sim.faults.add("bad_md5", route=r"^/storage/", file=name)
    err = error_of(await call_tool("eco_download_files", {**SEL, "name_contains": name}), "checksum_mismatch")
    assert name in err["message"]
    assert [p for p in dl_dir.rglob("*") if p.is_file()] == []


async def test_a_transfer_killed_half_way_is_resumed_with_a_range_request(call_tool, fresh_sim, dl_dir):
    name, data = max(expected(fresh_sim).items(), key=lambda kv: len(kv[1]))
    keep = len(data) // 2
    fresh_sim.faults.add("truncate", route=r"^/storage/", count=1, file=name, keep=keep)
    first = await call_tool("eco_download_files", {**SEL, "name_contains": name})
    assert first.error["code"] == "upstream_unavailable"
    part = dl_dir / BIRDS / SITE / MONTH / (name + ".part")
    assert part.read_bytes() == data[:keep] and not part.with_name(name).exists()
    fresh_sim.requests.clear()
    body = (await call_tool("eco_download_files", {**SEL, "name_contains": name})).ok
    assert body["files"][0]["status"] == "resumed"
    [req] = storage_requests(fresh_sim)
    assert req.headers["range"] == f"bytes={keep}-"
    assert part.with_name(name).read_bytes() == data and not part.exists()
    assert body["totals"]["bytesTransferred"] == len(data) - keep


async def test_over_http_the_tool_is_not_listed_and_a_call_is_refused(call_tool):
    assert "eco_download_files" not in {s.name for s in default_registry().listed(http=True)}
    assert "eco_download_files" in {s.name for s in default_registry().listed(http=False)}
    error_of(await call_tool("eco_download_files", SEL, transport="http"), "not_available_in_http_mode")


async def test_disabled_downloads_are_feature_unavailable(call_tool, dl_dir):
    error_of(await call_tool("eco_download_files", SEL, downloads__enabled=False), "feature_unavailable")
    assert list(dl_dir.iterdir()) == []


async def test_data_files_without_a_token_are_auth_required(call_tool, fresh_sim):
    error_of(await call_tool("eco_download_files", SEL, token=None), "auth_required")
    assert fresh_sim.requests.count(r"^/api/v0/data") == 0


def test_destinations_are_plain_names(tmp_path: Path):
    from downloads import paths

    with pytest.raises(Exception) as exc:
        paths.plain_name("../x")
    assert getattr(exc.value, "code", None) == "download_denied"


async def test_an_expired_signed_url_is_refreshed_by_asking_for_the_file_again(call_tool, fresh_sim, dl_dir):
    name, data = next(iter(expected(fresh_sim).items()))
    expired = "<?xml version='1.0' encoding='UTF-8'?><Error><Code>ExpiredToken</Code></Error>"
    fresh_sim.faults.add("status", route=r"^/storage/", count=1, status=400, body=expired)
    body = (await call_tool("eco_download_files", {**SEL, "name_contains": name})).ok
    assert body["files"][0]["status"] == "downloaded"
    assert fresh_sim.requests.count(rf"^/api/v0/data/{BIRDS}/{SITE}/{MONTH}/{name}$") == 1
    assert len(storage_requests(fresh_sim)) == 2
    assert (dl_dir / BIRDS / SITE / MONTH / name).read_bytes() == data


async def test_transfers_overlap_up_to_max_concurrency_and_never_beyond(call_tool, fresh_sim, dl_dir):
    import asyncio

    want = expected(fresh_sim)
    assert len(want) > 3
    # The first three storage requests are held unanswered: while they hang, the log shows how
    # many transfers the call has in flight at once (then they are cut, retried and completed).
    fresh_sim.faults.add("hang", route=r"^/storage/", count=3, hold_s=3)
    call = asyncio.ensure_future(call_tool("eco_download_files", SEL, eco__max_concurrency=3))
    for _ in range(200):
        if len(storage_requests(fresh_sim)) >= 3 or call.done():
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)  # room for a fourth transfer to start, had the cap not held it back
    in_flight = len(storage_requests(fresh_sim))
    body = (await call).ok
    assert in_flight == 3
    assert body["totals"]["files"] == len(want) and all(f["verified"] for f in body["files"])


async def test_a_file_over_the_per_file_cap_is_refused_before_any_transfer(call_tool, fresh_sim, dl_dir):
    want = expected(fresh_sim)
    largest = max(len(d) for d in want.values())
    before = snapshot(dl_dir)
    err = error_of(await call_tool("eco_download_files", SEL, downloads__max_file_bytes=largest - 1),
                   "download_limit_exceeded")
    assert err["details"]["largestFileBytes"] == largest and err["details"]["maxFileBytes"] == largest - 1
    assert snapshot(dl_dir) == before and len(storage_requests(fresh_sim)) == 0


async def test_a_relative_dest_subdir_holds_the_product_site_month_layout(call_tool, sim, dl_dir):
    body = (await call_tool("eco_download_files", {**SEL, "dest_subdir": "run-1/birds"})).ok
    folder = dl_dir / "run-1" / "birds" / BIRDS / SITE / MONTH
    assert sorted(p.name for p in folder.iterdir()) == sorted(expected(sim))
    assert all(f["path"].startswith(f"run-1/birds/{BIRDS}/{SITE}/{MONTH}/") for f in body["files"])


async def test_a_file_whose_release_moved_upstream_is_reported_and_recorded_under_the_new_one(call_tool, sim, dl_dir):
    await call_tool("eco_download_files", SEL)
    book = json.loads((dl_dir / MANIFEST).read_text())
    moved = f"{BIRDS}/{SITE}/{MONTH}/{next(iter(expected(sim)))}"
    book["files"][moved]["release"] = "PROVISIONAL"  # as the manifest had it before the month's release
    (dl_dir / MANIFEST).write_text(json.dumps(book))
    body = (await call_tool("eco_download_files", SEL)).ok
    changed = {f["path"] for f in body["files"] if f["changedUpstream"]}
    assert changed == {moved} and body["totals"]["changedUpstream"] == 1
    assert json.loads((dl_dir / MANIFEST).read_text())["files"][moved]["release"] == "RELEASE-2026"
    again = (await call_tool("eco_download_files", SEL)).ok
    assert again["totals"]["changedUpstream"] == 0
