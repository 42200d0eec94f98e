"""Fault injection: tests ask for 5xx bursts, latency, hangs, resets, bad bodies and more."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from threading import Lock

KINDS = {"status", "latency", "hang", "reset", "malformed", "graphql_outage", "rate_limit",
         "bad_md5", "truncate", "redirect",
         # Record rewrites (REST release and product records; see rest.record_faults):
         "doi_mismatch", "release_omits"}


@dataclass
class Fault:
    kind: str
    route: str = ""  # regex searched in the request path
    count: int | None = None  # None: until cleared
    params: dict = field(default_factory=dict)
    hits: int = 0

    def matches(self, path: str) -> bool:
        if self.count is not None and self.hits >= self.count:
            return False
        if self.route and not re.search(self.route, path):
            return False
        name = self.params.get("file")
        return not name or path.endswith("/" + name) or name in path

    def to_json(self) -> dict:
        return {"kind": self.kind, "route": self.route, "count": self.count,
                "params": self.params, "hits": self.hits}


class Faults:
    """sim.faults: add(kind=..., route=regex, count=N, **params) and clear()."""

    def __init__(self):
        self._items: list[Fault] = []
        self._lock = Lock()

    def add(self, kind: str, route: str = "", count: int | None = None, **params) -> Fault:
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {sorted(KINDS)}")
        if kind == "graphql_outage" and not route:
            route = r"^/graphql"
        f = Fault(kind, route, count, params)
        with self._lock:
            self._items.append(f)
        return f

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def list(self) -> list[Fault]:
        with self._lock:
            return list(self._items)

    def take(self, path: str, kinds: set[str] | None = None) -> Fault | None:
        """The first live fault for this path (its use is counted)."""
        with self._lock:
            for f in self._items:
                if (kinds is None or f.kind in kinds) and f.matches(path):
                    f.hits += 1
                    return f
        return None
