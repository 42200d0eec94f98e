"""`UpstreamClient`: every NEON endpoint the product uses, as typed async methods.

    client = get_client()                  # shared per process and event loop
    product = await client.product("DP1.00001.001", release="RELEASE-2025")

Each REST method: build the call (`http.Call`), look it up in the cache (key = endpoint, query,
body and, for token-only data only, a one-way hash of the token), fetch on a miss, parse the
body strictly into its model (`models.py`) before it is cached, and count the cache hit or the
upstream requests into `context.current()`. Every method returns typed models; the one raw part
that leaves the package is `GraphQLReply.data`, which `graphql()` returns for a query sent
without a model: a caller's own query (eco_graphql) has a shape only that caller knows. Callers
that know the shape pass `model=` and get that model back.
The catalog methods take `fresh=True` (the catalog refresh): the upstream is asked even when a
cached answer exists, and its failure is raised instead of served stale; the answer is cached.
GraphQL is never cached and goes through the breaker (`breaker.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar, cast, overload
from urllib.parse import quote, unquote, urlsplit

import httpx
from pydantic import BaseModel, ValidationError

from eco_core.config import EcoConfig, get_config
from eco_core.errors import EcoError
from eco_core.redact import token_hash
from upstream import context, mapping, redis_link
from upstream import models as m
from upstream.breaker import GraphQLBreaker
from upstream.cache import UpstreamCache
from upstream.http import Call, RequestKind, UpstreamHttp, deadline_exceeded
from upstream.ratelimit import Buckets, LocalBuckets, RedisBuckets, budget_for
from upstream.segments import PathSegmentError

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")

# GraphQL failures that say GraphQL itself is unwell (not that the caller was rate limited).
BREAKER_CODES = {"upstream_error", "upstream_unavailable", "graphql_error"}

# Replies at least this large are decoded and validated on a worker thread, at most
# PARSE_THREADS at a time: strict parsing of the largest product record, and more so of a GraphQL
# catalog, takes long enough that on the event loop it would stall every other
# call of the process (catalog-served ones included). Smaller replies parse faster than a
# thread hand-off costs. See bench/bench_mixed_load.py for what this does and does not buy.
PARSE_IN_THREAD_BYTES = 256 * 1024
PARSE_THREADS = 2


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _bad_segment(value: str) -> bool:
    return value in ("", ".", "..") or "/" in value or "\\" in value or _CONTROL.search(value) is not None


def _seg(value: str, parameter: str) -> str:
    """One path segment, or PathSegmentError before any request. A percent-encoded identifier is
    decoded once and what it spells is checked ('%2e%2e%2f' is '../'), then quoted again: the
    upstream sees the identifier, never an escape of the caller's choosing, and one that still
    holds an escape after decoding ('%252e') is refused rather than decoded twice. '.' and '..'
    are dot segments whatever their quoting (the URL is normalised on its way out, collapsing the
    route), and a quoted '/' or '\\' may be decoded back into a separator by the server."""
    try:
        decoded = unquote(value, errors="strict") if "%" in value else value
    except UnicodeDecodeError:  # escapes that spell no UTF-8 text
        raise PathSegmentError(parameter, value) from None
    if _bad_segment(value) or _bad_segment(decoded) or (decoded != value and _ESCAPE.search(decoded)):
        raise PathSegmentError(parameter, value)
    return quote(decoded, safe="")


def _redis_url() -> str:
    from django.conf import settings

    return getattr(settings, "REDIS_URL", "") or ""


class UpstreamClient:
    def __init__(
        self,
        cfg: EcoConfig,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        ratelimiter: Buckets | None = None,
        cache: UpstreamCache | None = None,
        breaker: GraphQLBreaker | None = None,
        namespace: str = "g1",
        local_buckets: LocalBuckets | None = None,
    ) -> None:
        """`local_buckets`: the process's own rate-limit buckets, the limit without Redis and the
        fallback while Redis is unreachable (a new one when not given)."""
        self.cfg = cfg
        self.namespace = namespace
        redis_url = _redis_url()
        self._redis = None
        link = None
        if (ratelimiter is None or cache is None) and redis_url:
            self._redis = redis_link.connect(redis_url, cfg.cache)
            link = redis_link.link_for(redis_url, cfg.cache)
        local = local_buckets if local_buckets is not None else LocalBuckets(clock or time.monotonic)
        if ratelimiter is None:
            ratelimiter = (RedisBuckets(self._redis, prefix=f"eco:rl:{namespace}:", fallback=local,
                                        processes=cfg.eco.rate_limit.processes, link=link)
                           if self._redis is not None else local)
        self.ratelimiter = ratelimiter
        self.cache = cache or UpstreamCache(cfg.cache, redis_client=self._redis, link=link, clock=clock or time.time)
        self.http = UpstreamHttp(cfg, buckets=ratelimiter, transport=transport,
                                 sleep=sleep or asyncio.sleep, clock=clock or time.monotonic)
        self.breaker = breaker or GraphQLBreaker(failures=cfg.eco.graphql_breaker_failures,
                                                 cooldown_s=cfg.eco.graphql_breaker_cooldown_s,
                                                 clock=clock or time.time)
        self._parse_slots = asyncio.Semaphore(PARSE_THREADS)

    async def aclose(self) -> None:
        await self.cache.drain()
        await self.http.aclose()
        if self._redis is not None:
            await self._redis.aclose()

    @property
    def closed(self) -> bool:
        return self.http.closed

    @property
    def base_url(self) -> str:
        return self.cfg.eco.base_url

    @property
    def graphql_url(self) -> str:
        return self.cfg.eco.graphql_url

    # ------------------------------------------------------------------ core
    def _url(self, path: str) -> str:
        return self.cfg.eco.base_url + path

    def _key(self, call: Call, token: str | None) -> str:
        # Token-only data is per token (its hash); public data is shared by every caller.
        scope = token_hash(token) if call.token_only else "public"
        raw = json.dumps([call.method, call.url, sorted((call.params or {}).items()), call.json],
                         sort_keys=True, default=str)
        return f"v1:{self.namespace}:{scope}:{call.endpoint}:{hashlib.sha256(raw.encode()).hexdigest()[:32]}"

    async def _fetch(self, call: Call, model: type[M], ttl_s: float, *, fresh: bool = False) -> M:
        token = self.http.token_for(call)  # auth_required here, before any request
        parsed: dict[int, M] = {}

        async def fetch() -> bytes:
            resp = await self.http.request(call, token=token)
            parsed[id(resp.content)] = await self._parse_off_loop(call.endpoint, model, resp.content)
            return resp.content

        hit = await self.cache.get_or_fetch(self._key(call, token), ttl_s, fetch, fresh=fresh)
        self._count(hit.hit, hit.stale)
        # The caller that fetched parsed already; cache hits and waiters parse the stored body.
        done = parsed.get(id(hit.value))
        return done if done is not None else await self._parse_off_loop(call.endpoint, model, hit.value)

    @staticmethod
    def _parse(endpoint: str, model: type[M], content: bytes) -> M:
        try:
            return model.model_validate_json(content)
        except (ValidationError, ValueError) as exc:
            raise mapping.unexpected_body(endpoint, exc) from None

    async def _off_loop(self, content: bytes, read: Callable[..., R], *args: Any) -> R:
        """`read(*args)` reading the reply `content`, on a worker thread when it is large."""
        if len(content) < PARSE_IN_THREAD_BYTES:
            return read(*args)
        async with self._parse_slots:
            return await asyncio.to_thread(read, *args)

    async def _parse_off_loop(self, endpoint: str, model: type[M], content: bytes) -> M:
        """`_parse`, on a worker thread for large replies (same model, same errors)."""
        return await self._off_loop(content, self._parse, endpoint, model, content)

    async def _parse_typed_off_loop(self, model: type[M], content: bytes) -> m.TypedGraphQLResponse[M] | None:
        """`models.parse_typed_graphql`, on a worker thread for large replies, as `_parse_off_loop`."""
        return await self._off_loop(content, m.parse_typed_graphql, model, content)

    async def _get(self, path: str, endpoint: str, model: type[M], *, ttl: str, kind: RequestKind = "detail",
                   params: dict[str, Any] | None = None, token_only: bool = False, fresh: bool = False) -> M:
        call = Call("GET", self._url(path), endpoint, kind=kind, params=params, token_only=token_only)
        return await self._fetch(call, model, getattr(self.cfg.cache.ttl_s, ttl), fresh=fresh)

    # ------------------------------------------------------------------ products and sites
    async def products(self, release: str | None = None, *, fresh: bool = False) -> list[m.Product]:
        env = await self._get("/products", "/products", m.DataEnvelope[list[m.Product]], ttl="catalog",
                              kind="catalog", params={"release": release}, fresh=fresh)
        return env.data

    async def product(self, code: str, release: str | None = None) -> m.Product:
        env = await self._get(f"/products/{_seg(code, 'productCode')}", "/products/{productCode}",
                              m.DataEnvelope[m.Product], ttl="detail", params={"release": release})
        return env.data

    async def sites(self, release: str | None = None, *, fresh: bool = False) -> list[m.Site]:
        env = await self._get("/sites", "/sites", m.DataEnvelope[list[m.Site]], ttl="catalog", kind="catalog",
                              params={"release": release}, fresh=fresh)
        return env.data

    async def site(self, code: str, release: str | None = None) -> m.Site:
        env = await self._get(f"/sites/{_seg(code, 'siteCode')}", "/sites/{siteCode}", m.DataEnvelope[m.Site],
                              ttl="detail", params={"release": release})
        return env.data

    # ------------------------------------------------------------------ releases
    async def releases(self, *, fresh: bool = False) -> list[m.Release]:
        env = await self._get("/releases", "/releases", m.DataEnvelope[list[m.Release]], ttl="releases",
                              fresh=fresh)
        return env.data

    async def release(self, tag_or_uuid: str) -> m.Release:
        env = await self._get(f"/releases/{_seg(tag_or_uuid, 'releaseIdentifier')}", "/releases/{releaseIdentifier}",
                              m.DataEnvelope[m.Release], ttl="releases")
        return env.data

    async def release_product(self, tag: str, code: str) -> m.Product:
        """The product as published in release `tag` (same shape as /products/{code})."""
        env = await self._get(f"/releases/{_seg(tag, 'releaseTag')}/products/{_seg(code, 'productCode')}",
                              "/releases/{releaseTag}/products/{productCode}", m.DataEnvelope[m.Product],
                              ttl="releases")
        return env.data

    async def release_site(self, tag: str, code: str) -> m.Site:
        """The site as published in release `tag` (same shape as /sites/{code})."""
        env = await self._get(f"/releases/{_seg(tag, 'releaseTag')}/sites/{_seg(code, 'siteCode')}",
                              "/releases/{releaseTag}/sites/{siteCode}", m.DataEnvelope[m.Site], ttl="releases")
        return env.data

    # ------------------------------------------------------------------ locations
    async def location(self, name: str, *, hierarchy: bool = False, location_type: str | None = None,
                       history: bool = False, fresh: bool = False) -> m.Location:
        params = {"hierarchy": True if hierarchy else None, "locationType": location_type,
                  "history": True if history else None}
        kind: RequestKind = "catalog" if hierarchy else "detail"  # a whole site's tree can be megabytes
        env = await self._get(f"/locations/{_seg(name, 'locationName')}", "/locations/{locationName}",
                              m.DataEnvelope[m.Location], ttl="locations", kind=kind, params=params, fresh=fresh)
        return env.data

    async def location_sites(self, *, fresh: bool = False) -> list[m.Location]:
        env = await self._get("/locations/sites", "/locations/sites", m.DataEnvelope[list[m.Location]],
                              ttl="locations", kind="catalog", fresh=fresh)
        return env.data

    # ------------------------------------------------------------------ taxonomy
    async def taxonomy(self, *, filters: dict[str, Any], offset: int = 0, limit: int = 25,
                       verbose: bool = False) -> m.TaxonomyPage:
        """`filters` uses NEON's parameter names (taxonTypeCode, family, scientificname, ...)."""
        params = {**filters, "verbose": verbose, "offset": offset, "limit": limit}
        return await self._get("/taxonomy", "/taxonomy", m.TaxonomyPage, ttl="taxonomy", params=params)

    async def probe(self) -> m.TaxonomyPage:
        """One uncached ~1 KB request (`--check`, `eco_ping(check_api=true)`): a cached answer
        would say nothing about whether NEON is reachable now."""
        call = Call("GET", self._url("/taxonomy"), "/taxonomy", params={"taxonTypeCode": "TICK", "limit": 1})
        resp = await self.http.request(call, token=self.http.token_for(call))
        return self._parse(call.endpoint, m.TaxonomyPage, resp.content)

    # ------------------------------------------------------------------ samples
    async def supported_sample_classes(self) -> m.SupportedClasses:
        env = await self._get("/samples/supportedClasses", "/samples/supportedClasses",
                              m.DataEnvelope[m.SupportedClasses], ttl="samples_classes")
        return env.data

    async def sample_classes(self, sample_tag: str, *, fresh: bool = False) -> m.SampleClasses:
        """Classes of one tag; NEON answers 404 for a tag with none, which is an empty list.
        `fresh=True` asks the upstream even when cached (re-validating a caller's chosen class)."""
        try:
            env = await self._get("/samples/classes", "/samples/classes", m.DataEnvelope[m.SampleClasses],
                                  ttl="samples_classes", params={"sampleTag": sample_tag}, fresh=fresh)
        except EcoError as exc:
            if exc.code == "not_found" and exc.details.get("upstreamStatus") == 404:
                return m.SampleClasses(sample_classes=[])
            raise
        return env.data

    async def sample_view(self, *, sample_tag: str | None = None, sample_class: str | None = None,
                          sample_uuid: str | None = None, barcode: str | None = None,
                          archive_guid: str | None = None) -> m.SampleViews:
        """Token-only. Exactly one identifier (tag with optional class, uuid, barcode, GUID)."""
        params = {"sampleTag": sample_tag, "sampleClass": sample_class, "sampleUuid": sample_uuid,
                  "barcode": barcode, "archiveGuid": archive_guid}
        env = await self._get("/samples/view", "/samples/view", m.DataEnvelope[m.SampleViews], ttl="samples_view",
                              params=params, token_only=True)
        return env.data

    async def sample_download(self, *, degree: int, sample_tag: str | None = None, sample_class: str | None = None,
                              sample_uuid: str | None = None, barcode: str | None = None,
                              archive_guid: str | None = None) -> m.SampleViews:
        """Token-only: the sample and its relatives up to `degree` steps away."""
        params = {"sampleTag": sample_tag, "sampleClass": sample_class, "sampleUuid": sample_uuid,
                  "barcode": barcode, "archiveGuid": archive_guid, "degree": degree}
        env = await self._get("/samples/download", "/samples/download", m.DataEnvelope[m.SampleViews],
                              ttl="samples_view", params=params, token_only=True)
        return env.data

    # ------------------------------------------------------------------ prototype datasets
    async def prototype_datasets(self) -> list[m.PrototypeDataset]:
        env = await self._get("/prototype/datasets", "/prototype/datasets",
                              m.DataEnvelope[list[m.PrototypeDataset]], ttl="prototype", kind="catalog")
        return env.data

    async def prototype_dataset(self, uuid: str) -> m.PrototypeDataset:
        env = await self._get(f"/prototype/datasets/{_seg(uuid, 'uuid')}", "/prototype/datasets/{uuid}",
                              m.DataEnvelope[m.PrototypeDataset], ttl="prototype")
        return env.data

    async def prototype_data(self, uuid: str) -> m.PrototypeData:
        env = await self._get(f"/prototype/data/{_seg(uuid, 'uuid')}", "/prototype/data/{uuid}",
                              m.DataEnvelope[m.PrototypeData], ttl="prototype")
        return env.data

    # ------------------------------------------------------------------ data files (token-only)
    async def data_listing(self, product: str, site: str, month: str, *, package: str | None = None,
                           release: str | None = None) -> m.DataListing:
        path = f"/data/{_seg(product, 'productCode')}/{_seg(site, 'siteCode')}/{_seg(month, 'yearMonth')}"
        env = await self._get(path, "/data/{productCode}/{siteCode}/{yearMonth}", m.DataEnvelope[m.DataListing],
                              ttl="data", params={"package": package, "release": release}, token_only=True)
        return env.data

    async def data_query(self, query: m.DataQueryRequest) -> m.DataQueryResult:
        call = Call("POST", self._url("/data/query"), "/data/query", json=query.body(), token_only=True)
        env = await self._fetch(call, m.DataEnvelope[m.DataQueryResult], self.cfg.cache.ttl_s.data)
        return env.data

    async def data_file_url(self, product: str, site: str, month: str, filename: str, *,
                            release: str | None = None) -> str:
        """Token-only: the signed URL of one data file (NEON answers with a redirect to it).
        The redirect is not followed, so the token never leaves the upstream host."""
        prefix = f"/releases/{_seg(release, 'releaseTag')}" if release else ""
        path = (f"{prefix}/data/{_seg(product, 'productCode')}/{_seg(site, 'siteCode')}/{_seg(month, 'yearMonth')}"
                f"/{_seg(filename, 'filename')}")
        call = Call("GET", self._url(path),
                    "/data/{productCode}/{siteCode}/{yearMonth}/{filename}", token_only=True, follow_redirects=False)
        resp = await self.http.request(call, token=self.http.token_for(call))
        location = resp.headers.get("location")
        if not resp.is_redirect or not location:
            raise EcoError("upstream_error", f"{call.endpoint}: expected a redirect to the file",
                           details={"endpoint": call.endpoint, "upstreamStatus": resp.status_code})
        return location

    @contextlib.asynccontextmanager
    async def stream(self, url: str, *, token_only: bool = False, method: str = "GET",
                     headers: dict[str, str] | None = None,
                     host_allowed: Callable[[str], bool] | None = None) -> AsyncIterator[httpx.Response]:
        """A streamed download through the chokepoint (rate limits, retries before the first
        byte, accounting). The token goes only to the upstream host: signed storage URLs and
        redirects to them get none. `host_allowed` vets every hop (download allow-list);
        `headers` go with the request (a Range to continue a partial file). A body that breaks
        off while the block reads it is `upstream_unavailable` (retryable), like a failed request."""
        call = Call(method, url, _endpoint_of(url, self.cfg.eco.base_url), kind="download", token_only=token_only,
                    headers={"Accept": "*/*", **(headers or {})}, host_allowed=host_allowed)
        resp = await self.http.request(call, token=self.http.token_for(call), stream=True)
        try:
            yield resp
        except httpx.HTTPError as exc:
            raise mapping.from_transport(exc, endpoint=call.endpoint) from None
        finally:
            await resp.aclose()

    # ------------------------------------------------------------------ documents
    async def document_head(self, spec_number: str) -> m.DocumentHead:
        call = Call("HEAD", self._url(f"/documents/{_seg(spec_number, 'specNumber')}"), "/documents/{specNumber}")
        token = self.http.token_for(call)

        async def fetch() -> dict[str, Any]:
            resp = await self.http.request(call, token=token)
            _not_json(call.endpoint, resp.headers)
            return _document_head(spec_number, call.url, resp.headers).model_dump()

        hit = await self.cache.get_or_fetch(self._key(call, token), self.cfg.cache.ttl_s.documents, fetch)
        self._count(hit.hit, hit.stale)
        return m.DocumentHead.model_validate(hit.value)

    async def document(self, spec_number: str, *, max_bytes: int | None = None) -> m.Document:
        """The document's bytes (not cached: up to 25 MiB). Larger than `max_bytes`:
        result_too_large, decided from content-length or while streaming."""
        call = Call("GET", self._url(f"/documents/{_seg(spec_number, 'specNumber')}"), "/documents/{specNumber}",
                    kind="download", headers={"Accept": "*/*"}, host_allowed=self._upstream_host_only)
        token = self.http.token_for(call)
        resp = await self.http.request(call, token=token, stream=True)
        try:
            _not_json(call.endpoint, resp.headers)
            head = _document_head(spec_number, call.url, resp.headers)
            if max_bytes is not None and head.size is not None and head.size > max_bytes:
                raise _too_large(spec_number, head.size, max_bytes)
            chunks, total = [], 0
            async for chunk in resp.aiter_bytes():
                total += len(chunk)
                if max_bytes is not None and total > max_bytes:
                    raise _too_large(spec_number, total, max_bytes)
                chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise mapping.from_transport(exc, endpoint=call.endpoint) from None
        finally:
            await resp.aclose()
        return m.Document(**head.model_dump(), content=b"".join(chunks))

    def _upstream_host_only(self, host: str) -> bool:
        """A document is read from the upstream itself: a redirect elsewhere is refused, or a
        caller could have the service fetch (and show) whatever another host serves."""
        if host.lower() in {(httpx.URL(u).host or "").lower() for u in (self.cfg.eco.base_url, self.cfg.eco.graphql_url)}:
            return True
        raise EcoError("upstream_error", f"/documents/{{specNumber}}: upstream redirected to another host ({host}); "
                       "not followed", details={"endpoint": "/documents/{specNumber}", "redirectHost": host})

    async def cached(self, key: str, ttl_s: float, fetch: Callable[[], Awaitable[Any]]) -> Any:
        """A value made from upstream replies outside this client (a document's extracted text),
        cached and counted like the client's own reads: served stale, it is marked stale."""
        hit = await self.cache.get_or_fetch(key, ttl_s, fetch)
        self._count(hit.hit, hit.stale)
        return hit.value

    def _count(self, hit: bool, stale: bool) -> None:
        """A cache hit, and whether the answer was stale, into the call's accounting."""
        acct = context.current()
        if acct is not None:
            acct.cache_hits += int(hit)
            acct.stale_served = acct.stale_served or stale

    # ------------------------------------------------------------------ GraphQL
    @property
    def graphql_available(self) -> bool:
        """False while the breaker is open: callers then use REST."""
        return self.cfg.eco.prefer_graphql and not self.breaker.is_open

    def breaker_state(self) -> dict[str, Any]:
        return self.breaker.state()

    @overload
    async def graphql(self, query: str, variables: dict[str, Any] | None = None, *, model: type[M],
                      operation_name: str | None = None, kind: RequestKind = "catalog", use_breaker: bool = True,
                      send_token: bool | None = None, partial: bool = False) -> M: ...

    @overload
    async def graphql(self, query: str, variables: dict[str, Any] | None = None, *, model: None = None,
                      operation_name: str | None = None, kind: RequestKind = "catalog", use_breaker: bool = True,
                      send_token: bool | None = None, partial: bool = False) -> m.GraphQLReply: ...

    async def graphql(self, query: str, variables: dict[str, Any] | None = None, *, model: type[M] | None = None,
                      operation_name: str | None = None, kind: RequestKind = "catalog", use_breaker: bool = True,
                      send_token: bool | None = None, partial: bool = False) -> M | m.GraphQLReply:
        """The reply's `data` parsed into `model` (`models.parse_graphql_data`); without a model,
        a `GraphQLReply` whose `data` is the raw JSON object. Never cached.
        `use_breaker=False` for callers' own queries (eco_graphql): their mistakes must not
        switch the catalogs to REST. `send_token=False` never sends the token. `partial=True`
        (model-less only): a reply with data and errors together is returned with its errors in
        `GraphQLReply.errors` instead of raised; a reply without data is still `graphql_error`."""
        return await self._graphql(query, variables, operation_name, kind, use_breaker, send_token,
                                   lambda content: self._read_graphql(content, model, partial))

    async def graphql_lists(self, query: str, *, model: type[M], kind: RequestKind = "catalog"
                            ) -> dict[str, Iterable[Any]]:
        """`graphql(query, model=model)` for a query whose root fields are all lists of records
        (`model`'s fields are `list[Item]`): each list, validated an item at a time as its
        caller iterates it (`models.GraphQLItems`), so the records are never all alive at once.
        The reply is checked whole before this returns: the same errors as `graphql`."""
        async def read(content: bytes) -> dict[str, Iterable[Any]]:
            items = m.list_items(model)
            lists = await self._off_loop(content, m.read_graphql_lists, content, items)
            if lists is not None:
                return dict(lists)
            whole = await self._read_graphql(content, model, False)  # raises what the reply deserves
            return {name: getattr(whole, name) for name in items}

        return await self._graphql(query, None, None, kind, True, None, read)

    async def _graphql(self, query: str, variables: dict[str, Any] | None, operation_name: str | None,
                       kind: RequestKind, use_breaker: bool, send_token: bool | None,
                       read: Callable[[bytes], Awaitable[R]]) -> R:
        if use_breaker and self.breaker.is_open:
            raise EcoError("upstream_unavailable", "GraphQL is paused after repeated failures; use REST",
                           details={"endpoint": "/graphql", "breaker": self.breaker.state()})
        body: dict[str, Any] = {"query": query}
        if variables:
            body["variables"] = variables
        if operation_name:
            body["operationName"] = operation_name
        call = Call("POST", self.cfg.eco.graphql_url, "/graphql", kind=kind, json=body, send_token=send_token)
        try:
            resp = await self.http.request(call, token=self.http.token_for(call))
            result = await read(resp.content)
        except EcoError as exc:
            if use_breaker and exc.code in BREAKER_CODES:
                self.breaker.record_failure()
            raise
        if use_breaker:
            self.breaker.record_success()
        return result

    async def _read_graphql(self, content: bytes, model: type[M] | None, partial: bool) -> M | m.GraphQLReply:
        # With a model, the body goes straight into it: a catalog reply read first into a
        # tree of dicts and then into models held both at once, and the memory the process
        # took for that peak stayed with it.
        typed = await self._parse_typed_off_loop(model, content) if model is not None else None
        envelope = (typed if typed is not None
                    else await self._parse_off_loop("/graphql", m.GraphQLResponse, content))
        if envelope.errors and not (partial and model is None and envelope.data is not None):
            raise mapping.graphql_errors(envelope.errors)
        if envelope.data is None:
            raise EcoError("upstream_error", "/graphql: reply has neither data nor errors",
                           details={"endpoint": "/graphql", "reason": "unexpected_body"})
        if typed is not None:
            return cast(M, typed.data)  # not None: checked above
        data = cast(dict[str, Any], envelope.data)  # the general envelope's: a JSON object
        if model is None:
            return m.GraphQLReply(data=data, errors=envelope.errors)
        try:
            return m.parse_graphql_data(model, data)
        except ValidationError as exc:
            raise mapping.unexpected_body("/graphql", exc) from None

    async def graphql_body(self, query: str, variables: dict[str, Any] | None = None, *,
                           operation_name: str | None = None, max_bytes: int) -> bytearray:
        """A caller's own query (eco_graphql): the reply's body as sent, unparsed, read only up to
        `max_bytes`: a longer reply (by its content-length, or once that much has arrived) is
        query_too_large and the rest is never read. No token, no cache, no breaker; reading the
        body shares the call's deadline with the request."""
        body: dict[str, Any] = {"query": query}
        if variables:
            body["variables"] = variables
        if operation_name:
            body["operationName"] = operation_name
        call = Call("POST", self.cfg.eco.graphql_url, "/graphql", kind="detail", json=body, send_token=False)
        resp = await self.http.request(call, token=None, stream=True)
        out = bytearray()
        try:
            declared = resp.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise _reply_too_large(int(declared), max_bytes)
            acct = context.current()
            left = None if acct is None else acct.remaining()
            async with asyncio.timeout(None if left is None else max(left, 0.0)):
                async for chunk in resp.aiter_bytes():
                    if len(out) + len(chunk) > max_bytes:
                        raise _reply_too_large(len(out) + len(chunk), max_bytes)
                    out += chunk
        except TimeoutError:
            raise deadline_exceeded(call.endpoint, None, host=mapping.host_of(call.url)) from None
        except httpx.HTTPError as exc:
            raise mapping.from_transport(exc, endpoint=call.endpoint) from None
        finally:
            await resp.aclose()
        return out

    # ------------------------------------------------------------------ status
    def cache_info(self) -> dict[str, Any]:
        return self.cache.info()

    def rate_limit_info(self) -> dict[str, Any]:
        """Headroom for the current identity (the token this call would use, else anonymous)."""
        token = self.http.available_token()
        identity = token_hash(token)
        seen = self.http.headroom.get(identity)
        budget = budget_for(self.cfg.eco.rate_limit, with_token=token is not None,
                            upstream_limit=seen.limit if seen else None)
        return {
            "identity": identity,
            "backend": self.ratelimiter.backend,
            "limit": seen.limit if seen else None,
            "remaining": seen.remaining if seen else None,
            "resetSeconds": seen.reset_s if seen else None,
            "budgetBurst": round(budget.capacity, 2),
            "budgetPerSecond": round(budget.rate, 3),
            "lowWater": self.cfg.eco.rate_limit.low_water,
        }


def _endpoint_of(url: str, base_url: str) -> str:
    """A path for messages and accounting: upstream paths relative to the base, other hosts
    by host only (signed URLs carry credentials in their query, and paths can be long).
    urlsplit, not httpx.URL: a signed URL is hundreds of characters that httpx would validate one
    by one, for every file of a download."""
    parsed, base = urlsplit(url), urlsplit(base_url)
    if parsed.netloc == base.netloc and parsed.path.startswith(base.path):
        return parsed.path[len(base.path):] or "/"
    return f"storage:{parsed.hostname}"


def _document_head(spec_number: str, url: str, headers: httpx.Headers) -> m.DocumentHead:
    length = headers.get("content-length")
    filename = None
    disposition = headers.get("content-disposition", "")
    if "filename=" in disposition:
        filename = disposition.split("filename=", 1)[1].split(";")[0].strip().strip('"') or None
    return m.DocumentHead(spec_number=spec_number, url=url, content_type=headers.get("content-type"),
                          size=int(length) if length and length.isdigit() else None, filename=filename)


def _not_json(endpoint: str, headers: httpx.Headers) -> None:
    """A document answered in JSON is not the document but an API reply (an error envelope, a
    broken answer): raised as an unexpected reply, so it is neither cached as the document's
    metadata or text nor saved as its file. Documents are PDFs and other files, never JSON."""
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json" or ctype.endswith("+json"):
        raise EcoError("upstream_error", f"{endpoint}: unexpected upstream reply (JSON instead of the document)",
                       details={"endpoint": endpoint, "reason": "unexpected_body"})


def _reply_too_large(size: int, max_bytes: int) -> EcoError:
    return EcoError("query_too_large", f"/graphql: the reply is larger than {max_bytes} bytes; reading stopped "
                    f"at {size}", details={"endpoint": "/graphql", "replyBytesAtLeast": size, "maxReplyBytes": max_bytes})


def _too_large(spec_number: str, size: int, max_bytes: int) -> EcoError:
    return EcoError("result_too_large", f"document {spec_number} is larger than {max_bytes} bytes",
                    details={"size": size, "maxBytes": max_bytes})


# ---------------------------------------------------------------------- process-wide
# httpx and redis clients belong to one event loop, so there is one client per loop; what must
# outlive a loop (Celery runs each task in a fresh one) is shared by the whole process: the
# breaker and the process's own rate-limit buckets (the limit without Redis, the fallback while
# it is unreachable).
#
# A process that installs another configuration (`set_config()`; tests do it all the time)
# starts a new generation: fresh breaker and buckets, and cache keys in a new namespace so no
# answer cached under the old settings is served. Every process starts at generation 1, so
# processes sharing Redis share cache entries.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, UpstreamClient] = weakref.WeakKeyDictionary()
_shared: dict[str, Any] = {"generation": 0}
_closing: set[asyncio.Task[None]] = set()


def _process_parts(cfg: EcoConfig) -> tuple[GraphQLBreaker, LocalBuckets, str]:
    if _shared.get("cfg") is not cfg:
        _shared.update(cfg=cfg, buckets=LocalBuckets(), generation=_shared["generation"] + 1,
                       breaker=GraphQLBreaker(failures=cfg.eco.graphql_breaker_failures,
                                              cooldown_s=cfg.eco.graphql_breaker_cooldown_s))
    return _shared["breaker"], _shared["buckets"], f"g{_shared['generation']}"


def get_client() -> UpstreamClient:
    """The shared client for the running event loop, built from the active configuration
    on first use (and again after `set_config()` installs another one).

    Called with no event loop running (a worker thread computing /readyz), it returns a
    status view sharing the process's breaker and buckets: read its `graphql_available`,
    `breaker_state()`, `cache_info()`, `rate_limit_info()`; do not send requests with it."""
    cfg = get_config()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _status_view(cfg)
    client = _clients.get(loop)
    if client is None or client.closed or client.cfg is not cfg:
        if client is not None and not client.closed:
            stale = loop.create_task(client.aclose())
            _closing.add(stale)
            stale.add_done_callback(_closing.discard)
        breaker, buckets, namespace = _process_parts(cfg)
        client = _clients[loop] = UpstreamClient(cfg, breaker=breaker, namespace=namespace, local_buckets=buckets)
    return client


def _status_view(cfg: EcoConfig) -> UpstreamClient:
    view = _shared.get("status_view")
    if view is None or view.cfg is not cfg:
        breaker, buckets, namespace = _process_parts(cfg)
        # Own cache object (no Redis connection): nothing here may bind to an event loop.
        view = _shared["status_view"] = UpstreamClient(cfg, breaker=breaker, namespace=namespace, ratelimiter=buckets,
                                                       cache=UpstreamCache(cfg.cache))
    return view


def graphql_breaker_state() -> dict[str, Any]:
    """The process's breaker state, callable without an event loop (/readyz, eco_ping)."""
    breaker, _, _ = _process_parts(get_config())
    return breaker.state()


def graphql_available() -> bool:
    """False while the process's breaker is open; callable without an event loop."""
    return get_config().eco.prefer_graphql and graphql_breaker_state()["state"] != "open"


def cache_info_all() -> dict[str, Any]:
    """Entries and hit rate of the upstream answer cache; callable without an event loop (admin
    pages). With Redis `entries` counts the shared cache (every process's, `shared` true), else
    this process's; hits and misses are this process's open clients' (one per event loop)."""
    from upstream.cache import shared_entries

    infos = [c.cache_info() for c in list(_clients.values()) if not c.closed]
    hits = sum(i["hits"] for i in infos)
    misses = sum(i["misses"] for i in infos)
    url = _redis_url()
    cfg = get_config().cache
    return {
        "entries": (shared_entries(url, cfg) if url else
                    next((i["entries"] for i in infos if i.get("entries") is not None), None)),
        "maxEntries": cfg.max_entries,
        "shared": bool(url),
        "hits": hits,
        "misses": misses,
        "hitRate": round(hits / (hits + misses), 4) if hits + misses else None,
        "backend": "redis" if url else infos[0]["backend"] if infos else None,
    }


async def close_loop_client() -> None:
    """Close the running loop's shared client only: a worker thread's loop ends while the server's
    loop keeps its own client."""
    client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()


async def close_clients() -> None:
    """Close the running loop's shared client; forget the others (their loops are gone)."""
    loop = asyncio.get_running_loop()
    client = _clients.pop(loop, None)
    _clients.clear()
    if client is not None:
        await client.aclose()
