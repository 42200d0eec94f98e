"""One error type for everything a tool can fail with.

    EcoError(code, message, details, hint, retryable)
    ├── caller's fault (retrying the same call cannot help)
    │   ├── invalid_argument        bad, unknown or conflicting input; upstream 400 that is not 'not found'
    │   ├── not_found               unknown code/name/file; details.didYouMean / details.validReleases
    │   ├── ambiguous_input         a name fits several; details.candidates
    │   ├── query_too_large         > 500 site-months, or too many locations for proximity
    │   ├── download_limit_exceeded plan above file or byte caps
    │   ├── download_denied         unsafe destination, disallowed host, existing file with if_exists=error
    │   ├── result_too_large        result above the hard byte limit after trimming
    │   ├── unknown_tool            no tool by that name; details.didYouMean
    │   └── not_available_in_http_mode   downloads over HTTP
    ├── configuration or credentials
    │   ├── auth_required           token needed, none available (raised before any request)
    │   ├── forbidden               upstream rejected the token
    │   └── feature_unavailable     downloads disabled, optional extra missing
    ├── upstream trouble (retryable)
    │   ├── rate_limited            waiting would exceed max_wait_s; details.retryAfterSeconds
    │   ├── upstream_error          upstream 5xx or a reply we cannot parse
    │   ├── upstream_unavailable    unreachable or timed out
    │   ├── graphql_error           upstream rejected a GraphQL query (not retryable)
    │   ├── checksum_mismatch       a download's MD5 differed (partial file removed)
    │   └── catalog_unavailable     product or site catalog could not be built, or the catalog
    │                               database is unreachable (mcp_gateway.calls maps that outage)
    └── internal_error              a bug; details.correlationId matches one log line
"""

from __future__ import annotations

from typing import Any

from eco_core.redact import scrub

RETRYABLE = {
    "rate_limited": True,
    "upstream_error": True,
    "upstream_unavailable": True,
    "checksum_mismatch": True,
    "catalog_unavailable": True,
}

CODES = (
    "invalid_argument", "not_found", "ambiguous_input", "auth_required", "forbidden", "rate_limited",
    "upstream_error", "upstream_unavailable", "graphql_error", "query_too_large",
    "download_limit_exceeded", "download_denied", "checksum_mismatch", "result_too_large",
    "feature_unavailable", "not_available_in_http_mode", "catalog_unavailable", "unknown_tool",
    "internal_error",
)

DEFAULT_HINTS = {
    "invalid_argument": "Fix the named field and call again.",
    "not_found": "Check the spelling; see details.didYouMean or details.validReleases.",
    "ambiguous_input": "Call again with one code from details.candidates.",
    "auth_required": "Set an upstream API token (see eco://guide/api-token).",
    "forbidden": "The upstream rejected the token; create a new one.",
    "rate_limited": "Wait details.retryAfterSeconds, then retry.",
    "upstream_error": "The upstream failed; retry later.",
    "upstream_unavailable": "The upstream is unreachable; retry, or run eco_ping(check_api=true).",
    "graphql_error": "Check field names in eco://reference/graphql-schema.",
    "query_too_large": "Narrow sites, months or types.",
    "download_limit_exceeded": "Narrow the selectors, or call again for the rest.",
    "download_denied": "Fix the destination or options.",
    "checksum_mismatch": "Retry the download.",
    "result_too_large": "Narrow the request.",
    "feature_unavailable": "Enable the feature or install the extra.",
    "not_available_in_http_mode": "Use the signed URLs from eco_list_files.",
    "catalog_unavailable": "Retry later.",
    "unknown_tool": "See tools/list.",
    "internal_error": "Report it with details.correlationId.",
}


class EcoError(Exception):
    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        hint: str | None = None,
        retryable: bool | None = None,
    ) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        message = scrub(message)
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        if code == "not_found" and self.details.get("didYouMean") is None:
            # Always a list, so a client can iterate it without a null check (empty: no suggestion).
            self.details["didYouMean"] = []
        self.hint = hint or DEFAULT_HINTS[code]
        self.retryable = RETRYABLE.get(code, False) if retryable is None else retryable

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": {
                "code": self.code,
                "message": self.message,
                "details": self.details,
                "hint": self.hint,
                "retryable": self.retryable,
            }
        }

    def __repr__(self) -> str:
        return f"EcoError({self.code!r}, {self.message!r})"
