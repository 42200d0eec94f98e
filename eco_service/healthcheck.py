"""`--check` (and `eco_ping(check_api=true)`): one small request through the upstream client,
reported as a JSON verdict.

The probe is `GET /taxonomy?taxonTypeCode=TICK&limit=1` (about 1 KB), an anonymous endpoint, so
it works without a token; when a token is configured and sent, NEON's `x-ratelimit-limit` tells
whether it recognised it (an unrecognised token gets the anonymous limit, 200).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from eco_core.config import EcoConfig
from eco_core.errors import EcoError


async def acheck(cfg: EcoConfig, client: Any = None) -> dict[str, Any]:
    """The verdict; uses `client` (an UpstreamClient) or a short-lived one of its own."""
    from upstream.client import UpstreamClient
    from upstream.ratelimit import ANONYMOUS_UPSTREAM_LIMIT

    own = client is None
    client = client or UpstreamClient(cfg)
    token = client.http.available_token()
    verdict: dict[str, Any] = {
        "reachable": False,
        "apiBaseUrl": cfg.eco.base_url,
        "tokenConfigured": token is not None,
        "tokenSource": "config" if cfg.eco.api_token and token else ("request" if token else "none"),
        "tokenSent": bool(token) and cfg.token_for_public_endpoints,
    }
    started = time.perf_counter()
    try:
        page = await client.probe()
        verdict["reachable"] = True
        verdict["probeRows"] = page.count
    except EcoError as exc:
        # Any HTTP answer, even an error, proves the upstream is reachable.
        verdict["reachable"] = exc.code not in {"upstream_unavailable", "upstream_error"}
        verdict["error"] = {"code": exc.code, "message": exc.message}
    finally:
        verdict["latencyMs"] = round((time.perf_counter() - started) * 1000, 1)
        rate = client.rate_limit_info()
        verdict["rateLimit"] = rate
        limit = rate.get("limit")
        if not verdict["tokenSent"]:
            verdict["tokenStatus"] = "not_sent" if token else "none"
        elif limit is None:
            verdict["tokenStatus"] = "unknown"
        else:
            verdict["tokenStatus"] = "accepted" if limit > ANONYMOUS_UPSTREAM_LIMIT else "not_recognised"
        verdict["graphqlBreaker"] = client.breaker_state()
        if own:
            await client.aclose()
    return verdict


def run_check(cfg: EcoConfig) -> dict[str, Any]:
    """Synchronous entry for the command line (no event loop running there)."""
    return asyncio.run(acheck(cfg))
