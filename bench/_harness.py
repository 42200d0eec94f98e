"""What the bench/ scripts share: a throw-away SQLite data folder with the simulator in a thread of
this process, a configuration pointing at it with the rate budget raised, the catalogs built once,
the gateway served over HTTP on a loopback port, the cold-then-warm timing loop and percentiles.
Imported as `_harness` (each script puts bench/ on sys.path)."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_simulator(prefix: str) -> Any:
    """A migrated throw-away SQLite data folder, no Redis, and the simulator started (limits
    scaled up so the benchmark is not throttled); the caller stops it with `sim.__exit__`."""
    os.environ["ECO_MCP_DATA_DIR"] = tempfile.mkdtemp(prefix=prefix)
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from upstream_sim.server import SimServer

    sim = SimServer(seed=1, port=0, rate_limit_scale=100.0)
    sim.__enter__()
    return sim


def sim_config(sim: Any, token: str | None = None) -> Any:
    """A new configuration (so a new cache namespace) for the simulator, installed as the active
    one, with the client's rate budget raised; with `token`, the token is the configuration's and
    is lent to HTTP callers."""
    from eco_core.config import load_config, set_config

    flags: dict[str, Any] = {"eco.base_url": sim.base_url, "eco.graphql_url": sim.graphql_url,
                             "eco.rate_limit.anonymous_burst": 100000, "eco.rate_limit.anonymous_rps": 10000,
                             "server.transport": "http", "cache.prewarm": False}
    env = {}
    if token is not None:
        flags.update({"eco.rate_limit.token_burst": 100000, "eco.rate_limit.token_rps": 10000,
                      "server.share_config_token_over_http": True})
        env["ECO_TOKEN"] = token
    cfg = load_config(flags=flags, env=env, warn=False)
    set_config(cfg)
    return cfg


async def build_catalog(cfg: Any) -> None:
    """The catalogs a running server already has, built once through the real upstream client."""
    from catalog.services import refresh_catalogs
    from upstream.client import close_clients, get_client

    outcomes = await refresh_catalogs(client=get_client(), cfg=cfg)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    await close_clients()


def serve(cfg: Any) -> tuple[Any, str]:
    """The gateway's HTTP app under uvicorn in a daemon thread; stop it with `server.should_exit`."""
    import uvicorn

    from mcp_gateway.http_app import build_app

    server = uvicorn.Server(uvicorn.Config(build_app(cfg=cfg), host="127.0.0.1", port=0, lifespan="on",
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/mcp"


async def cold_then_warm(once: Callable[[], Awaitable[int]], calls: int) -> tuple[float, list[float], int, int]:
    """`once()` makes one call and returns its upstream requests: called once cold, then `calls`
    times warm. Returns the cold milliseconds, the warm milliseconds, the cold call's requests and
    the most any warm call cost."""
    t0 = time.perf_counter()
    cold_req = await once()
    cold_ms = (time.perf_counter() - t0) * 1000
    times, warm_req = [], 0
    for _ in range(calls):
        t0 = time.perf_counter()
        warm_req = max(warm_req, await once())
        times.append((time.perf_counter() - t0) * 1000)
    return cold_ms, times, cold_req, warm_req


async def timed_http_calls(client: Any, tool: str, args: Callable[[int], dict[str, Any]], calls: int) -> list[float]:
    """Milliseconds of `calls` calls of `tool` through the SDK client, the i-th with `args(i)`;
    every answer must be a success."""
    times = []
    for i in range(calls):
        t0 = time.perf_counter()
        result = await client.call_tool(tool, args(i))
        times.append((time.perf_counter() - t0) * 1000)
        assert not result.is_error, result.structured_content
    return times
