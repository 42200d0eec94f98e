"""/metrics: Prometheus text that prometheus_client's own parser reads, counting every worker's
events when uvicorn runs several (PROMETHEUS_MULTIPROC_DIR)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.gateway.wire import modern_request, reply

ROOT = Path(__file__).resolve().parents[2]
CALLS_OK = 12
CALLS_BAD = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def _total(samples: dict[str, list], name: str, **labels: str) -> float:
    return sum(s.value for s in samples.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items()))


@pytest.fixture
def two_workers(sim, tmp_path):
    port = _free_port()
    prom_dir = tmp_path / "prom"
    prom_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECO_MCP_") and k not in ("DATABASE_URL", "REDIS_URL",
                                                                                           "CELERY_BROKER_URL")}
    env.update(PROMETHEUS_MULTIPROC_DIR=str(prom_dir), ECO_MCP_DATA_DIR=str(tmp_path / "data"),
               ECO_MCP_SERVER__TRANSPORT="http", ECO_MCP_CACHE__PREWARM="false",
               DJANGO_SECRET_KEY="metrics-test-" + "s3cr3t-" * 8,
               ECO_MCP_ECO__BASE_URL=sim.base_url, ECO_MCP_ECO__GRAPHQL_URL=sim.graphql_url)
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "eco_service.asgi:application", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "2", "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "uvicorn.log").open("w"))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"uvicorn did not start: {(tmp_path / 'uvicorn.log').read_text()[-3000:]}")
            time.sleep(0.2)
        yield base, prom_dir
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_metrics_under_two_workers_count_every_call_whichever_worker_answered(two_workers, sim):
    base, prom_dir = two_workers
    ok_body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {"check_api": True}})
    bad_body, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {"check_api": "often"}})
    for _ in range(CALLS_OK):
        # A new connection each time, so the kernel spreads the calls over both workers.
        result = reply(httpx.post(f"{base}/mcp", json=ok_body, headers=headers, timeout=30))["result"]
        assert result["isError"] is False
    for _ in range(CALLS_BAD):
        result = reply(httpx.post(f"{base}/mcp", json=bad_body, headers=headers, timeout=30))["result"]
        assert result["structuredContent"]["error"]["code"] == "invalid_argument"

    pids = {p.stem.rsplit("_", 1)[-1] for p in prom_dir.glob("counter_*.db")}
    assert len(pids) == 2, f"the calls reached only workers {pids}; the test proves nothing about merging"
    for _ in range(4):  # whichever worker answers the scrape, it reports both workers' counts
        resp = httpx.get(f"{base}/metrics", timeout=10)
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
        samples = _samples(resp.text)
        assert _total(samples, "eco_tool_calls_total", tool="eco_ping", outcome="ok") == CALLS_OK
        assert _total(samples, "eco_tool_calls_total", tool="eco_ping", outcome="invalid_argument") == CALLS_BAD
        assert _total(samples, "eco_tool_call_duration_seconds_count", tool="eco_ping") == CALLS_OK + CALLS_BAD
        assert _total(samples, "eco_tool_call_duration_seconds_bucket", tool="eco_ping", le="+Inf") == CALLS_OK + CALLS_BAD
        probes = [s for s in samples["eco_upstream_requests_total"] if s.labels["status"] == "200"]
        assert sum(s.value for s in probes) >= CALLS_OK and all("{" not in s.labels["endpoint"] or "}" in
                                                                 s.labels["endpoint"] for s in probes)
        remaining = samples["eco_upstream_rate_limit_remaining"]
        assert [s.labels["identity"] for s in remaining] == ["anonymous"] and remaining[0].value >= 0
        assert _total(samples, "eco_graphql_breaker_open") == 0
        ages = {s.labels["catalog"] for s in samples["eco_catalog_age_seconds"]}
        assert ages == {"products", "sites", "releases", "locations"}


@pytest.mark.slow
def test_metrics_obey_the_host_rules_of_every_route(two_workers):
    base, _ = two_workers
    assert httpx.get(f"{base}/metrics", headers={"Host": "evil.example"}).status_code in (403, 421)
    assert httpx.get(f"{base}/metrics", headers={"Origin": "https://evil.example"}).status_code == 403
    assert httpx.post(f"{base}/metrics").status_code == 405


async def test_cache_lookups_count_misses_then_hits(eco_cfg):
    from prometheus_client import REGISTRY

    from upstream.cache import UpstreamCache, locmem_backend

    def value(result: str) -> float:
        return REGISTRY.get_sample_value("eco_upstream_cache_lookups_total", {"result": result}) or 0.0

    cache = UpstreamCache(eco_cfg.cache, backend=locmem_backend(10, name="metrics-test"))
    before = value("hit"), value("miss")

    async def fetch() -> bytes:
        return b"answer"

    await cache.get_or_fetch("k", 60, fetch)
    await cache.get_or_fetch("k", 60, fetch)
    await cache.get_or_fetch("k", 60, fetch)
    assert (value("hit") - before[0], value("miss") - before[1]) == (2, 1)


def test_a_downloads_own_path_is_not_a_label_but_templates_and_storage_hosts_are():
    from eco_core.metrics import endpoint_label

    assert endpoint_label("/prototype/data/abc-123/file.csv", "download") == "download"
    assert endpoint_label("/documents/{specNumber}", "download") == "/documents/{specNumber}"
    assert endpoint_label("storage:storage.googleapis.com", "download") == "storage:storage.googleapis.com"
    assert endpoint_label("/products/{productCode}", "detail") == "/products/{productCode}"
