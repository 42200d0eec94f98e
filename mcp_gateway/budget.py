"""The result byte budget: results above `limits.max_result_bytes` of compact JSON lose items from
the end of their top-level lists (records are never cut in half), and the page object of each
trimmed list says so; a result still above `limits.hard_max_result_bytes` is refused.

The size is measured on what is sent: the trimmed payload with its page fields, notes and
next-page steps already added. A trimmed paged list continues where the page ended: its page's
`nextOffset`, the next-page step (added when the tool offered none) and the note all name the
list's own offset argument (`offset`, `products_offset`, ...) with the same value. A paged list
that cannot keep even one item is `result_too_large`: an empty page whose `nextOffset` equals its
offset would send a client following it round in circles."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from eco_core.errors import EcoError

ENVELOPE_LISTS = frozenset({"notes", "nextSteps"})


def compact_size(payload: Any) -> int:
    return len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def encode(payload: Any) -> str:
    """The compact JSON text of a result: what its text content carries and what the budget measures."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def encoded_size(text: str) -> int:
    # UTF-8 bytes; an ASCII-only text (most results) is its length, known without encoding it.
    return len(text) if text.isascii() else len(text.encode())


def _page_key(list_key: str, page_lists: Mapping[str, str], payload: dict[str, Any]) -> str | None:
    for candidate in (page_lists.get(list_key), f"{list_key}Page"):
        if candidate and isinstance(payload.get(candidate), dict):
            return candidate
    return None


def offset_argument(list_key: str, offset_fields: Iterable[str]) -> str | None:
    """The input that pages a list: `<words>_offset` whose words all name the list
    (`dataProducts` → `products_offset`, `changeLogs` → `change_logs_offset`), else `offset`."""
    fields = list(offset_fields)
    words = set(re.sub(r"(?<!^)(?=[A-Z])", "_", list_key).lower().split("_"))
    for f in fields:
        if f != "offset" and f.endswith("_offset") and set(f[: -len("_offset")].split("_")) <= words:
            return f
    return "offset" if "offset" in fields else None


def fit(
    payload: dict[str, Any],
    *,
    max_bytes: int,
    hard_max_bytes: int,
    page_lists: Mapping[str, str] | None = None,
    tool: str | None = None,
    arguments: Mapping[str, Any] | None = None,
    offset_fields: Iterable[str] = (),
) -> dict[str, Any]:
    """Return the payload (a trimmed copy, its notes and next steps updated, when needed).

    `tool`, `arguments` (the call's own, snake_case) and `offset_fields` (the tool's paging
    inputs) let a trimmed page point at its continuation. Raises `result_too_large` when a paged
    list cannot keep one item, or when even trimming cannot bring the result under the hard limit.
    """
    if compact_size(payload) <= max_bytes:
        return payload
    ctx = _Context(page_lists or {}, tool, dict(arguments or {}), list(offset_fields), max_bytes)
    before = {k: len(v) for k, v in payload.items() if isinstance(v, list) and k not in ENVELOPE_LISTS}
    kept = dict(before)
    while True:
        out = ctx.decorate(payload, before, kept)
        size = compact_size(out)
        if size <= max_bytes:
            break
        sizes = {k: compact_size(payload[k][: kept[k]]) for k in kept if kept[k]}
        if not sizes:
            break
        key = max(sizes, key=lambda k: sizes[k])
        per_item = max(1, sizes[key] // kept[key])
        kept[key] -= min(kept[key], max(1, -(-(size - max_bytes) // per_item)))
    for key, n in before.items():
        if n and not kept[key] and _page_key(key, ctx.page_lists, payload):
            raise EcoError(
                "result_too_large",
                f"not even one entry of '{key}' fits the result limit of {max_bytes} bytes",
                details={"list": key, "limit": max_bytes},
                hint="Narrow the request (a filter, or fewer sections).",
            )
    if size > hard_max_bytes:
        raise EcoError(
            "result_too_large",
            f"the result is {size} bytes after trimming, above the limit of {hard_max_bytes}",
            details={"bytes": size, "limit": hard_max_bytes},
        )
    return out


class _Context:
    def __init__(self, page_lists: Mapping[str, str], tool: str | None, arguments: dict[str, Any],
                 offset_fields: list[str], max_bytes: int) -> None:
        self.page_lists, self.tool, self.arguments = page_lists, tool, arguments
        self.offset_fields, self.max_bytes = offset_fields, max_bytes

    def decorate(self, payload: dict[str, Any], before: Mapping[str, int], kept: Mapping[str, int]) -> dict[str, Any]:
        """The payload as sent with `kept` entries of each list."""
        out = {k: v for k, v in payload.items()}
        for key in ("notes", "nextSteps"):
            if isinstance(out.get(key), list):
                out[key] = copy.deepcopy(out[key])
        for key, n in before.items():
            if kept[key] == n:
                continue
            out[key] = payload[key][: kept[key]]
            hint = ""
            page_key = _page_key(key, self.page_lists, out)
            if page_key:
                page = out[page_key] = dict(out[page_key])
                page["truncated"] = True
                if "returned" in page:
                    page["returned"] = kept[key]
                if isinstance(page.get("offset"), int):
                    page["nextOffset"] = page["offset"] + kept[key]
                    hint = self._continue(out, key, page["nextOffset"])
            out.setdefault("notes", []).append(
                f"Result trimmed to fit {self.max_bytes} bytes: kept {kept[key]} of {n} entries of '{key}'{hint}.")
        return out

    def _continue(self, out: dict[str, Any], key: str, next_offset: int) -> str:
        arg = offset_argument(key, self.offset_fields)
        if arg is None or self.tool is None:
            return ""
        steps = out.setdefault("nextSteps", [])
        mine = [s for s in steps if s.get("tool") == self.tool and arg in (s.get("arguments") or {})]
        for step in mine:
            step["arguments"] = {**step["arguments"], arg: next_offset}
        if not mine:
            steps.append({"tool": self.tool, "arguments": {**self.arguments, arg: next_offset},
                          "why": f"The rest of '{key}' (this page was trimmed to fit)."})
        return f"; continue with {arg}={next_offset}"
