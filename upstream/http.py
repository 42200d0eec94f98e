"""The one place that sends HTTP requests to NEON: tokens, timeouts, concurrency, rate limits,
retries, redirects, error mapping and per-call accounting.

    request(Call) ─┬─ token for this call (context.current(), else the configured one on stdio)
                   │   token-only endpoint and none -> auth_required, before any request
                   ├─ take from the identity's bucket (wait, or rate_limited past max_wait_s)
                   ├─ wait for one of eco.max_concurrency slots, at most connect_timeout_s:
                   │   else upstream_unavailable (hung requests must not queue everyone else)
                   ├─ send, counting every attempt in the call's accounting; follow redirects by
                   │   hand, each hop vetted by origin (scheme, host and port): API calls only
                   │   to the upstream's own origin (elsewhere: upstream_error); downloads also
                   │   to an allowed download host over https or to a configured storage
                   │   origin (elsewhere: download_denied), every hop through their allow-list
                   │   too; the token header goes only to the upstream origin; a streamed
                   │   download goes over file_transport.FileWire (aiohttp), anything else over
                   │   httpx's pool, with every step here the same for both
                   ├─ fold x-ratelimit-* into the bucket and into the call's accounting
                   └─ 2xx: done · 429: wait retryafter and retry · 5xx/timeout/reset: back off
                      0.5·2^n (≤ backoff_max_s) and retry · then map to the spec's error code

Inside a tool call the call scope's deadline (eco.call_deadline_s) bounds all of it: every wait
and every request in flight ends there with upstream_unavailable. Without a scope deadline
(catalog refreshes) only the per-request timeouts apply.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import ssl
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urljoin, urlsplit

import httpcore
import httpcore._utils
import httpx

from eco_core import __version__, metrics
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.redact import register_secret, token_hash
from upstream import context, mapping
from upstream.file_transport import FileWire
from upstream.ratelimit import Buckets, Budget, Headroom, budget_for, retry_after_from

if TYPE_CHECKING:
    from yarl import URL as FileURL

log = logging.getLogger("eco.upstream")

RequestKind = Literal["catalog", "detail", "download"]
TOKEN_HEADER = "X-API-Token"
MAX_REDIRECTS = 5


@dataclass(frozen=True)
class Call:
    method: str
    url: str
    endpoint: str  # the path template, for messages and accounting (never a query string)
    kind: RequestKind = "detail"
    params: dict[str, Any] | None = None
    json: Any = None
    token_only: bool = False
    send_token: bool | None = None  # None: by policy; False: never (eco_graphql)
    headers: dict[str, str] = field(default_factory=dict)
    follow_redirects: bool = True
    # Downloads pass their host allow-list: every hop, redirects included, must pass it.
    host_allowed: Callable[[str], bool] | None = None


def _params(params: dict[str, Any] | None) -> dict[str, str] | None:
    if not params:
        return None
    out = {}
    for k, v in params.items():
        if v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out or None


def user_agent(cfg: EcoConfig) -> str:
    base = f"eco-mcp/{__version__} (+https://github.com/eco-mcp; python-httpx/{httpx.__version__})"
    return f"{base} {cfg.eco.user_agent_suffix}" if cfg.eco.user_agent_suffix else base


class UpstreamHttp:
    def __init__(
        self,
        cfg: EcoConfig,
        *,
        buckets: Buckets,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cfg = cfg
        self.buckets = buckets
        self._sleep = sleep
        self._clock = clock
        self._sem = asyncio.Semaphore(cfg.eco.max_concurrency)
        # (scheme, host:port) pairs of the API: requests to them spend its rate budget.
        self._upstream_origins = {(u.scheme, u.netloc.lower()) for u in map(urlsplit, (cfg.eco.base_url, cfg.eco.graphql_url))}
        self._upstream_hosts = {(u.hostname or "").lower() for u in map(urlsplit, (cfg.eco.base_url, cfg.eco.graphql_url))}
        # Where a redirect may lead, by origin: another port of an allowed host is another service
        # (an admin page, /metrics, Redis), whose answer must never pass for the upstream's.
        self._api_origins = {_split_origin(u) for u in (cfg.eco.base_url, cfg.eco.graphql_url)}
        self._storage_origins = {_split_origin(u) for u in cfg.downloads.storage_origins}
        self._download_host = _host_matcher(cfg.downloads.allowed_hosts)
        self.headroom: dict[str, Headroom] = {}
        self.requests_sent = 0
        limits = httpx.Limits(max_connections=cfg.eco.max_concurrency + 2,
                              max_keepalive_connections=cfg.eco.max_concurrency)
        wide = _wide_read_transport(limits) if transport is None else None
        # Streamed downloads go over FileWire where httpx would use its own pool; an injected
        # transport (tests) or a proxy setting keeps them on httpx with everything else.
        self._files = FileWire(limits, _ssl_context()) if wide is not None else None
        self._client = _CookielessClient(
            transport=transport if transport is not None else wide,
            verify=_ssl_context(),
            follow_redirects=False,
            headers={"User-Agent": user_agent(cfg), "Accept": "application/json"},
            limits=limits,
            timeout=self.timeout("detail"),
        )
        # httpx's names come lower-cased; the client's headers never change after this.
        self._file_headers = dict(self._client.headers.items())

    async def aclose(self) -> None:
        try:
            if self._files is not None:
                await self._files.aclose()
        finally:
            await self._client.aclose()

    @property
    def closed(self) -> bool:
        return self._client.is_closed

    def timeout(self, kind: RequestKind) -> httpx.Timeout:
        eco = self.cfg.eco
        read = {"catalog": eco.catalog_read_timeout_s, "detail": eco.read_timeout_s,
                "download": eco.download_read_timeout_s}[kind]
        return httpx.Timeout(read, connect=eco.connect_timeout_s, pool=eco.connect_timeout_s + read)

    # ------------------------------------------------------------------ tokens
    def available_token(self) -> str | None:
        """The token this call may use: the gateway's choice inside a call scope; outside one
        (stdio, Celery, --check) the configured token. Over HTTP an anonymous caller stays
        anonymous: lending the operator's token is the gateway's decision, not ours."""
        acct = context.current()
        if acct is not None and acct.token:
            return acct.token
        if acct is not None and self.cfg.is_http:
            return None
        token = self.cfg.eco.api_token.reveal() if self.cfg.eco.api_token else None
        register_secret(token)
        return token

    def token_for(self, call: Call) -> str | None:
        """The token to attach to `call`, or None; auth_required for a token-only call without one."""
        token = self.available_token()
        if call.token_only:
            if not token:
                raise EcoError("auth_required", f"{call.endpoint} needs an upstream API token and none is set",
                               details={"endpoint": call.endpoint})
            return token
        if call.send_token is False or not token:
            return None
        return token if self.cfg.token_for_public_endpoints else None

    def _is_upstream(self, url: httpx.URL | FileURL) -> bool:
        return _origin(url) in self._api_origins

    def _redirect_refused(self, call: Call, url: httpx.URL | FileURL, status: int) -> EcoError | None:
        """Why the redirect hop to `url` is not followed, or None. An API answer comes only from
        the API's own origin: a hop elsewhere could serve anything as NEON's reply, and it would be
        cached. A download may also go to an allowed download host over https on its default port,
        or to an origin the operator named exactly (downloads.storage_origins)."""
        origin = _origin(url)
        if origin in self._api_origins:
            return None
        shown = _show_origin(origin)
        details = {"endpoint": call.endpoint, "upstreamStatus": status, "redirectHost": url.host,
                   "redirectOrigin": shown}
        if call.kind != "download":
            where = ("another host" if origin[1] not in self._upstream_hosts else "another origin")
            return EcoError("upstream_error", f"{call.endpoint}: upstream redirected to {where} ({shown}); not followed",
                            details=details)
        if origin in self._storage_origins or (origin[0] == "https" and origin[2] == 443
                                               and self._download_host(origin[1])):
            return None
        return EcoError("download_denied",
                        f"{call.endpoint}: a redirect to {shown} is not followed: downloads are redirected only to "
                        "the upstream's own origin, to a host on downloads.allowed_hosts over https, or to an "
                        "origin on downloads.storage_origins",
                        details={**details, "host": url.host})

    # ------------------------------------------------------------------ request
    async def request(self, call: Call, *, token: str | None = None, stream: bool = False) -> httpx.Response:
        """Send `call` with retries; a 2xx response or an EcoError. With stream=True the body
        is not read: the caller must `aclose()` the response."""
        identity = token_hash(token)
        retries = self.cfg.eco.retries
        # Signed storage URLs are not NEON's API: they do not spend its rate budget.
        # urlsplit, not httpx.URL: httpx validates a long signed URL one character at a time,
        # which a 100-file download would pay again for every file.
        target = urlsplit(call.url)
        limited = (target.scheme, target.netloc.lower()) in self._upstream_origins
        last: EcoError | None = None
        for attempt in range(retries.max_attempts):
            budget = self._budget(identity, token)
            if limited:
                await self._acquire(identity, budget, call.endpoint)
            try:
                await self._take_slot(call)
                try:
                    left = _remaining()
                    if left is None:
                        resp = await self._send(call, token, stream=stream)
                    else:
                        async with asyncio.timeout(max(left, 0.0)):
                            resp = await self._send(call, token, stream=stream)
                finally:
                    self._sem.release()
            except TimeoutError:
                # Only the deadline's asyncio.timeout raises the builtin; httpx's are HTTPError.
                raise deadline_exceeded(call.endpoint, last, host=mapping.host_of(call.url)) from None
            except httpx.HTTPError as exc:
                last = mapping.from_transport(exc, endpoint=call.endpoint)
                log.info("upstream %s %s failed: %s (attempt %d)", call.method, call.endpoint, type(exc).__name__, attempt + 1)
            else:
                await self._observe(identity, budget, resp)
                if resp.is_success or (resp.is_redirect and not call.follow_redirects):
                    return resp
                if stream:
                    await resp.aread()
                    await resp.aclose()
                if resp.status_code == 429:
                    wait = retry_after_from(resp.headers, retries.retry_after_default_s)
                    await self.buckets.observe(identity, budget, remaining=0, hold_s=wait, low_water=0)
                    last = mapping.rate_limited(call.endpoint, wait)
                    if wait > self.cfg.eco.rate_limit.max_wait_s:
                        raise last
                    continue  # the bucket now holds the next attempt back for `wait`
                last = mapping.from_status(resp, endpoint=call.endpoint, token_sent=token is not None)
                if resp.status_code < 500:
                    raise last
            if attempt + 1 < retries.max_attempts:
                delay = min(retries.backoff_base_s * 2**attempt, retries.backoff_max_s)
                left = _remaining()
                if left is not None and delay >= left:
                    # No time for another attempt: the failure we have is the honest answer.
                    break
                await self._sleep(delay)
        assert last is not None
        raise last

    async def _take_slot(self, call: Call) -> None:
        """One of eco.max_concurrency slots, waited for at most connect_timeout_s (less when the
        call's deadline is nearer): four hung requests must not make every other call wait
        without limit. Outside a call (refreshes) the wait matches httpx's own pool timeout."""
        eco = self.cfg.eco
        left = _remaining()
        if left is None:
            wait = self.timeout(call.kind).pool or eco.connect_timeout_s
        else:
            if left <= 0:
                raise deadline_exceeded(call.endpoint, None, host=mapping.host_of(call.url))
            wait = min(eco.connect_timeout_s, left)
        try:
            async with asyncio.timeout(wait):
                await self._sem.acquire()
        except TimeoutError:
            if left is not None and wait >= left:
                raise deadline_exceeded(call.endpoint, None, host=mapping.host_of(call.url)) from None
            raise EcoError(
                "upstream_unavailable",
                f"{call.endpoint}: all {eco.max_concurrency} upstream connections stayed busy for {wait:g} s",
                details={"endpoint": call.endpoint, "reason": "busy", "retryAfterSeconds": max(1, math.ceil(wait))},
                hint=(f"{mapping.host_of(call.url)} is slow to answer; retry in about {max(1, math.ceil(wait))} s. "
                      + _CHECK_ADVICE),
                retryable=True,
            ) from None

    async def _send(self, call: Call, token: str | None, *, stream: bool) -> httpx.Response:
        # Every hop's host is vetted by the parse of the wire that connects to it.
        files = self._files if stream and call.kind == "download" and not call.params else None
        parse: Callable[[str], httpx.URL | FileURL] = httpx.URL if files is None else files.url
        url = parse(call.url)
        method, params, body = call.method, _params(call.params), call.json
        redirected: int | None = None  # the status of the redirect that led here
        for _ in range(MAX_REDIRECTS + 1):
            host = url.host or ""
            if call.host_allowed is not None and not call.host_allowed(host):
                raise EcoError("download_denied", f"{call.endpoint}: host {host} is not on the download allow-list",
                               details={"host": host, "endpoint": call.endpoint})
            if redirected is not None:
                refused = self._redirect_refused(call, url, redirected)
                if refused is not None:
                    raise refused
            headers = dict(call.headers)
            if token and self._is_upstream(url):
                headers[TOKEN_HEADER] = token
            timeout = self.timeout(call.kind)
            started = self._clock()
            # Counted before it is sent: an attempt that times out or is reset cost the upstream too.
            self._account(call)
            try:
                if isinstance(url, httpx.URL):
                    request = self._client.build_request(method, url, params=params, json=body, headers=headers,
                                                         timeout=timeout)
                    resp = await self._client.send(request, stream=stream)
                else:
                    assert files is not None
                    resp = await files.send(method, url, self._wire_headers(headers), timeout)
            except httpx.HTTPError:
                metrics.upstream_request(call.endpoint, "transport_error", kind=call.kind)
                raise
            metrics.upstream_request(call.endpoint, resp.status_code, kind=call.kind)
            log.debug("upstream %s %s -> %s in %.0f ms", call.method, call.endpoint, resp.status_code,
                      (self._clock() - started) * 1000)
            if not resp.is_redirect or not call.follow_redirects:
                return resp
            location = resp.headers.get("location", "")
            if stream:
                await resp.aclose()
            # The next hop carries its own query (if any); a 303 turns into a GET.
            url = parse(urljoin(str(resp.url) if isinstance(url, httpx.URL) else str(url), location))
            redirected = resp.status_code
            params = None
            if resp.status_code == 303 or (resp.status_code in (301, 302) and method == "POST"):
                method, body = "GET", None
        raise EcoError("upstream_error", f"{call.endpoint}: too many redirects", details={"endpoint": call.endpoint})

    def _wire_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """The client's own headers (User-Agent, Accept-Encoding, ...) with `headers` over them,
        by name whatever its case, as httpx would send them."""
        out = dict(self._file_headers)
        out.update((k.lower(), v) for k, v in headers.items())
        return out

    def _account(self, call: Call) -> None:
        self.requests_sent += 1
        acct = context.current()
        if acct is not None:
            acct.requests += 1
            acct.endpoints.append(f"{call.method} {call.endpoint}")

    # ------------------------------------------------------------------ rate limits
    def _budget(self, identity: str, token: str | None) -> Budget:
        seen = self.headroom.get(identity)
        return budget_for(self.cfg.eco.rate_limit, with_token=token is not None,
                          upstream_limit=seen.limit if seen else None)

    async def _acquire(self, identity: str, budget: Budget, endpoint: str) -> None:
        waited = 0.0
        max_wait = self.cfg.eco.rate_limit.max_wait_s
        while True:
            wait = await self.buckets.take(identity, budget)
            if wait <= 0:
                return
            if waited + wait > max_wait:
                raise mapping.rate_limited(endpoint, wait)
            left = _remaining()
            if left is not None and wait >= left:
                # Waiting would outlast the call: say when the budget allows the next request.
                raise mapping.rate_limited(endpoint, wait)
            await self._sleep(wait)
            waited += wait

    async def _observe(self, identity: str, budget: Budget, resp: httpx.Response) -> None:
        limit = _int_header(resp.headers, "x-ratelimit-limit")
        remaining = _int_header(resp.headers, "x-ratelimit-remaining")
        reset = _int_header(resp.headers, "x-ratelimit-reset")
        if remaining is None:
            return
        seen = self.headroom.get(identity)
        if resp.status_code == 429:
            # A refusal's limit header is not this identity's limit (NEON's 429 may carry the
            # anonymous one whoever asked): the limit last seen on an answer stays.
            limit = seen.limit if seen is not None else None
        self.headroom[identity] = Headroom(limit=limit, remaining=remaining, reset_s=reset, seen_at=self._clock())
        metrics.rate_limit_remaining(remaining, with_token=identity != "anonymous")
        acct = context.current()
        if acct is not None:
            acct.rate_limit_remaining, acct.rate_limit_limit = remaining, limit
        low_water = self.cfg.eco.rate_limit.low_water
        # At low water, hold until NEON has refilled past it again, and never longer than its
        # reset (the time to a full refill): waiting for a *full* refill would refuse every
        # call for ~100 s at the anonymous rate, where one token is back in about half a second.
        hold = min(float(reset if reset is not None else 1), (low_water - remaining + 1) / budget.rate)
        await self.buckets.observe(identity, budget, remaining=remaining, hold_s=max(hold, 0.0), low_water=low_water)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes tens of milliseconds; every client (one per event loop, and
    # again after close_clients) shared it instead of paying that on its first call.
    return httpx.create_ssl_context()


# What one read of a response may return. httpcore asks for 64 KiB, and its network layer cuts a
# bigger socket read into 64 KiB pieces, each passing up through httpcore's and httpx's layers
# of async generators: a 50 MB download paid that per-piece work some 1,700 times.
READ_BYTES = 1 << 20


class _NoCookies(httpx.Cookies):
    def extract_cookies(self, response: httpx.Response) -> None:
        pass  # a Set-Cookie header is never kept: see _CookielessClient


class _CookielessClient(httpx.AsyncClient):
    """NEON's API and its storage hosts work without cookies, and one client serves every
    caller of a worker: a cookie one caller's answer set must never ride on another's request.
    (Keeping them also cost a urllib cookie-jar pass over every response.)"""

    @property  # type: ignore[override]
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        pass  # httpx's constructor assigns its `cookies` argument: nothing is kept from it either


_NO_COOKIES = _NoCookies()


class _WideStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: Any = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max(max_bytes, READ_BYTES), timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _WideStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        # httpcore's pool asks every idle connection whether it is readable (closed by the peer)
        # before each request; through anyio each answer built a dict of every attribute, with a
        # getpeername call, to find the socket. A connection's socket never changes.
        if info not in ("socket", "is_readable"):
            return self._inner.get_extra_info(info)
        if self._socket is None:
            self._socket = self._inner.get_extra_info("socket")
            if self._socket is None:
                return self._inner.get_extra_info(info)
        # "is_readable" as httpcore's own streams answer it, without asking anyio for the socket
        return self._socket if info == "socket" else httpcore._utils.is_socket_readable(self._socket)


def _widen(stream: httpcore.AsyncNetworkStream) -> httpcore.AsyncNetworkStream:
    """Below httpcore, asyncio's socket transport takes at most 256 KiB from the kernel per recv
    and anyio hands each piece up on its own (two epoll_ctl calls and a pass through every layer
    above, per piece): let one recv take up to READ_BYTES of what has arrived. A 114-file, 50 MB
    download went from ~290 reads to ~165. Reached through anyio's and httpcore's stream objects;
    where they are not what this expects, the reads stay as they were."""
    transport: Any = getattr(getattr(stream, "_stream", None), "_transport", None)
    if isinstance(getattr(transport, "max_size", None), int) and transport.max_size < READ_BYTES:
        transport.max_size = READ_BYTES
    return stream


class _WideReads(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        return _WideStream(_widen(await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        return _WideStream(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _WideReadTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport over a connection pool whose reads take up to READ_BYTES."""

    def __init__(self, limits: httpx.Limits) -> None:
        super().__init__(verify=_ssl_context(), limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=_ssl_context(), max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=_WideReads())


def _wide_read_transport(limits: httpx.Limits) -> httpx.AsyncBaseTransport | None:
    # An explicit transport turns off httpx's proxy variables (HTTPS_PROXY, NO_PROXY, ...): with
    # any of them set, httpx builds its transports itself.
    return None if urllib.request.getproxies() else _WideReadTransport(limits)


Origin = tuple[str, str, int]
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: httpx.URL | FileURL) -> Origin:
    """(scheme, host, port) with the scheme's default port filled in, from either wire's URL."""
    scheme = url.scheme.lower()
    return scheme, (url.host or "").lower().rstrip("."), url.port or _DEFAULT_PORTS.get(scheme, 0)


def _split_origin(text: str) -> Origin:
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").rstrip("."), parts.port or _DEFAULT_PORTS.get(scheme, 0)


def _show_origin(origin: Origin) -> str:
    """The origin as a URL prefix (never a path or query: a signed URL's query is a credential)."""
    scheme, host, port = origin
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" if _DEFAULT_PORTS.get(scheme) == port else f"{scheme}://{host}:{port}"


def _host_matcher(patterns: list[str]) -> Callable[[str], bool]:
    """downloads.allowed_hosts as a predicate ('*.' is any subdomain), as the downloads package reads it."""
    exact = {p.lower().rstrip(".") for p in patterns if not p.startswith("*.")}
    suffixes = tuple(p[1:].lower().rstrip(".") for p in patterns if p.startswith("*."))
    return lambda host: host in exact or (bool(suffixes) and host.endswith(suffixes))


def _remaining() -> float | None:
    acct = context.current()
    return None if acct is None else acct.remaining()


# Hints name the host that failed, how to test it and the setting that points the service
# elsewhere, as mapping.unreachable_hint does for a host that cannot be reached at all.
_CHECK_ADVICE = ("Test it with `scripts/serve --check` (or eco_ping with check_api=true); if that is the wrong "
                 "upstream, set eco.base_url (ECO_MCP_ECO__BASE_URL) and eco.graphql_url.")


def deadline_exceeded(endpoint: str, last: EcoError | None, *, host: str = "the upstream") -> EcoError:
    """The call's deadline passed while waiting on the upstream (in flight, backing off or
    waiting for a slot); `last` is the failure that made it retry, if any; `host` the one waited on."""
    acct = context.current()
    limit = acct.deadline_s if acct is not None and acct.deadline_s is not None else 0.0
    details: dict[str, Any] = {"endpoint": endpoint, "reason": "deadline", "deadlineSeconds": limit,
                               "retryAfterSeconds": 5}
    if last is not None:
        details["lastError"] = last.code
        if "upstreamStatus" in last.details:
            details["upstreamStatus"] = last.details["upstreamStatus"]
    return EcoError(
        "upstream_unavailable",
        f"{endpoint}: no upstream answer within this call's {limit:g} s deadline",
        details=details,
        hint=f"{host} is slow or not answering; retry in a few seconds. " + _CHECK_ADVICE,
        retryable=True,
    )


def _int_header(headers: httpx.Headers, name: str) -> int | None:
    raw = headers.get(name)
    try:
        return int(float(raw)) if raw is not None else None
    except ValueError:
        return None
