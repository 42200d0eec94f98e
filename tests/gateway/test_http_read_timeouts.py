"""Request headers and bodies have read deadlines (server.header_read_timeout_s,
server.body_read_timeout_s), over raw sockets against a real uvicorn server running the service's
HTTP protocol: a client that dribbles its headers or its body gets 408 and its connection is
closed; an idle connection is closed; a client that leaves half-way through its body costs one
log line, not a traceback. The bounds below only catch a connection held without limit."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any

import httpx
import pytest

from mcp_gateway.http_app import build_app
from mcp_gateway.http_protocol import TimedHttpProtocol
from tests.gateway.conftest import make_cfg, run_http

TIMEOUT_S = 1.0
HELD_AT_MOST_S = 15.0  # far above the deadline: a connection held past this was not cut


@pytest.fixture
def timed_server(fake_catalog: dict[str, Any], active_config: Any) -> Iterator[Any]:
    cfg = active_config(make_cfg(server__header_read_timeout_s=TIMEOUT_S, server__body_read_timeout_s=TIMEOUT_S))
    with run_http(build_app(cfg=cfg), http=TimedHttpProtocol) as srv:
        yield srv


@contextmanager
def _connect(srv: Any) -> Iterator[socket.socket]:
    with closing(socket.create_connection(("127.0.0.1", srv.port), timeout=HELD_AT_MOST_S)) as sock:
        yield sock


def _dribble_until_answered(sock: socket.socket, first: bytes, drip: bytes) -> tuple[bytes, float]:
    """Sends `first`, then `drip` every 0.2 s, until the server answers and closes (or the bound
    passes); everything it sent, and how long the connection was held."""
    sock.sendall(first)
    sock.settimeout(0.2)
    started, got = time.monotonic(), b""
    while time.monotonic() - started < HELD_AT_MOST_S:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            try:
                sock.sendall(drip)
            except OSError:
                break  # closed on us while dripping
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        got += chunk
    return got, time.monotonic() - started


def _head(srv: Any, method: str = "POST", path: str = "/mcp", length: int = 500) -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n").encode()


def test_a_dribbled_body_is_answered_408_and_the_connection_closed(timed_server):
    with _connect(timed_server) as sock:
        got, held = _dribble_until_answered(sock, _head(timed_server) + b'{"jsonrpc": "2.0", ', b" ")
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert b"connection: close" in got.lower() and b"request body not received within 1 s" in got
    assert held < HELD_AT_MOST_S, "the connection was held open"


def test_dribbled_headers_are_answered_408_and_the_connection_closed(timed_server):
    with _connect(timed_server) as sock:
        got, held = _dribble_until_answered(
            sock, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{timed_server.port}\r\n".encode(), b"X-Slow: 1\r\n")
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert held < HELD_AT_MOST_S


def test_a_connection_that_never_sends_a_request_is_closed(timed_server):
    with _connect(timed_server) as sock:
        started = time.monotonic()
        assert sock.recv(65536) == b""  # closed, without a reply: it never asked for anything
    assert time.monotonic() - started < HELD_AT_MOST_S


def test_requests_sent_in_time_are_served_before_and_after_a_pause_longer_than_the_header_deadline(timed_server):
    with httpx.Client(base_url=timed_server.base, timeout=30) as http:
        first = http.get("/healthz")
        time.sleep(TIMEOUT_S * 1.5)  # the idle connection is closed; the client opens another
        second = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                           headers={"Accept": "application/json, text/event-stream"})
    assert first.status_code == 200 and second.status_code != 408


def test_a_dribbled_body_to_a_django_route_is_answered_408(fake_catalog, active_config):
    from django.core.asgi import get_asgi_application

    cfg = active_config(make_cfg(server__header_read_timeout_s=30, server__body_read_timeout_s=TIMEOUT_S))
    with run_http(build_app(django_app=get_asgi_application(), cfg=cfg), http=TimedHttpProtocol) as srv:
        with _connect(srv) as sock:
            got, held = _dribble_until_answered(sock, _head(srv, path="/admin/login/"), b"x")
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert held < HELD_AT_MOST_S


def test_a_client_that_leaves_half_way_through_its_body_costs_one_log_line(timed_server, caplog):
    caplog.set_level(logging.INFO)
    with _connect(timed_server) as sock:
        sock.sendall(_head(timed_server) + b'{"jsonrpc": "2.0", "id": 1, ')
        time.sleep(0.3)
    deadline = time.monotonic() + HELD_AT_MOST_S
    while time.monotonic() < deadline and not any("went away" in r.getMessage() for r in caplog.records):
        time.sleep(0.05)
    time.sleep(0.3)  # anything else it would log about the request comes with it
    lines = [r for r in caplog.records if r.name.startswith(("eco", "mcp", "uvicorn")) and r.levelno >= logging.INFO]
    assert [r.getMessage() for r in lines] == ["POST /mcp: the client went away before its request body arrived "
                                               "(28 bytes read)"]
    assert all(r.exc_info is None for r in caplog.records)
