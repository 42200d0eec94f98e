"""The HTTP transport: the top-level ASGI app, a small router in front of Django, and
`serve_http` which runs it under uvicorn (the CLI's `--transport http`).

    /mcp, /mcp/   the MCP endpoint (stateless Streamable HTTP; POST only)
    /healthz      liveness JSON
    /readyz       503 {"status": "warming", "reason", ...} until the catalogs are warm, then 200
    /metrics      Prometheus metrics (eco_core.metrics; every worker's with PROMETHEUS_MULTIPROC_DIR)
    anything else Django (admin, static)

Django's ASGI handler takes no lifespan events, so this router owns the lifespan: it runs the
SDK's session manager (which must be entered before any MCP request) and starts the catalog
prewarm in the background without holding up start-up. A prewarm that leaves the service not
ready (the upstream unreachable, say) is tried again after PREWARM_RETRY_S, doubling up to
PREWARM_RETRY_MAX_S, until it is; /readyz says why it is not ready and when the next attempt
is. Every response carries X-Request-Id.

Every route, Django's included, passes the Host/Origin guard first (mcp_gateway.origin): a DNS-
rebinding page must not read /readyz or fetch the admin login form and its CSRF token. The
router's own replies carry nosniff, X-Frame-Options DENY and no-referrer; Django sets its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import PROTOCOL_VERSION_META_KEY
from mcp_types.jsonrpc import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from eco_core import __version__, metrics
from eco_core.config import EcoConfig, get_config, set_config
from mcp_gateway import health, ports, splice
from mcp_gateway.origin import HostPolicy
from mcp_gateway.registry import Registry
from mcp_gateway.server import build_server, served_versions
from mcp_gateway.tokens import header_token_problem

log = logging.getLogger("eco.gateway.http")
# The SDK logs every stateless request's teardown at INFO ("Terminating session: None"): noise.
logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)

MCP_PATHS = frozenset({"/mcp", "/mcp/"})
# A start-up build that left the service not ready is tried again this long after, doubling.
PREWARM_RETRY_S = 30.0
PREWARM_RETRY_MAX_S = 300.0
_PADDING = (b" ", b"\t")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)


async def _send_json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def _single_header(scope: Scope, name: bytes) -> str | None:
    """The header's value; a repeated header counts as a comma-joined list, which no host or
    origin allow-list entry matches."""
    values = [value.decode("latin-1") for key, value in scope.get("headers", ()) if key == name]
    return None if not values else ", ".join(values)


class EcoHttpApp:
    def __init__(self, django_app: ASGIApp | None, cfg: EcoConfig, registry: Registry | None = None) -> None:
        self.cfg = cfg
        self.django_app = django_app
        self.server = build_server(cfg, registry)
        self.hosts = HostPolicy.from_config(cfg)
        # Host/Origin checks happen in __call__, before the SDK, for both protocol eras and every route.
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=cfg.server.json_response,
            stateless=True,
            security_settings=None,
            max_request_body_size=cfg.server.max_request_body_size,
        )
        self.prewarm_task: asyncio.Task[None] | None = None
        self.prewarm_attempts = 0
        self.prewarm_retry_at: float | None = None  # time.time() of the next start-up build attempt
        self._token_header = cfg.server.request_token_header.lower().encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            if self.django_app is not None:
                await self.django_app(scope, receive, send)
            return
        request_id = _header(scope, b"x-request-id")
        if request_id is None or not _REQUEST_ID.match(request_id):
            request_id = os.urandom(16).hex()  # a random id, as uuid4's, without the UUID object
        scope.setdefault("state", {})["request_id"] = request_id

        path = scope.get("path", "")
        own_route = path in MCP_PATHS or path in ("/healthz", "/readyz", "/metrics") or self.django_app is None

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-request-id"]
                if own_route:
                    present = {h[0].lower() for h in headers}
                    headers += [h for h in SECURITY_HEADERS if h[0] not in present]
                message = {**message, "headers": [*headers, (b"x-request-id", request_id.encode())]}
            await send(message)

        refusal = self.hosts.check(_single_header(scope, b"host"), _single_header(scope, b"origin"))
        if refusal is not None:
            status, reason = refusal
            log.warning("refused %s %s: %s", scope.get("method"), path[:200], reason)
            await _send_json(send_with_id, status, {"error": reason})
            return
        if path in MCP_PATHS:
            await self._mcp(scope, receive, send_with_id)
        elif path == "/healthz":
            await _send_json(send_with_id, 200, health.healthz("http"))
        elif path == "/readyz":
            status, body = await health.readyz(self.cfg)
            if status == 503 and body.get("status") == "warming":
                body = self._warming(body)
            await _send_json(send_with_id, status, body)
        elif path == "/metrics":
            await self._metrics(scope, send_with_id)
        elif self.django_app is not None:
            clock = _BodyDeadline(scope, receive, send_with_id, self.cfg.server.body_read_timeout_s)
            await self.django_app(scope, clock.receive, clock.send)
        else:
            await _send_json(send_with_id, 404, {"error": "not found"})

    async def _metrics(self, scope: Scope, send: Send) -> None:
        """Prometheus text exposition (eco_core.metrics); the state gauges are read now."""
        if scope.get("method") not in ("GET", "HEAD"):
            await _send_json(send, 405, {"error": "method not allowed: GET only"}, [(b"allow", b"GET, HEAD")])
            return
        from catalog.models import CATALOGS
        from catalog.status import status_report
        from upstream.client import graphql_breaker_state

        try:
            status = await status_report(self.cfg)
            ages = {c: status[c]["ageSeconds"] for c in CATALOGS}
        except Exception as exc:
            # Event counters are still worth serving while the database is away.
            log.warning("metrics: catalog ages unavailable (%s)", type(exc).__name__)
            ages = {}
        metrics.set_state(breaker_open=graphql_breaker_state()["state"] == "open", catalog_ages=ages)
        data, content_type = await asyncio.to_thread(metrics.exposition)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(data)).encode()),
                                (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else data})

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            # No sessions and no server-initiated messages: a GET would otherwise open a stream
            # that never ends, and a DELETE has no session to end.
            await _send_json(send, 405, {"error": "method not allowed: POST only"}, [(b"allow", b"POST")])
            return
        # Surrounding whitespace in a header value is not part of it (RFC 9110 §5.5): `Mcp-Name:
        # eco_ping ` names eco_ping (conformance scenario sep-2243-server-accepts-whitespace-header-value).
        headers = scope.get("headers", ())
        if any(v[:1] in _PADDING or v[-1:] in _PADDING for _, v in headers):
            scope = {**scope, "headers": [(k, v.strip(b" \t")) for k, v in headers]}
        # The whole body first, within its deadline: the SDK would wait for a dribbled one without
        # limit, and log a client that left half-way as a traceback.
        read = await self._request_body(scope, receive, send)
        if read is None:
            return
        receive = _replay(*read, receive)
        problem = header_token_problem(self.cfg, dict(reversed(scope.get("headers") or ())).get(self._token_header))
        if problem is not None:
            # A token the upstream could never be sent: refused for the whole request, as the
            # protocol's invalid params, before the SDK (and any upstream request) sees it.
            parsed = _parse(read[0], self.cfg.server.max_request_body_size) if read[1] else None
            error = {"code": INVALID_PARAMS, "message": problem,
                     "data": {"code": "invalid_argument", "field": self.cfg.server.request_token_header}}
            await _send_json(send, 400, {"jsonrpc": "2.0", "id": _request_id(parsed), "error": error})
            return
        version = _header(scope, b"mcp-protocol-version")
        if version is not None and version not in KNOWN_PROTOCOL_VERSIONS:
            # The SDK checks the header only against a modern envelope (-32020 when they differ,
            # -32022 when both name an unsupported version); a body without one got -32602 about
            # params._meta, which tells the client nothing about its version.
            envelope_body = await self._unsupported_version(version, receive, send)
            if envelope_body is None:
                return
            receive = _replay(envelope_body, True, receive)
        sse = not self.cfg.server.json_response and "text/event-stream" in (_header(scope, b"accept") or "")
        if version not in MODERN_PROTOCOL_VERSIONS:
            # The handshake era's transport runs the handler in a task of its own session: no
            # splices (mcp_gateway.splice), only the SSE framing.
            await self.manager.handle_request(scope, receive, _Reply(send, sse=True) if sse else send)
            return
        with splice.scope() as pending:
            reply = _Reply(send, sse=sse, pending=pending)
            await self.manager.handle_request(scope, receive, reply)
        if pending and reply.answered:
            # A reply went out with a placeholder in place of a result: a reply shape
            # mcp_gateway.splice does not know. (A caller that left before its reply is not this.)
            log.error("%d tool result(s) were not spliced into their reply", len(pending))

    async def _request_body(self, scope: Scope, receive: Receive, send: Send) -> tuple[bytes, bool] | None:
        """(body, whole) read within server.body_read_timeout_s; more than max_request_body_size is
        left unfinished (whole False) for the SDK to refuse with 413. None: answered here (408),
        or the client went away (one log line, nothing answered)."""
        limit, timeout_s = self.cfg.server.max_request_body_size, self.cfg.server.body_read_timeout_s
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return b"", False  # the SDK answers 413 from the header alone
        body = bytearray()
        try:
            async with asyncio.timeout(timeout_s):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        log.info("%s %s: the client went away before its request body arrived (%d bytes read)",
                                 scope.get("method"), scope.get("path", "")[:200], len(body))
                        return None
                    body.extend(message.get("body", b""))
                    if not message.get("more_body", False):
                        return bytes(body), True
                    if len(body) > limit:
                        return bytes(body), False
        except TimeoutError:
            await _body_late(scope, send, timeout_s, len(body))
            return None

    async def _unsupported_version(self, version: str, receive: Receive, send: Send) -> bytes | None:
        """-32022 (HTTP 400) naming every version served, the request's id echoed when the body
        (read up to the request size limit) is a JSON-RPC request. A body whose modern envelope
        names another version is returned instead, for the SDK to answer the disagreement."""
        body = await _read_body(receive, self.cfg.server.max_request_body_size)
        if body is None:
            return None  # the client went away
        parsed = _parse(body, self.cfg.server.max_request_body_size)
        params = parsed.get("params") if isinstance(parsed, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta and meta[PROTOCOL_VERSION_META_KEY] != version:
            return bytes(body)  # the SDK's -32020: header and envelope disagree
        rid = _request_id(parsed)
        # Answered here when the envelope names the same version too: the SDK's -32022 would
        # name only the modern revision as supported.
        error = {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": f"Unsupported protocol version {version[:64]!r} "
                 "in the MCP-Protocol-Version header",
                 "data": {"supported": served_versions(), "requested": version[:64]}}
        await _send_json(send, 400, {"jsonrpc": "2.0", "id": rid, "error": error})
        return None

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        stack = AsyncExitStack()
        try:
            await stack.enter_async_context(self.manager.run())
            if self.cfg.prewarm:
                self.prewarm_task = asyncio.create_task(self._prewarm(), name="eco-prewarm")
        except Exception as exc:
            log.exception("start-up failed")
            await stack.aclose()
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        if self.prewarm_task is not None:
            self.prewarm_task.cancel()
        await stack.aclose()
        await send({"type": "lifespan.shutdown.complete"})

    async def _prewarm(self) -> None:
        delay = PREWARM_RETRY_S
        while True:
            self.prewarm_retry_at = None
            self.prewarm_attempts += 1
            try:
                await ports.prewarm(self.cfg)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("catalog prewarm failed")
            if (await health.readyz(self.cfg))[0] == 200:
                log.info("catalog prewarm finished")
                return
            # Nothing else builds missing catalogs on a server nobody calls yet: try again, slower
            # each time, so an upstream that comes back is noticed without a restart.
            log.warning("catalogs not ready after start-up build attempt %d; next attempt in %g s (see /readyz)",
                        self.prewarm_attempts, delay)
            self.prewarm_retry_at = time.time() + delay
            await asyncio.sleep(delay)
            delay = min(delay * 2, PREWARM_RETRY_MAX_S)

    def _warming(self, body: dict[str, Any]) -> dict[str, Any]:
        """/readyz's warming answer with what the start-up build is doing about it."""
        build: dict[str, Any]
        if not self.cfg.prewarm:
            build = {"state": "off"}
            then = "nothing builds them at start (cache.prewarm is off): the first tool call that needs them does"
        elif self.prewarm_retry_at is None:
            build = {"state": "running", "attempt": self.prewarm_attempts}
            then = f"start-up build attempt {self.prewarm_attempts} is under way"
        else:
            wait = max(0, round(self.prewarm_retry_at - time.time()))
            at = datetime.fromtimestamp(self.prewarm_retry_at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
            build = {"state": "waiting", "attempts": self.prewarm_attempts, "retryAt": at, "retryInSeconds": wait}
            then = f"the start-up build tries again in {wait} s (at {at})"
        reason = body.get("reason")
        return {**body, "reason": f"{reason}; {then}" if reason else then, "startupBuild": build}


async def _read_body(receive: Receive, limit: int) -> bytearray | None:
    """The request body, read until it ends or passes `limit`; None when the client went away."""
    body = bytearray()
    while len(body) <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body.extend(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return body


def _parse(body: bytes | bytearray, limit: int) -> Any:
    try:
        return json.loads(bytes(body)) if len(body) <= limit else None
    except ValueError:
        return None


def _request_id(parsed: Any) -> str | int | None:
    """The JSON-RPC id of a parsed request body, when it has a valid one."""
    rid = parsed.get("id") if isinstance(parsed, dict) else None
    return None if isinstance(rid, bool) or not isinstance(rid, (str, int)) else rid


def _replay(body: bytes, whole: bool, then: Receive) -> Receive:
    """A receive channel that gives the already read `body` again, then what the client sends
    next (the rest of the body when not `whole`, else its disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": not whole}
        return await then()

    return receive


async def _body_late(scope: Scope, send: Send, timeout_s: float, got: int) -> None:
    log.info("%s %s: request body not complete within %g s (%d bytes read); 408, connection closed",
             scope.get("method"), scope.get("path", "")[:200], timeout_s, got)
    await _send_json(send, 408, {"error": f"request body not received within {timeout_s:g} s"},
                     [(b"connection", b"close")])


class _BodyDeadline:
    """`receive` with the body's deadline for an app that reads the body itself (Django): past it
    the client gets 408 (the connection closes) and the app sees the client gone, and whatever
    the app sends after that is dropped. Once the body is whole, receive waits as long as the
    app likes (a disconnect is what it is then waiting for)."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, timeout_s: float) -> None:
        self._scope, self._receive, self._send, self._timeout_s = scope, receive, send, timeout_s
        self._deadline = asyncio.get_running_loop().time() + timeout_s
        self._whole = self._answered = self._started = False
        self._got = 0

    async def receive(self) -> Message:
        if self._answered:
            return {"type": "http.disconnect"}
        if self._whole:
            return await self._receive()
        try:
            async with asyncio.timeout_at(self._deadline):
                message = await self._receive()
        except TimeoutError:
            if not self._started:
                self._answered = True
                await _body_late(self._scope, self._send, self._timeout_s, self._got)
            return {"type": "http.disconnect"}
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._whole = True
        self._got += len(message.get("body", b""))
        return message

    async def send(self, message: Message) -> None:
        if self._answered:
            return
        if message["type"] == "http.response.start":
            self._started = True
        await self._send(message)


class _Reply:
    """What the SDK sends for one MCP POST, on its way out. A 200 JSON reply is held until its
    body is whole, to fill its splices (mcp_gateway.splice) and fix its length; in SSE mode it
    is also reframed as one SSE frame: the SDK answers a quick 2026-07-28 request as
    application/json even then, and the spec wants one SSE frame per reply unless
    `server.json_response`. Error statuses (400 header mismatch, 404, ...) stay JSON, as the
    transport spec requires. A streamed SSE reply (a slow call) has its frames filled as they go."""

    def __init__(self, send: Send, *, sse: bool, pending: dict[bytes, tuple[bool, bytes]] | None = None) -> None:
        self.send, self.sse, self.pending = send, sse, pending
        self.answered = False  # the reply's last body was sent
        self.start: Message | None = None
        self.body = bytearray()

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            by_name = dict((k.lower(), v) for k, v in message.get("headers", []))
            if message["status"] == 200 and by_name.get(b"content-type", b"").startswith(b"application/json"):
                self.start = message
                return
        elif message["type"] == "http.response.body" and self.start is not None:
            self.body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = splice.fill(bytes(self.body), self.pending) if self.pending else bytes(self.body)
            kind = b"application/json"
            if self.sse:
                body, kind = b"event: message\r\ndata: " + body + b"\r\n\r\n", b"text/event-stream"
            headers = [
                (k, v)
                for k, v in self.start.get("headers", [])
                if k.lower() not in (b"content-type", b"content-length")
            ]
            headers.append((b"content-type", kind))
            if self.sse:
                headers.append((b"cache-control", b"no-cache, no-transform"))
            headers.append((b"content-length", str(len(body)).encode()))
            await self.send({**self.start, "headers": headers})
            await self.send({"type": "http.response.body", "body": body})
            self.start, self.answered = None, True
            return
        elif message["type"] == "http.response.body":
            if self.pending:
                message = {**message, "body": splice.fill(message.get("body", b""), self.pending)}
            self.answered = not message.get("more_body", False)
        await self.send(message)


def build_app(django_app: ASGIApp | None = None, cfg: EcoConfig | None = None, registry: Registry | None = None) -> EcoHttpApp:
    """The ASGI application. `eco_service.asgi` calls it with Django's app and the configuration
    from the environment (for `uvicorn eco_service.asgi:application`)."""
    if cfg is None:
        cfg = get_config()
        if not cfg.is_http:
            # `uvicorn eco_service.asgi:application` has no --transport flag: being here means
            # HTTP, and the process-wide configuration (read by the upstream client) must agree.
            cfg = cfg.model_copy(update={"server": cfg.server.model_copy(update={"transport": "http"})})
            set_config(cfg)
    return EcoHttpApp(django_app, cfg, registry)


def route_uvicorn_logs() -> None:
    """uvicorn's log lines (its access log included) through this service's handlers: stderr and
    the redacting filter (settings.LOGGING), so a token in a request's path or query is masked.
    The uvicorn command configures its own handlers (stdout, no filter) before it imports the app;
    they are removed here and the lines left to propagate. An access log turned off
    (--no-access-log: no handlers, not propagating) stays off."""
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logger = logging.getLogger(name)
        if name == "uvicorn.access" and not logger.handlers and not logger.propagate:
            continue
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True


def serve_http(cfg: EcoConfig) -> None:
    import uvicorn
    from django.core.asgi import get_asgi_application

    from mcp_gateway.http_protocol import TimedHttpProtocol

    app = build_app(django_app=get_asgi_application(), cfg=cfg)
    forwarded = os.environ.get("FORWARDED_ALLOW_IPS", "").strip()
    # The start-up line keeps the gateway's logger name, the same as stdio's.
    logging.getLogger("eco.gateway").info("eco-mcp %s serving MCP on http://%s:%s/mcp", __version__, cfg.server.bind_address, cfg.server.bind_port)
    uvicorn.run(
        app,
        host=cfg.server.bind_address,
        port=cfg.server.bind_port,
        log_level=cfg.server.log_level,
        # Uvicorn's own logging config sends access lines to stdout; ours sends everything to
        # stderr through the redacting filter.
        log_config=None,
        lifespan="on",
        # X-Forwarded-For/-Proto are believed only from the proxies FORWARDED_ALLOW_IPS names (the
        # variable uvicorn's own command reads); unset or empty, from nobody.
        proxy_headers=bool(forwarded),
        forwarded_allow_ips=forwarded or None,
        server_header=False,
        # Request headers within server.header_read_timeout_s (bodies: the app's own deadline).
        http=TimedHttpProtocol,
    )
