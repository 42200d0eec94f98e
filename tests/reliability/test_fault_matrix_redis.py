"""The fault matrix's "Redis down" kind: every upstream-backed tool, through the gateway's real
pipeline in process (and one of them through the SDK's MCP client over HTTP), with the upstream answer cache and the shared rate-limit bucket on a
redis-server of this test's own, which is killed under concurrent calls and started again.

While Redis is down every tool answers as if nothing happened (never internal_error, nor any
other error), the cache counts misses only, the rate limit is the process's own bucket, and the
process says so in ONE warning; once Redis is back, one line says so, no Redis use fails again
(no stale pooled connection) and the cache and bucket are written to Redis again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from mcp import Client
from prometheus_client import REGISTRY

from eco_core.memo import memos
from mcp_gateway.http_app import build_app
from tests.catalog.conftest import catalog_module  # noqa: F401  (fixture)
from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import RunningServer, run_http
from tests.own_redis import OwnRedis
from tests.reliability.fault_matrix import (
    REDIS_DOWN_EXPECT,
    ROWS,
    Case,
    RestartableSim,
    check,
    matrix_config,
    redis_settings,
)
from tests.tools.conftest import Outcome
from upstream import redis_link
from upstream.client import close_clients, get_client

WORKERS = 4  # concurrent callers; each has its own tools, so no call races one of its own kind
RETRY_S = 0.2  # cache.redis_retry_s here: a restarted Redis is found within a fifth of a second


@pytest.fixture(scope="module")
def sim() -> Iterator[RestartableSim]:
    own = RestartableSim().restart()
    yield own
    own.kill()


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis().start()
    yield server
    server.kill()


@pytest.fixture
async def case(sim, catalog_module, db, tmp_path: Path, own_redis, settings) -> AsyncIterator[Case]:  # noqa: F811
    for name, value in redis_settings(own_redis.url).items():
        setattr(settings, name, value)
    sim.faults.clear()
    memos.drop_all()
    with contextlib.ExitStack() as stack:
        yield Case(sim, tmp_path, stack)
        await close_clients()
    await sync_to_async(connections.close_all)()


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class Load:
    """WORKERS callers, each calling its share of the tools over and over until stopped; every
    outcome is kept with the phase (up, down, back) in which its call started."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.phase = "up"
        self.outcomes: list[tuple[str, str, Outcome]] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def _worker(self, tools: list[str]) -> None:
        while not self._stop.is_set():
            for tool in tools:
                phase = self.phase
                self.outcomes.append((phase, tool, await self.case.run(tool)))

    def start(self) -> None:
        self._stop.clear()
        tools = sorted(ROWS)
        self._tasks = [asyncio.create_task(self._worker(tools[i::WORKERS])) for i in range(WORKERS)]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


def _errors(outcomes: list[tuple[str, str, Outcome]]) -> list[tuple[str, str, Any]]:
    return [(phase, tool, out.result.structured_content["error"]["code"])
            for phase, tool, out in outcomes if out.result.is_error]


async def _every_tool(case: Case) -> dict[str, Outcome]:
    return {tool: await case.run(tool) for tool in sorted(ROWS)}


def _answered(outcomes: dict[str, Outcome]) -> None:
    for tool, out in outcomes.items():
        assert not out.result.is_error, (tool, out.result.structured_content)
        check(out, REDIS_DOWN_EXPECT)


async def test_every_tool_answers_while_redis_is_down_under_load_and_uses_redis_again_once_it_restarts(
        case, own_redis, caplog):
    caplog.set_level(logging.INFO, logger="eco.upstream.redis")
    cfg = case.configure(token=True, cache__redis_retry_s=RETRY_S)
    link = redis_link.link_for(own_redis.url, cfg.cache)

    # Up: answers are cached in Redis and the rate limit is the shared bucket there.
    _answered(await _every_tool(case))
    assert own_redis.keys("eco:up:*") and own_redis.keys("eco:rl:*"), own_redis.keys()
    assert get_client().rate_limit_info()["backend"] == "redis"

    load = Load(case)
    load.start()
    await asyncio.sleep(0.5)
    load.phase = "down"
    own_redis.kill()  # under load: calls are using Redis at this moment
    await asyncio.sleep(1.5)
    await load.stop()
    assert not _errors(load.outcomes), _errors(load.outcomes)
    assert {phase for phase, _, _ in load.outcomes} == {"up", "down"}
    assert link.down and get_client().rate_limit_info()["backend"] == "local"

    # Still down: answers come from the upstream (the cache skipped, every lookup a miss) and the
    # process's own bucket; the warning was said once.
    hits, misses = _metric("eco_upstream_cache_lookups_total", result="hit"), \
        _metric("eco_upstream_cache_lookups_total", result="miss")
    skipped = _metric("eco_redis_skipped_total", use="rate_limit")
    down = await _every_tool(case)
    _answered(down)
    assert _metric("eco_upstream_cache_lookups_total", result="hit") == hits, "a cache hit with Redis down"
    assert _metric("eco_upstream_cache_lookups_total", result="miss") - misses >= len(
        [r for r in ROWS.values() if r.cached])
    assert _metric("eco_redis_skipped_total", use="rate_limit") > skipped
    assert sum(out.requests for out in down.values()) > 0
    assert _metric("eco_redis_unavailable") == 1

    own_redis.restart()  # empty, as a cache-only Redis is after a crash
    failures = link.failures
    await asyncio.sleep(RETRY_S)
    load.phase = "back"
    load.start()
    await asyncio.sleep(1.5)
    await load.stop()

    assert not _errors(load.outcomes), _errors(load.outcomes)
    assert {phase for phase, _, _ in load.outcomes} == {"up", "down", "back"}
    assert not link.down and link.failures == failures, "a Redis use failed after Redis came back"
    assert _metric("eco_redis_unavailable") == 0
    assert get_client().rate_limit_info()["backend"] == "redis"
    # Back: Redis holds the cache and the shared bucket again, and answers come from it.
    assert own_redis.keys("eco:up:*") and own_redis.keys("eco:rl:*"), own_redis.keys()
    hits = _metric("eco_upstream_cache_lookups_total", result="hit")
    _answered(await _every_tool(case))
    assert _metric("eco_upstream_cache_lookups_total", result="hit") > hits

    warnings = [r.getMessage() for r in caplog.records if r.name == "eco.upstream.redis"
                and r.levelno == logging.WARNING]
    back = [r.getMessage() for r in caplog.records if r.name == "eco.upstream.redis" and r.levelno == logging.INFO]
    assert len(warnings) == 1, warnings
    assert len(back) == 1 and "back" in back[0], back


@pytest.fixture
def http_server(sim, django_db_setup, tmp_path, own_redis, settings) -> Iterator[RunningServer]:
    for name, value in redis_settings(own_redis.url).items():
        setattr(settings, name, value)
    with run_http(build_app(cfg=matrix_config(sim, tmp_path, server__transport="http"))) as srv:
        yield srv


async def test_over_http_a_tool_answers_while_redis_is_down_and_from_redis_again_once_it_restarts(
        sim, http_server, own_redis, db, active_config, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="eco.upstream.redis")
    tool = "eco_search_taxonomy"  # cached, and needs no catalog
    cfg = active_config(matrix_config(sim, tmp_path, server__transport="http", cache__redis_retry_s=RETRY_S))
    link = redis_link.link_for(own_redis.url, cfg.cache)
    sim.faults.clear()
    async with Client(http_server.url, mode="2026-07-28") as client:
        listed: dict[str, Any] = {t.name: t for t in (await client.list_tools()).tools}

        async def answered() -> Outcome:
            result = await client.call_tool(tool, ROWS[tool].arguments)
            assert_valid_tool_result(listed[tool], result)
            out = Outcome(result)
            check(out, REDIS_DOWN_EXPECT)
            return out

        await answered()
        assert own_redis.keys("eco:up:*")
        own_redis.kill()
        during = [await answered() for _ in range(3)]
        assert all(out.requests > 0 for out in during), "answered from a cache that is down"
        assert link.down
        own_redis.restart()
        await asyncio.sleep(RETRY_S)
        assert (await answered()).requests > 0  # the restarted Redis is empty
        assert (await answered()).requests == 0  # ... and holds the answer now
        assert own_redis.keys("eco:up:*") and not link.down
    warnings = [r for r in caplog.records if r.name == "eco.upstream.redis" and r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
