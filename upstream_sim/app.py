"""The ASGI app: a thin outer layer (control routes, request log, faults, rate limits, NEON
headers) around a Starlette router with the REST, GraphQL and storage routes."""

from __future__ import annotations

import asyncio
import json
import socket
from urllib.parse import parse_qsl

from starlette.applications import Starlette

from . import gql, rest, storage
from .faults import Fault
from .reqlog import RequestRecord
from .state import SimState
from .tokens import check_token

JSON_CT = (b"content-type", b"application/json")
# the header names NEON's API answers carry (headers/example_200.headers), minus date/server
COMMON_HEADERS = [(b"access-control-allow-origin", b"*"), (b"vary", b"Accept-Encoding"), (b"vary", b"Origin"),
                  (b"vary", b"Access-Control-Request-Method"), (b"vary", b"Access-Control-Request-Headers"),
                  (b"x-xss-protection", b"1"), (b"via", b"1.1 google"),
                  (b"strict-transport-security", b"max-age=31536000; includeSubdomains; preload;"),
                  (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"SAMEORIGIN")]
CONTROL = "/_sim/"


async def _send_simple(send, status: int, body: bytes, ctype: bytes = b"application/json",
                       extra: list | None = None) -> None:
    headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode())] + (extra or [])
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _no_delay(transport) -> None:
    """Answers go out as headers then body; without TCP_NODELAY, Nagle's algorithm and the
    client's delayed ACK add ~40 ms to every small answer on a keep-alive connection."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


def _rate_headers(d) -> list:
    return [(b"x-ratelimit-limit", str(d.limit).encode()), (b"x-ratelimit-remaining", str(d.remaining).encode()),
            (b"x-ratelimit-reset", str(d.reset).encode())]


class SimApp:
    def __init__(self, sim: SimState):
        self.sim = sim
        self.router = Starlette(routes=rest.routes() + gql.routes() + storage.routes())
        self.router.state.sim = sim

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.router(scope, receive, send)
        path = scope["path"]
        if path.startswith(CONTROL):
            return await self.control(scope, receive, send)
        # the real transport is needed to simulate resets; the wrapped `send` below hides it
        transport = scope["sim.transport"] = getattr(getattr(send, "__self__", None), "transport", None)
        _no_delay(transport)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        host = headers.get("host", "")
        server = scope.get("server") or ("", 0)
        rec = RequestRecord(scope["method"], path, query, headers, host, 0, server[1] or 0)
        self.sim.requests.add(rec)
        is_storage = path.startswith("/storage/")

        extra: list = [] if is_storage else list(COMMON_HEADERS)

        async def send_wrapped(msg):
            if msg["type"] == "http.response.start":
                rec.status = msg["status"]
                if extra:
                    msg = dict(msg, headers=list(msg.get("headers", [])) + extra)
            await send(msg)

        fault = self.sim.faults.take(path, {"status", "latency", "hang", "reset", "malformed", "graphql_outage",
                                            "rate_limit", "redirect"})
        if fault is not None:
            handled = await self.apply_fault(fault, scope, send_wrapped)
            if handled:
                return
        if not is_storage:
            token = headers.get("x-api-token") or query.get("apiToken")
            status = check_token(token, self.sim.seed, self.sim.now())
            scope["sim.token"] = status
            key = f"tok:{token}" if status == "valid" else f"ip:{(scope.get('client') or ('?',))[0]}"
            decision = self.sim.limiter.take(key, status == "valid")
            extra += _rate_headers(decision)
            if not decision.allowed:
                body = json.dumps({"message": "API rate limit exceeded"}).encode()
                return await _send_simple(send_wrapped, 429, body,
                                          extra=[(b"retryafter", str(decision.retry_after).encode())])
        await self.router(scope, receive, send_wrapped)

    async def apply_fault(self, fault: Fault, scope, send) -> bool:
        """True when the fault produced the whole answer (or none at all)."""
        p = fault.params
        kind = fault.kind
        if kind == "latency":
            await asyncio.sleep(float(p.get("delay_s", 1.0)))
            return False
        if kind == "hang":
            deadline = asyncio.get_running_loop().time() + float(p.get("hold_s", 600))
            # poll instead of one long sleep, so stop() or reset() releases held requests
            epoch = self.sim.epoch
            while (asyncio.get_running_loop().time() < deadline and not self.sim.shutdown.is_set()
                   and self.sim.epoch == epoch):
                await asyncio.sleep(0.05)
            if scope.get("sim.transport") is not None:
                storage.abort_connection(scope)
            return True
        if kind == "reset":
            storage.abort_connection(scope)
            return True
        if kind == "malformed":
            await _send_simple(send, 200, b'{"data": {"productCode": "DP1.0', )
            return True
        if kind == "graphql_outage":
            await _send_simple(send, 502, b"<html>502</html>", b"text/html")
            return True
        if kind == "rate_limit":
            retry = str(p.get("retry_after", 1)).encode()
            await _send_simple(send, 429, json.dumps({"message": "API rate limit exceeded"}).encode(),
                               extra=[(b"x-ratelimit-limit", b"200"), (b"x-ratelimit-remaining", b"0"),
                                      (b"x-ratelimit-reset", retry), (b"retryafter", retry)])
            return True
        if kind == "redirect":
            await _send_simple(send, 302, b"", b"text/plain", [(b"location", str(p["target"]).encode())])
            return True
        if kind == "status":
            status = int(p.get("status", 503))
            body = p.get("body")
            if body is None:
                await _send_simple(send, status, f"<html>{status}</html>".encode(), b"text/html")
            else:
                raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                await _send_simple(send, status, raw, b"application/json" if not isinstance(body, str)
                                   else b"text/plain")
            return True
        return False

    # ------------------------------------------------------------------ control
    async def control(self, scope, receive, send):
        sim = self.sim
        path, method = scope["path"], scope["method"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break

        def reply(obj, status=200):
            return _send_simple(send, status, json.dumps(obj).encode())

        if path == "/_sim/faults" and method == "POST":
            spec = json.loads(body or b"{}")
            params = dict(spec.pop("params", {}) or {})
            kind = spec.pop("kind")
            route = spec.pop("route", "") or ""
            count = spec.pop("count", None)
            params.update(spec)
            try:
                f = sim.faults.add(kind=kind, route=route, count=count, **params)
            except ValueError as exc:
                return await reply({"error": str(exc)}, 400)
            return await reply(f.to_json(), 201)
        if path == "/_sim/faults" and method == "DELETE":
            sim.faults.clear()
            return await reply({"cleared": True})
        if path == "/_sim/faults" and method == "GET":
            return await reply([f.to_json() for f in sim.faults.list()])
        if path == "/_sim/requests" and method == "GET":
            recs = sim.requests.matching(query["route"]) if query.get("route") else sim.requests.snapshot()
            return await reply({"count": len(recs), "requests": [r.to_json() for r in recs]})
        if path == "/_sim/requests" and method == "DELETE":
            sim.requests.clear()
            return await reply({"cleared": True})
        if path == "/_sim/reset" and method == "POST":
            sim.reset()
            return await reply({"reset": True})
        if path == "/_sim/token" and method == "GET":
            return await reply({"token": sim.issue_token(float(query.get("exp_s", 3600)))})
        if path == "/_sim/clock" and method == "POST":
            sim.clock_offset += float(json.loads(body or b"{}").get("advance_s", 0))
            return await reply({"clock_offset": sim.clock_offset})
        return await reply({"error": "unknown control route"}, 404)


def build_app(sim: SimState) -> SimApp:
    return SimApp(sim)
