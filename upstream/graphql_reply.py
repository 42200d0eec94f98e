"""The GraphQL window's replies (eco_graphql), read and cut to the caller's byte budget in time and
memory linear in their size, in small steps meant for a worker thread.

    read_reply(body, max_bytes, cancel=None) -> Reply(data, errors, truncated_paths, bytes_total)
    shorten(data, errors, max_bytes) -> (data, truncated_paths, bytes_total)   cuts data in place

Sizes are those of compact JSON (UTF-8, no escapes for non-ASCII), worked out once, bottom-up, as
values are read. `read_reply` walks the reply's outer levels itself and hands each deeper value to
json's C scanner, so no single step holds the interpreter lock for the whole reply (json.loads of
a few MB would stall every other thread, the event loop's included, for its whole duration); and
it drops, while reading, the items of a list that no cut could keep (those past the budget), so a
reply of many MB leaves little more than its text and what the budget keeps in memory. A dropped
item counts the bytes it was sent in: NEON sends compact JSON, so the same size without encoding
it again (an upstream that indents would make bytes_total a little larger than compact).

The cut: lists are cut from their end, largest first, until {data, errors} fits. A list keeps its
first item while any other list can still give, so the answer keeps its shape (one product with
fewer sites beats no product). A list holding a cut list is cut before it, so lists are visited
outermost first, each once, through a heap ordered by size.
"""

from __future__ import annotations

import heapq
import itertools
import json
import json.decoder
import json.scanner
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True).encode
_encode_str = json.encoder.encode_basestring  # what _ENCODE does to a str (C when available)
# (value, end) of the JSON value at an index, and of a string's rest after its quote (C when available).
_scan: Callable[[str, int], tuple[Any, int]] = cast(Any, json.scanner).make_scanner(json.JSONDecoder())
_scanstring: Callable[[str, int], tuple[str, int]] = cast(Any, json.decoder).scanstring
_skip_ws = cast(Callable[[str, int], re.Match[str]], re.compile(r"[ \t\n\r]*").match)  # matches, maybe empty
_CONTAINERS = itertools.repeat((dict, list))  # any(map(isinstance, xs, _CONTAINERS)): no Python frame per item
# Containers this deep (0: the reply object, 1: data, 2: a root field's value, 3: its items, ...)
# are read by the C scanner in one go; shallower ones item by item. At 6, a product's siteCodes
# items are walked and each availableMonths list is one scan. An item dropped past the budget is
# needed only for its end: scanned from depth 4 (a whole siteCodes list of one product at once).
WALK_DEPTH = 6
DROPPED_WALK_DEPTH = 4
# On a worker thread, every SLICE_S of work pauses PAUSE_S (checked every CHECK_EVERY steps, where
# cancellation is checked too). A thread busy in Python code gives up the interpreter lock only
# when another asks for it, after the interpreter's switch interval: an event loop waiting on it loses
# that much at each of its iterations, and a request takes dozens. Pausing hands it over at once.
SLICE_S = 0.0005
PAUSE_S = 0.0005
CHECK_EVERY = 4
# Compact JSON's "{"data":,"errors":}" around the two values.
ENVELOPE_BYTES = len('{"data":,"errors":}')


class Cancelled(Exception):
    """The caller gave up (its deadline passed) while the reply was being read or cut."""


class _Pace:
    """Called at each step of the work: raises Cancelled once `cancel` is set; with `pause` (on a
    worker thread, never on the event loop), sleeps PAUSE_S after every SLICE_S of work."""

    def __init__(self, cancel: threading.Event | None, pause: bool) -> None:
        self.cancel, self.pause = cancel, pause
        self.steps, self.since = 0, time.perf_counter()

    def __call__(self) -> None:
        self.steps += 1
        if self.steps % CHECK_EVERY:
            return
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled
        if self.pause and time.perf_counter() - self.since >= SLICE_S:
            time.sleep(PAUSE_S)
            self.since = time.perf_counter()


class BadReply(ValueError):
    """The body is not one JSON object."""


@dataclass
class Reply:
    data: Any
    errors: list[Any] | None
    truncated_paths: list[str]
    bytes_total: int


# -- sizes ---------------------------------------------------------------------------------

def leaf_size(value: Any) -> int:
    """Bytes of a scalar (or any value, slowly) in compact UTF-8 JSON."""
    if isinstance(value, str):
        text = _encode_str(value)
        return len(text) if text.isascii() else len(text.encode())
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, int):
        return len(int.__repr__(value))
    text = _ENCODE(value)
    return len(text) if text.isascii() else len(text.encode())


def measure(value: Any, sizes: dict[int, int] | None) -> int:
    """The compact JSON size of `value`; with `sizes`, every container's size under its id()."""
    if isinstance(value, dict):
        if any(map(isinstance, value.values(), _CONTAINERS)):
            n = 1 + len(value)  # braces and commas
            for k, v in value.items():
                n += leaf_size(k) + 1 + (measure(v, sizes) if isinstance(v, (dict, list)) else leaf_size(v))
        else:
            n = leaf_size(value)  # scalars only: one C encode
    elif isinstance(value, list):
        if any(map(isinstance, value, _CONTAINERS)):
            n = 1 + len(value)
            for v in value:
                n += measure(v, sizes) if isinstance(v, (dict, list)) else leaf_size(v)
        else:
            n = leaf_size(value)
    else:
        return leaf_size(value)
    if sizes is not None:
        sizes[id(value)] = n
    return n


def _envelope(data_size: int, errors: list[Any] | None) -> int:
    return ENVELOPE_BYTES + data_size + measure(errors, None)


# -- reading -------------------------------------------------------------------------------

class _Reader:
    """One reply's text, read into values with their sizes. `keep=False` reads a value only for
    its size and end (an item dropped past the budget); `cut=True` below "data" only."""

    def __init__(self, text: str, budget: int, pace: _Pace) -> None:
        self.text, self.budget, self.pace = text, budget, pace
        self.sizes: dict[int, int] = {}
        # id(list) -> (the list, items sent), for lists whose tail was dropped; holding the list keeps
        # its id from being reused by a later one.
        self.sent_len: dict[int, tuple[list[Any], int]] = {}
        self.key_sizes: dict[str, int] = {}
        self.ascii = text.isascii()

    def sent_size(self, i: int, end: int) -> int:
        """The bytes text[i:end] took as sent: what compact JSON takes for NEON's replies (no
        whitespace between tokens, non-ASCII as UTF-8), at most a little more otherwise."""
        return end - i if self.ascii else len(self.text[i:end].encode())

    def value(self, i: int, depth: int, keep: bool, cut: bool) -> tuple[Any, int, int]:
        """(value, compact size, end) of the value starting at text[i]."""
        self.pace()
        text = self.text
        if depth < (WALK_DEPTH if keep else DROPPED_WALK_DEPTH) and i < len(text):
            if text[i] == "{":
                return self.obj(i, depth, keep, cut)
            if text[i] == "[":
                j = _skip_ws(text, i + 1).end()
                if j < len(text) and text[j] in "{[":
                    return self.arr(j, depth, keep, cut)
        try:
            value, end = _scan(text, i)
        except StopIteration:
            raise BadReply(f"no JSON value at character {i}") from None
        return value, measure(value, self.sizes) if keep else self.sent_size(i, end), end

    def obj(self, i: int, depth: int, keep: bool, cut: bool) -> tuple[dict[str, Any], int, int]:
        text, out, key_sizes = self.text, {}, self.key_sizes
        size, members, j = 2, 0, _skip_ws(text, i + 1).end()
        if text.startswith("}", j):
            j += 1
        else:
            while True:
                if not text.startswith('"', j):
                    raise BadReply(f"expected a key at character {j}")
                key, j = _scanstring(text, j + 1)
                j = _skip_ws(text, j).end()
                if not text.startswith(":", j):
                    raise BadReply(f"expected ':' at character {j}")
                value, vsize, j = self.value(_skip_ws(text, j + 1).end(), depth + 1, keep,
                                             cut or (depth == 0 and key == "data"))
                if keep:
                    out[key] = value
                ksize = key_sizes.get(key)
                if ksize is None:
                    ksize = key_sizes[key] = leaf_size(key)
                size += (1 if members else 0) + ksize + 1 + vsize
                members += 1
                j = _skip_ws(text, j).end()
                if text.startswith(",", j):
                    j = _skip_ws(text, j + 1).end()
                    continue
                if text.startswith("}", j):
                    j += 1
                    break
                raise BadReply(f"expected ',' or '}}' at character {j}")
        if keep:
            self.sizes[id(out)] = size
        return out, size, j

    def arr(self, j: int, depth: int, keep: bool, cut: bool) -> tuple[list[Any], int, int]:
        """A list whose first item starts at text[j] (a container: lists of scalars are one scan)."""
        text, out = self.text, []
        size, n, dropping = 2, 0, False
        while True:
            held = keep and not dropping
            value, vsize, j = self.value(j, depth + 1, held, cut)
            step = vsize + (1 if n else 0)
            # No cut keeps an item whose prefix is over the budget (a cut keeps a prefix that fits,
            # or only the first item): past that, items are read for their size and let go.
            if held and cut and n and size + step > self.budget:
                dropping = True
            elif held:
                out.append(value)
            size += step
            n += 1
            j = _skip_ws(text, j).end()
            if text.startswith(",", j):
                j = _skip_ws(text, j + 1).end()
                continue
            if text.startswith("]", j):
                j += 1
                break
            raise BadReply(f"expected ',' or ']' at character {j}")
        if keep:
            self.sizes[id(out)] = size
            if dropping:
                self.sent_len[id(out)] = (out, n)
        return out, size, j


def read_reply(body: bytes | bytearray, max_bytes: int, cancel: threading.Event | None = None, *,
               on_worker: bool = False) -> Reply:
    """The reply parsed and cut to `max_bytes` (see the module docstring). BadReply when the body
    is not a JSON object (or not UTF-8); Cancelled when `cancel` is set meanwhile. `on_worker`:
    running on a worker thread, so pausing now and then to let the event loop run."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadReply(f"not UTF-8: {exc.reason}") from None
    pace = _Pace(cancel, on_worker)
    reader = _Reader(text, max_bytes, pace)
    start = _skip_ws(text, 0).end()
    if not text.startswith("{", start):
        raise BadReply("the reply is not a JSON object")
    try:
        top, _, end = reader.obj(start, 0, True, False)
    except RecursionError:
        raise BadReply("the reply nests too deep") from None
    except json.JSONDecodeError as exc:
        raise BadReply(exc.msg) from None
    if _skip_ws(text, end).end() != len(text):
        raise BadReply(f"extra data after the reply at character {end}")
    data, errors = top.pop("data", None), top.pop("errors", None)
    if errors is not None and not isinstance(errors, list):
        raise BadReply("errors is not a list")
    total = _envelope(reader.sizes[id(data)] if isinstance(data, (dict, list)) else leaf_size(data), errors)
    paths = cut(data, total, max_bytes, reader.sizes, reader.sent_len, pace) if total > max_bytes else []
    return Reply(data=data, errors=errors, truncated_paths=paths, bytes_total=total)


# -- cutting -------------------------------------------------------------------------------

def shorten(data: Any, errors: list[dict[str, Any]] | None, max_bytes: int) -> tuple[Any, list[str], int]:
    """Cut `data` in place until {data, errors} fits `max_bytes` of compact JSON; returns it, the
    JSON paths of the lists cut, and the original size."""
    sizes: dict[int, int] = {}
    total = _envelope(measure(data, sizes), errors)
    return data, cut(data, total, max_bytes, sizes, {}, _Pace(None, False)) if total > max_bytes else [], total


def cut(data: Any, total: int, max_bytes: int, sizes: dict[int, int], sent_len: dict[int, tuple[list[Any], int]],
        pace: _Pace) -> list[str]:
    """Cut lists of `data` (whose containers' sizes are in `sizes`; `sent_len` holds the sent
    length of lists read only in part) until `total` is down to `max_bytes`. Returns the paths cut."""
    size, paths, seen, order = total, [], set(), itertools.count()
    for keep in (1, 0):
        if size <= max_bytes:
            break
        if keep == 0:
            # Cuts changed the sizes of the lists' ancestors: size the (much smaller) rest afresh.
            sizes = {}
            measure(data, sizes)
            sent_len = {}
        heap: list[tuple[int, int, str, list[Any]]] = []

        def outermost(value: Any, path: str, keep: int = keep, heap: list[Any] = heap,
                      sizes: dict[int, int] = sizes, sent_len: dict[int, tuple[list[Any], int]] = sent_len) -> None:
            """Push the lists longer than `keep` that no such list holds; the rest are reached once
            their holder is down to `keep` items."""
            if isinstance(value, dict):
                for k, v in value.items():
                    if isinstance(v, (dict, list)):
                        outermost(v, f"{path}.{k}")
            elif isinstance(value, list):
                held, sent = sent_len.get(id(value), (value, len(value)))
                if (sent if held is value else len(value)) > keep:
                    heapq.heappush(heap, (-sizes[id(value)], next(order), path, value))
                    return
                for i, v in enumerate(value):
                    if isinstance(v, (dict, list)):
                        outermost(v, f"{path}[{i}]")

        outermost(data, "$")
        while size > max_bytes and heap:
            pace()
            neg, _, path, items = heapq.heappop(heap)
            lsize = -neg
            # Keep the longest prefix that brings the list down by the excess (only kept items are sized).
            target, running, n = lsize - (size - max_bytes), 2, 0
            for item in items:
                step = (sizes[id(item)] if isinstance(item, (dict, list)) else leaf_size(item)) + (1 if n else 0)
                if n >= keep and running + step > target:
                    break
                running += step
                n += 1
            del items[n:]
            sent_len.pop(id(items), None)
            sizes[id(items)] = running
            size -= lsize - running
            if path not in seen:
                seen.add(path)
                paths.append(path)
            if size > max_bytes:
                for i, item in enumerate(items):
                    if isinstance(item, (dict, list)):
                        outermost(item, f"{path}[{i}]")
    return paths
