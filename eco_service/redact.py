"""Keeps secrets out of everything a person or a log collector can read.

Every secret the process learns (the configured token, tokens arriving in request headers) is
registered here; a logging filter installed on the root handlers replaces them in every record,
and `scrub()` is there for any other text that leaves the process (error messages, results).
"""

from __future__ import annotations

import hashlib
import logging
import threading

MASK = "********"
_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    # Very short strings would mask ordinary words; real tokens are long.
    if value and len(value) >= 8:
        with _lock:
            _secrets.add(value)


def scrub(text: str) -> str:
    if not _secrets or not text:
        return text
    for secret in tuple(_secrets):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def token_hash(token: str | None) -> str:
    """One-way, short identity for a token: safe in cache keys, metrics and `_meta`."""
    if not token:
        return "anonymous"
    return "tok-" + hashlib.sha256(token.encode()).hexdigest()[:12]


class RedactingFilter(logging.Filter):
    """Renders the record once, masks secrets in the result, and freezes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not hide the line
            message = str(record.msg)
        clean = scrub(message)
        record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            import traceback

            record.exc_text = scrub("".join(traceback.format_exception(*record.exc_info)))
            record.exc_info = None
        return True
