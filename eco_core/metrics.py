"""Prometheus metrics: what operators graph and alert on (served at /metrics).

    eco_tool_calls_total{tool, outcome}              outcome: ok, input_required, an error code, cancelled
    eco_tool_call_duration_seconds{tool}             histogram of whole tool calls
    eco_upstream_requests_total{endpoint, status}    every request sent to NEON (each attempt, each
                                                     redirect hop); status: HTTP code or transport_error
    eco_upstream_cache_lookups_total{result}         hit, stale (served after an upstream failure), miss
    eco_upstream_rate_limit_remaining{identity}      NEON's x-ratelimit-remaining as last seen;
                                                     identity: anonymous or token (never the token)
    eco_graphql_breaker_open                         1 while the GraphQL breaker is open
    eco_catalog_age_seconds{catalog}                 age of each catalog (NaN before its first build)
    eco_redis_unavailable                            1 while this process finds Redis unreachable
    eco_redis_outages_total                          Redis outages this process saw begin
    eco_redis_skipped_total{use}                     uses of Redis skipped or failed during an outage;
                                                     use: cache (counted as a miss too), rate_limit

Counters are incremented where the events happen (the gateway's call runner, the upstream
sender, the upstream cache); the state gauges (breaker, catalog age) are set by the scrape
itself (`set_state`), from the database and the answering process.

Several worker processes: set PROMETHEUS_MULTIPROC_DIR to an empty directory writable by every
worker *before* they start (prometheus_client reads it at import). Each process then writes its
values to files there and every scrape merges them (counters and histograms summed; the state
gauges report the most recently written value), so any worker answers for all of them. Empty the
directory when the service restarts. Without the variable, metrics are this process's own.

Labels are bounded: tool names, error codes, endpoint templates (a download's own path is
reported as `download`), HTTP statuses, catalog names.
"""

from __future__ import annotations

import math
import os
from typing import Any, Literal

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess as _multiprocess

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

TOOL_CALLS = Counter("eco_tool_calls", "Tool calls by tool and outcome.", ["tool", "outcome"])
TOOL_CALL_SECONDS = Histogram(
    "eco_tool_call_duration_seconds", "Tool call latency, from arguments to result.", ["tool"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
UPSTREAM_REQUESTS = Counter("eco_upstream_requests", "Requests sent to the upstream by endpoint and status.",
                            ["endpoint", "status"])
CACHE_LOOKUPS = Counter("eco_upstream_cache_lookups", "Upstream answer cache lookups by result.", ["result"])
RATE_LIMIT_REMAINING = Gauge("eco_upstream_rate_limit_remaining",
                             "Requests left in NEON's rate-limit window, as its last answer said.",
                             ["identity"], multiprocess_mode="mostrecent")
BREAKER_OPEN = Gauge("eco_graphql_breaker_open", "1 while the GraphQL circuit breaker is open.",
                     multiprocess_mode="mostrecent")
CATALOG_AGE = Gauge("eco_catalog_age_seconds", "Seconds since each catalog was last rebuilt.", ["catalog"],
                    multiprocess_mode="mostrecent")

REDIS_UNAVAILABLE = Gauge("eco_redis_unavailable", "1 while this process finds Redis unreachable.",
                          multiprocess_mode="livemax")
REDIS_OUTAGES = Counter("eco_redis_outages", "Redis outages this process saw begin.")
REDIS_SKIPPED = Counter("eco_redis_skipped", "Uses of Redis skipped or failed while it was unreachable, by use.",
                        ["use"])

# The labelled children of the per-call series: tools and outcomes are a small closed set, and
# looking a child up through `labels()` (lock, validation) cost more than recording the call.
_tool_children: dict[tuple[str, str], tuple[Any, Any]] = {}


def tool_call(tool: str, outcome: str, seconds: float) -> None:
    children = _tool_children.get((tool, outcome))
    if children is None:
        children = _tool_children[(tool, outcome)] = (TOOL_CALLS.labels(tool=tool, outcome=outcome),
                                                      TOOL_CALL_SECONDS.labels(tool=tool))
    children[0].inc()
    children[1].observe(seconds)


def upstream_request(endpoint: str, status: int | str, *, kind: str = "detail") -> None:
    UPSTREAM_REQUESTS.labels(endpoint=endpoint_label(endpoint, kind), status=str(status)).inc()


def endpoint_label(endpoint: str, kind: str) -> str:
    # A streamed download's endpoint is its own path (ids in it): one series per file otherwise.
    if kind == "download" and "{" not in endpoint and not endpoint.startswith("storage:"):
        return "download"
    return endpoint


def cache_lookup(result: Literal["hit", "stale", "miss"]) -> None:
    CACHE_LOOKUPS.labels(result=result).inc()


def rate_limit_remaining(remaining: int, *, with_token: bool) -> None:
    RATE_LIMIT_REMAINING.labels(identity="token" if with_token else "anonymous").set(remaining)


def redis_outage(started: bool) -> None:
    """An outage began (True) or ended (False), as this process saw it."""
    if started:
        REDIS_OUTAGES.inc()
    REDIS_UNAVAILABLE.set(1 if started else 0)


def redis_skipped(use: Literal["cache", "rate_limit"]) -> None:
    REDIS_SKIPPED.labels(use=use).inc()


def set_state(*, breaker_open: bool, catalog_ages: dict[str, int | None]) -> None:
    """The gauges that describe state rather than events, set by the scrape that reads them."""
    BREAKER_OPEN.set(1 if breaker_open else 0)
    for catalog, age in catalog_ages.items():
        CATALOG_AGE.labels(catalog=catalog).set(math.nan if age is None else age)


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def exposition() -> tuple[bytes, str]:
    """The text exposition (body, content type): every worker's values in multiprocess mode."""
    if multiprocess_dir():
        registry = CollectorRegistry()
        _multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    from prometheus_client import REGISTRY

    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST

