"""Clipping long upstream text to a caller's character budget."""

from __future__ import annotations

ELLIPSIS = "…"


def clip(text: str | None, budget: int) -> tuple[str | None, bool]:
    """The text cut to at most `budget` characters (at a word boundary when one is near, ending
    in an ellipsis), and whether anything was cut."""
    if text is None or len(text) <= budget:
        return text, False
    cut = text[: max(budget - 1, 0)]
    space = cut.rfind(" ")
    if space >= budget * 0.8:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS, True
