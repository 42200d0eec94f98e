"""A worker process for the shared-budget test: hammers the simulator through its own
UpstreamClient for a while and prints the wall-clock send time of every request as JSON.

    python -m tests.upstream.ratelimit_worker BASE_URL SECONDS BUCKETS [REDIS_URL PREFIX]

Once set up it prints `ready` and reads the wall-clock start time from stdin, so two workers
start together however long each took to import Django on a busy machine.

BUCKETS is `redis` (the shared bucket) or `local` (each process on its own: the control).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import django
import httpx


class StampingTransport(httpx.AsyncHTTPTransport):
    def __init__(self, stamps: list[float]) -> None:
        super().__init__()
        self.stamps = stamps

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.stamps.append(time.time())
        return await super().handle_async_request(request)


async def main(base_url: str, seconds: float, buckets: str, redis_url: str, prefix: str) -> None:
    from eco_core.config import load_config
    from eco_core.errors import EcoError
    from upstream.cache import UpstreamCache, locmem_backend
    from upstream.client import UpstreamClient
    from upstream.ratelimit import LocalBuckets, RedisBuckets

    cfg = load_config(env={
        "ECO_MCP_ECO__BASE_URL": base_url, "ECO_MCP_ECO__RATE_LIMIT__ANONYMOUS_BURST": os.environ["BURST"],
        "ECO_MCP_ECO__RATE_LIMIT__ANONYMOUS_RPS": os.environ["RPS"], "ECO_MCP_ECO__RATE_LIMIT__MAX_WAIT_S": "60",
        "ECO_MCP_CACHE__ENABLED": "false",
    }, warn=False)
    if buckets == "redis":
        import redis.asyncio as aioredis

        limiter = RedisBuckets(aioredis.from_url(redis_url), prefix=prefix)
    else:
        limiter = LocalBuckets()
    stamps: list[float] = []
    client = UpstreamClient(cfg, transport=StampingTransport(stamps), ratelimiter=limiter,
                            cache=UpstreamCache(cfg.cache, backend=locmem_backend(10, f"w{os.getpid()}")))
    errors: list[str] = []
    print("ready", flush=True)
    start_at = float(await asyncio.to_thread(sys.stdin.readline))
    await asyncio.sleep(max(0.0, start_at - time.time()))
    deadline = start_at + seconds

    async def hammer() -> None:
        while time.time() < deadline:
            try:
                await client.probe()
            except EcoError as exc:
                errors.append(exc.code)

    await asyncio.gather(*(hammer() for _ in range(4)))
    await client.aclose()
    print(json.dumps({"stamps": stamps, "errors": errors}))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
    django.setup()
    args = sys.argv[1:]
    asyncio.run(main(args[0], float(args[1]), args[2], *(args[3:5] or ["", ""])))
