"""eco_get_sample against the simulator: the token rules, exactly one identifier, relatives by
degree, event trimming, paging, token-scoped caching, and a canary token that never surfaces."""

from __future__ import annotations

import json
import logging

import pytest

from eco_core.redact import token_hash
from tests.tools.conftest import error_of
from tests.tools.sample_support import bio_cfg, run, used  # noqa: F401  (fixture)
from upstream.cache import UpstreamCache
from upstream_sim.biodata import Samples


def _samples(sim):
    return sim.state.samples.samples


def _middle(sim):
    """A sample with a parent and a child (the middle of a three-level chain)."""
    return next(s for s in _samples(sim) if s["_parents"] and s["_children"])


async def test_without_a_token_it_is_auth_required_before_any_request(bio_cfg):  # noqa: F811
    out = await run(bio_cfg, "eco_get_sample", {"barcode": "A00000123456"})
    error_of(out, "auth_required")
    assert out.requests == 0


async def test_a_rejected_token_is_forbidden(bio_cfg, sim):  # noqa: F811
    out = await run(bio_cfg, "eco_get_sample", {"sample_uuid": _middle(sim)["sampleUuid"]}, token="not-a-real-token")
    error_of(out, "forbidden")


async def test_a_barcode_finds_its_sample_with_events_and_relatives(bio_cfg, sim):  # noqa: F811
    out = await run(bio_cfg, "eco_get_sample", {"barcode": "A00000123456"}, token=sim.issue_token())
    body = out.ok
    [item] = body["items"]
    assert item["barcode"] == "A00000123456" and item["sampleClass"] == "bet_IDandpinning_in.individualID"
    assert item["eventsTotal"] == 2 and len(item["sampleEvents"]) == 2
    assert [c["sampleTag"] for c in item["childSampleIdentifiers"]] == ["A00000123456.1"]
    assert body["identifier"] == {"barcode": "A00000123456"} and body["degree"] is None
    assert used(out) == 1


async def test_a_tag_in_one_class_is_read_in_that_class(bio_cfg, sim):  # noqa: F811
    mid = _middle(sim)
    out = await run(bio_cfg, "eco_get_sample", {"sample_tag": mid["sampleTag"]}, token=sim.issue_token())
    body = out.ok
    assert body["identifier"] == {"sampleTag": mid["sampleTag"], "sampleClass": mid["sampleClass"]}
    assert body["items"][0]["sampleUuid"] == mid["sampleUuid"]
    assert body["resolved"]["sampleClass"]["value"] == mid["sampleClass"]
    assert used(out) == 2  # the tag's classes, then the view


async def test_degree_returns_relatives_up_to_that_many_steps(bio_cfg, sim):  # noqa: F811
    token = sim.issue_token()
    mid = _middle(sim)
    one = (await run(bio_cfg, "eco_get_sample", {"sample_uuid": mid["sampleUuid"], "degree": 1}, token=token)).ok
    expected = {mid["sampleUuid"], mid["_parents"][0]["sampleUuid"], mid["_children"][0]["sampleUuid"]}
    assert {i["sampleUuid"] for i in one["items"]} == expected and one["degree"] == 1
    assert any("/samples/download" in e for e in one["source"]["endpoints"])
    top = mid["_parents"][0]
    two = (await run(bio_cfg, "eco_get_sample", {"sample_uuid": top["sampleUuid"], "degree": 2}, token=token)).ok
    assert len(two["items"]) == 3
    only = (await run(bio_cfg, "eco_get_sample", {"sample_uuid": top["sampleUuid"], "degree": 1}, token=token)).ok
    assert len(only["items"]) == 2


async def test_fields_keep_only_the_named_sms_keys_and_events_can_be_left_out(bio_cfg, sim):  # noqa: F811
    token = sim.issue_token()
    uuid = _middle(sim)["sampleUuid"]
    body = (await run(bio_cfg, "eco_get_sample", {"sample_uuid": uuid, "fields": ["siteID"]}, token=token)).ok
    events = body["items"][0]["sampleEvents"]
    assert [[e["smsKey"] for e in ev["smsFieldEntries"]] for ev in events] == [["siteID"]]
    bare = (await run(bio_cfg, "eco_get_sample", {"sample_uuid": uuid, "include_events": False}, token=token)).ok
    assert bare["items"][0]["sampleEvents"] is None and bare["items"][0]["eventsTotal"] == 2


async def test_events_limit_keeps_the_first_events_and_says_so(bio_cfg, sim):  # noqa: F811
    body = (await run(bio_cfg, "eco_get_sample", {"sample_uuid": _middle(sim)["sampleUuid"], "events_limit": 1},
                      token=sim.issue_token())).ok
    assert len(body["items"][0]["sampleEvents"]) == 1 and body["items"][0]["eventsTotal"] == 2
    assert any("events_limit" in n for n in body["notes"])


async def test_relatives_are_paged(bio_cfg, sim):  # noqa: F811
    token = sim.issue_token()
    top = _middle(sim)["_parents"][0]
    args = {"sample_uuid": top["sampleUuid"], "degree": 2, "limit": 2}
    first = (await run(bio_cfg, "eco_get_sample", args, token=token)).ok
    assert len(first["items"]) == 2 and first["page"]["nextOffset"] == 2 and first["page"]["total"] == 3
    step = next(s for s in first["nextSteps"] if s["arguments"].get("offset") == 2)
    rest = (await run(bio_cfg, "eco_get_sample", step["arguments"], token=token)).ok
    assert len(rest["items"]) == 1 and rest["page"]["nextOffset"] is None


async def test_views_are_cached_per_token(bio_cfg, sim):  # noqa: F811
    uuid = _middle(sim)["sampleUuid"]
    a, b = sim.issue_token(), sim.issue_token(exp_s=7200)
    await run(bio_cfg, "eco_get_sample", {"sample_uuid": uuid}, token=a)
    again = await run(bio_cfg, "eco_get_sample", {"sample_uuid": uuid}, token=a)
    assert again.requests == 0 and again.meta["cacheHits"] == 1
    other = await run(bio_cfg, "eco_get_sample", {"sample_uuid": uuid}, token=b)
    assert other.meta["cacheHits"] == 0 and other.requests == 1  # another token never reads a's entry
    assert other.ok["items"][0]["sampleUuid"] == uuid


async def test_an_unknown_identifier_is_not_found_naming_it(bio_cfg, sim):  # noqa: F811
    out = await run(bio_cfg, "eco_get_sample", {"barcode": "A99999999999"}, token=sim.issue_token())
    err = error_of(out, "not_found", "barcode")
    assert "A99999999999" in err["message"]


async def test_a_tag_with_no_class_is_not_found_without_asking_for_the_view(bio_cfg, sim):  # noqa: F811
    out = await run(bio_cfg, "eco_get_sample", {"sample_tag": "NO.SUCH.TAG"}, token=sim.issue_token())
    error_of(out, "not_found", "sample_tag")
    assert used(out) == 1


@pytest.mark.parametrize(("args", "field"), [
    ({}, "sample_tag"),
    ({"sample_tag": "X", "barcode": "Y"}, "barcode"),
    ({"sample_uuid": "u", "archive_guid": "g"}, "archive_guid"),
    ({"sample_uuid": "u", "sample_class": "a.b"}, "sample_class"),
    ({"barcode": "Y", "degree": 0}, "degree"), ({"barcode": "Y", "degree": 6}, "degree"),
    ({"barcode": "Y", "events_limit": 501}, "events_limit"), ({"barcode": "Y", "limit": 101}, "limit"),
    ({"barcode": "Y", "offset": -1}, "offset"), ({"barcode": "Y", "fields": []}, "fields"),
    ({"barcode": "Y", "colour": 1}, "colour"),
])
async def test_bad_inputs_are_invalid_argument_naming_the_field(bio_cfg, sim, args, field):  # noqa: F811
    out = await run(bio_cfg, "eco_get_sample", args, token=sim.issue_token())
    error_of(out, "invalid_argument", field)
    assert out.requests == 0


async def test_a_canary_token_is_absent_from_results_errors_logs_and_cache_keys(bio_cfg, sim, caplog,  # noqa: F811
                                                                               monkeypatch):
    keys: list[str] = []
    real = UpstreamCache.get_or_fetch

    async def spy(self, key, *a, **kw):
        keys.append(key)
        return await real(self, key, *a, **kw)

    monkeypatch.setattr(UpstreamCache, "get_or_fetch", spy)
    canary = sim.issue_token()
    caplog.set_level(logging.DEBUG)
    seen = []
    for args in ({"sample_uuid": _middle(sim)["sampleUuid"], "degree": 1}, {"barcode": "A99999999999"},
                 {"sample_tag": Samples.SHARED_TAG}, {"barcode": "A00000123456", "limit": 0}):
        out = await run(bio_cfg, "eco_get_sample", args, token=canary)
        seen.append(json.dumps(out.result.model_dump(mode="json", by_alias=True)))
    forbidden = await run(bio_cfg, "eco_get_sample", {"barcode": "A00000123456"}, token=canary + "x")
    seen.append(json.dumps(forbidden.result.model_dump(mode="json", by_alias=True)))
    assert all(canary not in s and canary[-20:] not in s for s in seen)
    assert canary not in caplog.text and canary[-20:] not in caplog.text
    view_keys = [k for k in keys if "/samples/view" in k or "/samples/download" in k]
    assert view_keys and all(token_hash(canary) in k or token_hash(canary + "x") in k for k in view_keys)
    assert all(canary not in k and canary[-20:] not in k for k in keys)
