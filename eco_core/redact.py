"""Keeps secrets out of everything a person or a log collector can read, without letting a
caller decide what gets masked in anybody else's answer.

Three kinds of secret, each with its own reach:

* configured secrets (the operator's token, `register_secret`): masked everywhere, in every
  result, error and log line. Only configuration registers them, so no caller can add one.
* the token of the current tool call (`call_secret`): masked in that call's own result, errors
  and log lines only. It lives in a context variable, so concurrent callers never see each
  other's token in their masks, and it is gone when the call ends.
* request tokens that were honoured and actually used upstream (`remember_request_token`):
  masked in log lines only (a line can be written outside the call's context, e.g. by a
  library), never in answers. A small LRU, so a caller sending a new token per request cannot
  grow memory or slow the filter.

Results are masked by walking their structure and editing string values (`scrub_values`), never
by substring-replacing serialized JSON: a "secret" such as `":{"input":"` or `productCode` would
otherwise rewrite keys or break the JSON itself.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

MASK = "********"
# Very short strings would mask ordinary words; real tokens are long.
MIN_SECRET_LENGTH = 8
# One configured token per loaded configuration; the bound only matters for processes (tests)
# that load many configurations. The active token is re-registered whenever it is used.
CONFIGURED_BOUND = 32
# Request tokens kept for the log filter after their call ended.
REQUEST_TOKEN_BOUND = 256

_lock = threading.Lock()
_configured: OrderedDict[str, None] = OrderedDict()
_request_tokens: OrderedDict[str, None] = OrderedDict()
# Immutable snapshots, replaced under the lock, so readers (every log line, every result) never lock.
_configured_view: tuple[str, ...] = ()
_log_view: tuple[str, ...] = ()
_call_secrets: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("eco_call_secrets", default=())


def _maskable(value: str | None) -> bool:
    return bool(value) and len(value or "") >= MIN_SECRET_LENGTH


def _remember(store: OrderedDict[str, None], value: str, bound: int) -> None:
    store[value] = None
    store.move_to_end(value)
    while len(store) > bound:
        store.popitem(last=False)


def _refresh_views() -> None:
    global _configured_view, _log_view
    _configured_view = tuple(_configured)
    _log_view = tuple(dict.fromkeys((*_configured, *_request_tokens)))


def register_secret(value: str | None) -> None:
    """A secret from configuration: masked in every result, error and log line of the process.
    Never call this with anything a caller sent. The current call's own token (`call_secret`) is
    not promoted: code that registers "the token this call runs with" (the upstream call scope)
    cannot turn a caller's header into a process-wide mask that way."""
    if not _maskable(value) or value in _call_secrets.get():
        return
    assert value is not None
    with _lock:
        if value in _configured:
            _configured.move_to_end(value)
            return
        _remember(_configured, value, CONFIGURED_BOUND)
        _refresh_views()


def remember_request_token(value: str | None) -> None:
    """A caller's token that was honoured and used upstream: masked in log lines from now on
    (bounded LRU), never in anyone's answer."""
    if not _maskable(value):
        return
    assert value is not None
    with _lock:
        if value in _request_tokens:
            _request_tokens.move_to_end(value)
            return
        _remember(_request_tokens, value, REQUEST_TOKEN_BOUND)
        _refresh_views()


def call_secret(value: str | None) -> contextlib.AbstractContextManager[None]:
    """Masks `value` in whatever this call (this context) writes: its result, errors, log lines."""
    # Most calls have no token to mask: one shared do-nothing context for them, not a generator.
    return _masking(value) if value is not None and _maskable(value) else _NOTHING_TO_MASK


_NOTHING_TO_MASK: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


@contextlib.contextmanager
def _masking(value: str) -> Iterator[None]:
    reset = _call_secrets.set((*_call_secrets.get(), value))
    try:
        yield
    finally:
        _call_secrets.reset(reset)


def registry_size() -> int:
    """How many secrets the process holds (configured + remembered request tokens); bounded by
    CONFIGURED_BOUND + REQUEST_TOKEN_BOUND whatever callers send."""
    with _lock:
        return len(_configured) + len(_request_tokens)


def known_secrets() -> tuple[str, ...]:
    """Every secret the process holds plus the current call's: what must never reach a log line."""
    return tuple(dict.fromkeys((*_log_view, *_call_secrets.get())))


def _answer_secrets() -> tuple[str, ...]:
    call = _call_secrets.get()
    return _configured_view + call if call else _configured_view


def _mask(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub(text: str) -> str:
    """Masks configured secrets and the current call's token in a plain text (an error message).
    Not for serialized JSON: use `scrub_values` on the structure instead."""
    secrets = _answer_secrets()
    if not secrets or not text:
        return text
    return _mask(text, secrets)


def scrub_values(value: Any) -> Any:
    """A copy of a JSON-shaped structure with secrets masked inside string values only; keys and
    non-string values are left as they are, so the shape and the schema cannot change."""
    secrets = _answer_secrets()
    if not secrets:
        return value
    return _walk(value, secrets)


def _walk(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _mask(value, secrets)
    if isinstance(value, dict):
        return {k: _walk(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v, secrets) for v in value]
    return value


def scrub_log(text: str) -> str:
    """Masks every secret the process knows in a log line: configured, remembered request
    tokens and the current call's token. Log lines are not answers, so the wider net is fine."""
    call = _call_secrets.get()
    secrets = _log_view + call if call else _log_view
    if not secrets or not text:
        return text
    return _mask(text, secrets)


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
        clean = scrub_log(message)
        record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            import traceback

            record.exc_text = scrub_log("".join(traceback.format_exception(*record.exc_info)))
            record.exc_info = None
        return True
