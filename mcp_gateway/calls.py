"""One tool call, from raw arguments to the `CallToolResult`:

    parse arguments → call_scope(token) → read → envelope + budget → result with _meta

Every failure becomes the spec's error result; anything that is not an `EcoError` is a bug and
becomes `internal_error` with a correlation id that matches exactly one log line, except an
unreachable catalog database (catalog.outage.DATABASE_DOWN), an outage and not a bug: it becomes
`catalog_unavailable` here (`database_unavailable`), and nowhere else.

A `CallToolResult` made here has one text content, the compact JSON of its structured content:
the HTTP transport sends both from that text (mcp_gateway.splice) and relies on it. A result
with a `png` (eco_plot_tables) has an image content after it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections

from catalog.outage import DATABASE_DOWN
from eco_core import redact, request_state
from eco_core.bounds import check_bounds
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.memo import memos
from eco_core.paging import cap_page_sizes
from eco_core.wire import Envelope, Source, is_returned_again
from families.call import CallContext, InputNeeded
from mcp_gateway import budget, splice
from mcp_gateway.arguments import name_segment_field, parse_arguments
from mcp_gateway.registry import ToolSpec
from mcp_gateway.tokens import header_ignored_note
from upstream.context import Accounting, call_scope
from upstream.segments import PathSegmentError

log = logging.getLogger("eco.gateway")

UPSTREAM_META_KEY = "io.eco-mcp/upstream"


def error_result(exc: EcoError, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    try:
        # Round trip through JSON for plain types (details may hold dates), then mask secrets in
        # string values only: keys and the shape stay as the spec defines them.
        body = redact.scrub_values(json.loads(json.dumps(exc.to_dict(), default=str)))
    except Exception:
        # An error result must always be producible: fall back to the code without details.
        log.exception("error result for code=%s could not be serialized", exc.code)
        body = {"error": {"code": exc.code, "message": redact.scrub(exc.message), "details": {},
                          "hint": redact.scrub(exc.hint), "retryable": exc.retryable}}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(body, separators=(",", ":")))],
        structured_content=body,
        is_error=True,
        _meta=meta,
    )


def internal_error(spec_name: str) -> EcoError:
    """Log the bug once, with the traceback, under a fresh correlation id."""
    cid = uuid.uuid4().hex[:16]
    log.exception("internal_error correlationId=%s tool=%s", cid, spec_name)
    return EcoError(
        "internal_error",
        f"an internal error occurred (correlation id {cid})",
        details={"correlationId": cid},
    )


DATABASE_HINT = "The catalog database is unreachable; retry later."
# One warning per outage, not one per call: under load an outage is thousands of calls.
DATABASE_WARNING_EVERY_S = 60.0
_database_warned_at: float | None = None


async def database_unavailable(exc: BaseException) -> EcoError:
    """What a call answers when the catalog database is unreachable: catalog_unavailable,
    retryable, naming the database (the upstream is not at fault). The driver's message is left
    out of the answer and the log: it can carry the connection string.

    Connections of the thread that keeps them (asgiref's, for thread-sensitive ORM work) are
    closed when unusable, so the next call reconnects once the database is back; the catalog-read
    pool and the health probes close theirs after every read."""
    global _database_warned_at
    now = time.monotonic()
    if _database_warned_at is None or now - _database_warned_at >= DATABASE_WARNING_EVERY_S:
        _database_warned_at = now
        log.warning("catalog database unreachable (%s): calls that need it answer catalog_unavailable",
                    type(exc).__name__)
    try:
        await sync_to_async(close_old_connections)()
    except Exception:  # closing a dead connection can fail too; the answer stands
        log.debug("closing unusable database connections failed", exc_info=True)
    return EcoError("catalog_unavailable", "the catalog database is unreachable",
                    details={"cause": type(exc).__name__}, hint=DATABASE_HINT)


# Results a read returned as the very same object before (eco_ping reuses its report while
# nothing it reports has moved; kept answers such as eco_get_availability's are returned again
# for the same input on the same index), with their payload and text: such a result is dumped and
# encoded once. Only a call that adds nothing of its own to the envelope reuses one; a payload is
# never changed after it is made (masking copies, the SDK copies what it sends). Only results
# their tool marked as returned again (models.returned_again) are kept: most tools make a new
# answer every call, and keeping those would only churn memory. Bounded by the texts' size too,
# as a payload holds several times its text in Python objects.
_kept_results = memos.by_identity("calls.results", max_entries=64, max_weight=2 << 20)


class _Answer:
    """A successful call's payload as sent (envelope completed, fitted to the byte budget) and its
    compact JSON. Over HTTP the reply is spliced from the text alone (mcp_gateway.splice), so
    when the text is the output model's own dump the payload is made only if something asks for
    it (stdio, masking, a trimmed page): `payload` None until then."""

    __slots__ = ("out", "payload", "text")

    def __init__(self, out: Envelope, payload: dict[str, Any] | None, text: str | None) -> None:
        assert payload is not None or text is not None
        self.out, self.payload, self.text = out, payload, text

    def dumped(self) -> dict[str, Any]:
        if self.payload is None:
            self.payload = self.out.model_dump(mode="json", by_alias=True)
        return self.payload

    def encoded(self) -> str:
        if self.text is None:
            self.text = budget.encode(self.dumped())
        return self.text


def _finish(spec: ToolSpec, args: Any, out: Envelope, call: CallContext, acct: Accounting) -> _Answer:
    fix = _source_fix(spec, out.source, acct)
    plain = fix is None and is_returned_again(out) and _adds_nothing(call, acct)
    kept = _kept_results.get(out, spec, call.cfg) if plain else None
    if kept is not None:
        return _Kept(out, spec, call.cfg, *kept)
    answer = _fitted(spec, args, out, call, acct, fix)
    if plain and answer.text is not None:
        _kept_results.put(out, spec, call.cfg, value=(answer.payload, answer.text), weight=len(answer.text))
        splice.keep_encoded(answer.text)
    return answer


def _adds_nothing(call: CallContext, acct: Accounting) -> bool:
    """The call adds nothing of its own to the envelope (its source aside, see _source_fix): its
    payload is the model's dump."""
    return not (call.notes or call.token_header_ignored or acct.stale_served)


def _source_fix(spec: ToolSpec, source: Source, acct: Accounting) -> dict[str, Any] | None:
    """The answer's source as the tool declares it, or None when the family's already is: each
    endpoint asked or named once, in its declared form (a family may name a path without its
    method; a HEAD reads the declared GET), only the tool's declared endpoints (a catalog built
    during the call asks others), and `cache` for an upstream answer that made no request."""
    declared = spec.endpoints
    by_path: dict[str, str] = {}
    for e in declared:
        by_path.setdefault(e.split(" ", 1)[-1], e)
    named = (e if e in declared else by_path.get(e.split(" ", 1)[-1]) for e in (*source.endpoints, *acct.endpoints))
    endpoints = list(dict.fromkeys(e for e in named if e is not None))
    origin = "cache" if source.origin == "upstream" and not acct.requests else source.origin
    if endpoints == source.endpoints and origin == source.origin:
        return None
    return {"endpoints": endpoints, "origin": origin}


class _Kept(_Answer):
    """A kept result's answer: a payload made for it later is kept with it (stdio asks every time)."""

    __slots__ = ("key",)

    def __init__(self, out: Envelope, spec: ToolSpec, cfg: Any, payload: dict[str, Any] | None, text: str) -> None:
        super().__init__(out, payload, text)
        self.key = (spec, cfg)

    def dumped(self) -> dict[str, Any]:
        if self.payload is None:
            payload = super().dumped()
            assert self.text is not None
            _kept_results.put(self.out, *self.key, value=(payload, self.text), weight=len(self.text))
        return super().dumped()


def _fitted(spec: ToolSpec, args: Any, out: Envelope, call: CallContext, acct: Accounting,
            fix: dict[str, Any] | None) -> _Answer:
    if not isinstance(out, spec.output_model):
        # A read returning anything else is a bug; validating a dict keeps it loud.
        out = spec.output_model.model_validate(out)
    max_bytes = (call.cfg.limits.hard_max_result_bytes if getattr(spec, "fits_own_budget", False)
                 else call.cfg.limits.max_result_bytes)
    plain = fix is None and _adds_nothing(call, acct)
    if plain:
        # The payload is exactly the model's dump: pydantic writes its JSON text (in Rust, a
        # fraction of json.dumps' time on a big result, and the same text), and nearly every
        # result fits, serialized once for the measure and the text content.
        text = out.model_dump_json(by_alias=True)
        if budget.encoded_size(text) <= max_bytes:
            return _Answer(out, None, text)
    payload = out.model_dump(mode="json", by_alias=True)
    notes = payload["notes"]
    added = [n for n in call.notes if n not in notes]
    notes.extend(added)
    # Whether the payload is still exactly the model's dump: then pydantic writes its JSON text
    # (in Rust, a fraction of json.dumps' time on a big result, and the same text).
    as_dumped = not (added or call.token_header_ignored or acct.stale_served or fix)
    if call.token_header_ignored:
        notes.append(header_ignored_note(call.cfg))
    if acct.stale_served:
        payload["source"]["stale"] = True
        notes.append("Upstream failed; a stale cached answer was served.")
    if fix is not None:
        payload["source"].update(fix)
    if not plain:  # else measured above, and too big
        text = out.model_dump_json(by_alias=True) if as_dumped else budget.encode(payload)
        if budget.encoded_size(text) <= max_bytes:
            return _Answer(out, payload, text)
    fields = type(args).model_fields
    return _Answer(out, budget.fit(
        payload,
        max_bytes=max_bytes,
        hard_max_bytes=call.cfg.limits.hard_max_result_bytes,
        page_lists=spec.page_lists,
        tool=spec.name,
        arguments=args.model_dump(mode="json", exclude_defaults=True),
        offset_fields=[f for f in fields if f == "offset" or f.endswith("_offset")],
    ), None)


async def execute(
    spec: ToolSpec,
    arguments: dict[str, Any] | None,
    call: CallContext,
    *,
    token: str | None,
    extra_meta: dict[str, Any] | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    result = await _run(spec, arguments, call, token=token, extra_meta=extra_meta, wire=False)
    assert not isinstance(result, dict)
    return result


async def execute_for_reply(
    spec: ToolSpec,
    arguments: dict[str, Any] | None,
    call: CallContext,
    *,
    token: str | None,
    extra_meta: dict[str, Any] | None = None,
) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
    """`execute` for a tools/call the SDK answers: inside an HTTP reply's splice scope a
    successful result comes back in its wire form, its text and structured content as the
    placeholders mcp_gateway.splice fills (the SDK validates that form for the protocol version
    as it would the model's dump; mcp_gateway.server._wire). Everything else as `execute`."""
    return await _run(spec, arguments, call, token=token, extra_meta=extra_meta, wire=True)


async def _run(
    spec: ToolSpec,
    arguments: dict[str, Any] | None,
    call: CallContext,
    *,
    token: str | None,
    extra_meta: dict[str, Any] | None,
    wire: bool,
) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
    global _metrics
    # The call's token is masked in this call's own result, errors and log lines only: a
    # caller's header can never change what other callers' answers say.
    with redact.call_secret(token):
        started, result = time.perf_counter(), None
        try:
            got = await _execute(spec, arguments, call, token=token, extra_meta=extra_meta, wire=wire)
            result = got if not isinstance(got, _AskedBack) else await _answered_back(
                spec, arguments, call, got, token=token, extra_meta=extra_meta, wire=wire)
            return result
        finally:
            if _metrics is None:
                # Imported by the first call, not to list tools (prometheus_client would slow a
                # stdio server's start).
                from eco_core import metrics as _metrics
            _metrics.tool_call(spec.name, _outcome(result), time.perf_counter() - started)
            acct = call.accounting
            if token and call.token_source == "request" and acct is not None and acct.requests:
                # Honoured and used upstream: keep it out of log lines written after the call.
                redact.remember_request_token(token)


class _AskedBack:
    """A question for a handshake-era client, asked after the call's scope has ended."""

    def __init__(self, ask: InputNeeded, meta: dict[str, Any]) -> None:
        self.ask, self.meta = ask, meta


async def _answered_back(spec: ToolSpec, arguments: dict[str, Any] | None, call: CallContext, asked: _AskedBack, *,
                         token: str | None, extra_meta: dict[str, Any] | None,
                         wire: bool) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
    """The handshake era's round trip: the question goes to the client as elicitation/create, and
    its answer comes back to the read as a 2026-07-28 retry brings it (requestState and
    inputResponses), so the choice is re-validated the same way. A client that cannot be asked
    after all gets the question's fallback (ambiguous_input)."""
    ask = asked.ask
    assert call.ask_back is not None
    try:
        answer = await call.ask_back(ask)
    except Exception as exc:  # the client refused the request or the channel closed: not a bug here
        log.info("%s: the elicitation request was not answered (%s)", spec.name, type(exc).__name__)
        return error_result(ask.fallback, asked.meta)
    retry = dataclasses.replace(call, request_state=request_state.encode(ask.question, ask.candidates),
                                input_responses={ask.key: answer}, ask_back=None)
    result = await _execute(spec, arguments, retry, token=token, extra_meta=extra_meta, wire=wire)
    call.accounting = retry.accounting
    return error_result(ask.fallback, asked.meta) if isinstance(result, _AskedBack) else result


_metrics: Any = None
RESULT_TYPE = types.CallToolResult.model_fields["result_type"].default


async def _execute(
    spec: ToolSpec,
    arguments: dict[str, Any] | None,
    call: CallContext,
    *,
    token: str | None,
    extra_meta: dict[str, Any] | None,
    wire: bool,
) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any] | _AskedBack:
    with call_scope(token=token, token_source=call.token_source, deadline_s=call.cfg.eco.call_deadline_s) as acct:
        call.accounting = acct
        args = None
        try:
            if spec.stdio_only and call.transport == "http":
                raise EcoError(
                    "not_available_in_http_mode",
                    f"{spec.name} runs only on the stdio transport",
                    details={"tool": spec.name},
                )
            args = _capped(parse_arguments(spec, arguments), call.cfg)
            if spec.requires_token and token is None and not _token_optional(spec, args):
                raise EcoError(
                    "auth_required",
                    f"{spec.name} needs an upstream API token and none is available"
                    + (f" (the {call.cfg.server.request_token_header} header was ignored)"
                       if call.token_header_ignored else ""),
                    details={"tool": spec.name, "tokenSource": call.token_source},
                )
            out = await spec.read(args, call)
            # A secret echoed back by an argument or an upstream text is masked in string values,
            # inside the error handling: masking can never surface as a protocol error.
            answer = _scrubbed(_finish(spec, args, out, call, acct))
            text = answer.encoded()
            placeholders = splice.defer(text) if wire else None
            if placeholders is not None:
                # The same keys, in the same order, as server._wire gives a CallToolResult.
                return {"content": [{"type": "text", "text": placeholders[0]}, *(
                            i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in _images(out))],
                        "isError": False, "resultType": RESULT_TYPE, "structuredContent": placeholders[1],
                        "_meta": _meta(acct, extra_meta)}
            payload = answer.dumped()
        except InputNeeded as ask:
            if call.can_ask:
                return _input_required(ask, _meta(acct, extra_meta))
            if call.can_ask_back:
                return _AskedBack(ask, _meta(acct, extra_meta))
            return error_result(ask.fallback, _meta(acct, extra_meta))
        except PathSegmentError as exc:
            return error_result(name_segment_field(spec, args, exc), _meta(acct, extra_meta))
        except EcoError as exc:
            if exc.code == "auth_required" and call.token_header_ignored:
                # However the call found it had no token (upstream 403 included), the one remedy.
                exc.hint = header_ignored_note(call.cfg)
                exc.details = {**exc.details, "tokenHeaderIgnored": True}
            return error_result(exc, _meta(acct, extra_meta))
        except DATABASE_DOWN as exc:
            return error_result(await database_unavailable(exc), _meta(acct, extra_meta))
        except Exception:
            # Arguments were validated above, so anything else (a pydantic error included) is a bug.
            return error_result(internal_error(spec.name), _meta(acct, extra_meta))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text), *_images(out)],
        structured_content=payload,
        is_error=False,
        _meta=_meta(acct, extra_meta),
    )


def _images(out: Envelope) -> list[types.ImageContent]:
    """Image contents a result carries beside its JSON (eco_plot_tables' chart, as its `png`)."""
    png = getattr(out, "png", None)
    if not png:
        return []
    import base64

    return [types.ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png")]


# Checked and capped inputs per kept input and configuration (mcp_gateway.arguments keeps valid
# inputs, so the same arguments arrive as the same instance). An input refused here is not kept.
_caps = memos.by_identity("calls.capped_inputs", max_entries=1024)


def _capped(args: Any, cfg: EcoConfig) -> Any:
    """The input within the server's bounds: configured bounds checked (eco_core.bounds), page
    sizes filled and capped (eco_core.paging)."""
    kept = _caps.get(args, cfg)
    if kept is not None:
        return kept
    capped = cap_page_sizes(check_bounds(args, cfg), cfg.limits.max_limit, default_limit=cfg.limits.default_limit)
    _caps.put(args, cfg, value=capped)
    return capped


def _scrubbed(answer: _Answer) -> _Answer:
    """The answer with secrets masked in its payload's string values. The text made for the budget
    is reused when masking cannot change anything: no secret occurs in it. A string value
    appears in compact JSON verbatim unless it holds a quote, a backslash or a control
    character, so that test is exact only for secrets free of those; any other secret takes the
    walk."""
    if answer.text is not None:
        secrets = redact.known_secrets()  # every secret an answer could be masked for, and more
        if not secrets or all(_verbatim_in_json(s) and s not in answer.text for s in secrets):
            return answer
    payload = redact.scrub_values(answer.dumped())
    return _Answer(answer.out, payload, budget.encode(payload))


def _verbatim_in_json(s: str) -> bool:
    return '"' not in s and "\\" not in s and all(c >= " " for c in s)


def _input_required(ask: InputNeeded, meta: dict[str, Any]) -> types.InputRequiredResult:
    elicit = types.ElicitRequest(
        method="elicitation/create",
        params=types.ElicitRequestFormParams(mode="form", message=ask.message, requested_schema=ask.requested_schema),
    )
    return types.InputRequiredResult(
        input_requests={ask.key: elicit},
        request_state=request_state.encode(ask.question, ask.candidates),
        _meta=meta,
    )


def _outcome(result: types.CallToolResult | types.InputRequiredResult | dict[str, Any] | None) -> str:
    """The metrics label of a finished call: ok, input_required, the error code, or cancelled."""
    if result is None:
        return "cancelled"
    if isinstance(result, dict):  # only a successful result comes in wire form
        return "ok"
    if isinstance(result, types.InputRequiredResult):
        return "input_required"
    if not result.is_error:
        return "ok"
    error = (result.structured_content or {}).get("error")
    return str(error.get("code", "error")) if isinstance(error, dict) else "error"


def _token_optional(spec: ToolSpec, args: Any) -> bool:
    """Tools that need a token only for some inputs decide for themselves (eco_download_files
    needs none for prototype and document downloads); they expose `needs_token()` on the input."""
    needs = getattr(args, "needs_token", None)
    return callable(needs) and not needs()


def _meta(acct: Accounting, extra: dict[str, Any] | None) -> dict[str, Any]:
    return {**(extra or {}), UPSTREAM_META_KEY: acct.to_meta()}
