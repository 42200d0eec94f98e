"""Remembered answers: one registry of bounded tables, emptied whenever the catalog index changes.

Every memo the service keeps (a search's hits, an answer returned again for the same input, a
validated input, a result's encoded text) is a table of `memos`, made once at import:

    _answers = memos.by_identity("products.answers", max_entries=256)   keyed by the objects themselves
    _runs = memos.by_value("availability.runs", max_entries=4096)       keyed by hashable values

The index holder (catalog.index) calls `memos.drop_all()` when it starts handing out a different
index, so no remembered answer outlives the catalog it was made from and no table decides on its
own when an answer is stale. Besides this registry the process keeps only three caches: the
upstream answer cache (upstream.cache), the index holder (catalog.index) and the tool registry
(mcp_gateway.registry); tests/architecture/test_process_state.py holds the code to that.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from eco_core.kept import KeptByIdentity

V = TypeVar("V")


class KeptByValue(Generic[V]):
    """A bounded mapping from hashable keys to values, oldest entry forgotten first."""

    def __init__(self, *, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        return self._entries.get(key)

    def put(self, key: Hashable, value: V) -> None:
        self._entries.pop(key, None)
        while len(self._entries) >= self.max_entries:
            self._entries.popitem(last=False)
        self._entries[key] = value

    def clear(self) -> None:
        self._entries.clear()

    def drop_where(self, stale: Callable[[Hashable], bool]) -> int:
        """Forget the entries whose key `stale` picks (what they were made from is gone)."""
        gone = [k for k in self._entries if stale(k)]
        for k in gone:
            del self._entries[k]
        return len(gone)

    def __len__(self) -> int:
        return len(self._entries)


Table = KeptByIdentity | KeptByValue


class Memos:
    def __init__(self) -> None:
        self._tables: dict[str, Table] = {}
        self._lock = threading.Lock()

    def _register(self, name: str, table: Table) -> None:
        with self._lock:
            if name in self._tables:
                raise ValueError(f"memo table {name!r} is made twice")
            self._tables[name] = table

    def by_identity(self, name: str, *, max_entries: int, max_weight: int | None = None) -> KeptByIdentity:
        table: KeptByIdentity = KeptByIdentity(max_entries=max_entries, max_weight=max_weight)
        self._register(name, table)
        return table

    def by_value(self, name: str, *, max_entries: int) -> KeptByValue:
        table: KeptByValue = KeptByValue(max_entries=max_entries)
        self._register(name, table)
        return table

    def drop_all(self) -> None:
        """Forget every remembered answer (a new catalog index, or a test starting clean)."""
        for table in list(self._tables.values()):
            table.clear()

    def sizes(self) -> dict[str, int]:
        return {name: len(table) for name, table in self._tables.items()}

    def names(self) -> list[str]:
        return sorted(self._tables)


memos = Memos()
