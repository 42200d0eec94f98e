"""Engine workers: the processes a caller's SQL runs in, never the serving process.

    future = engine.start(folder, sql, limit, limits, budget=room, settings=engine.Settings(...))
    result = future.result()            a query.Result; cancel=threading.Event() stops it from outside

A serving process (HTTP or stdio) keeps a pool of up to tables.engine_workers worker processes,
started on the first query (`python -m tables.engine`) and kept warm: each keeps the DuckDB
engines of the datasets it queried open (tables.query's memo), and the pool hands a query to an
idle worker that has its dataset open when there is one. A worker runs one query at a time under
operating-system limits it sets on itself: RLIMIT_DATA for memory (tables.engine_memory_mb: heap
and private mappings, what DuckDB and Python allocate; RLIMIT_AS would count the ~1 GB of address
space DuckDB and pyarrow reserve before any query) and, per query, RLIMIT_CPU (tables.query_cpu_s,
counted from the CPU the worker used so far). The worker interrupts its own query at the wall-time
limit and answers; one that has not answered GRACE_S later is killed by the serving process.

A worker that dies is replaced on demand, and the caller is told why:
    SIGXCPU (its CPU limit)                  query_too_large naming tables.query_cpu_s
    killed here past the wall time           query_too_large naming tables.query_timeout_s
    out of memory (MEMORY_EXIT)              query_too_large naming tables.engine_memory_mb
    anything else (kill -9, the OOM killer)  upstream_unavailable, retryable (reason engine_stopped)
A query that finds every worker busy until its deadline is rate_limited, retryable (engine_busy).
A worker left holding more than RETIRE_FRACTION of its memory limit after a query exits once it has
answered, so the next query starts from a small process.

Frames between the two sides are JSON behind a 4-byte length, at most MAX_FRAME bytes: a worker
runs callers' SQL, so the serving process takes only data from it (no pickle), and only as much as
the result budget lets the worker send (the rows stop at the budget in the worker).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import dataclasses
import json
import math
import os
import queue
import re
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eco_core.errors import EcoError
from eco_core.memo import memos
from tables.layout import DATASET_JSON

if TYPE_CHECKING:
    from tables import query

# The directory `tables` is imported from: the worker imports the same code.
CODE_ROOT = Path(__file__).resolve().parents[1]
MAX_FRAME = 16 << 20
# Seconds a new worker has to import its engine and say it is ready.
START_S = 60.0
# Seconds past the query's wall-time limit before a worker that has not answered is killed.
GRACE_S = 1.0
# Below this much time left once a worker is free, the query is not started (busy).
MIN_RUN_S = 0.2
# How often a waiting call looks whether its caller went away.
POLL_S = 0.05
# Exit status of a worker whose Python ran out of memory outside a query's own handling.
MEMORY_EXIT = 3
RETIRE_FRACTION = 0.5
# Datasets a worker is remembered to have open (its engine memo keeps up to 8).
WARM_MAX = 8


@dataclass(frozen=True)
class Settings:
    """The pool's own settings (a change makes a new pool); per-query limits travel with each query."""

    workers: int
    memory_mb: int


# ----------------------------------------------------------------------------- framing
def _frame(msg: dict[str, Any]) -> bytes:
    data = json.dumps(msg, separators=(",", ":"), ensure_ascii=False, default=str).encode()
    return len(data).to_bytes(4, "big") + data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


# ----------------------------------------------------------------------------- serving side
class _Worker:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.pid = proc.pid
        self._in = proc.stdin.fileno()
        self._out = proc.stdout.fileno()
        self._buf = bytearray()
        self.warm: list[str] = []
        self.killed = False
        self.doomed = False  # ends once it answers (a dataset it has open is being deleted)

    def send(self, msg: dict[str, Any]) -> None:
        _write_all(self._in, _frame(msg))

    def receive(self, timeout: float) -> dict[str, Any]:
        """The next frame; TimeoutError when none came within `timeout`, EOFError when the worker
        is gone or sent what is not a frame."""
        end = time.monotonic() + timeout
        while True:
            if len(self._buf) >= 4:
                n = int.from_bytes(self._buf[:4], "big")
                if n > MAX_FRAME:
                    raise EOFError(f"a frame of {n} bytes")
                if len(self._buf) >= 4 + n:
                    data = bytes(self._buf[4:4 + n])
                    del self._buf[:4 + n]
                    try:
                        got = json.loads(data)
                    except ValueError:
                        raise EOFError("not a frame") from None
                    if not isinstance(got, dict):
                        raise EOFError("not a frame")
                    return got
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._out], [], [], left)
            if ready:
                chunk = os.read(self._out, 1 << 16)
                if not chunk:
                    raise EOFError("closed")
                self._buf += chunk

    def kill(self) -> int | None:
        """Kill and reap; the exit status (negative: the signal), None when it would not end."""
        if self.proc.poll() is None:
            self.killed = True
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        self._close()
        return code

    def stop(self) -> None:
        """Close its input (it exits at end of input), then kill what is still there."""
        with contextlib.suppress(OSError):
            os.close(self._in)
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def _close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                if f is not None:
                    f.close()


# What a worker's environment never holds: it runs callers' SQL and needs no credential, database
# or service of the server's.
_ENV_DROPPED = ("ECO_", "DATABASE_URL", "REDIS_URL", "CELERY_", "DJANGO_", "AWS_", "SENTRY_")
_ENV_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY\b|^KEY", re.I)


def _spawn(settings: Settings) -> _Worker:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_ENV_DROPPED) and not _ENV_SECRET.search(k)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CODE_ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "tables.engine", "--memory-mb", str(settings.memory_mb)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=env, close_fds=True,
                            bufsize=0)
    w = _Worker(proc)
    try:
        hello = w.receive(START_S)
    except (TimeoutError, EOFError) as exc:
        code = w.kill()
        raise RuntimeError(f"the query engine worker did not start ({type(exc).__name__}, exit {code})") from None
    if "ready" not in hello:
        w.kill()
        raise RuntimeError("the query engine worker did not say it was ready")
    return w


def _busy(settings: Settings, waited: float) -> EcoError:
    after = max(1, math.ceil(min(waited, 5.0)))
    return EcoError("rate_limited", f"sql: every query engine worker of this server ({settings.workers}, "
                    f"tables.engine_workers) stayed busy for {waited:.1f} s, the time this query had",
                    details={"field": "sql", "reason": "engine_busy", "retryAfterSeconds": after,
                             "setting": "tables.engine_workers"},
                    hint=f"Retry in about {after} s; a narrower query frees its worker sooner.", retryable=True)


def _time_error(limits: query.Limits) -> EcoError:
    return EcoError("query_too_large", f"sql: the query ran past {round(limits.timeout_s, 2):g} s and was stopped "
                    "(tables.query_timeout_s)", details={"field": "sql", "reason": "time",
                                                          "limitSeconds": limits.timeout_s},
                    hint="Narrow it: a WHERE on siteID or a time range, fewer columns, or GROUP BY to aggregate.")


def _died(code: int | None, limits: query.Limits, cpu_s: float) -> EcoError:
    from tables import query

    if code == -signal.SIGXCPU:
        return EcoError("query_too_large", f"sql: the query used more than {cpu_s:g} s of CPU time and was stopped "
                        "(tables.query_cpu_s)", details={"field": "sql", "reason": "cpu", "limitSeconds": cpu_s,
                                                          "setting": "tables.query_cpu_s"},
                        hint="Narrow it: filter first, aggregate, join on keys rather than every pair of rows.")
    if code == MEMORY_EXIT:
        return query.memory_error(limits, engine=True)
    how = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
    return EcoError("upstream_unavailable", f"sql: the query engine worker running this query stopped ({how}) "
                    "before it answered; a new one takes the next query", details={
                        "field": "sql", "reason": "engine_stopped"},
                    hint="Retry the call.", retryable=True)


class _NotStarted(Exception):
    """The worker ended before it took the query (killed while idle): another worker takes it."""


class Pool:
    """Up to `settings.workers` engine workers, started when a query needs one."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self._starting = 0
        self._closed = False

    def pids(self) -> list[int]:
        with self._cond:
            return [w.pid for w in self._all]

    def _acquire(self, folder: str, until: float) -> _Worker:
        started = time.monotonic()
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("the query engine pool was closed")
                if self._idle:
                    w = next((w for w in reversed(self._idle) if folder in w.warm), self._idle[0])
                    self._idle.remove(w)
                    return w
                if len(self._all) + self._starting < self.settings.workers:
                    self._starting += 1
                    break
                left = until - time.monotonic()
                if left <= 0:
                    raise _busy(self.settings, time.monotonic() - started)
                self._cond.wait(left)
        spawned: _Worker | None = None
        try:
            spawned = _spawn(self.settings)
        finally:
            with self._cond:
                self._starting -= 1
                if spawned is not None:
                    self._all.append(spawned)
                self._cond.notify()
        return spawned

    def _release(self, w: _Worker, keep: bool) -> int | None:
        """Back to the idle ones, or (not `keep`, closed, dead) killed and forgotten: its status."""
        with self._cond:
            keep = keep and not self._closed and not w.doomed and w.proc.poll() is None
            if keep:
                self._idle.append(w)
            elif w in self._all:
                self._all.remove(w)
            self._cond.notify()
        return None if keep else w.kill()

    def run(self, request: dict[str, Any], limits: query.Limits, cpu_s: float,
            cancel: threading.Event | None = None) -> dict[str, Any]:
        """The worker's answer to `request` (a query), within `limits.timeout_s` from now, waiting
        for a free worker included."""
        until = time.monotonic() + limits.timeout_s
        folder = str(request["folder"])
        while True:
            w = self._acquire(folder, until)
            left = until - time.monotonic()
            if left < MIN_RUN_S:
                self._release(w, True)
                raise _busy(self.settings, limits.timeout_s)
            try:
                w.send({**request, "timeout_s": left})
                reply = self._await(w, left, limits, cpu_s, cancel)
                break
            except (OSError, _NotStarted):  # it died while idle: the query never ran, so another takes it
                self._release(w, False)
            except BaseException:
                if w.proc.poll() is None and not w.killed:
                    self._release(w, False)
                raise
        if folder in w.warm:
            w.warm.remove(folder)
        w.warm = [*w.warm, folder][-WARM_MAX:]
        self._release(w, not reply.get("retire"))
        if "fault" in reply:
            raise RuntimeError(f"the query engine worker failed: {reply['fault']}")
        if reply.get("cancelled"):
            raise concurrent.futures.CancelledError()
        if "error" in reply:
            e = reply["error"]
            if (e.get("details") or {}).get("reason") == "time":
                raise _time_error(limits)  # named by the limit the call had, not the part left for the query
            raise EcoError(str(e.get("code")), str(e.get("message")), details=e.get("details"), hint=e.get("hint"),
                           retryable=e.get("retryable"))
        return reply["ok"]  # type: ignore[no-any-return]

    def _await(self, w: _Worker, left: float, limits: query.Limits, cpu_s: float,
               cancel: threading.Event | None) -> dict[str, Any]:
        hard = time.monotonic() + left + GRACE_S
        cancelled = started = False
        while True:
            step = hard - time.monotonic()
            if step <= 0:
                self._release(w, False)
                if cancelled:
                    raise concurrent.futures.CancelledError()
                raise _time_error(limits)
            try:
                got = w.receive(min(step, POLL_S) if cancel is not None and not cancelled else step)
                if "started" not in got:
                    return got
                started = True
            except TimeoutError:
                if cancel is not None and cancel.is_set() and not cancelled:
                    cancelled = True
                    hard = min(hard, time.monotonic() + GRACE_S)
                    with contextlib.suppress(OSError):
                        w.send({"op": "cancel"})
            except EOFError:
                if not started and not cancelled:
                    raise _NotStarted() from None
                code = self._release(w, False)
                if cancelled:
                    raise concurrent.futures.CancelledError() from None
                raise _died(code, limits, cpu_s) from None

    def forget(self, folder: str) -> None:
        """A dataset being deleted: the workers that have it open end (idle ones now, busy ones
        once they answer), so none keeps its deleted files open."""
        with self._cond:
            idle = [w for w in self._idle if folder in w.warm]
            for w in self._all:
                if folder in w.warm:
                    w.doomed = True
            for w in idle:
                self._idle.remove(w)
                self._all.remove(w)
            self._cond.notify_all()
        for w in idle:
            w.stop()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            for w in idle:
                self._all.remove(w)
            self._cond.notify_all()
        for w in idle:
            w.stop()

    def close_all(self) -> None:
        """At exit: every worker, busy ones included."""
        self.close()
        with self._cond:
            rest, self._all = self._all, []
        for w in rest:
            w.kill()


class _Pools:
    """The one pool of this process, made on the first query and again when its settings change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current: Pool | None = None
        self._pid = os.getpid()

    def get(self, settings: Settings) -> Pool:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's workers are the parent's
                self.current, self._pid = None, os.getpid()
            old = self.current
            if old is None or old.settings != settings:
                self.current = Pool(settings)
                if old is not None:
                    old.close()  # its busy workers answer their query, then go
            assert self.current is not None
            return self.current

    def close(self) -> None:
        with self._lock:
            pool, self.current = self.current, None
        if pool is not None:
            pool.close_all()


pools = _Pools()
atexit.register(pools.close)
_records = memos.by_value("tables.engine_records", max_entries=16)


def forget(folder: Path) -> None:
    """The engine workers of this process let go of a dataset being deleted (tables.query.forget)."""
    pool = pools.current
    if pool is not None:
        pool.forget(str(folder.resolve()))


def _dataset(folder: Path) -> query.Dataset:
    """The dataset's record and relations as the serving process needs them for the answer
    (citations, units, the tables read), from its dataset.json: no engine is opened here."""
    from tables import query

    st = (folder / DATASET_JSON).stat()
    key = (str(folder), st.st_mtime_ns, st.st_size)
    got = _records.get(key)
    if got is None:
        record = json.loads((folder / DATASET_JSON).read_text(encoding="utf-8"))
        got = query.Dataset(folder, record, query._relations(folder, record))
        _records.put(key, got)
    return got  # type: ignore[no-any-return]


def run_query(folder: Path, sql: str, limit: int, limits: query.Limits, *, budget: int | None, cpu_s: float,
              settings: Settings, cancel: threading.Event | None = None) -> query.Result:
    """The query's result, run in an engine worker of this process's pool."""
    from tables import query

    started = time.monotonic()
    folder = folder.resolve()
    request = {"op": "query", "folder": str(folder), "sql": sql, "limit": limit, "budget": budget,
               "memory_mb": limits.memory_mb, "threads": limits.threads, "max_depth": limits.max_depth,
               "cpu_s": cpu_s}
    got = pools.get(settings).run(request, limits, cpu_s, cancel)
    ds = _dataset(folder)
    tables = [t for t in (ds.tables.get(str(n).lower()) for n in got.pop("tables")) if t is not None]
    columns = [query.Column(**c) for c in got.pop("columns")]
    got["seconds"] = time.monotonic() - started  # the call's, the hop to the worker included
    return query.Result(columns=columns, tables=tables, dataset=ds, **got)


def start(folder: Path, sql: str, limit: int, limits: query.Limits, *, budget: int | None, cpu_s: float,
          settings: Settings, cancel: threading.Event | None = None) -> concurrent.futures.Future[query.Result]:
    """run_query on a thread of its own, so the event loop keeps serving while it waits."""
    fut: concurrent.futures.Future[query.Result] = concurrent.futures.Future()

    def work() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(run_query(folder, sql, limit, limits, budget=budget, cpu_s=cpu_s, settings=settings,
                                     cancel=cancel))
        except BaseException as exc:  # handed to the caller, whatever it is
            fut.set_exception(exc)

    threading.Thread(target=work, name="eco-query", daemon=True).start()
    return fut


# ----------------------------------------------------------------------------- the worker
def _limit_memory(memory_mb: int) -> None:
    limit = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _limit_cpu(cpu_s: float) -> None:
    """SIGXCPU once this query has used `cpu_s` more seconds of CPU than the worker had so far
    (RLIMIT_CPU counts the whole process; whole seconds)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(used.ru_utime + used.ru_stime + cpu_s)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _data_kb() -> int:
    """What RLIMIT_DATA counts of this process now (VmData: heap and private writable mappings,
    resident or not)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _trim() -> None:
    """Give freed heap back to the system (glibc keeps it otherwise): a worker's resident memory
    then says what it still holds."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _reader(fd: int, inbox: queue.Queue[tuple[str, dict[str, Any] | None]]) -> None:
    while True:
        head = _read_exact(fd, 4)
        if head is None:
            inbox.put(("eof", None))
            return
        body = _read_exact(fd, int.from_bytes(head, "big"))
        if body is None:
            inbox.put(("eof", None))
            return
        inbox.put(("msg", json.loads(body)))


def _answer(msg: dict[str, Any], inbox: queue.Queue[tuple[str, dict[str, Any] | None]], memory_mb: int) -> dict[str, Any]:
    from tables import query

    limits = query.Limits(timeout_s=float(msg["timeout_s"]), memory_mb=int(msg["memory_mb"]),
                          threads=int(msg["threads"]), max_depth=int(msg["max_depth"]), engine_memory_mb=memory_mb)
    _limit_cpu(float(msg["cpu_s"]))
    run = query.QueryRun(Path(msg["folder"]), str(msg["sql"]), int(msg["limit"]), limits, budget=msg.get("budget"))
    fut = run.start()
    fut.add_done_callback(lambda _f: inbox.put(("done", None)))
    while not fut.done():
        kind, got = inbox.get()
        if kind == "eof":
            os._exit(0)
        if kind == "msg" and got is not None and got.get("op") == "cancel":
            run.cancel()
    try:
        r = fut.result()
    except concurrent.futures.CancelledError:
        return {"cancelled": True}
    except EcoError as exc:
        return {"error": exc.to_dict()["error"]}
    except MemoryError:
        return {"error": query.memory_error(limits, engine=True).to_dict()["error"], "retire": True}
    except RuntimeError as exc:
        if "can't start new thread" not in str(exc):
            raise
        # A thread's stack is memory too: the limit was reached outside DuckDB's own accounting.
        return {"error": query.memory_error(limits, engine=True).to_dict()["error"], "retire": True}
    # Every field of the result but the dataset itself (the serving process reads its record), so a
    # field added to Result or Column travels without a change here; the tables read go by name.
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name not in ("dataset", "tables")}
    fields["columns"] = [dataclasses.asdict(c) for c in r.columns]
    return {"ok": {**fields, "tables": [t.name for t in r.tables]}}


def _scrubbed(frame: bytes, folder: str) -> bytes:
    """Last line: the dataset's folder and the store around it never leave the worker, whatever
    a value or message holds."""
    for p in sorted({folder, str(Path(folder).parent)}, key=len, reverse=True):
        if len(p) > 1:
            frame = frame.replace(json.dumps(p)[1:-1].encode(), b"<dataset>")
    body = frame[4:]
    return len(body).to_bytes(4, "big") + body


def serve(memory_mb: int) -> None:
    """The worker: frames in on stdin, frames out on the stdout it was started with (anything
    printed goes to stderr), one query at a time; it ends at the end of its input."""
    out = os.dup(1)
    os.dup2(2, 1)
    _limit_memory(memory_mb)
    sys.setrecursionlimit(10_000)  # the parser's own bound keeps a syntax tree far shallower
    try:
        from tables import dataset, query  # noqa: F401  (warm: the first query pays no import)

        query.catalog_names()
        query.catalog_functions()
    except MemoryError:
        os._exit(MEMORY_EXIT)
    inbox: queue.Queue[tuple[str, dict[str, Any] | None]] = queue.Queue()
    threading.Thread(target=_reader, args=(0, inbox), name="eco-engine-input", daemon=True).start()
    _write_all(out, _frame({"ready": os.getpid()}))
    while True:
        kind, msg = inbox.get()
        if kind == "eof":
            os._exit(0)
        if kind != "msg" or msg is None or msg.get("op") != "query":
            continue
        _write_all(out, _frame({"started": True}))  # a worker gone before this never ran the query
        try:
            reply = _answer(msg, inbox, memory_mb)
            _trim()
            retire = bool(reply.pop("retire", False)) or _data_kb() > memory_mb * 1024 * RETIRE_FRACTION
            if retire:
                reply["retire"] = True
            _write_all(out, _scrubbed(_frame(reply), str(msg["folder"])))
        except MemoryError:
            os._exit(MEMORY_EXIT)
        except Exception as exc:  # a bug of the worker's: the serving process reports it as one
            _write_all(out, _scrubbed(_frame({"fault": f"{type(exc).__name__}: {exc}"}), str(msg["folder"])))
            os._exit(1)
        if retire:
            os._exit(0)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="A query engine worker (started by the serving process).")
    ap.add_argument("--memory-mb", type=int, required=True)
    serve(ap.parse_args().memory_mb)
