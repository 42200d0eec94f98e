"""`--check`: one small anonymous-or-token request to the upstream, reported as JSON."""

from __future__ import annotations

import time
from typing import Any

import httpx

from eco_service import __version__
from eco_service.config import EcoConfig
from eco_service.redact import scrub


def run_check(cfg: EcoConfig) -> dict[str, Any]:
    token = cfg.eco.api_token.reveal() if cfg.eco.api_token else None
    headers = {"User-Agent": f"eco-mcp/{__version__}" + (f" {cfg.eco.user_agent_suffix}" if cfg.eco.user_agent_suffix else "")}
    if token and cfg.token_for_public_endpoints:
        headers["X-API-Token"] = token
    url = f"{cfg.eco.base_url}/taxonomy"
    verdict: dict[str, Any] = {
        "reachable": False,
        "apiBaseUrl": cfg.eco.base_url,
        "tokenConfigured": token is not None,
        "tokenSource": "config" if token else "none",
    }
    started = time.perf_counter()
    try:
        timeout = httpx.Timeout(cfg.eco.read_timeout_s, connect=cfg.eco.connect_timeout_s)
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            resp = client.get(url, params={"taxonTypeCode": "TICK", "limit": 1}, headers=headers)
    except httpx.HTTPError as exc:
        verdict["error"] = scrub(f"{type(exc).__name__}: {exc}")
        verdict["latencyMs"] = round((time.perf_counter() - started) * 1000, 1)
        return verdict
    verdict["latencyMs"] = round((time.perf_counter() - started) * 1000, 1)
    verdict["status"] = resp.status_code
    verdict["reachable"] = resp.status_code < 500
    limit = resp.headers.get("x-ratelimit-limit")
    remaining = resp.headers.get("x-ratelimit-remaining")
    verdict["rateLimit"] = {
        "limit": int(limit) if limit and limit.isdigit() else None,
        "remaining": int(remaining) if remaining and remaining.isdigit() else None,
        "reset": resp.headers.get("x-ratelimit-reset"),
    }
    if token and "X-API-Token" in headers:
        # NEON answers an unrecognised token with the anonymous limit (200).
        verdict["tokenAccepted"] = verdict["rateLimit"]["limit"] not in (None, 200)
    return verdict
