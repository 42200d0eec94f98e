"""Fault injection and request observation, from Python and over the private /_sim/ prefix."""

from __future__ import annotations

import hashlib
import time

import httpx
import pytest


def _first_file(api) -> dict:
    return api.get("/data/DP1.00001.001/ABBY/2023-01").json()["data"]["files"][-1]


def test_a_status_burst_answers_5xx_count_times_then_recovers(sim_server, api):
    sim_server.faults.add(kind="status", route=r"/sites/HARV$", count=2, status=503)
    codes = [api.get("/sites/HARV").status_code for _ in range(3)]
    assert codes == [503, 503, 200]


def test_latency_delays_the_answer(sim_server, api):
    sim_server.faults.add(kind="latency", route=r"/sites/ABBY$", count=1, delay_s=0.4)
    t = time.monotonic()
    assert api.get("/sites/ABBY").status_code == 200
    assert time.monotonic() - t >= 0.4


def test_a_hang_outlasts_the_client_timeout(sim_server, token):
    sim_server.faults.add(kind="hang", route=r"/sites/ABBY$", count=1, hold_s=5)
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(sim_server.base_url + "/sites/ABBY", timeout=0.5)


def test_a_reset_closes_the_connection_without_an_answer(sim_server):
    sim_server.faults.add(kind="reset", route=r"/sites/ABBY$", count=1)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError, httpx.ConnectError)):
        httpx.get(sim_server.base_url + "/sites/ABBY", timeout=5)
    assert httpx.get(sim_server.base_url + "/sites/ABBY", timeout=5).status_code == 200


def test_malformed_json_is_a_200_that_does_not_parse(sim_server, api):
    sim_server.faults.add(kind="malformed", route=r"/products/", count=1)
    r = api.get("/products/DP1.00001.001")
    assert r.status_code == 200
    with pytest.raises(ValueError):
        r.json()


def test_a_graphql_outage_answers_502_html_only_on_graphql(sim_server, api):
    sim_server.faults.add(kind="graphql_outage")
    r = httpx.post(sim_server.graphql_url, json={"query": "{ sites { siteCode } }"}, timeout=10)
    assert (r.status_code, r.text) == (502, "<html>502</html>")
    assert api.get("/sites/HARV").status_code == 200


def test_a_429_storm_carries_retryafter(sim_server, api):
    sim_server.faults.add(kind="rate_limit", route="/api/v0/", count=3, retry_after=2)
    answers = [api.get("/sites/HARV") for _ in range(4)]
    assert [a.status_code for a in answers] == [429, 429, 429, 200]
    assert answers[0].headers["retryafter"] == "2"


def test_bad_md5_serves_bytes_that_do_not_match_the_listing(sim_server, api):
    f = _first_file(api)
    sim_server.faults.add(kind="bad_md5", file=f["name"], count=1)
    got = httpx.get(f["url"], timeout=30).content
    assert len(got) == f["size"] and hashlib.md5(got).hexdigest() != f["md5"]
    assert hashlib.md5(httpx.get(f["url"], timeout=30).content).hexdigest() == f["md5"]


def test_truncate_sends_fewer_bytes_than_content_length(sim_server, api):
    f = _first_file(api)
    sim_server.faults.add(kind="truncate", file=f["name"], count=1)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        httpx.get(f["url"], timeout=10)


def test_a_redirect_points_to_another_host(sim_server, api):
    sim_server.faults.add(kind="redirect", route=r"/sites/HARV$", count=1, target="http://elsewhere.invalid/x")
    r = api.get("/sites/HARV")
    assert r.status_code == 302 and r.headers["location"] == "http://elsewhere.invalid/x"


def test_the_request_log_shows_method_path_query_headers_host_and_status(sim_server, api):
    api.get("/sites/HARV", params={"release": "RELEASE-2025"}, headers={"X-Trace": "abc"})
    rec = sim_server.requests.matching(r"^/api/v0/sites/HARV$")[-1]
    assert (rec.method, rec.query, rec.status) == ("GET", {"release": "RELEASE-2025"}, 200)
    assert rec.headers["x-trace"] == "abc" and rec.host.startswith("127.0.0.1:")
    assert sim_server.requests.count(r"/sites/HARV") == 1


def test_the_token_sent_to_the_api_never_reaches_the_storage_host(sim_server, api):
    f = _first_file(api)
    assert f["url"].startswith(sim_server.storage_base)
    httpx.get(f["url"], timeout=30)  # a well-behaved client: no token for storage
    storage = sim_server.requests.matching(r"^/storage/")
    assert storage and all("x-api-token" not in r.headers for r in storage)
    assert all(r.host.startswith("localhost:") and r.port == sim_server.storage_port for r in storage)


def test_the_http_control_interface_injects_observes_and_resets(sim_server):
    ctl = sim_server.control_url
    made = httpx.post(f"{ctl}/faults", json={"kind": "status", "route": "/sites/ABBY$", "count": 1,
                                             "status": 500}).json()
    assert made["kind"] == "status"
    assert httpx.get(sim_server.base_url + "/sites/ABBY").status_code == 500
    log = httpx.get(f"{ctl}/requests", params={"route": "/sites/ABBY"}).json()
    assert log["count"] == 1 and log["requests"][0]["status"] == 500
    tok = httpx.get(f"{ctl}/token", params={"exp_s": 60}).json()["token"]
    assert httpx.get(sim_server.base_url + "/data/DP1.00001.001/ABBY/2023-01",
                     headers={"X-API-Token": tok}).status_code == 200
    httpx.post(f"{ctl}/faults", json={"kind": "status", "route": "/sites/ABBY$", "status": 500})
    assert httpx.delete(f"{ctl}/faults").status_code == 200
    assert httpx.get(sim_server.base_url + "/sites/ABBY").status_code == 200
    assert httpx.post(f"{ctl}/reset").json() == {"reset": True}
    assert httpx.get(f"{ctl}/requests").json()["count"] == 0  # control calls are not logged


def test_control_calls_do_not_spend_the_rate_limit(sim_server):
    before = httpx.get(sim_server.base_url + "/sites/ABBY").headers["x-ratelimit-remaining"]
    for _ in range(5):
        httpx.get(sim_server.control_url + "/requests")
    after = httpx.get(sim_server.base_url + "/sites/ABBY").headers["x-ratelimit-remaining"]
    assert int(before) - int(after) <= 1


def test_unknown_fault_kinds_are_refused(sim_server):
    with pytest.raises(ValueError):
        sim_server.faults.add(kind="gremlins")
