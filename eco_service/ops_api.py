"""The ops API (django-ninja, under /api/ops/): what automation and dashboards read and do.

    GET  catalogs                 freshness of each catalog, with the upstream it was built from, and
                                  of the location subtrees with their walk's progress (readiness
                                  does not need them)
    GET  refresh-log              the refresh log, newest first (limit/offset, optional catalog)
    POST refreshes                queue a refresh -> 202 {"id", "state": "queued", ...}; `catalogs` may
                                  name `subtrees` (every site's location subtree, ~85 upstream
                                  requests), which is refreshed only when named
    GET  refreshes/{id}           that refresh's state: queued, running, succeeded, failed
    GET  upstream/cache           upstream answer cache statistics: entries of the shared cache with
                                  Redis (every process's), hits and misses of this process
    GET  upstream/rate-limit      the rate budget and NEON's last reported headroom
    GET  upstream/graphql-breaker the GraphQL breaker (this process)
    GET  datasets                 the dataset store (HTTP stacks): each dataset's selection, size, state,
                                  last use and who asked (a token hash only), least recently used last;
                                  the store's bytes and cap (limit/offset, optional state)
    DELETE datasets/{id}          delete one: its row and its files (a build under way discards its work)
    GET  openapi.json             this API's OpenAPI document (public: it holds no data)
    GET  docs                     its interactive docs (django-ninja's Swagger UI, public like the
                                  document; its scripts and styles are served from this service's
                                  static files, never from the internet)

Authentication: a Django staff session (unsafe methods also pass Django's CSRF check), or
`Authorization: Bearer <server.ops_token>` for machines, compared in constant time and never
logged. No credentials or a wrong token: 401; a signed-in user who is not staff: 403.

With the catalog database unreachable any operation that needs it answers 503
`{"code": "database_unavailable", "detail": ...}` (JSON, like every other refusal here); the next
request after it is back reconnects.

A queued refresh runs on Celery when a broker is configured, else on a thread of this process.
Its state lives in Django's cache for a day: with Celery, the web and the worker must share that
cache (REDIS_URL), as compose does.
"""

from __future__ import annotations

import hmac
import logging
import re
import threading
import uuid
from datetime import datetime
from typing import Any, Literal

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse
from ninja import Field, NinjaAPI, Query, Schema, Status, Swagger
from ninja.errors import HttpError
from ninja.security import APIKeyCookie, HttpBearer
from pydantic import ConfigDict, model_validator

from catalog.models import CATALOGS, STATE_NAMES, SUBTREES, CatalogRefresh
from catalog.outage import DATABASE_DOWN
from catalog.status import catalog_status, upstream_cache_info
from eco_core.config import get_config
from eco_service.tasks import load_state, now_iso, ops_refresh_task, run_refresh, save_state

log = logging.getLogger("eco.ops")

# The four catalogs and the location subtrees (catalog.models.STATE_NAMES): each has a state row,
# a refresh log and a refresh of its own.
CatalogName = Literal["products", "sites", "releases", "locations", "subtrees"]
RefreshState = Literal["queued", "running", "succeeded", "failed"]
_REFRESH_ID = re.compile(r"[0-9a-f]{32}")


class OpsToken(HttpBearer):
    def __call__(self, request: HttpRequest) -> Any:
        # Parsed here, not by HttpBearer, whose DEBUG log line would print a mistyped header whole.
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return None
        return self.authenticate(request, value.strip())

    def authenticate(self, request: HttpRequest, token: str) -> str | None:
        expected = get_config().server.ops_token
        if expected is None:
            return None
        return "ops-token" if hmac.compare_digest(token.encode(), expected.reveal().encode()) else None


class StaffSession(APIKeyCookie):
    param_name = settings.SESSION_COOKIE_NAME

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = request.user
        if not user.is_authenticated:
            return None
        if not user.is_staff:
            raise HttpError(403, "the ops API is for staff users")
        return user


# The docs page uses ninja's local Swagger assets because "ninja" is an installed app (else it
# links a CDN); no validator badge either, which would call validator.swagger.io.
api = NinjaAPI(title="eco-mcp ops API", version="1", urls_namespace="ops", auth=[OpsToken(), StaffSession()],
               docs_url="/docs", docs=Swagger(settings={"validatorUrl": None}))

DATABASE_UNAVAILABLE = "the catalog database is unreachable; retry later"


def database_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    """An outage, not a bug: JSON 503 instead of Django's HTML 500. The exception's class only is
    logged (a driver's message can carry the connection string). Django closes the broken
    connection when the request finishes (close_old_connections), so the next one reconnects."""
    log.warning("ops API %s %s: database unavailable (%s)", request.method, request.path, type(exc).__name__)
    return api.create_response(request, {"code": "database_unavailable", "detail": DATABASE_UNAVAILABLE},
                               status=503)


for _down in DATABASE_DOWN:
    api.exception_handler(_down)(database_unavailable)


# ---------------------------------------------------------------------- schemas
class CatalogFreshness(Schema):
    catalog: CatalogName
    rows: int
    age_seconds: int | None = Field(None, alias="ageSeconds")
    stale: bool
    source: str | None = None
    refreshed_at: str | None = Field(None, alias="refreshedAt")
    last_error: str | None = Field(None, alias="lastError")
    rest_base: str | None = Field(None, alias="restBase", description="REST base the catalog was built from.")
    graphql_url: str | None = Field(None, alias="graphqlUrl", description="GraphQL URL it was built from.")
    upstream_mismatch: str | None = Field(
        None, alias="upstreamMismatch", description="Why it is not served under the configured upstream.")
    sites_done: int | None = Field(None, alias="sitesDone", description="subtrees only: sites walked by the "
                                   "current or last walk.")
    sites_total: int | None = Field(None, alias="sitesTotal", description="subtrees only: sites it walks.")
    refreshing: bool | None = Field(None, description="subtrees only: a walk is under way.")


class Freshness(Schema):
    catalogs: list[CatalogFreshness] = Field(description="The four catalogs, then the location subtrees "
                                                         "(which `ready` does not need).")
    ready: bool
    degraded: bool
    rest_base: str = Field(alias="restBase", description="The configured REST base.")
    graphql_url: str = Field(alias="graphqlUrl", description="The configured GraphQL URL.")


class RefreshLogEntry(Schema):
    id: int
    catalog: str
    source: str
    trigger: str
    started_at: datetime = Field(alias="startedAt")
    finished_at: datetime | None = Field(None, alias="finishedAt")
    ok: bool
    rows: int
    upstream_requests: int = Field(alias="upstreamRequests")
    seconds: float | None = None
    error: str


class RefreshLogPage(Schema):
    items: list[RefreshLogEntry]
    total: int
    offset: int
    limit: int
    next_offset: int | None = Field(None, alias="nextOffset")


class RefreshLogQuery(Schema):
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=10_000_000)
    catalog: CatalogName | None = None


class RefreshRequest(Schema):
    catalogs: list[CatalogName] | None = Field(
        None, min_length=1, max_length=len(STATE_NAMES),
        description=f"Catalogs to rebuild; the four catalogs when omitted. '{SUBTREES}' (every site's location "
                    "subtree, ~85 upstream requests) only when named, and after `locations` when both are.")
    source: Literal["graphql", "rest"] | None = Field(
        None, description="Force a source for the four catalogs; by policy when omitted.")

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, v: Any) -> Any:
        # Without this an array or a scalar body read as "no fields given": a full refresh.
        # (ninja hands its validators the value wrapped in a DjangoGetter)
        if not isinstance(getattr(v, "_obj", v), dict):
            raise ValueError("the body must be a JSON object")
        return v


class RefreshStatus(Schema):
    id: str
    state: RefreshState
    catalogs: list[str]
    source: str | None = None
    runner: Literal["celery", "in_process"]
    requested_at: str = Field(alias="requestedAt")
    finished_at: str | None = Field(None, alias="finishedAt")
    outcomes: list[dict[str, Any]] = Field(default_factory=list, description="One entry per catalog once finished.")
    error: str | None = None


class Message(Schema):
    detail: str


class DatabaseUnavailable(Schema):
    code: Literal["database_unavailable"]
    detail: str


class ValidationErrors(Schema):
    detail: list[dict[str, Any]] = Field(description="What was wrong with which field (loc names it).")


def _answers(ok: dict[int, Any]) -> dict[int, Any]:
    """Every operation's declared responses: its own, and the refusals every operation can give."""
    # 400: a body that is not JSON at all (ninja's own answer, before validation); 503: the
    # catalog database is unreachable (any of them may read it, the staff session included).
    return {**ok, 400: Message, 401: Message, 403: Message, 422: ValidationErrors, 503: DatabaseUnavailable}


# ---------------------------------------------------------------------- catalogs and log
@api.get("/catalogs", response=_answers({200: Freshness}), by_alias=True, summary="Catalog freshness per catalog")
def catalogs(request: HttpRequest) -> dict[str, Any]:
    cfg = get_config()
    status = catalog_status(cfg)
    return {
        "catalogs": [{"catalog": c, "rows": status[c]["count"], **status[c]} for c in STATE_NAMES],
        "ready": status["ready"],
        "degraded": status["degraded"],
        "restBase": cfg.eco.base_url,
        "graphqlUrl": cfg.eco.graphql_url,
    }


@api.get("/refresh-log", response=_answers({200: RefreshLogPage}), by_alias=True, summary="The refresh log, newest first")
def refresh_log(request: HttpRequest, q: Query[RefreshLogQuery]) -> dict[str, Any]:
    rows = CatalogRefresh.objects.all()
    if q.catalog:
        rows = rows.filter(catalog=q.catalog)
    total = rows.count()
    page = list(rows.order_by("-started_at", "-id")[q.offset:q.offset + q.limit])
    items = [{"id": r.pk, "catalog": r.catalog, "source": r.source, "trigger": r.trigger, "startedAt": r.started_at,
              "finishedAt": r.finished_at, "ok": r.ok, "rows": r.rows, "upstreamRequests": r.upstream_requests,
              "seconds": r.seconds, "error": r.error} for r in page]
    end = q.offset + len(items)
    return {"items": items, "total": total, "offset": q.offset, "limit": q.limit,
            "nextOffset": end if end < total else None}


# ---------------------------------------------------------------------- refreshes
def _run_in_thread(request_id: str) -> None:
    def target() -> None:
        try:
            run_refresh(request_id)
        finally:
            # This thread's connections would otherwise stay open until the process exits.
            connections.close_all()

    threading.Thread(target=target, name=f"eco-ops-refresh-{request_id[:8]}", daemon=True).start()


def dispatch(request_id: str) -> None:
    if settings.CELERY_BROKER_URL:
        ops_refresh_task.apply_async(args=[request_id])
    else:
        _run_in_thread(request_id)


@api.post("/refreshes", response=_answers({202: RefreshStatus}), by_alias=True, summary="Queue a catalog refresh")
def queue_refresh(request: HttpRequest, body: RefreshRequest) -> Status:
    names = sorted(set(body.catalogs or CATALOGS), key=STATE_NAMES.index)
    request_id = uuid.uuid4().hex
    state: dict[str, Any] = {"id": request_id, "state": "queued", "catalogs": names, "source": body.source,
             "runner": "celery" if settings.CELERY_BROKER_URL else "in_process", "requestedAt": now_iso(),
             "finishedAt": None, "outcomes": [], "error": None}
    save_state(state)
    dispatch(request_id)
    return Status(202, state)


@api.get("/refreshes/{refresh_id}", response=_answers({200: RefreshStatus, 404: Message}), by_alias=True,
         summary="A queued refresh's state")
def refresh_state(request: HttpRequest, refresh_id: str) -> Status:
    # Ids are uuid4 hex; anything else is not looked up (nor used in a cache key).
    state = load_state(refresh_id) if _REFRESH_ID.fullmatch(refresh_id) else None
    if state is None:
        return Status(404, {"detail": f"no refresh with id {refresh_id[:64]!r} (ids are kept for a day)"})
    return Status(200, state)


# ---------------------------------------------------------------------- dataset store
class DatasetEntry(Schema):
    dataset_id: str = Field(alias="datasetId")
    product: str
    selection: dict[str, Any]
    state: Literal["building", "ready", "failed"]
    progress: dict[str, Any]
    error: dict[str, Any] | None = None
    size_bytes: int = Field(alias="sizeBytes", description="On disk once ready.")
    planned_bytes: int = Field(alias="plannedBytes", description="Source bytes of its plan.")
    attempts: int
    requested_by: str = Field(alias="requestedBy", description="One-way hash of the token that asked first.")
    created_at: datetime = Field(alias="createdAt")
    finished_at: datetime | None = Field(None, alias="finishedAt")
    last_used_at: datetime = Field(alias="lastUsedAt")


class DatasetPage(Schema):
    items: list[DatasetEntry]
    total: int
    offset: int
    limit: int
    next_offset: int | None = Field(None, alias="nextOffset")
    store_bytes: int = Field(alias="storeBytes", description="Bytes of the ready datasets.")
    max_store_bytes: int = Field(alias="maxStoreBytes", description="tables.max_store_bytes.")


class DatasetQuery(Schema):
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=10_000_000)
    state: Literal["building", "ready", "failed"] | None = None


@api.get("/datasets", response=_answers({200: DatasetPage}), by_alias=True, summary="The dataset store")
def datasets(request: HttpRequest, q: Query[DatasetQuery]) -> dict[str, Any]:
    from tables import store
    from tables.models import Dataset

    rows = Dataset.objects.all()
    if q.state is not None:
        rows = rows.filter(state=q.state)
    total = rows.count()
    # A build whose worker died reads failed (store.lookup records it).
    page = [(store.lookup(r.dataset_id) or r) if r.state == "building" else r
            for r in rows.order_by("-last_used_at", "-id")[q.offset:q.offset + q.limit]]
    items = [{"datasetId": r.dataset_id, "product": r.product, "selection": r.selection, "state": r.state,
              "progress": r.progress, "error": r.error, "sizeBytes": r.size_bytes, "plannedBytes": r.planned_bytes,
              "attempts": r.attempts, "requestedBy": r.requested_by, "createdAt": r.created_at,
              "finishedAt": r.finished_at, "lastUsedAt": r.last_used_at} for r in page]
    end = q.offset + len(items)
    return {"items": items, "total": total, "offset": q.offset, "limit": q.limit,
            "nextOffset": end if end < total else None, "storeBytes": store.store_bytes(),
            "maxStoreBytes": get_config().tables.max_store_bytes}


@api.delete("/datasets/{dataset_id}", response=_answers({200: Message, 404: Message}), by_alias=True,
            summary="Delete a dataset of the store")
def delete_dataset(request: HttpRequest, dataset_id: str) -> Status:
    from tables import store

    # Ids are product.package.months.digest; anything else is not looked up (nor made a path).
    if not store.DATASET_ID.fullmatch(dataset_id) or not store.delete(dataset_id):
        return Status(404, {"detail": f"no dataset with id {dataset_id[:200]!r}"})
    return Status(200, {"detail": f"deleted {dataset_id}"})


# ---------------------------------------------------------------------- upstream
class CacheInfo(Schema):
    entries: int | None = Field(None, description="Answers cached now: with Redis (`shared`) every process's, "
                                "else this process's; null when unknown (Redis not answering).")
    max_entries: int | None = Field(None, alias="maxEntries", description="cache.max_entries, the cap on entries.")
    shared: bool = Field(False, description="True when the cache is Redis, shared by every web and worker process.")
    hits: int = Field(description="Lookups this process answered from the cache (every process's: the sum of "
                      "eco_upstream_cache_lookups_total at /metrics).")
    misses: int = Field(description="Lookups this process had to ask the upstream for.")
    hit_rate: float | None = Field(None, alias="hitRate", description="hits / (hits + misses), this process.")
    backend: str | None = Field(None, description="redis or locmem (null before this process made a client).")


class RateLimitInfo(Schema):
    identity: str = Field(description="anonymous, or a one-way hash of the token in use.")
    backend: str
    limit: int | None = None
    remaining: int | None = Field(None, description="NEON's x-ratelimit-remaining as last seen by this process.")
    reset_seconds: float | None = Field(None, alias="resetSeconds")
    budget_burst: float = Field(alias="budgetBurst")
    budget_per_second: float = Field(alias="budgetPerSecond")
    low_water: int = Field(alias="lowWater")
    bucket_tokens: float | None = Field(None, alias="bucketTokens", description="Requests our own bucket allows now.")


class BreakerInfo(Schema):
    state: Literal["open", "closed"]
    consecutive_failures: int = Field(alias="consecutiveFailures")
    open_until: str | None = Field(None, alias="openUntil")
    threshold: int
    cooldown_seconds: float = Field(alias="cooldownSeconds")


@api.get("/upstream/cache", response=_answers({200: CacheInfo}), by_alias=True, summary="Upstream answer cache statistics")
def upstream_cache(request: HttpRequest) -> dict[str, Any]:
    return upstream_cache_info()


@api.get("/upstream/rate-limit", response=_answers({200: RateLimitInfo}), by_alias=True, summary="The upstream rate budget")
async def upstream_rate_limit(request: HttpRequest) -> dict[str, Any]:
    from upstream.client import get_client
    from upstream.ratelimit import budget_for

    # Async so that, under the ASGI server, this is the event loop's own client: the one whose
    # requests saw NEON's headers.
    client = get_client()
    info = client.rate_limit_info()
    budget = budget_for(client.cfg.eco.rate_limit, with_token=info["identity"] != "anonymous",
                        upstream_limit=info["limit"])
    level = await client.ratelimiter.level(info["identity"], budget)
    return {**info, "bucketTokens": None if level is None else round(level, 2)}


@api.get("/upstream/graphql-breaker", response=_answers({200: BreakerInfo}), by_alias=True, summary="The GraphQL breaker")
def graphql_breaker(request: HttpRequest) -> dict[str, Any]:
    from upstream.client import graphql_breaker_state

    return graphql_breaker_state()
