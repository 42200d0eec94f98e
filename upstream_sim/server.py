"""SimServer: the simulator on real sockets, in a background thread (tests) or blocking (eco_sim).

Two listening sockets share one app: the API on http://127.0.0.1:PORT (REST under /api/v0,
GraphQL at /graphql) and the signed-URL storage on a second port, addressed by the other
host name `localhost` (http://localhost:PORT2/storage/neon-publication). A client can thus
tell upstream from storage by host and port, and tests can prove a token never went to
storage (sim.requests records .host and .port for every request).
"""

from __future__ import annotations

import importlib.util
import socket
import threading
import time

import uvicorn

from .app import build_app
from .ratelimit import Limits
from .state import SimState

HTTP_IMPL = "httptools" if importlib.util.find_spec("httptools") else "h11"


class PortUnavailable(OSError):
    """A port the simulator was asked to listen on cannot be had (taken, or the host not local)."""

    def __init__(self, role: str, host: str, port: int, cause: OSError):
        super().__init__(cause.errno, f"{role} port {host}:{port}: {cause.strerror or cause}")
        self.role, self.host, self.port, self.cause = role, host, port, cause


def _listen(host: str, port: int, role: str) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(1024)
    except OSError as exc:
        s.close()
        raise PortUnavailable(role, host, port, exc) from exc
    s.setblocking(False)
    return s


class SimServer:
    def __init__(self, seed: int = 1, port: int = 0, storage_port: int = 0, host: str = "127.0.0.1",
                 rate_limit_scale: float = 1.0, anon_burst: int | None = None, anon_rps: float | None = None,
                 token_burst: int | None = None, token_rps: float | None = None):
        limits = Limits().scaled(rate_limit_scale) if rate_limit_scale != 1.0 else Limits()
        for name, value in (("anon_burst", anon_burst), ("anon_rps", anon_rps), ("token_burst", token_burst),
                            ("token_rps", token_rps)):
            if value is not None:
                setattr(limits, name, value)
        self.state = SimState(seed, limits)
        self.seed = seed
        self.host = host
        self._want = (port, storage_port)
        self.port = 0
        self.storage_port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sockets: list[socket.socket] = []

    # -------------------------------------------------------------- public API
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/api/v0"

    @property
    def graphql_url(self) -> str:
        return f"http://{self.host}:{self.port}/graphql"

    @property
    def control_url(self) -> str:
        return f"http://{self.host}:{self.port}/_sim"

    @property
    def storage_base(self) -> str:
        return f"http://localhost:{self.storage_port}/storage/neon-publication"

    @property
    def faults(self):
        return self.state.faults

    @property
    def requests(self):
        return self.state.requests

    @property
    def world(self):
        return self.state.world

    def issue_token(self, exp_s: float = 3600) -> str:
        return self.state.issue_token(exp_s)

    def reset(self) -> None:
        self.state.reset()

    def advance_clock(self, seconds: float) -> None:
        """Move the simulator's clock (token expiry, signed-URL expiry) forward."""
        self.state.clock_offset += seconds

    # -------------------------------------------------------------- lifecycle
    def _bind(self) -> None:
        api = _listen(self.host, self._want[0], "API")
        try:
            store = _listen(self.host, self._want[1], "storage")
        except PortUnavailable:
            api.close()
            raise
        self._sockets = [api, store]
        self.port = api.getsockname()[1]
        self.storage_port = store.getsockname()[1]
        self.state.storage_base = self.storage_base

    def _config(self) -> uvicorn.Config:
        return uvicorn.Config(build_app(self.state), loop="asyncio", http=HTTP_IMPL, lifespan="off",
                              log_level="warning", access_log=False, timeout_graceful_shutdown=1,
                              timeout_keep_alive=30)

    def start(self) -> SimServer:
        self._bind()
        self._server = uvicorn.Server(self._config())
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": self._sockets},
                                        name=f"eco-sim-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("simulator did not start")
            time.sleep(0.01)
        return self

    def serve_forever(self) -> None:
        """Blocking run in the calling thread (used by `manage.py eco_sim`)."""
        self._bind()
        self._server = uvicorn.Server(self._config())
        self._server.run(sockets=self._sockets)

    def stop(self) -> None:
        self.state.shutdown.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        for s in self._sockets:
            s.close()

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
