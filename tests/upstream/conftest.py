"""Fixtures for the upstream client: a fake clock whose sleep advances time (no real waits),
NEON-shaped canned replies for httpx.MockTransport, and a client factory."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from eco_core import redact
from eco_core.config import EcoConfig, load_config
from upstream.cache import UpstreamCache, locmem_backend
from upstream.client import UpstreamClient
from upstream.ratelimit import LocalBuckets

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "upstream_samples"
CANARY = "canary-token-6f1d2a9b7c3e4d5f8a0b"
OK_HEADERS = {"content-type": "application/json", "x-ratelimit-limit": "200", "x-ratelimit-remaining": "197",
              "x-ratelimit-reset": "2"}


class _RawLines(logging.Handler):
    """Keeps every record's text as rendered before any redacting filter runs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if record.exc_info:
            self.lines.append(logging.Formatter().formatException(record.exc_info))


@pytest.fixture(scope="package", autouse=True)
def no_token_leaks_in_this_session() -> Iterator[None]:
    """Across every test here: no token the process learned (the CANARY, configured and
    callers' tokens: all are registered with eco_core.redact) may appear in a raw log line
    or in any cache key the upstream cache was asked to read or write.

    Package scope: under pytest-xdist a worker may run this package's files before others
    (tests/foundation/test_token.py logs a token on purpose, to check the redacting filter), so
    the watch ends with this package, not with the session."""
    handler = _RawLines()
    root, eco = logging.getLogger(), logging.getLogger("eco")
    root.handlers.insert(0, handler)  # first: see records before a redacting filter edits them
    old_level = eco.level
    eco.setLevel(logging.DEBUG)
    keys: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        real_get, real_put = UpstreamCache.get_or_fetch, UpstreamCache.put

        async def get_or_fetch(self, key, *a, **kw):
            keys.append(key)
            return await real_get(self, key, *a, **kw)

        async def put(self, key, *a, **kw):
            keys.append(key)
            return await real_put(self, key, *a, **kw)

        mp.setattr(UpstreamCache, "get_or_fetch", get_or_fetch)
        mp.setattr(UpstreamCache, "put", put)
        redact.register_secret(CANARY)
        yield
    if handler in root.handlers:  # logging.config.dictConfig in a test may have replaced them
        root.handlers.remove(handler)
    eco.setLevel(old_level)
    secrets = set(redact.known_secrets()) | {CANARY}
    leaked_logs = [line for line in handler.lines for s in secrets if s in line]
    leaked_keys = [k for k in keys for s in secrets if s in k]
    assert not leaked_logs, f"token in {len(leaked_logs)} log lines"
    assert not leaked_keys, f"token in {len(leaked_keys)} cache keys"


def sample(rel: str) -> bytes:
    return (SAMPLES / rel).read_bytes()


def reply(status: int = 200, body: bytes | dict | None = None, headers: dict[str, str] | None = None) -> httpx.Response:
    content = json.dumps(body).encode() if isinstance(body, dict) else (body or b"")
    return httpx.Response(status, content=content, headers={**OK_HEADERS, **(headers or {})})


class FakeClock:
    """Monotonic and wall clock in one; `sleep` moves time forward instead of waiting."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def make_cfg(env: dict[str, str] | None = None) -> EcoConfig:
    return load_config(env=env or {}, warn=False)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def client_factory(clock: FakeClock) -> AsyncIterator[Callable[..., UpstreamClient]]:
    """make(handler_or_transport, cfg=None, **kw) -> UpstreamClient on a fake clock with an
    in-process bucket and an emptied cache; closed after the test."""
    made: list[UpstreamClient] = []

    def make(handler: Any = None, cfg: EcoConfig | None = None, **kw: Any) -> UpstreamClient:
        cfg = cfg or make_cfg()
        transport = handler if isinstance(handler, httpx.AsyncBaseTransport) or handler is None \
            else httpx.MockTransport(handler)
        kw.setdefault("ratelimiter", LocalBuckets(clock))
        kw.setdefault("cache", UpstreamCache(cfg.cache, backend=locmem_backend(cfg.cache.max_entries, "eco-test"),
                                             clock=clock))
        client = UpstreamClient(cfg, transport=transport, clock=clock, sleep=clock.sleep, **kw)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.cache.clear()
        await client.aclose()


def sim_env(sim: Any, **extra: str) -> dict[str, str]:
    return {"ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url, **extra}


@pytest.fixture
def sim_client(fresh_sim: Any, client_factory: Callable[..., UpstreamClient]) -> Callable[..., UpstreamClient]:
    """make(**env) -> a client talking to the simulator over real sockets (fake clock/sleep)."""

    def make(**env: str) -> UpstreamClient:
        return client_factory(None, cfg=make_cfg(sim_env(fresh_sim, **env)))

    return make
