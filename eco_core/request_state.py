"""The continuation state of a multi-round tool call (`requestState`), as the spec wants it:
unsigned base64url JSON of at most 16 KiB holding only the question and its candidates, expiring
after one hour. Being self-contained, it works across replicas and restarts; being unsigned, it
never carries a token, a path or an authorization decision, and whatever comes back is
re-validated against a fresh lookup by the tool."""

from __future__ import annotations

import base64
import binascii
import json
import time
from typing import Any

from eco_core.errors import EcoError

MAX_BYTES = 16 * 1024
TTL_S = 3600
VERSION = 1


def encode(question: dict[str, Any], candidates: list[Any], *, now: float | None = None) -> str:
    now = time.time() if now is None else now
    body = {"v": VERSION, "exp": int(now + TTL_S), "question": question, "candidates": candidates}
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    token = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    if len(token) > MAX_BYTES:
        raise ValueError(f"requestState would be {len(token)} bytes, above {MAX_BYTES}")
    return token


def decode(token: str, *, now: float | None = None) -> dict[str, Any]:
    """The question and candidates, or `invalid_argument` for a state that is malformed, too
    large or expired."""
    now = time.time() if now is None else now
    if not isinstance(token, str) or len(token) > MAX_BYTES:
        raise _bad("requestState is not a string of at most 16 KiB")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = json.loads(raw)
    except (binascii.Error, ValueError):
        raise _bad("requestState is not base64url JSON") from None
    if not isinstance(body, dict) or body.get("v") != VERSION or not isinstance(body.get("exp"), int):
        raise _bad("requestState has an unknown shape")
    if body["exp"] <= now:
        raise _bad("requestState has expired; call the tool again without it")
    if not isinstance(body.get("question"), dict) or not isinstance(body.get("candidates"), list):
        raise _bad("requestState has an unknown shape")
    return {"question": body["question"], "candidates": body["candidates"], "expiresAt": body["exp"]}


def _bad(message: str) -> EcoError:
    return EcoError("invalid_argument", message, details={"field": "requestState"})
