"""The fault matrix's table and parts.

`ROWS` gives every upstream-backed tool ONE representative call that reaches the upstream and
the simulator route (a regex searched in the request path) it reaches: the faults are injected
there. `NO_UPSTREAM` gives every tool that answers from the catalogs alone a call that must need
no upstream at all. Both are checked against the tool registry, so a tool registered tomorrow
fails the matrix until it is given a row in one of them.

`FAULTS` are the fault kinds, each with the code the upstream layer must turn it into (None: the
call is answered, e.g. a 5xx burst retried through) and how many requests the fault must have
answered; `expected(row, fault)` turns that into what the tool must answer, by how the row
surfaces upstream trouble (an error, a documented fallback with a note, or eco_ping's report).

`RestartableSim` is a simulator of the module's own on fixed ports, so it can be killed and a new
one started where the old one listened: the catalog built from it stays the one served (a
catalog is served only for the upstream address it was built from).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from eco_core import config as eco_config
from tests.tables.query_support import QUERY_CALL, QUERY_ID, stack_soil
from tests.tools.conftest import Outcome
from tests.tools.sample_support import call
from upstream_sim.server import SimServer

PRODUCT = "DP1.00041.001"
DOCUMENT = "NEON.DOC.003771vF"  # the ATBD of PRODUCT in the simulator
PROTOTYPE = "07dccab1-4990-4d2f-9c5b-bf97e10517e3"  # the recorded prototype dataset (upstream_sim.biodata)
RELEASE = "RELEASE-2025"
ATTEMPTS = 3  # eco.retries.max_attempts in the matrix configuration
HANG_ATTEMPTS = 2  # ... and in the timeout case's, whose attempts each wait out a read timeout
UNREACHABLE = ("upstream_error", "upstream_unavailable")  # what eco_ping reports as not reachable
HANG_GUARD_S = 30.0  # far beyond any case (the slowest waits about a second): reaching it means a hang


@dataclass(frozen=True)
class Row:
    arguments: dict[str, Any]
    route: str
    token: bool = False  # needs an upstream token
    graphql: bool = False  # the route is GraphQL: a GraphQL outage is its fault too
    # How upstream trouble surfaces: "error" (the spec's code), "fallback" (an answer with
    # `fallback_note` for the codes in `fallback_codes`, the error otherwise) or "ping" (reported
    # in eco_ping's `api` object, never raised).
    surface: Literal["error", "fallback", "ping"] = "error"
    fallback_note: str = ""
    fallback_codes: tuple[str, ...] = ()
    # An answer's note when GraphQL, read on the side of a REST route, is out.
    graphql_side_note: str | None = None
    # The cache TTL (cache.ttl_s.<name>) of the route's cached read; None: never cached.
    cached: str | None = None


ROWS: dict[str, Row] = {
    # The month's listing; the variables file is then read from storage (or the catalog database).
    "eco_describe_tables": Row({"product": PRODUCT, "site_code": "HARV", "limit": 5}, r"^/api/v0/data/", token=True,
                               cached="data"),
    # The selection's listing; its files then come from storage, as a download's do.
    "eco_stack_tables": Row({"product": "DP1.10033.001", "site_codes": ["HARV"], "start_month": "2023-07"},
                            r"^/api/v0/data/", token=True, cached="data"),
    "eco_download_files": Row({"spec_number": DOCUMENT}, r"^/api/v0/documents/", token=True, cached="documents"),
    "eco_find_locations": Row({"root": "HARV", "limit": 5}, r"^/api/v0/locations/HARV", cached="locations",
                              graphql_side_note="Coordinates left out: the batched GraphQL lookup failed "
                                                "(upstream_error)."),
    "eco_get_availability": Row({"product": PRODUCT, "site": "HARV", "release": RELEASE},
                                r"^/api/v0/products/DP1\.00041\.001", cached="detail"),
    "eco_get_citation": Row({"prototype_uuid": PROTOTYPE}, r"^/api/v0/prototype/datasets/", cached="prototype"),
    "eco_get_document": Row({"spec_number": DOCUMENT, "extract_text": True, "max_chars": 500},
                            r"^/api/v0/documents/", cached="documents"),
    # History is always read upstream (stored site subtrees answer the rest of a location).
    "eco_get_location": Row({"name": "HARV", "include": ["history"]}, r"^/api/v0/locations/HARV", cached="locations"),
    "eco_get_product": Row({"product": PRODUCT, "include": ["abstract"]}, r"^/api/v0/products/DP1\.00041\.001",
                           cached="detail"),
    "eco_get_prototype_dataset": Row({"uuid": PROTOTYPE}, r"^/api/v0/prototype/datasets/", cached="prototype"),
    "eco_get_release": Row({"release": RELEASE, "include": ["sites"]}, r"^/graphql", graphql=True,
                           surface="fallback", fallback_codes=UNREACHABLE,
                           fallback_note="GraphQL failed ({code}); the site list came from the site catalog."),
    "eco_get_sample": Row({"barcode": "A00000123456"}, r"^/api/v0/samples/view", token=True, cached="samples_view"),
    "eco_get_site": Row({"site": "HARV", "release": RELEASE}, r"^/api/v0/sites/HARV", cached="detail"),
    "eco_graphql": Row({"query": '{ product(productCode: "DP1.00041.001") { productCode productName } }'},
                       r"^/graphql", graphql=True),
    "eco_list_files": Row({"product": PRODUCT, "site_codes": ["HARV"], "start_month": "2020-05"},
                          r"^/api/v0/data/", token=True, cached="data"),
    "eco_list_releases": Row({"include_artifact_urls": True}, r"^/api/v0/releases$", cached="releases"),
    "eco_list_sample_classes": Row({}, r"^/api/v0/samples/supportedClasses", cached="samples_classes"),
    "eco_ping": Row({"check_api": True}, r"^/api/v0/taxonomy", surface="ping"),
    "eco_search_prototype_datasets": Row({}, r"^/api/v0/prototype/datasets$", cached="prototype"),
    "eco_search_sites": Row({"query": "HARV", "include_elevation": True}, r"^/api/v0/locations/sites",
                            surface="fallback", fallback_codes=(*UNREACHABLE, "rate_limited"),
                            fallback_note="Elevation and UTM come from the cached catalog", cached="locations"),
    "eco_search_taxonomy": Row({"scientific_name": "Quercus alba"}, r"^/api/v0/taxonomy", cached="taxonomy"),
}

# Tools that answer from the catalogs alone, each with a call that must send no upstream request.
NO_UPSTREAM: dict[str, dict[str, Any]] = {
    "eco_search_products": {"query": "soil temperature", "site": "HARV", "release": RELEASE},
    # A stacked dataset in the download directory (prepare() makes it), queried on disk.
    "eco_query_tables": QUERY_CALL,
    "eco_plot_tables": QUERY_CALL,  # the same query, drawn
}


def prepare(tool: str, download_dir: Path) -> None:
    """What a tool's call needs on disk before it runs: eco_query_tables a stacked dataset."""
    if tool in ("eco_query_tables", "eco_plot_tables") and not (download_dir / "datasets" / QUERY_ID).is_dir():
        stack_soil(download_dir)


# ------------------------------------------------------------------------------------ faults

@dataclass(frozen=True)
class Fault:
    name: str
    add: Callable[[Any, Row], Any]  # (sim, row) -> the simulator's Fault record
    code: str | None  # what the upstream layer turns it into; None: answered in the end
    hits: int  # requests the fault answered
    details: dict[str, Any] = field(default_factory=dict)  # the error's details must hold these
    graphql_only: bool = False  # only GraphQL rows reach it; the others must not notice it


REDIRECT_PATH = "/elsewhere/never-asked"  # where a foreign redirect points, on the storage host


def _redirect(sim: Any, row: Row) -> Any:
    # The storage host (`localhost`, a second port) is not the API host: a hop to it is foreign.
    return sim.faults.add("redirect", route=row.route, target=f"http://localhost:{sim.storage_port}{REDIRECT_PATH}")


FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("5xx_burst", lambda s, r: s.faults.add("status", route=r.route, count=2, status=503), None, 2),
    Fault("5xx_persistent", lambda s, r: s.faults.add("status", route=r.route, status=503), "upstream_error",
          ATTEMPTS, {"upstreamStatus": 503}),
    Fault("reset", lambda s, r: s.faults.add("reset", route=r.route), "upstream_unavailable", ATTEMPTS),
    Fault("timeout", lambda s, r: s.faults.add("hang", route=r.route, hold_s=5), "upstream_unavailable",
          HANG_ATTEMPTS, {"cause": "ReadTimeout"}),
    Fault("malformed_json", lambda s, r: s.faults.add("malformed", route=r.route), "upstream_error", 1,
          {"reason": "unexpected_body"}),
    Fault("429_retry_after", lambda s, r: s.faults.add("rate_limit", route=r.route, count=1, retry_after=0.1),
          None, 1),
    # NEON's 429 without its RetryAfter header: eco.retries.retry_after_default_s is waited.
    Fault("429_no_retry_after", lambda s, r: s.faults.add("status", route=r.route, count=1, status=429,
                                                          body={"message": "API rate limit exceeded"}), None, 1),
    Fault("429_storm", lambda s, r: s.faults.add("rate_limit", route=r.route, retry_after=0.1), "rate_limited",
          ATTEMPTS, {"retryAfterSeconds": 1}),
    Fault("graphql_outage", lambda s, r: s.faults.add("graphql_outage"), "upstream_error", ATTEMPTS,
          {"upstreamStatus": 502}, graphql_only=True),
    Fault("foreign_redirect", _redirect, "upstream_error", 1, {"redirectHost": "localhost"}),
)}


# ------------------------------------------------------------------------------ expectations

@dataclass(frozen=True)
class Expect:
    """An answer (`code` None), carrying `note` when given, or an error with `code` and `details`."""

    code: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    ping_code: str | None = None  # eco_ping: the code its api report must carry


def expected(row: Row, code: str | None, details: dict[str, Any] | None = None) -> Expect:
    """What `row`'s tool answers when its route fails with `code` (None: the route answered)."""
    if code is None:
        return Expect()
    if row.surface == "ping":
        return Expect(ping_code=code)
    if row.surface == "fallback" and code in row.fallback_codes:
        return Expect(note=row.fallback_note.format(code=code))
    return Expect(code=code, details=details or {})


def expected_for(row: Row, fault: Fault) -> Expect:
    if fault.graphql_only and not row.graphql:
        # The route is REST: a GraphQL outage leaves it answering (with a note when GraphQL is
        # read on the side).
        return Expect(note=row.graphql_side_note)
    return expected(row, fault.code, fault.details)


def fault_hits(row: Row, fault: Fault) -> int:
    if fault.graphql_only and not row.graphql:
        return fault.hits if row.graphql_side_note else 0
    return fault.hits


# ---------------------------------------------------------------------------------- checking

def check(outcome: Any, want: Expect) -> None:
    """`outcome` (tests.tools.conftest.Outcome) is exactly what `want` says."""
    if want.code is not None:
        err = outcome.error
        assert err["code"] == want.code, err
        assert err["retryable"] is True, err
        assert want.details.items() <= err["details"].items(), err
        return
    body = outcome.ok
    assert body["source"].get("stale") is not True, body["source"]
    if want.ping_code is not None:
        api = body["api"]
        assert api["errorCode"] == want.ping_code, api
        assert api["reachable"] is (want.ping_code not in UNREACHABLE), api
    elif "api" in body and body["api"] is not None:
        assert body["api"]["reachable"] is True and body["api"]["status"] == 200, body["api"]
    if want.note is not None:
        assert any(want.note in n for n in body["notes"]), body["notes"]


def recovered(outcome: Any, row: Row) -> None:
    """The call after the fault cleared: a plain answer, neither stale nor degraded."""
    check(outcome, Expect())
    notes = outcome.ok["notes"]
    # A degraded answer's note, up to the code it names (any code, not only the last fault's).
    degraded = [n.split("(")[0] for n in (row.fallback_note, row.graphql_side_note) if n]
    assert not any(d in n for d in degraded for n in notes), notes


# ------------------------------------------------------------------------------- simulator

def free_ports(n: int = 2) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()




class RestartableSim:
    """A simulator on two fixed ports; `kill()` stops it, `restart()` starts a NEW one (fresh
    state, same seed: the same world, and tokens issued before stay valid) on the same ports.
    Every other attribute is the running simulator's. Its own rate limits are out of the way:
    the matrix sends hundreds of requests a minute from one address, and its 429s are injected."""

    def __init__(self) -> None:
        self.ports = free_ports(2)
        self.current: SimServer | None = None

    def restart(self) -> RestartableSim:
        self.current = SimServer(seed=1, port=self.ports[0], storage_port=self.ports[1], anon_burst=1_000_000,
                                 anon_rps=10_000.0, token_burst=1_000_000, token_rps=10_000.0).start()
        return self

    def kill(self) -> None:
        if self.current is not None:
            self.current.stop()
            self.current = None

    def __getattr__(self, name: str) -> Any:
        current = self.__dict__.get("current")
        if current is None:
            raise AttributeError(f"the simulator is down ({name} asked)")
        return getattr(current, name)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.ports[0]}/api/v0"

    @property
    def graphql_url(self) -> str:
        return f"http://127.0.0.1:{self.ports[0]}/graphql"

    @property
    def storage_port(self) -> int:
        return self.ports[1]


# ----------------------------------------------------------------------------- configuration

def matrix_config(sim: Any, download_dir: Path, token: str | None = None, *, timeout_case: bool = False,
                  **flags: Any) -> eco_config.EcoConfig:
    """Short waits, so no case takes much over half a second: backoff of 10-20 ms, retry-after
    waits of 0.1 s, and a budget refilling fast enough that the empty bucket a 429 leaves costs
    ~10 ms. Read timeouts stay long (a loaded machine must not turn a slow answer into a fault)
    except in the timeout case, where each of its two attempts waits 0.3 s for the hung route."""
    read = 0.3 if timeout_case else 10.0
    base: dict[str, Any] = {
        "eco.base_url": sim.base_url, "eco.graphql_url": sim.graphql_url,
        "eco.connect_timeout_s": 2.0, "eco.read_timeout_s": read, "eco.catalog_read_timeout_s": read,
        "eco.download_read_timeout_s": read, "eco.call_deadline_s": 20.0,
        "eco.retries.max_attempts": HANG_ATTEMPTS if timeout_case else ATTEMPTS,
        "eco.retries.backoff_base_s": 0.01, "eco.retries.backoff_max_s": 0.02,
        "eco.retries.retry_after_default_s": 0.1,
        "eco.rate_limit.anonymous_rps": 100.0, "eco.rate_limit.token_rps": 1000.0, "eco.rate_limit.max_wait_s": 1.0,
        "cache.prewarm": False,
        "downloads.directory": str(download_dir), "downloads.allowed_hosts": ["127.0.0.1", "localhost"],
    }
    base.update({k.replace("__", "."): v for k, v in flags.items()})
    return eco_config.load_config(flags=base, env={"ECO_TOKEN": token} if token else {}, warn=False)


# ------------------------------------------------------------------------------------ calling

class Case:
    """One test's calls: `configure()` installs a configuration of its own as the active one (so
    the upstream client, its cache namespace, rate-limit buckets and GraphQL breaker start
    fresh), `run(tool)` calls a tool with its row's arguments through the gateway's pipeline."""

    def __init__(self, sim: Any, download_dir: Path, stack: contextlib.ExitStack) -> None:
        self.sim, self.download_dir, self._stack = sim, download_dir, stack
        self.cfg: eco_config.EcoConfig | None = None
        self.token: str | None = None

    def configure(self, *, token: bool = False, **flags: Any) -> eco_config.EcoConfig:
        self.token = self.sim.issue_token(exp_s=3600) if token else None
        self.cfg = self._stack.enter_context(eco_config.use_config(
            matrix_config(self.sim, self.download_dir, self.token, **flags)))
        return self.cfg

    async def run(self, tool: str, arguments: dict[str, Any] | None = None) -> Outcome:
        assert self.cfg is not None, "configure() first"
        if arguments is None:
            arguments = ROWS[tool].arguments if tool in ROWS else NO_UPSTREAM[tool]
        needs = tool in ROWS and ROWS[tool].token
        prepare(tool, self.download_dir)
        async with asyncio.timeout(HANG_GUARD_S):
            return Outcome(await call(self.cfg, tool, arguments, token=self.token if needs else None))


# ----------------------------------------------------------------------------- database down

@dataclass(frozen=True)
class DatabaseDown:
    """What a tool answers with the catalog database unreachable (a proxy in front of PostgreSQL
    killed mid-run: tests/reliability/test_fault_matrix_database.py), called with its row's
    arguments (ROWS or NO_UPSTREAM): None is an answer, anything else the error code. `cold`: the
    process has not read the catalog yet; `warm`: it holds the catalog index, which answers
    without the database. Never internal_error; every code here is retryable."""

    cold: str | None
    warm: str | None


CATALOG_DOWN = "catalog_unavailable"

DATABASE_DOWN: dict[str, DatabaseDown] = {
    # The upstream alone: the database is never asked.
    "eco_get_document": DatabaseDown(None, None),
    "eco_get_prototype_dataset": DatabaseDown(None, None),
    "eco_get_sample": DatabaseDown(None, None),
    "eco_graphql": DatabaseDown(None, None),
    "eco_list_sample_classes": DatabaseDown(None, None),
    "eco_search_prototype_datasets": DatabaseDown(None, None),
    "eco_search_taxonomy": DatabaseDown(None, None),
    # A dataset's own files alone.
    "eco_query_tables": DatabaseDown(None, None),
    "eco_plot_tables": DatabaseDown(None, None),
    # Reported, not raised: eco_ping says `catalog.database: "down"`.
    "eco_ping": DatabaseDown(None, None),
    # The catalog index: none to answer from until the process has read the catalog once.
    "eco_download_files": DatabaseDown(CATALOG_DOWN, None),  # any download, a document's too
    "eco_get_availability": DatabaseDown(CATALOG_DOWN, None),
    "eco_get_citation": DatabaseDown(CATALOG_DOWN, None),
    "eco_get_product": DatabaseDown(CATALOG_DOWN, None),
    "eco_get_release": DatabaseDown(CATALOG_DOWN, None),
    "eco_get_site": DatabaseDown(CATALOG_DOWN, None),
    "eco_list_files": DatabaseDown(CATALOG_DOWN, None),
    # Its kept variables file is read from the database; down, the file is read from NEON instead.
    "eco_describe_tables": DatabaseDown(CATALOG_DOWN, None),
    "eco_stack_tables": DatabaseDown(CATALOG_DOWN, None),
    "eco_list_releases": DatabaseDown(CATALOG_DOWN, None),
    "eco_search_products": DatabaseDown(CATALOG_DOWN, None),
    "eco_search_sites": DatabaseDown(CATALOG_DOWN, None),
    # The stored location catalog and site subtrees are read from the database on every call.
    "eco_find_locations": DatabaseDown(CATALOG_DOWN, CATALOG_DOWN),
    "eco_get_location": DatabaseDown(CATALOG_DOWN, CATALOG_DOWN),
}


# ---------------------------------------------------------------------------------- Redis down
# A fault of the deployment, not of the upstream: the Redis behind the answer cache and the shared
# rate-limit bucket is killed under load and started again (a redis-server of the test's own,
# tests/own_redis.py). Redis holds nothing a call cannot do without, so every row must answer as if
# nothing happened (`Expect()`: no error, no note), the cache skipped and the rate limit the
# process's own share, and Redis must be used again once it is back.
REDIS_DOWN = "redis_down"
REDIS_DOWN_EXPECT = Expect()


def redis_settings(url: str) -> dict[str, Any]:
    """The Django settings REDIS_URL gives (eco_service.settings), for the Redis at `url`."""
    return {"REDIS_URL": url, "CACHES": {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                                     "LOCATION": url, "KEY_PREFIX": "eco", "TIMEOUT": None}}}
