"""The stdio transport: one MCP session over stdin/stdout for a desktop agent. stdout carries only
MCP framing; every word for people goes to stderr.

A desktop agent spawns the server and waits for its tool list, so the list goes out first: the
command starts without Django's apps (run_command, from manage.py), the list comes from the
listing kept in the data folder, and the rest (apps, migrations) is done in a worker thread once
the first answers are out; requests that need it wait for it (_Setup, _gate)."""

from __future__ import annotations

import dataclasses
import gc
import importlib.util
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from eco_core import __version__
from eco_core.redact import scrub

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.context import CallNext, ServerRequestContext
    from mcp.shared.message import SessionMessage

    from eco_core.config import EcoConfig

# The SDK (a large share of start-up's imports) is imported where it is used, not with this module: manage.py imports
# it for every `eco_mcp_stdio`, and --version, --print-config and --check never serve.

log = logging.getLogger("eco.gateway")

# Requests answered before the set-up finishes: none reads the database or a model (the tool list
# comes from the kept listing). initialize is the SDK runner's own and never reaches the gate.
WITHOUT_SETUP = frozenset({"ping", "tools/list", "prompts/list", "server/discover"})
# The set-up starts this long after the answers asked so far went to the SDK's writer, which then
# serializes and flushes them (the write waits for the interpreter the set-up would hold).
AFTER_ANSWERS_S = 0.05
# With no input at all this long after start, the set-up begins anyway: a client that connects and
# waits finds the database ready.
IDLE_BEFORE_SETUP_S = 1.0
# How often a request tries the set-up again while the database is unreachable.
RETRY_AFTER_OUTAGE_S = 1.0


def _unreadable_line_error(exc: Exception) -> SessionMessage:
    import mcp_types as types
    from mcp.shared.message import SessionMessage
    from mcp_types import INVALID_REQUEST, PARSE_ERROR
    from pydantic import ValidationError

    invalid_json = isinstance(exc, ValidationError) and any(e["type"] == "json_invalid" for e in exc.errors())
    code, message = (PARSE_ERROR, "Parse error") if invalid_json else (INVALID_REQUEST, "Invalid Request")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)))


class _Setup:
    """What only calls need, done once, in a worker thread, when first due: Django's apps (when the
    command started without them), the database's migrations, the resources module. Due when a
    request needs it, shortly after the answers asked so far are out, after IDLE_BEFORE_SETUP_S
    without input, or at the end of input: so the first answers (initialize, tools/list) do not
    share the interpreter with it.

    A database that cannot be reached is an outage, not a failure: requests go on (what needs the
    catalog answers catalog_unavailable, mcp_gateway.calls) and the set-up is tried again by a
    request at most once every RETRY_AFTER_OUTAGE_S, so the server recovers without a restart."""

    def __init__(self, work: Callable[[], None]) -> None:
        self._work = work
        self.due = anyio.Event()
        self.done = anyio.Event()
        self.failure: str | None = None
        self.outage = False
        self._tried_at = 0.0
        self._lock = anyio.Lock()

    async def _attempt(self) -> None:
        from catalog.outage import DATABASE_DOWN  # only django.db: safe before the apps load

        self._tried_at = time.monotonic()
        try:
            await anyio.to_thread.run_sync(self._work)
        except DATABASE_DOWN as exc:
            if not self.outage:
                log.warning("the database is unreachable (%s): calls that need the catalog answer "
                            "catalog_unavailable until it is back", scrub(f"{type(exc).__name__}: {exc}"))
            self.outage = True
        except Exception as exc:
            self.failure = scrub(f"{type(exc).__name__}: {exc}")
            log.exception("the stdio server could not finish starting; calls will answer an error")
        else:
            if self.outage:
                log.info("the database answers again; the stdio server finished starting")
            self.outage = False

    async def run(self) -> None:
        await self.due.wait()
        try:
            async with self._lock:
                await self._attempt()
        finally:
            self.done.set()

    async def ready(self) -> None:
        self.due.set()
        await self.done.wait()
        if self.outage and time.monotonic() - self._tried_at >= RETRY_AFTER_OUTAGE_S:
            async with self._lock:
                if self.outage and time.monotonic() - self._tried_at >= RETRY_AFTER_OUTAGE_S:
                    await self._attempt()
        if self.failure is not None:
            from mcp.shared.exceptions import MCPError
            from mcp_types import INTERNAL_ERROR

            raise MCPError(code=INTERNAL_ERROR, message=f"the server could not finish starting: {self.failure}",
                           data={"code": "internal_error", "hint": "the server's stderr has the details"})


def _gate(server: Server[Any], setup: _Setup) -> Any:
    """Server middleware: a request the server handles, other than WITHOUT_SETUP, waits for the set-up
    (and gets its failure as the error); notifications and unknown methods pass straight on."""

    async def gate(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if ctx.method not in WITHOUT_SETUP and server.get_request_handler(ctx.method) is not None:
            await setup.ready()
        return await call_next(ctx)

    return gate


def _served_in_32022(item: SessionMessage) -> SessionMessage:
    """The SDK's -32022 names only the modern revision as supported; it names every version
    served, as server/discover does. A version this server serves, but only in the handshake era
    (a modern envelope or a late initialize naming 2025-06-18), is not called unsupported while the
    list names it: the list is then the versions a request envelope may name, and the message
    says where the named one is served."""
    from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    from mcp_gateway.server import served_versions

    error = item.message.error  # type: ignore[union-attr]
    if error.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(error.data, dict):
        return item
    requested = error.data.get("requested")
    update: dict[str, Any] = {"data": {**error.data, "supported": served_versions()}}
    if requested in served_versions() and requested not in MODERN_PROTOCOL_VERSIONS:
        modern = list(MODERN_PROTOCOL_VERSIONS)
        update = {"message": f"Protocol version {requested} is served only on a connection that opens with "
                             f"initialize (the handshake era); in a request envelope name {', '.join(modern)}",
                  "data": {**error.data, "supported": modern,
                           "handshakeVersions": [v for v in served_versions() if v not in modern]}}
    message = item.message.model_copy(update={"error": error.model_copy(update=update)})
    return dataclasses.replace(item, message=message)


class _AnsweredWriter:
    """The server's write side, noting each request it answers, so the end of input can wait
    for the calls still running, and so the set-up can start once nothing is waiting for an answer."""

    def __init__(self, inner: Any, on_idle: Callable[[], None]) -> None:
        self.inner = inner
        self.on_idle = on_idle
        self.pending: set[Any] = set()
        self.idle = anyio.Event()
        self.idle.set()

    def asked(self, rid: Any) -> None:
        self.pending.add(rid)
        self.idle = anyio.Event()

    async def send(self, item: SessionMessage) -> None:
        import mcp_types as types

        if isinstance(item.message, types.JSONRPCError):
            item = _served_in_32022(item)
        await self.inner.send(item)
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self.pending.discard(item.message.id)
            if not self.pending:
                self.idle.set()
                self.on_idle()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _AnsweredWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def _serve_stream(server: Server[Any], read_stream: Any, write_stream: Any, setup: _Setup,
                        warm: Callable[[], Awaitable[None]] | None = None) -> None:
    """Serve one stream pair; a line that is not a JSON-RPC message gets the JSON-RPC error with
    a null id (the SDK would drop it silently, leaving the client waiting). When the input ends,
    the server's input stays open until every request read so far is answered: the SDK cancels
    what is still running when its input closes, and a client that sends a tools/call and then
    closes stdin (a script, `echo ... | eco_mcp_stdio`) would get no answer. The set-up runs
    during the session (see _Setup), and by its end at the latest: the database is prepared on
    every run, as when it was done before serving."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    answered = anyio.Event()
    writer = _AnsweredWriter(write_stream, answered.set)
    received = anyio.Event()

    async def relay() -> None:
        async with send:
            async for item in read_stream:
                received.set()
                if isinstance(item, Exception):
                    await write_stream.send(_unreadable_line_error(item))
                    continue
                if isinstance(item.message, types.JSONRPCRequest):
                    writer.asked(item.message.id)
                await send.send(item)
            setup.due.set()
            await writer.idle.wait()

    async def due_after_answers() -> None:
        await answered.wait()
        await anyio.sleep(AFTER_ANSWERS_S)
        setup.due.set()

    async def due_when_silent() -> None:
        await anyio.sleep(IDLE_BEFORE_SETUP_S)
        if not received.is_set():
            setup.due.set()

    async def warm_after_setup() -> None:
        # Once the set-up is done (after the first answers went out), the catalogs a search
        # needs are built in the background: the first search then finds them, instead of
        # waiting seconds for the build. A failure here is the first search's to report.
        await setup.done.wait()
        if warm is None or setup.failure is not None or setup.outage:
            return
        try:
            await warm()
        except Exception as exc:
            log.info("the background catalog build at start did not finish (%s); the first call builds them",
                     scrub(f"{type(exc).__name__}: {exc}"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(setup.run)
        tg.start_soon(warm_after_setup)
        tg.start_soon(due_after_answers)
        tg.start_soon(due_when_silent)
        tg.start_soon(relay)
        await server.run(receive, writer, server.create_initialization_options())
        setup.due.set()
        await setup.done.wait()
        tg.cancel_scope.cancel()


def _import_server_module() -> Any:
    """mcp_gateway.server, importable before Django's apps are loaded: it imports
    mcp_gateway.resources, whose own imports define catalog models, so that one module is made
    lazy (importlib's LazyLoader runs it at its first attribute use: in a resources/* or
    completion request, which waits for the set-up, or in the set-up itself)."""
    from django.apps import apps

    name = "mcp_gateway.resources"
    if not apps.ready and name not in sys.modules:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.loader is not None
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        import mcp_gateway

        mcp_gateway.resources = module  # type: ignore[attr-defined]
    from mcp_gateway import server

    return server


async def _close_upstream() -> None:
    """At the end of the run, while the event loop still runs: the upstream client's open
    connections (the download wire's session among them) are closed, not left to the collector
    at exit, where aiohttp logs each as an error on the agent's stderr. Found through
    sys.modules, not imported: a run that never reached the upstream has no client to close, and
    importing one (or mcp_gateway.ports, which loads catalog models) here could even fail when
    the apps were never loaded."""
    client = sys.modules.get("upstream.client")
    if client is not None:
        await client.close_clients()


def _warmer(cfg: EcoConfig) -> Callable[[], Awaitable[None]] | None:
    """The background build at start, unless --no-prewarm (cache.prewarm false) leaves it to the
    first call. Not the HTTP prewarm: no readiness waits for it, and no subtree walk follows."""
    if cfg.cache.prewarm is False:
        return None

    async def warm() -> None:
        from mcp_gateway import ports  # catalog models: importable once the set-up loaded the apps

        await ports.warm_index(cfg)

    return warm


def serve_stdio(cfg: EcoConfig, *, load_apps: Callable[[], None], finish_setup: Callable[[], None]) -> None:
    """Serve until stdin ends. The tool list comes from the listing kept in the data folder when
    the code is unchanged (no tool module import); Django's apps, when not loaded yet, and the
    database are made ready while the first answers go out (see _Setup). A set-up that fails is
    logged, answered as an error to every request that needed it, and ends the run with status 1.
    How the apps are loaded and the database prepared is the service's (eco_service.stdio_start),
    handed in: the gateway does not reach up into the layer that runs it."""
    from django.conf import settings
    from django.core.exceptions import AppRegistryNotReady

    from mcp_gateway.registry import use_kept_registry

    server_module = _import_server_module()
    folder = Path(settings.DATA_DIR) / "cache"
    try:
        registry = use_kept_registry(folder)
    except AppRegistryNotReady:
        # No listing kept for this code yet: listing the tools imports their modules, and with them
        # the models, so the apps load now (the listing written here serves the next start).
        load_apps()
        registry = use_kept_registry(folder)
    server = server_module.build_server(cfg, registry)
    setup = _Setup(finish_setup)
    warm = _warmer(cfg)
    server.middleware.append(_gate(server, setup))

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        try:
            async with stdio_server() as (read_stream, write_stream):
                await _serve_stream(server, read_stream, write_stream, setup, warm)
        finally:
            await _close_upstream()

    # What start-up made lives as long as the process: out of the collector's passes for good
    # (with it the little cyclic garbage made while eco_service.stdio_start had the collector off,
    # a few hundred KB), then the collector on for what serving makes.
    gc.freeze()
    gc.enable()
    log.info("eco-mcp %s serving MCP on stdio", __version__)
    anyio.run(run)
    if setup.failure is not None:
        raise SystemExit(1)
