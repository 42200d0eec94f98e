"""A redis-server of a test's own, on a free loopback port, that the test kills and starts again.

`OwnRedis().start()` runs `redis-server` with no persistence (a restarted server is empty, as
after a crash of a cache-only Redis); `kill()` is SIGKILL (no goodbye to the clients, whose
pooled connections go stale); `restart()` starts a new server on the same port; `pause()` and
`resume()` stop and continue it (a hung server); `keys(pattern)` reads what the service wrote. Without the program the test skips loudly (fails under CI).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from typing import Any

from tests.conftest import _missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OwnRedis:
    def __init__(self) -> None:
        program = shutil.which("redis-server")
        if program is None:
            _missing("the redis-server program (apt-get install redis-server)")
        self.program = program or "redis-server"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> OwnRedis:
        assert self.proc is None, "already running"
        self.proc = subprocess.Popen(
            [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while True:
            try:
                if self.client().ping():
                    return self
            except OSError:
                pass
            except Exception as exc:  # redis.exceptions.ConnectionError until it listens
                if "Connection" not in type(exc).__name__ and "Busy" not in type(exc).__name__:
                    raise
            assert self.proc.poll() is None, f"redis-server exited with {self.proc.returncode}"
            assert time.monotonic() < deadline, "redis-server did not answer in 15 s"
            time.sleep(0.02)

    def pause(self) -> None:
        """SIGSTOP: connections are still accepted by the kernel, but nothing is answered."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None

    def restart(self) -> OwnRedis:
        self.kill()
        return self.start()

    def client(self) -> Any:
        import redis

        return redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=1)

    def keys(self, pattern: str = "*") -> list[str]:
        with self.client() as conn:
            return sorted(k.decode() for k in conn.scan_iter(match=pattern, count=1000))
