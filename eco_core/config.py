"""The service's settings: one typed model of the spec's `eco.*`, `cache.*`, `limits.*`,
`downloads.*`, `tables.*` and `server.*`, loaded from four layers (highest first):

    command-line flags  >  ECO_MCP_<SECTION>__<FIELD> environment  >  YAML (--config)  >  defaults

The upstream token has its own sources (ECO_MCP_ECO__API_TOKEN > ECO_TOKEN > ECO_API_TOKEN >
YAML eco.api_token) and no flag. It is held as a `Secret` whose str/repr are masked, and it is
registered with `eco_core.redact` so that no log line can carry it.

Deployment settings that are not the spec's (DATABASE_URL, REDIS_URL, CELERY_BROKER_URL) live in
`eco_service.settings`, because Django reads them before any of this runs.

The loader is hand-written rather than pydantic-settings. Checked against pydantic-settings
2.16.3 (its source and docs), five rules this loader keeps have no place in that library:
- Unset words. `env_parse_none_str` is one string compared exactly (`value == parse_none_str`),
  so of `null`, `NULL`, ` None ` and an empty value only the one configured word reads as None;
  the others reach validation as text and fail.
- Unsetting a non-nullable setting. Sources are combined with `deep_update`, so a higher source
  can put a value over a lower one but cannot remove it: `ECO_MCP_ECO__MAX_CONCURRENCY=null`
  over YAML `max_concurrency: 9` gives None on top (a validation error), not the default 4.
- Unknown keys. `extra` is ignore, allow or forbid: an unknown `ECO_MCP_*` variable is silently
  skipped by `EnvSettingsSource` (only dotenv files collect extras), so nothing can name it in
  the one warning that also names the YAML's unknown keys.
- An explicit environment. `EnvSettingsSource` reads `os.environ` (in its private
  `_load_env_vars`); `load_config(env=...)` takes any mapping, which every configuration test
  uses to pass its own environment without touching the process's.
- An unreadable --config. `YamlConfigSettingsSource` skips a file that does not exist
  (`_existing_files`) and lets yaml's own error through; here both stop with exit 2 naming
  `--config`, and the YAML's line.
The token's ordered sources with their origin recorded would also be hand-written there
(`AliasChoices` orders names but does not say which one answered). What the library would take
over, the nested merge and the comma lists (`NoDecode` plus a validator), is about twenty lines.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer, field_validator

from eco_core import redact

log = logging.getLogger("eco.config")

ENV_PREFIX = "ECO_MCP_"
# Env names under the prefix that are not settings paths.
ENV_RESERVED = {"ECO_MCP_CONFIG", "ECO_MCP_DATA_DIR"}
TOKEN_ENV_ORDER = ("ECO_MCP_ECO__API_TOKEN", "ECO_TOKEN", "ECO_API_TOKEN")
UNSET_WORDS = {"", "none", "null"}

# A DNS name or IPv4 address, optionally '*.'-prefixed; an IPv6 literal in brackets.
_HOST_PATTERN = re.compile(r"(\*\.)?[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?|\[[0-9A-Fa-f:.]+\]")

DEFAULT_BASE_URL = "https://data.neonscience.org/api/v0"
DEFAULT_GRAPHQL_URL = "https://data.neonscience.org/graphql"


class Secret:
    """A string that never shows itself: str/repr/format give a mask."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        redact.register_secret(value)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    def __str__(self) -> str:
        return "********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


class _Section(BaseModel):
    # Unknown keys are reported by the loader (one warning), so the model itself ignores them.
    model_config = ConfigDict(extra="ignore", validate_assignment=True, frozen=False)


class RateLimit(_Section):
    anonymous_burst: int = Field(180, ge=1, le=100000, description="Anonymous bucket size (10 % under NEON's 200).")
    anonymous_rps: float = Field(1.8, gt=0, le=10000, description="Anonymous refill per second (NEON: 2).")
    token_burst: int = Field(1800, ge=1, le=1000000, description="Bucket size with a token (NEON: 2000).")
    token_rps: float = Field(7.2, gt=0, le=10000, description="Refill per second with a token (NEON: 8).")
    low_water: int = Field(5, ge=0, le=10000, description="Wait for reset when upstream remaining falls to this.")
    max_wait_s: float = Field(10.0, ge=0, le=3600, description="Longest wait before answering rate_limited.")
    processes: int = Field(4, ge=1, le=1024, description=(
        "Processes sharing the budget through Redis (every web worker and Celery worker of every replica). "
        "While Redis is unreachable each process spends only its share, a bucket of its own holding "
        "1/processes of the burst and rate; an overestimate is the safe side. Unused without REDIS_URL."))


class Retries(_Section):
    max_attempts: int = Field(3, ge=1, le=10, description="Attempts per request, including the first.")
    backoff_base_s: float = Field(0.5, ge=0, le=60, description="Backoff base: base * 2^n seconds.")
    backoff_max_s: float = Field(8.0, ge=0, le=300, description="Backoff cap in seconds.")
    retry_after_default_s: float = Field(1.0, ge=0, le=300, description="Wait after a 429 without retryafter.")


class Eco(_Section):
    base_url: str = Field(DEFAULT_BASE_URL, description="Upstream REST base URL.")
    graphql_url: str = Field(DEFAULT_GRAPHQL_URL, description="Upstream GraphQL URL.")
    api_token: Secret | None = Field(None, description="Upstream token (env or YAML only; never a flag).")
    token_for_public_endpoints: bool | None = Field(
        None, description="Send the token to every request; unset: true on stdio, false on http."
    )
    user_agent_suffix: str | None = Field(None, max_length=200, description="Appended to the User-Agent.")
    connect_timeout_s: float = Field(10.0, gt=0, le=600, description="Connect timeout.")
    read_timeout_s: float = Field(60.0, gt=0, le=3600, description="Read timeout for detail requests.")
    catalog_read_timeout_s: float = Field(180.0, gt=0, le=3600, description="Read timeout for catalog requests.")
    download_read_timeout_s: float = Field(300.0, gt=0, le=7200, description="Read timeout for downloads.")
    max_concurrency: int = Field(4, ge=1, le=64, description="Simultaneous upstream requests.")
    call_deadline_s: float = Field(30.0, gt=0, le=600, description=(
        "Most upstream time one tool call may spend (requests, retries, backoff, rate-limit and slot waits); "
        "then upstream_unavailable. A free upstream slot is awaited at most connect_timeout_s. "
        "Catalog refreshes are not bound by it."))
    fallback_wait_s: float = Field(10.0, gt=0, le=600, description=(
        "Most a live read the cached catalog can answer instead (a site's record, sites' elevations) "
        "waits for the upstream, within eco.call_deadline_s; then the catalog answers, with a note."))
    prefer_graphql: bool = Field(True, description="Build catalogs from GraphQL first, REST as fallback.")
    graphql_breaker_failures: int = Field(2, ge=1, le=100, description="Consecutive GraphQL failures that open the breaker.")
    graphql_breaker_cooldown_s: float = Field(900.0, ge=0, le=86400, description="Seconds the breaker stays open.")
    rate_limit: RateLimit = Field(default_factory=RateLimit)
    retries: Retries = Field(default_factory=Retries)

    model_config = ConfigDict(extra="ignore", validate_assignment=True, arbitrary_types_allowed=True)

    @field_validator("api_token", mode="before")
    @classmethod
    def _wrap_token(cls, v: Any) -> Any:
        if v is None or isinstance(v, Secret):
            return v
        if isinstance(v, str):
            return Secret(v) if v.strip() else None
        raise TypeError("must be a string")

    @field_serializer("api_token")
    def _mask_token(self, v: Secret | None) -> str | None:
        # Any dump of the settings (logs, --print-config, admin) shows only the mask.
        return None if v is None else "********"

    @field_validator("base_url", "graphql_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")


class CacheTtl(_Section):
    catalog: int = Field(3600, ge=1, le=30 * 86400, description="Product/site/release catalogs.")
    detail: int = Field(900, ge=1, le=30 * 86400, description="Product and site detail records.")
    locations: int = Field(21600, ge=1, le=30 * 86400, description="Location records.")
    releases: int = Field(21600, ge=1, le=30 * 86400, description="Release records.")
    taxonomy: int = Field(86400, ge=1, le=30 * 86400, description="Taxonomy pages.")
    samples_classes: int = Field(86400, ge=1, le=30 * 86400, description="Sample classes.")
    samples_view: int = Field(60, ge=1, le=30 * 86400, description="Sample views (token-scoped).")
    data: int = Field(600, ge=1, le=30 * 86400, description="Data file listings.")
    prototype: int = Field(21600, ge=1, le=30 * 86400, description="Prototype datasets.")
    documents: int = Field(86400, ge=1, le=30 * 86400, description="Documents.")


class Cache(_Section):
    enabled: bool = Field(True, description="Cache upstream answers.")
    max_entries: int = Field(1024, ge=1, le=10_000_000, description="Most cached upstream answers.")
    max_index_entries: int = Field(4, ge=1, le=64, description=(
        "Search indexes a process holds, one per set of catalog versions, least recently used forgotten "
        "first: the current one plus those a catalog swap superseded (1: the current one only). Each is "
        "the whole catalog in memory."))
    prewarm: bool | None = Field(None, description=(
        "Build catalogs at start; unset: true on http, false on stdio. A stdio server still builds the "
        "catalogs a search needs in the background once its first answers are out, unless this is false."))
    refresh_ahead: float = Field(0.1, ge=0, le=1, description="Refresh in the last fraction of a TTL.")
    stale_if_error_s: int = Field(86400, ge=0, le=30 * 86400, description="Serve stale answers this long when upstream fails.")
    redis_retry_s: float = Field(1.0, ge=0.05, le=300, description=(
        "While Redis is unreachable, the answer cache and the rate limit try it again at most once per this "
        "many seconds; in between they skip it (a cache miss, the per-process bucket)."))
    redis_timeout_s: float = Field(1.0, gt=0, le=60, description=(
        "Connect and reply timeout of one Redis command; past it Redis counts as unreachable."))
    ttl_s: CacheTtl = Field(default_factory=CacheTtl)


class Limits(_Section):
    default_limit: int = Field(50, ge=1, le=500, description=(
        "Page size when a call sends no limit, on the tools whose spec default is 50 (eco_search_sites, "
        "eco_find_locations, eco_list_files, eco_list_sample_classes; the others keep their own), at most "
        "the tool's maximum and max_limit. tools/list still shows 50."))
    max_limit: int = Field(500, ge=1, le=5000, description=(
        "Ceiling on every page size a tool takes (limit and each ..._limit): a larger value sent is invalid_argument; "
        "a default above it (the tool's own or default_limit) is lowered to it."))
    max_result_bytes: int = Field(50000, ge=1000, le=10_000_000, description="Results above this are trimmed.")
    hard_max_result_bytes: int = Field(200000, ge=1000, le=50_000_000, description="Above this after trimming: result_too_large.")
    text_budget_summary: int = Field(300, ge=10, le=100000, description="Characters of text in summaries.")
    text_budget_detail: int = Field(4000, ge=100, le=100000, description="Characters of text per detail section.")
    max_sites_per_call: int = Field(30, ge=1, le=81, description="Sites per file listing or download.")
    max_site_months_per_query: int = Field(500, ge=1, le=100000, description="Site-months per data query.")
    max_location_roots: int = Field(20, ge=1, le=200, description="Site codes walked by eco_find_locations.")
    graphql_max_query_chars: int = Field(8000, ge=100, le=1_000_000, description="Longest GraphQL query.")
    graphql_max_depth: int = Field(8, ge=1, le=64, description="Deepest GraphQL selection.")
    graphql_max_response_bytes: int = Field(50000, ge=1000, le=50_000_000, description="Default GraphQL response budget.")
    graphql_hard_max_response_bytes: int = Field(200000, ge=1000, le=50_000_000, description="Caller's maximum GraphQL budget.")
    graphql_max_aliases: int = Field(30, ge=0, le=10000, description=(
        "Most aliased fields in one GraphQL query, counted with fragments expanded (each alias runs its "
        "field again upstream); more is query_too_large before sending."))
    graphql_max_estimated_nodes: int = Field(100000, ge=100, le=100_000_000, description=(
        "Most values a GraphQL query may ask for, estimated before sending: each field counts 1, each list "
        "multiplies what it holds by its likely length (products 200, sites 81, filters by the codes they "
        "name, nested lists graphql_list_estimate); more is query_too_large."))
    graphql_list_estimate: int = Field(20, ge=1, le=10000, description=(
        "Likely length of a nested GraphQL list (siteCodes, availableMonths, ...) in that estimate; a list "
        "nested in a list of the same name (a location hierarchy walked down) counts 2."))
    graphql_reply_read_factor: int = Field(40, ge=1, le=1000, description=(
        "Largest upstream GraphQL reply read, as a multiple of graphql_hard_max_response_bytes (8 MB at the "
        "defaults); reading a longer reply stops there and the call is query_too_large."))
    max_document_bytes: int = Field(26214400, ge=1024, le=1 << 31, description="Largest document for text extraction.")
    tools_list_max_bytes: int = Field(135000, ge=1000, le=10_000_000, description="Bound on the serialized tools/list.")


class Downloads(_Section):
    enabled: bool | None = Field(None, description="Allow downloads; unset: true on stdio; never on http.")
    directory: Path = Field(Path("~/eco-downloads"), description="Download directory.")
    max_files_per_call: int = Field(50, ge=1, le=10000, description="Files per download call.")
    max_bytes_per_call: int = Field(2147483648, ge=1, le=1 << 40, description="Bytes per download call.")
    max_file_bytes: int = Field(1073741824, ge=1, le=1 << 40, description="Bytes per file.")
    max_stack_files: int = Field(5000, ge=1, le=1_000_000, description=(
        "Source files one eco_stack_tables call may read (a product's CSVs per site, month and sensor position); "
        "its bytes are bound by max_bytes_per_call and max_file_bytes as a download's are."))
    verify_checksums: bool = Field(True, description="Verify MD5 before renaming .part files.")
    allowed_hosts: list[str] = Field(
        default_factory=lambda: ["data.neonscience.org", "storage.googleapis.com", "*.storage.googleapis.com"],
        description="Hosts downloads may come from ('*.' is a subdomain wildcard).",
    )

    storage_origins: list[str] = Field(default_factory=list, description=(
        "Exact origins (scheme://host:port) a download may also be redirected to, plain http included (a local "
        "storage emulator); otherwise a redirect must stay on the upstream's origin or reach an allowed host "
        "over https."))

    @field_validator("storage_origins")
    @classmethod
    def _origins(cls, v: list[str]) -> list[str]:
        out = []
        for item in v:
            parts = urlsplit(item.strip())
            try:
                port = parts.port
            except ValueError:
                port = None
            if (parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password
                    or parts.path not in ("", "/") or parts.query or parts.fragment
                    or (port is None and re.search(r":\d*$", parts.netloc))):
                raise ValueError(f"{item!r} is not an origin like http://localhost:8766 (a comma-separated list)")
            out.append(f"{parts.scheme}://{parts.netloc.lower()}")
        return out

    @field_validator("allowed_hosts")
    @classmethod
    def _host_patterns(cls, v: list[str]) -> list[str]:
        # A host that can never match (a JSON list written where a comma list is expected gives
        # '["a"' and '"b"]') would deny every download with a misleading message; refuse it here.
        for item in v:
            if not _HOST_PATTERN.fullmatch(item):
                raise ValueError(f"{item!r} is not a host name or '*.'-prefixed domain (a comma-separated list)")
        return v


class Tables(_Section):
    query_timeout_s: float = Field(20.0, gt=0, le=600, description=(
        "Wall time one eco_query_tables query may run (then cancelled: query_too_large); below "
        "eco.call_deadline_s, so the call answers before its deadline."))
    query_memory_mb: int = Field(512, ge=16, le=1 << 20, description=(
        "Memory of DuckDB's buffer manager for one dataset's engine in an engine worker; a query that needs "
        "more is stopped (query_too_large), nothing spills to disk. Values outside it (long strings, lists) "
        "count against tables.engine_memory_mb."))
    query_threads: int = Field(1, ge=1, le=256, description=(
        "Threads the query engine of one dataset may run a query on."))
    query_cpu_s: float = Field(30.0, gt=0, le=3600, description=(
        "CPU seconds (all its threads) one query may use in its engine worker (RLIMIT_CPU); past it the worker "
        "is killed and replaced, and the query is query_too_large."))
    query_max_depth: int = Field(100, ge=10, le=1000, description=(
        "Deepest nesting a query may have, as DuckDB's parser counts it (expressions within expressions, "
        "subqueries within subqueries); deeper is invalid_argument."))
    engine_workers: int = Field(2, ge=1, le=64, description=(
        "Engine worker processes one serving process keeps for queries (started on the first query, kept warm); "
        "a query waits for a free one until its deadline, then is rate_limited (retryable)."))
    engine_memory_mb: int = Field(1024, ge=256, le=1 << 20, description=(
        "Memory one engine worker may allocate (RLIMIT_DATA: heap and private mappings, ~200 MB of it the "
        "engine's own); a query past it is query_too_large, and a worker left holding half of it is replaced."))
    store_directory: Path | None = Field(None, description=(
        "The HTTP deployment's dataset store (stacked tables built by the workers; web and worker must share it); "
        "unset: the data folder's datasets/. stdio stacks into downloads.directory instead."))
    max_bytes_per_dataset: int = Field(2147483648, ge=1, le=1 << 44, description=(
        "Source bytes one dataset of the store may stack (HTTP); a larger selection is refused before any byte."))
    max_store_bytes: int = Field(21474836480, ge=1, le=1 << 48, description=(
        "Bytes the dataset store may hold (HTTP); past it, the least recently used ready datasets are deleted."))
    build_lease_s: float = Field(60.0, ge=1, le=3600, description=(
        "A store build's lease (HTTP): renewed by the running build every sixth of it; a build whose lease ran "
        "out is recorded failed, and a queued build no worker took within half of it is queued again. Long "
        "enough to ride out a database restart."))


class Server(_Section):
    transport: Literal["stdio", "http"] = Field("stdio", description="stdio or http.")
    bind_address: str = Field("127.0.0.1", min_length=1, description="HTTP bind address.")
    bind_port: int = Field(8080, ge=0, le=65535, description="HTTP bind port.")
    public_base_url: str | None = Field(None, description="Public base URL; its host and origin join the allow-lists.")
    allowed_hosts: list[str] = Field(default_factory=list, description="Host header allow-list.")
    allowed_origins: list[str] = Field(default_factory=list, description="Origin header allow-list.")
    dns_rebinding_protection: bool | None = Field(
        None, description="Host/Origin checks; unset: on for loopback binds or when allow-lists are set."
    )
    json_response: bool = Field(False, description="Answer application/json instead of one SSE frame.")
    max_request_body_size: int = Field(1048576, ge=1024, le=64 * 1048576, description="Largest request body.")
    header_read_timeout_s: float = Field(10.0, gt=0, le=300, description=(
        "Seconds a client has to send a request's headers, from the connection opening or the previous response "
        "ending; then 408 and the connection is closed (an idle connection is closed without a reply). Applies "
        "under the HTTP command and the image's uvicorn command (--http mcp_gateway.http_protocol:TimedHttpProtocol)."))
    body_read_timeout_s: float = Field(20.0, gt=0, le=3600, description=(
        "Seconds a client has to send a whole request body once its headers arrived; then 408 and the connection "
        "is closed."))
    accept_header_token: bool = Field(True, description="Honour callers' token header (https or insecure switch).")
    request_token_header: str = Field("X-API-Token", min_length=1, description="Header carrying a caller's token.")
    allow_insecure_header_token: bool = Field(False, description="Accept token headers without https (development).")
    share_config_token_over_http: bool = Field(False, description="Lend the operator's token to anonymous callers.")
    tools_list_ttl_ms: int = Field(300000, ge=0, le=86400000, description="Cache hint for tools/list.")
    log_level: Literal["debug", "info", "warning", "error", "critical"] = Field("info", description="Log level.")
    instructions_extra: str | None = Field(None, max_length=4000, description="Appended to the server instructions.")
    ops_token: Secret | None = Field(None, description=(
        "Bearer token for machines calling /api/ops/ (16+ characters; env or YAML); unset: staff sessions only."))

    model_config = ConfigDict(extra="ignore", validate_assignment=True, arbitrary_types_allowed=True)

    @field_validator("log_level", "transport", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v

    @field_validator("ops_token", mode="before")
    @classmethod
    def _wrap_ops_token(cls, v: Any) -> Any:
        if v is None or isinstance(v, Secret):
            return v
        if not isinstance(v, str):
            raise TypeError("must be a string")
        if not v.strip():
            return None
        # A guessable token would open the ops API (and its refresh trigger) to anyone.
        if len(v.strip()) < 16:
            raise ValueError("must be at least 16 characters")
        return Secret(v.strip())

    @field_serializer("ops_token")
    def _mask_ops_token(self, v: Secret | None) -> str | None:
        return None if v is None else "********"


class EcoConfig(_Section):
    eco: Eco = Field(default_factory=Eco)
    cache: Cache = Field(default_factory=Cache)
    limits: Limits = Field(default_factory=Limits)
    downloads: Downloads = Field(default_factory=Downloads)
    tables: Tables = Field(default_factory=Tables)
    server: Server = Field(default_factory=Server)
    # Where the token came from: one of TOKEN_ENV_ORDER, "yaml", or None.
    token_origin: str | None = Field(None, exclude=True)

    # -- values whose default depends on the transport ------------------------------------
    @property
    def is_http(self) -> bool:
        return self.server.transport == "http"

    @property
    def token_for_public_endpoints(self) -> bool:
        v = self.eco.token_for_public_endpoints
        return (not self.is_http) if v is None else v

    @property
    def prewarm(self) -> bool:
        v = self.cache.prewarm
        return self.is_http if v is None else v

    @property
    def downloads_enabled(self) -> bool:
        if self.is_http:
            return False
        v = self.downloads.enabled
        return True if v is None else v

    @property
    def dns_rebinding_protection(self) -> bool:
        v = self.server.dns_rebinding_protection
        if v is not None:
            return v
        loopback = self.server.bind_address in {"127.0.0.1", "localhost", "::1"} or self.server.bind_address.startswith("127.")
        # public_base_url joins the allow-lists, so setting it sets them.
        return loopback or bool(self.server.allowed_hosts or self.server.allowed_origins or self.server.public_base_url)

    @property
    def download_dir(self) -> Path:
        return self.downloads.directory.expanduser()

    def masked_dict(self) -> dict[str, Any]:
        """Every setting with its resolved value, the token masked: what --print-config shows."""
        data = self.model_dump(mode="json", exclude={"token_origin"})
        data["resolved"] = {
            "eco.token_for_public_endpoints": self.token_for_public_endpoints,
            "cache.prewarm": self.prewarm,
            "downloads.enabled": self.downloads_enabled,
            "server.dns_rebinding_protection": self.dns_rebinding_protection,
            # eco_ping's vocabulary (config, request or none; a request token exists only per call),
            # so the two never disagree; token_origin says which variable or file it came from.
            "token_source": "config" if self.token_origin else "none",
            "token_origin": self.token_origin,
        }
        return data


class ConfigError(Exception):
    """Bad configuration: the message names the setting and what is allowed, never a secret."""


# --------------------------------------------------------------------------- loading
def _field_map(model: type[BaseModel]) -> dict[str, Any]:
    return dict(model.model_fields)


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else tp), len(args) != len(typing.get_args(tp))
    return tp, False


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) is list


def _walk_env_path(parts: list[str]) -> tuple[list[str], Any] | None:
    """Map ECO_MCP_A__B__C parts onto model field names; None when no such setting exists."""
    model: type[BaseModel] = EcoConfig
    names: list[str] = []
    for i, part in enumerate(parts):
        fields = _field_map(model)
        name = part.lower()
        if name not in fields or name == "token_origin":
            return None
        names.append(name)
        tp, _ = _unwrap_optional(fields[name].annotation)
        if i == len(parts) - 1:
            return names, fields[name]
        if not _is_model(tp):
            return None
        model = tp
    return None


def _set_path(tree: dict[str, Any], path: list[str], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def _deep_merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _unknown_keys(tree: Mapping[str, Any], model: type[BaseModel], prefix: str = "") -> list[str]:
    found: list[str] = []
    fields = _field_map(model)
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if key not in fields or key == "token_origin":
            found.append(path)
            continue
        tp, _ = _unwrap_optional(fields[key].annotation)
        if _is_model(tp) and isinstance(value, Mapping):
            found.extend(_unknown_keys(value, tp, path + "."))
    return found


def _prune_unknown(tree: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    fields = _field_map(model)
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if key not in fields or key == "token_origin":
            continue
        tp, _ = _unwrap_optional(fields[key].annotation)
        out[key] = _prune_unknown(value, tp) if _is_model(tp) and isinstance(value, Mapping) else value
    return out


def _env_layer(env: Mapping[str, str]) -> tuple[dict[str, Any], list[str], list[tuple[list[str], bool]]]:
    """Settings from ECO_MCP_* variables, the names of unknown ones, and the paths they unset."""
    tree: dict[str, Any] = {}
    unknown: list[str] = []
    unset: list[tuple[list[str], bool]] = []
    for name, raw in sorted(env.items()):
        if not name.startswith(ENV_PREFIX) or name in ENV_RESERVED or name == TOKEN_ENV_ORDER[0]:
            continue
        walked = _walk_env_path(name[len(ENV_PREFIX):].split("__"))
        if walked is None:
            unknown.append(name)
            continue
        path, field = walked
        tp, nullable = _unwrap_optional(field.annotation)
        if raw.strip().lower() in UNSET_WORDS:
            unset.append((path, nullable))
            continue
        value: Any = [item.strip() for item in raw.split(",") if item.strip()] if _is_list(tp) else raw
        _set_path(tree, path, value)
    return tree, unknown, unset


def _yaml_layer(path: str | os.PathLike[str]) -> dict[str, Any]:
    # Imported here: only a --config file needs the parser, and a stdio start without one would
    # pay for it before its first answer.
    import yaml

    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--config: cannot read {p}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"--config: {p} is not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config: {p} must hold a mapping of sections (eco, cache, limits, downloads, tables, server)")
    return data


def _drop_nulls_for_non_nullable(tree: Any, model: type[BaseModel]) -> Any:
    """YAML `key: null` on a field that cannot be null means 'unset': fall back to the default."""
    if not isinstance(tree, dict):
        return tree
    fields = _field_map(model)
    out: dict[str, Any] = {}
    for key, value in tree.items():
        field = fields.get(key)
        if field is None:
            out[key] = value
            continue
        tp, nullable = _unwrap_optional(field.annotation)
        if value is None and not nullable:
            continue
        out[key] = _drop_nulls_for_non_nullable(value, tp) if _is_model(tp) else value
    return out


def _bounds_text(model: type[BaseModel], path: tuple[Any, ...]) -> str:
    """'allowed: 1 to 64' style text from the field's metadata, for error messages."""
    field = None
    current: Any = model
    for part in path:
        if not isinstance(part, str) or not _is_model(current):
            break
        field = _field_map(current).get(part)
        if field is None:
            break
        current, _ = _unwrap_optional(field.annotation)
    if field is None:
        return ""
    lo = hi = None
    lo_incl = hi_incl = True
    for meta in field.metadata:
        for attr, incl in (("ge", True), ("gt", False)):
            if getattr(meta, attr, None) is not None:
                lo, lo_incl = getattr(meta, attr), incl
        for attr, incl in (("le", True), ("lt", False)):
            if getattr(meta, attr, None) is not None:
                hi, hi_incl = getattr(meta, attr), incl
    tp, nullable = _unwrap_optional(field.annotation)
    if typing.get_origin(tp) is Literal:
        return "allowed: " + ", ".join(str(a) for a in typing.get_args(tp))
    kind = getattr(tp, "__name__", str(tp))
    parts = [f"type {kind}{' or null' if nullable else ''}"]
    if lo is not None and hi is not None:
        parts.append(f"allowed range {'' if lo_incl else '> '}{lo} to {'' if hi_incl else '< '}{hi}")
    elif lo is not None:
        parts.append(f"allowed {'>=' if lo_incl else '>'} {lo}")
    elif hi is not None:
        parts.append(f"allowed {'<=' if hi_incl else '<'} {hi}")
    return "; ".join(parts)


def _format_validation_error(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = tuple(err["loc"])
        dotted = ".".join(str(p) for p in loc)
        secret = dotted == "eco.api_token"
        msg = err["msg"] if not secret else "invalid token value"
        bounds = _bounds_text(EcoConfig, loc)
        lines.append(f"setting {dotted}: {msg}" + (f" ({bounds})" if bounds and not secret else ""))
    return "invalid configuration: " + "; ".join(lines)


def load_config(
    *,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    warn: bool = True,
) -> EcoConfig:
    """Build the configuration from the four layers. Raises ConfigError on any bad value.

    `flags` uses dotted setting paths (`{"server.transport": "http"}`); the command line maps its
    options onto those. `env` defaults to os.environ. An `ECO_MCP_CONFIG` variable names the YAML
    file when no --config path is given (for uvicorn/Celery processes that have no flags).
    """
    env = os.environ if env is None else env
    if config_path is None and env.get("ECO_MCP_CONFIG"):
        config_path = env["ECO_MCP_CONFIG"]
    yaml_tree = _yaml_layer(config_path) if config_path else {}
    env_tree, env_unknown, env_unset = _env_layer(env)

    unknown = [f"{k} (in {config_path})" for k in _unknown_keys(yaml_tree, EcoConfig)] + env_unknown
    if warn and unknown:
        log.warning("ignoring unknown configuration keys: %s", ", ".join(unknown))

    merged = _drop_nulls_for_non_nullable(_prune_unknown(yaml_tree, EcoConfig), EcoConfig)
    yaml_token = (merged.get("eco") or {}).pop("api_token", None) if isinstance(merged.get("eco"), dict) else None
    for path, nullable in env_unset:
        node: Any = merged
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
        if nullable:
            _set_path(merged, path, None)
    merged = _deep_merge(merged, env_tree)
    for dotted, value in (flags or {}).items():
        if value is not None:
            _set_path(merged, dotted.split("."), value)

    token, origin = None, None
    for name in TOKEN_ENV_ORDER:
        raw = env.get(name)
        if raw is not None and raw.strip().lower() not in UNSET_WORDS:
            token, origin = raw.strip(), name
            break
    if token is None and isinstance(yaml_token, str) and yaml_token.strip():
        token, origin = yaml_token.strip(), "yaml"
    merged.setdefault("eco", {})["api_token"] = token

    try:
        cfg = EcoConfig.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc)) from None
    cfg.token_origin = origin
    return cfg


# --------------------------------------------------------------------------- process-wide
_active: EcoConfig | None = None


def get_config() -> EcoConfig:
    """The active configuration; loaded from env (+ ECO_MCP_CONFIG) on first use."""
    global _active
    if _active is None:
        _active = load_config()
    return _active


def set_config(cfg: EcoConfig | None) -> None:
    """Install `cfg` as the process's configuration for good (the CLI and the ASGI entry, once at
    start-up); None makes the next `get_config()` load it again from the environment."""
    global _active
    _active = cfg


@contextlib.contextmanager
def use_config(cfg: EcoConfig) -> Iterator[EcoConfig]:
    """Make `cfg` the active configuration inside the block, then put back whatever was active
    before (even if the block raised). Tests change configuration only through this, or through
    the `active_config` fixture built on it."""
    global _active
    previous = _active
    _active = cfg
    try:
        yield cfg
    finally:
        _active = previous


# --------------------------------------------------------------------------- documentation
def iter_settings(model: type[BaseModel] = EcoConfig, prefix: str = "") -> typing.Iterator[tuple[str, Any, Any]]:
    """(dotted path, field, default) for every leaf setting, in declaration order."""
    for name, field in _field_map(model).items():
        if name == "token_origin":
            continue
        tp, _ = _unwrap_optional(field.annotation)
        if _is_model(tp):
            yield from iter_settings(tp, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", field, field.get_default(call_default_factory=True)


def render_reference() -> str:
    """The README's configuration table, generated from the model."""
    rows = ["| Setting | Environment | Default | Allowed | Meaning |", "| --- | --- | --- | --- | --- |"]
    for path, field, default in iter_settings():
        env = ENV_PREFIX + "__".join(p.upper() for p in path.split("."))
        if isinstance(default, list):
            shown = ",".join(default) or "(empty)"
        elif default is None:
            shown = "unset"
        else:
            shown = str(default)
        allowed = _bounds_text(EcoConfig, tuple(path.split(".")))
        rows.append(f"| `{path}` | `{env}` | `{shown}` | {allowed} | {field.description or ''} |")
    return "\n".join(rows) + "\n"
