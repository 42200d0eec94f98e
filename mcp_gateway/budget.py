"""The result byte budget: results above `limits.max_result_bytes` of compact JSON lose items from
the end of their top-level lists (records are never cut in half), and the page object of each
trimmed list says so; a result still above `limits.hard_max_result_bytes` is refused."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from eco_core.errors import EcoError

ENVELOPE_LISTS = frozenset({"notes", "nextSteps"})


def compact_size(payload: Any) -> int:
    return len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def _page_key(list_key: str, page_lists: Mapping[str, str], payload: dict[str, Any]) -> str | None:
    for candidate in (page_lists.get(list_key), f"{list_key}Page"):
        if candidate and isinstance(payload.get(candidate), dict):
            return candidate
    return None


def fit(
    payload: dict[str, Any],
    *,
    max_bytes: int,
    hard_max_bytes: int,
    page_lists: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Return the payload (a trimmed copy when needed) and the notes describing any trimming.

    Raises `result_too_large` when even trimming cannot bring it under the hard limit.
    """
    size = compact_size(payload)
    if size <= max_bytes:
        return payload, []
    page_lists = page_lists or {}
    out = copy.deepcopy(payload)
    original = {k: len(v) for k, v in out.items() if isinstance(v, list) and k not in ENVELOPE_LISTS}
    while size > max_bytes:
        sizes = {k: compact_size(out[k]) for k in original if out[k]}
        if not sizes:
            break
        key = max(sizes, key=lambda k: sizes[k])
        items = out[key]
        per_item = max(1, sizes[key] // len(items))
        drop = min(len(items), max(1, -(-(size - max_bytes) // per_item)))
        del items[len(items) - drop:]
        size = compact_size(out)
    notes: list[str] = []
    for key, before in original.items():
        kept = len(out[key])
        if kept == before:
            continue
        page_key = _page_key(key, page_lists, out)
        hint = ""
        if page_key:
            page = out[page_key]
            page["truncated"] = True
            if "returned" in page:
                page["returned"] = kept
            if isinstance(page.get("offset"), int):
                page["nextOffset"] = page["offset"] + kept
                hint = f"; continue with offset={page['nextOffset']}"
        notes.append(f"Result trimmed to fit {max_bytes} bytes: kept {kept} of {before} entries of '{key}'{hint}.")
    if size > hard_max_bytes:
        raise EcoError(
            "result_too_large",
            f"the result is {size} bytes after trimming, above the limit of {hard_max_bytes}",
            details={"bytes": size, "limit": hard_max_bytes},
        )
    return out, notes
