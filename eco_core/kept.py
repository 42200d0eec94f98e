"""Values kept for objects by identity, for the hot path's reuse of work already done on the same
objects (a kept input's capped page sizes, a kept result's dump and text, a kept answer). Keyed
by the objects' ids, each entry holding the objects themselves, so an id cannot be reused by
another object while its entry lives. Bounded by entries and by weight (what a value costs to
hold, in the caller's unit: bytes of text, rows), oldest entry first; a value heavier than the
whole budget is not kept at all.
"""

from __future__ import annotations

from operator import is_
from typing import Generic, TypeVar

V = TypeVar("V")


class KeptByIdentity(Generic[V]):
    def __init__(self, *, max_entries: int, max_weight: int | None = None) -> None:
        self.max_entries, self.max_weight = max_entries, max_weight
        self._entries: dict[tuple[int, ...], tuple[tuple[object, ...], V, int]] = {}
        self.weight = 0

    def get(self, *objs: object) -> V | None:
        entry = self._entries.get(tuple(map(id, objs)))
        # Same ids, hence as many objects; each the very one held (map in C, no generator frame:
        # this runs several times on every call).
        if entry is None or not all(map(is_, entry[0], objs)):
            return None
        return entry[1]

    def put(self, *objs: object, value: V, weight: int = 0) -> None:
        if self.max_weight is not None and weight > self.max_weight:
            return
        key = tuple(map(id, objs))
        old = self._entries.pop(key, None)
        if old is not None:
            self.weight -= old[2]
        while self._entries and (len(self._entries) >= self.max_entries or (
                self.max_weight is not None and self.weight + weight > self.max_weight)):
            self.weight -= self._entries.pop(next(iter(self._entries)))[2]
        self._entries[key] = (objs, value, weight)
        self.weight += weight

    def put_latest(self, first: object, *rest: object, value: V, weight: int = 0) -> None:
        """`put`, holding entries of one `first` object at a time (a catalog index): those kept
        under an older one can never be asked for again, and go first. All entries share one
        first object, so the oldest entry tells."""
        oldest = self.oldest()
        if oldest is not None and oldest[0] is not first:
            self.clear()
        self.put(first, *rest, value=value, weight=weight)

    def clear(self) -> None:
        self._entries.clear()
        self.weight = 0

    def __len__(self) -> int:
        return len(self._entries)

    def oldest(self) -> tuple[object, ...] | None:
        """The objects of the oldest entry (None when empty), without listing every entry."""
        for entry in self._entries.values():
            return entry[0]
        return None

    def held(self) -> list[tuple[object, ...]]:
        """The objects of every entry, oldest first."""
        return [entry[0] for entry in self._entries.values()]
