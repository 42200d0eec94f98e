"""The samples family: eco_list_sample_classes and eco_get_sample. The sample classes (every
supported one, or one tag's) and a sample's custody record (token-only). The catalog is never read.

A tag in several classes, given without one, is the spec's one multi-step exchange: an
`input_required` question (`InputNeeded`) to clients that declared elicitation, `ambiguous_input`
to the others. The answer a retried call brings back is re-checked against the upstream, never
against the candidates the unsigned request state carried.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from eco_core.errors import EcoError
from eco_core.paging import DefaultLimit
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page
from families.call import CallContext, InputNeeded
from upstream import models as m
from upstream.client import UpstreamClient

# Input field -> the upstream's query parameter, in the order the tool documents them.
IDENTIFIERS = {"sample_tag": "sampleTag", "sample_uuid": "sampleUuid", "barcode": "barcode",
               "archive_guid": "archiveGuid"}
# The upstream's parameter -> the input field (also the upstream client's keyword).
FIELDS = {**{param: name for name, param in IDENTIFIERS.items()}, "sampleClass": "sample_class"}
ANSWER_KEY = "sample_class"


class SampleClass(WireModel):
    key: str
    description: str | None


# -- eco_list_sample_classes -------------------------------------------------------------------

class ListSampleClassesInput(ToolInput):
    sample_tag: str | None = Field(None, min_length=1, max_length=200,
                                   description="The classes this tag belongs to.")
    query: str | None = Field(None, max_length=200, description="Substring of class key or description.")
    limit: DefaultLimit = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0)


class ListSampleClassesOutput(Envelope):
    sample_tag: str | None
    items: list[SampleClass]
    page: Page
    source_endpoint: Literal["classes", "supportedClasses"]


async def list_sample_classes(args: ListSampleClassesInput, call: CallContext) -> ListSampleClassesOutput:
    """A tag's classes (`/samples/classes`; none is an empty list), else every supported class;
    `query` keeps those whose key or description contains it (case-insensitive)."""
    endpoint: Literal["classes", "supportedClasses"]
    if args.sample_tag is not None:
        keys = (await call.client.sample_classes(args.sample_tag)).sample_classes
        rows = [SampleClass(key=k, description=None) for k in keys]
        endpoint = "classes"
    else:
        entries = (await call.client.supported_sample_classes()).entries
        rows = [SampleClass(key=e.key, description=e.value) for e in entries]
        endpoint = "supportedClasses"
    unfiltered = len(rows)
    if args.query:
        q = args.query.lower()
        rows = [r for r in rows if q in r.key.lower() or q in (r.description or "").lower()]
    kept = rows[args.offset: args.offset + args.limit]
    pg = page(args.offset, args.limit, len(kept), len(rows))
    steps: list[NextStep] = []
    if args.sample_tag and kept:
        steps.append(NextStep(tool="eco_get_sample",
                              arguments={"sample_tag": args.sample_tag, "sample_class": kept[0].key},
                              why="The sample's custody record (needs a token)."))
    if pg.next_offset is not None:
        steps.append(NextStep(tool="eco_list_sample_classes",
                              arguments={**args.model_dump(exclude_defaults=True), "offset": pg.next_offset},
                              why="The next page of classes."))
    notes = _empty_notes(args, unfiltered) if not pg.total else []
    return ListSampleClassesOutput(
        sample_tag=args.sample_tag, items=kept, page=pg, source_endpoint=endpoint, notes=notes,
        next_steps=steps, source=Source(origin="upstream", api_base_url=call.cfg.eco.base_url))


def _empty_notes(args: ListSampleClassesInput, unfiltered: int) -> list[str]:
    """Why nothing is listed: the tag is in no class, or the query matched none of those listed."""
    if unfiltered and args.query:
        whose = f"Tag {args.sample_tag} belongs to {unfiltered} class{'es' if unfiltered > 1 else ''}" \
            if args.sample_tag else f"{unfiltered} classes are supported"
        return [f"{whose}; none matches query {args.query!r}. Call again without query to list them."]
    return [f"Tag {args.sample_tag} belongs to no class."] if args.sample_tag else []


# -- eco_get_sample ----------------------------------------------------------------------------

class SmsEntry(WireModel):
    sms_key: str
    sms_value: Any


class SampleEvent(WireModel):
    ingest_table_name: str
    sms_field_entries: list[SmsEntry]


class SampleRef(WireModel):
    sample_uuid: str
    sample_tag: str | None
    sample_class: str | None
    barcode: str | None
    archive_guid: str | None


class SampleView(SampleRef):
    sample_events: list[SampleEvent] | None
    events_total: int
    parent_sample_identifiers: list[SampleRef]
    child_sample_identifiers: list[SampleRef]


class GetSampleInput(ToolInput):
    sample_tag: str | None = Field(None, min_length=1, max_length=200)
    sample_class: str | None = Field(None, min_length=1, max_length=200,
                                     description="Needed when sample_tag is in several.")
    sample_uuid: str | None = Field(None, min_length=1, max_length=100)
    barcode: str | None = Field(None, min_length=1, max_length=100)
    archive_guid: str | None = Field(None, min_length=1, max_length=100)
    degree: int | None = Field(None, ge=1, le=5, description="Relatives up to this many steps away.")
    include_events: bool = True
    events_limit: int = Field(50, ge=1, le=500, description="Events kept per sample.")
    fields: list[str] | None = Field(None, min_length=1, max_length=100,
                                     description="Keep only these smsKey fields in events.")
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0)


class GetSampleOutput(Envelope):
    items: list[SampleView]
    degree: int | None
    identifier: dict[str, str]
    page: Page


async def get_sample(args: GetSampleInput, call: CallContext) -> GetSampleOutput:
    ident = _identifier(args)
    resolved: dict[str, Any] = {}
    if args.sample_tag is not None:
        ident["sampleClass"], resolved = await _resolve_tag(call, args.sample_tag, args.sample_class)
    elif call.request_state is not None:
        call.continuation()  # a bad state fails the call whatever it was sent with
    views = await _sample_views(call.client, ident, args.degree)
    keep = set(args.fields) if args.fields else None
    items: list[SampleView] = []
    clipped = 0
    for v in views.sample_views:
        total = len(v.sample_events)
        if args.include_events and keep is None and total > args.events_limit:
            clipped += 1
        items.append(SampleView(
            sample_uuid=v.sample_uuid, sample_tag=v.sample_tag, sample_class=v.sample_class, barcode=v.barcode,
            archive_guid=v.archive_guid,
            sample_events=_events(v, keep, args.events_limit) if args.include_events else None, events_total=total,
            parent_sample_identifiers=[_ref(p) for p in v.parent_sample_identifiers],
            child_sample_identifiers=[_ref(c) for c in v.child_sample_identifiers]))
    notes = [f"{clipped} sample(s) had more than events_limit={args.events_limit} events; raise it to see all."
             ] if clipped else []
    kept = items[args.offset: args.offset + args.limit]
    pg = page(args.offset, args.limit, len(kept), len(items))
    steps: list[NextStep] = []
    if args.degree is None and kept and (kept[0].parent_sample_identifiers or kept[0].child_sample_identifiers):
        steps.append(NextStep(tool="eco_get_sample", arguments={"sample_uuid": kept[0].sample_uuid, "degree": 1},
                              why="The sample with its parents and children in full."))
    if pg.next_offset is not None:
        steps.append(NextStep(tool="eco_get_sample",
                              arguments={**args.model_dump(exclude_defaults=True), **_keywords(ident),
                                         "offset": pg.next_offset},
                              why="The next page of samples."))
    return GetSampleOutput(items=kept, degree=args.degree, identifier=ident, page=pg, resolved=resolved,
                           notes=notes, next_steps=steps,
                           source=Source(origin="upstream", api_base_url=call.cfg.eco.base_url))


def _identifier(args: GetSampleInput) -> dict[str, str]:
    """The one identifier given, keyed by the upstream's parameter name."""
    given = [name for name in IDENTIFIERS if getattr(args, name) is not None]
    if len(given) != 1:
        what = "none was given" if not given else f"got {', '.join(given)}"
        raise EcoError("invalid_argument",
                       f"give exactly one of sample_tag, sample_uuid, barcode, archive_guid; {what}",
                       details={"field": "sample_tag", "identifiers": list(IDENTIFIERS), "given": given})
    if args.sample_class is not None and given != ["sample_tag"]:
        raise EcoError("invalid_argument", "sample_class goes only with sample_tag",
                       details={"field": "sample_class"})
    name = given[0]
    return {IDENTIFIERS[name]: getattr(args, name)}


def _keywords(ident: dict[str, str]) -> dict[str, str]:
    """The identifier as input fields (also the upstream client's keywords)."""
    return {FIELDS[k]: v for k, v in ident.items()}


async def _sample_views(client: UpstreamClient, ident: dict[str, str], degree: int | None) -> m.SampleViews:
    """The identified sample (with `degree`, its relatives too); the upstream's 404 becomes
    not_found naming the identifier as the caller gave it."""
    try:
        if degree is None:
            return await client.sample_view(**_keywords(ident))
        return await client.sample_download(degree=degree, **_keywords(ident))
    except EcoError as exc:
        if exc.code == "not_found":
            named = ", ".join(f"{FIELDS[k]}={v!r}" for k, v in ident.items())
            raise EcoError("not_found", f"no sample matches {named}", details={"identifier": ident}) from None
        raise


def _ref(r: m.NeonSampleRef) -> SampleRef:
    return SampleRef(sample_uuid=r.sample_uuid, sample_tag=r.sample_tag, sample_class=r.sample_class,
                     barcode=r.barcode, archive_guid=r.archive_guid)


def _events(v: m.NeonSampleView, fields: set[str] | None, limit: int) -> list[SampleEvent]:
    out = []
    for ev in v.sample_events:
        entries = [SmsEntry(sms_key=f.sms_key, sms_value=f.sms_value) for f in ev.sms_field_entries
                   if fields is None or f.sms_key in fields]
        if entries or fields is None:  # an event none of whose fields were asked for says nothing
            out.append(SampleEvent(ingest_table_name=ev.ingest_table_name, sms_field_entries=entries))
    return out[:limit]


# -- the ambiguous tag -------------------------------------------------------------------------

async def _tag_classes(client: UpstreamClient, tag: str, *, fresh: bool = False) -> list[str]:
    """The classes a tag belongs to (distinct, upstream order)."""
    keys = (await client.sample_classes(tag, fresh=fresh)).sample_classes
    return list(dict.fromkeys(keys))


def _chosen(call: CallContext, tag: str) -> str | None:
    """The class a retried call brings back, checked against the question it answers; None on a
    first call. The state is unsigned, so nothing in it is trusted beyond naming the question."""
    state = call.continuation()
    if state is None:
        return None
    if state["question"].get("sample_tag") != tag:
        raise EcoError("invalid_argument", "requestState belongs to another question (a different sample_tag)",
                       details={"field": "requestState"})
    answer = (call.input_responses or {}).get(ANSWER_KEY) or {}
    content = answer.get("content") if isinstance(answer, dict) else None
    chosen = content.get(ANSWER_KEY) if isinstance(content, dict) else None
    if answer.get("action") != "accept" or not isinstance(chosen, str):
        return None
    return chosen


async def _resolve_tag(call: CallContext, tag: str, sample_class: str | None) -> tuple[str, dict[str, Any]]:
    """The class to read `tag` in: the caller's, the only one, or the one chosen on a retry
    (re-validated against a fresh lookup); several without a choice ask the caller."""
    client = call.client
    if call.request_state is not None:
        # A retry: the answer (or a class in the arguments) is checked against the upstream now,
        # never against the candidates the unsigned state carried.
        answer = _chosen(call, tag)  # decodes the state: a bad one fails the call here
        choice = sample_class or answer
        classes = await _tag_classes(client, tag, fresh=True)
        if choice is None:
            raise EcoError("ambiguous_input", f"no class was chosen for sample_tag {tag!r}; give sample_class",
                           details={"field": "sample_class", "candidates": classes})
        if choice not in classes:
            raise EcoError("invalid_argument", f"sample_class {choice!r} is not a class of tag {tag!r}",
                           details={"field": "sample_class", "candidates": classes})
        return choice, {"sampleClass": {"from": "input_required", "value": choice}}
    if sample_class is not None:
        return sample_class, {}
    classes = await _tag_classes(client, tag)
    if not classes:
        raise EcoError("not_found", f"sample_tag {tag!r} belongs to no sample class",
                       details={"field": "sample_tag"})
    if len(classes) == 1:
        return classes[0], {"sampleClass": {"from": "only class of the tag", "value": classes[0]}}
    message = f"Sample tag {tag} belongs to {len(classes)} classes; which one?"
    raise InputNeeded(
        key=ANSWER_KEY, message=message,
        requested_schema={"type": "object", "required": [ANSWER_KEY],
                          "properties": {ANSWER_KEY: {"type": "string", "enum": classes}}},
        question={"tool": "eco_get_sample", "sample_tag": tag}, candidates=classes,
        fallback=EcoError("ambiguous_input", f"sample_tag {tag!r} belongs to several classes; give sample_class",
                          details={"field": "sample_class", "candidates": classes}),
    )
