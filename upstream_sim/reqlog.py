"""Log of the requests the simulator answered, so tests can see what clients really sent."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from threading import Lock


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict
    headers: dict  # lower-case names
    host: str
    status: int = 0
    port: int = 0

    def to_json(self) -> dict:
        return asdict(self)


class RequestLog:
    def __init__(self, limit: int = 100_000):
        self._items: list[RequestRecord] = []
        self._lock = Lock()
        self.limit = limit

    def add(self, rec: RequestRecord) -> None:
        with self._lock:
            self._items.append(rec)
            if len(self._items) > self.limit:
                del self._items[: self.limit // 10]

    def __iter__(self):
        return iter(self.snapshot())

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i):
        return self.snapshot()[i]

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._items)

    def matching(self, route_regex: str) -> list[RequestRecord]:
        rx = re.compile(route_regex)
        return [r for r in self.snapshot() if rx.search(r.path)]

    def count(self, route_regex: str = "") -> int:
        return len(self.matching(route_regex))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
