"""NEON's answers -> the spec's stable error codes (spec: Errors, upstream mappings).

    400 body says 'not found'  -> not_found       (details.validReleases passed on)
    400 otherwise              -> invalid_argument (NEON's detail in the message)
    403 without a token sent   -> auth_required
    403 with a token sent      -> forbidden
    404                        -> not_found
    429                        -> rate_limited    (details.retryAfterSeconds)
    5xx, other statuses, a body we cannot parse -> upstream_error
    connect/read timeout, reset, DNS           -> upstream_unavailable
    GraphQL `errors`           -> graphql_error

Messages name the endpoint by path only: never a query string, a header or a token.
"""

from __future__ import annotations

import math
from typing import Any

import httpx
from pydantic import ValidationError

from eco_core.errors import EcoError
from upstream.models import NeonErrorBody


def _neon_error(resp: httpx.Response) -> NeonErrorBody | None:
    try:
        return NeonErrorBody.model_validate_json(resp.content)
    except (ValidationError, ValueError):
        return None


def from_status(resp: httpx.Response, *, endpoint: str, token_sent: bool, retry_after_s: float | None = None) -> EcoError:
    status = resp.status_code
    body = _neon_error(resp) if status < 500 else None
    detail = body.error.detail.strip() if body else ""
    if status == 400:
        if "not found" in detail.lower():
            details: dict[str, Any] = {"upstreamStatus": 400, "endpoint": endpoint}
            if body and body.valid_releases:
                details["validReleases"] = body.valid_releases
            return EcoError("not_found", f"{endpoint}: {detail}", details=details)
        return EcoError("invalid_argument", f"{endpoint}: upstream rejected the request: {detail or 'HTTP 400'}",
                        details={"upstreamStatus": 400, "endpoint": endpoint})
    if status == 403:
        if token_sent:
            return EcoError("forbidden", f"{endpoint}: the upstream rejected the API token",
                            details={"upstreamStatus": 403, "endpoint": endpoint})
        return EcoError("auth_required", f"{endpoint}: this upstream endpoint needs an API token",
                        details={"upstreamStatus": 403, "endpoint": endpoint})
    if status == 404:
        return EcoError("not_found", f"{endpoint}: {detail or 'not found upstream'}",
                        details={"upstreamStatus": 404, "endpoint": endpoint})
    if status == 429:
        return rate_limited(endpoint, retry_after_s or 1.0)
    return EcoError("upstream_error", f"{endpoint}: upstream answered HTTP {status}",
                    details={"upstreamStatus": status, "endpoint": endpoint})


def rate_limited(endpoint: str, wait_s: float) -> EcoError:
    seconds = max(1, math.ceil(wait_s))
    return EcoError("rate_limited", f"{endpoint}: upstream rate limit exhausted; retry in {seconds} s",
                    details={"retryAfterSeconds": seconds, "endpoint": endpoint})


def host_of(url: str) -> str:
    """The host (and port) of an upstream URL, for hints: never its path or query."""
    try:
        parsed = httpx.URL(url)
    except Exception:
        return "the upstream"
    if not parsed.host:
        return "the upstream"
    return f"{parsed.host}:{parsed.port}" if parsed.port else parsed.host


def unreachable_hint(host: str) -> str:
    """The hint of upstream_unavailable and catalog_unavailable: which host failed, how to test
    it, and the setting that points the service elsewhere."""
    return (f"{host} did not answer. Test it with `scripts/serve --check` (or eco_ping with check_api=true); "
            "if that is the wrong upstream, set eco.base_url (ECO_MCP_ECO__BASE_URL) and eco.graphql_url. "
            "Offline, `python manage.py eco_demo` serves the bundled NEON simulator instead.")


def failure_hint(host: str, cause: str | None) -> str:
    """The hint of a build that failed with `cause` ("code: message"): unreachable_hint when the
    upstream did not answer; when it answered with an error (a 5xx, a body we cannot read), that."""
    if cause is None or cause.startswith("upstream_unavailable"):
        return unreachable_hint(host)
    return (f"{host} answered with an error (details.cause); such failures are usually brief: retry later. "
            "Test it with `scripts/serve --check` (or eco_ping with check_api=true).")


def from_transport(exc: httpx.HTTPError, *, endpoint: str) -> EcoError:
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "unreachable"
    try:
        host = host_of(str(exc.request.url))
    except RuntimeError:  # an error raised before any request was made carries none
        host = "the upstream"
    return EcoError("upstream_unavailable", f"{endpoint}: upstream {kind} ({type(exc).__name__})",
                    details={"endpoint": endpoint, "cause": type(exc).__name__}, hint=unreachable_hint(host))


def unexpected_body(endpoint: str, exc: Exception) -> EcoError:
    if isinstance(exc, ValidationError):
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors(include_input=False)})[:5]
        what = "fields " + ", ".join(fields)
    else:
        what = "not JSON"
    return EcoError("upstream_error", f"{endpoint}: unexpected upstream reply ({what})",
                    details={"endpoint": endpoint, "reason": "unexpected_body"})


def graphql_errors(errors: list[Any]) -> EcoError:
    messages = [e.message for e in errors][:5]
    return EcoError("graphql_error", "upstream rejected the GraphQL query: " + "; ".join(messages),
                    details={"errors": [e.model_dump(by_alias=True, mode="json", exclude_none=True) for e in errors][:20]})
