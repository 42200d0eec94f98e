"""The canary sweep over the whole test run, loaded for every session by
`pytest_plugins` in tests/conftest.py.

At start-up it mints CANARY: a token the session simulator accepts (signed for its seed) whose
`sub` claim carries a random mark, and a REVOKED twin signed for another seed, which the
simulator refuses with 403. tests/reliability/test_canary.py configures both and sends them
through every tool. The plugin records every log record that carries either (before any
redacting filter), and at the end of the session, while the test database still exists, sweeps
every table of it, the Redis db of REDIS_URL (keys and values of every type), the process's
LocMem upstream caches, every file under pytest's basetemp and the files this run wrote to the
data and download directories. A find fails the run with an error naming each place.

The sweep looks for the tokens, their payload and signature segments (a partial leak), the mark
(a decoded token), their base64 (std and url-safe, at the three byte alignments, so a token inside
a longer encoded text is found) and hex (PostgreSQL's bytea text) forms. URL-encoding leaves
these tokens as they are (letters, digits, `-`, `_`, `.`), so the plain needle covers it.
"""

from __future__ import annotations

import base64
import logging
import os
import pickle
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from eco_core import redact
from upstream_sim.tokens import issue_token

# The session `sim` fixture's seed (tests/conftest.py); test_canary checks the two agree.
SIM_SEED = 1
CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class Canary:
    token: str  # accepted by the session simulator
    revoked: str  # well-formed, signed for another seed: the simulator answers 403
    mark: str  # in both tokens' `sub` claim only


def mint(seed: int = SIM_SEED) -> Canary:
    mark = f"canary{uuid.uuid4().hex}"
    now = time.time()
    # Thirty days: tests that move the simulator's clock move it by a few days at most.
    return Canary(token=issue_token(seed, exp_s=30 * 86400, sub=f"{mark}@example.org", now=now),
                  revoked=issue_token(seed + 7919, exp_s=30 * 86400, sub=f"{mark}@example.org", now=now + 1),
                  mark=mark)


def _base64_cores(raw: bytes) -> Iterator[bytes]:
    """What base64 of `raw` looks like inside any longer encoded text: for each of the three
    byte alignments, the encoding of the whole 3-byte groups that lie inside `raw`."""
    for start in range(3):
        body = raw[start:start + 3 * ((len(raw) - start) // 3)]
        yield base64.b64encode(body)
        yield base64.urlsafe_b64encode(body)


def needles_for(canary: Canary) -> dict[bytes, str]:
    found: dict[bytes, str] = {}
    for name, token in (("canary token", canary.token), ("revoked canary token", canary.revoked)):
        _, payload, signature = token.split(".")  # the header segment is the same for every token
        for needle, what in ((token, name), (quote(token, safe=""), f"URL-encoded {name}"),
                             (payload, f"payload of the {name}"), (signature, f"signature of the {name}"),
                             (token.encode().hex(), f"hex of the {name}")):
            found.setdefault(needle.encode(), what)
        for core in _base64_cores(token.encode()):
            found.setdefault(core, f"base64 of the {name}")
    found.setdefault(canary.mark.encode(), "canary mark (a decoded token)")
    return found


CANARY = mint()
NEEDLES = needles_for(CANARY)
LONGEST = max(len(n) for n in NEEDLES)


def find(data: bytes | str) -> list[str]:
    """What of the canary `data` holds (descriptions, empty when clean)."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return sorted({what for needle, what in NEEDLES.items() if needle in raw})


def hidden(text: str) -> str:
    """`text` with every needle replaced, for failure messages: a report of a leak must not
    print the token again."""
    for needle in sorted(NEEDLES, key=len, reverse=True):
        text = text.replace(needle.decode(), "[canary]")
    return text


def _finding(where: str, data: bytes | str) -> list[str]:
    found = find(data)
    return [f"{where}: {', '.join(found)}"] if found else []


# ---------------------------------------------------------------------------------------- logs
class LogRecorder(logging.Handler):
    """Keeps every log record that carries the canary, as its text was before any redacting
    filter: it is the first handler of the loggers it is attached to (tests/upstream/conftest.py
    holds its own loggers to the same bar). The redacting filter masks known tokens on stderr as
    a second line of defence; a record that needed it is still reported, with a note."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.leaks: list[str] = []
        self.records = 0
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records += 1
        try:
            line = self.format(record)
        except Exception:  # a bad format string still has its raw text
            line = f"{record.name}: {record.msg} {record.args}"
        found = find(line)
        if found:
            # scrub_log runs in the emitting context, as the redacting filter does.
            note = " (the redacting filter would have masked it)" if not find(redact.scrub_log(line)) else ""
            self.leaks.append(f"log record of {record.name!r}{note}: {', '.join(found)}: {hidden(line)[:300]}")

    def attach(self) -> None:
        """First on the root logger and on every logger that stops propagation (uvicorn's own in
        tests); again after anything (logging.config.dictConfig, a uvicorn.Config) replaced them."""
        loggers = [logging.root, *(logger for logger in list(logging.root.manager.loggerDict.values())
                                   if isinstance(logger, logging.Logger) and not logger.propagate)]
        for logger in loggers:
            if self not in logger.handlers:
                logger.handlers.insert(0, self)


RECORDER = LogRecorder()


# ------------------------------------------------------------------------------------- sweeps
def sweep_files(roots: Iterable[Path], *, since: float | None = None) -> tuple[list[str], int]:
    """(findings, bytes read) over every regular file under `roots` (`.part` files included),
    only those modified at or after `since` when given. Symbolic links are not followed."""
    findings: list[str] = []
    read = 0
    for root in roots:
        if not root.is_dir():
            continue
        for folder, _, names in os.walk(root):
            for name in names:
                path = Path(folder, name)
                try:
                    st = path.lstat()
                    if not path.is_file() or path.is_symlink() or (since is not None and st.st_mtime < since):
                        continue
                    found, size = _scan_file(path)
                except OSError:  # removed meanwhile, or unreadable: nothing a later reader sees
                    continue
                read += size
                if found:
                    findings.append(f"file {hidden(str(path))}: {', '.join(found)}")
    return findings, read


def _scan_file(path: Path) -> tuple[list[str], int]:
    found: set[str] = set()
    size = 0
    tail = b""
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            size += len(chunk)
            found.update(find(tail + chunk))
            tail = chunk[-(LONGEST - 1):]
    return sorted(found), size


def _flatten(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple, set)):
        return b"\n".join(_flatten(v) for v in value)
    if isinstance(value, dict):
        return b"\n".join(_flatten(k) + b"\n" + _flatten(v) for k, v in value.items())
    return str(value).encode()


def sweep_redis(url: str) -> tuple[list[str], int]:
    """(findings, keys) over every key of the Redis db at `url`: the key itself and its value,
    whatever its type."""
    import redis

    client = redis.Redis.from_url(url, socket_timeout=10)
    findings: list[str] = []
    keys = 0
    readers = {b"string": lambda p, k: p.get(k), b"hash": lambda p, k: p.hgetall(k),
               b"list": lambda p, k: p.lrange(k, 0, -1), b"set": lambda p, k: p.smembers(k),
               b"zset": lambda p, k: p.zrange(k, 0, -1), b"stream": lambda p, k: p.xrange(k)}
    try:
        batch: list[bytes] = []
        for key in client.scan_iter(count=1000):
            batch.append(key)
            if len(batch) == 500:
                findings += _redis_batch(client, batch, readers)
                keys += len(batch)
                batch = []
        findings += _redis_batch(client, batch, readers)
        keys += len(batch)
    finally:
        client.close()
    return findings, keys


def _redis_batch(client: Any, batch: list[bytes], readers: dict[bytes, Any]) -> list[str]:
    if not batch:
        return []
    pipe = client.pipeline(transaction=False)
    for key in batch:
        pipe.type(key)
    kinds = pipe.execute()
    pipe = client.pipeline(transaction=False)
    for key, kind in zip(batch, kinds, strict=True):
        readers.get(kind, lambda p, k: p.exists(k))(pipe, key)
    values = pipe.execute(raise_on_error=False)
    findings: list[str] = []
    for key, kind, value in zip(batch, kinds, values, strict=True):
        name = hidden(repr(key))[:160]
        findings += _finding(f"Redis key {name}", key)
        findings += _finding(f"Redis value ({kind.decode()}) of key {name}", _flatten(value))
    return findings


def sweep_database(connection: Any) -> tuple[list[str], int]:
    """(findings, tables) over every row of every table of a Django database connection:
    PostgreSQL compares each row's text form (bytea shows as hex) in the server, SQLite is
    read row by row."""
    findings: list[str] = []
    texts = [n.decode() for n in NEEDLES]
    with connection.cursor() as cur:
        tables = connection.introspection.table_names(cur)
        for table in tables:
            q = connection.ops.quote_name(table)
            if connection.vendor == "postgresql":
                cond = " OR ".join(["strpos(s, %s) > 0"] * len(texts))
                cur.execute(f"SELECT s FROM (SELECT x::text AS s FROM {q} AS x) AS r WHERE {cond} LIMIT 5", texts)
                rows: Iterable[tuple[Any, ...]] = cur.fetchall()
            else:
                cur.execute(f"SELECT * FROM {q}")
                rows = cur.fetchall()
            for row in rows:
                findings += _finding(f"database table {table}", b"\n".join(_flatten(v) for v in row))
    return findings, len(tables)


def sweep_local_caches() -> tuple[list[str], int]:
    """(findings, entries) over the upstream answer cache's LocMem stores of this process: every
    key written, and its value as read back with the store's public `get` (bodies uncompressed,
    then pickled, as a shared cache would hold them)."""
    from upstream.cache import locmem_backend, locmem_written_keys, unpacked

    findings: list[str] = []
    entries = 0
    for store, keys in locmem_written_keys().items():
        backend = locmem_backend(1, name=store)
        for key in keys:
            value = unpacked(backend.get(key))  # a large body is held compressed: search the body
            if value is None:
                continue  # culled or expired: no longer held
            entries += 1
            name = hidden(repr(key))
            findings += _finding(f"local cache {store!r} key {name}", key)
            findings += _finding(f"local cache {store!r} value of {name}", pickle.dumps(value))
    return findings, entries


# ------------------------------------------------------------------------------ the session
@dataclass
class Summary:
    findings: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    done: bool = False


STATE: dict[str, Any] = {"started": time.time(), "uses_db": False, "summary": Summary()}


def download_dirs() -> list[Path]:
    """The default download directory and the one the environment names, if any."""
    from eco_core.config import load_config

    dirs = [load_config(env={}, warn=False).downloads.directory.expanduser()]
    if os.environ.get("ECO_MCP_DOWNLOADS__DIRECTORY"):
        dirs.append(Path(os.environ["ECO_MCP_DOWNLOADS__DIRECTORY"]).expanduser())
    return dirs


def sweep_session(basetemp: Path, db_connection: Any | None, redis_url: str | None) -> Summary:
    from django.conf import settings

    started = time.perf_counter()
    s = Summary()
    found, read = sweep_files([basetemp])
    s.findings += found
    # Outside basetemp only what this run wrote: a developer's data folder may be large.
    others = [Path(settings.DATA_DIR), *download_dirs()]
    found, read_others = sweep_files([p for p in others if basetemp not in p.parents], since=STATE["started"])
    s.findings += found
    s.counts["file bytes"] = read + read_others
    if redis_url:
        found, s.counts["Redis keys"] = sweep_redis(redis_url)
        s.findings += found
    if db_connection is not None:
        found, s.counts["database tables"] = sweep_database(db_connection)
        s.findings += found
    found, s.counts["local cache entries"] = sweep_local_caches()
    s.findings += found
    s.findings += RECORDER.leaks
    s.counts["log records"] = RECORDER.records
    s.seconds = time.perf_counter() - started
    s.done = True
    return s


def pytest_configure(config: pytest.Config) -> None:
    STATE["started"] = time.time()
    RECORDER.attach()


# What makes pytest-django create the test database (its `_get_databases_for_test`): without
# one of these, `django_db_setup` creates nothing and the connection is the real database.
DB_FIXTURES = {"db", "transactional_db", "live_server"}


@pytest.hookimpl(trylast=True)  # after -k / -m deselection: only the tests that will run
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    STATE["uses_db"] = any(item.get_closest_marker("django_db") or DB_FIXTURES & set(getattr(item, "fixturenames", ()))
                           for item in items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    RECORDER.attach()


@pytest.fixture(scope="session", autouse=True)
def _canary_sweep(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Sweeps at the end of the session. When the run uses the test database, this fixture asks
    for `django_db_setup` itself, so pytest tears it down first, while that database exists."""
    blocker = None
    if STATE["uses_db"]:
        request.getfixturevalue("django_db_setup")
        blocker = request.getfixturevalue("django_db_blocker")
    yield
    basetemp = tmp_path_factory.getbasetemp()
    # The suite's Redis: what REDIS_URL names (CI sets it); without it caches are in process.
    redis_url = os.environ.get("REDIS_URL") or None
    if blocker is None:
        summary = sweep_session(basetemp, None, redis_url)
    else:
        from django.db import connection

        with blocker.unblock():
            summary = sweep_session(basetemp, connection, redis_url)
    STATE["summary"] = summary
    if summary.findings:
        shown = "\n  ".join(summary.findings[:50])
        pytest.fail(f"the canary token leaked ({len(summary.findings)} places):\n  {shown}", pytrace=False)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    summary: Summary = STATE["summary"]
    if not summary.done:
        return
    counts = ", ".join(f"{v} {k}" for k, v in summary.counts.items())
    terminalreporter.write_line(f"canary sweep: found in {len(summary.findings)} places; searched {counts} "
                                f"in {summary.seconds:.2f} s")
