"""A PostgreSQL server of a test's own, on a free loopback port, that the test restarts: the
machine's shared server is never touched (other tests run on it meanwhile).

`OwnPostgres().start()` runs initdb in a temporary folder owned by the `postgres` user (initdb
refuses to run as root: it is run through `runuser` then), trust authentication on loopback, and
`pg_ctl start` on the port with the socket in that folder; `create_database(name)` makes a
database; `url(name)` is its URL; `restart()` is `pg_ctl restart -m fast` (every connection is cut,
as a real restart does); `stop()` ends it and removes the folder. Without the binaries the test
skips loudly (fails under CI).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.conftest import _missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class OwnPostgres:
    def __init__(self) -> None:
        bin_dir = _bin_dir()
        if bin_dir is None:
            _missing("the PostgreSQL server programs (initdb, pg_ctl: apt-get install postgresql)")
        self.bin = bin_dir or Path("/usr/lib/postgresql/bin")
        self.as_root = os.geteuid() == 0
        if self.as_root and shutil.which("runuser") is None:
            _missing("runuser (to run initdb as the postgres user)")
        self.port = _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="eco-own-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.running = False

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}\n{self._log_tail()}"
        return out

    def _log_tail(self) -> str:
        try:
            return self.log.read_text()[-3000:]
        except OSError:
            return ""

    def start(self) -> OwnPostgres:
        if self.as_root:
            shutil.chown(self.dir, "postgres", "postgres")
        if not self.data.exists():
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o",
                  f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        self.running = True
        self.wait_ready()
        return self

    def wait_ready(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                assert time.monotonic() < deadline, f"PostgreSQL did not listen in {seconds} s:\n{self._log_tail()}"
                time.sleep(0.05)

    def restart(self) -> None:
        """A fast restart: the server ends every session at once (as a crash-restart or an
        operator's restart does) and comes back on the same port."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-m", "fast", "restart", "-o",
                  f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off")
        self.wait_ready()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.running:
            try:
                self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-m", "immediate", "stop")
            finally:
                self.running = False
        shutil.rmtree(self.dir, ignore_errors=True)
