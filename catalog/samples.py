"""The samples family's reads: sample classes (all supported ones, or one tag's) and sample views
(token-only), returning wire types the tools embed.

    list_sample_classes(client, sample_tag=, query=, limit=, offset=) -> ClassList
    tag_classes(client, tag, fresh=) -> [class key]
    get_samples(client, identifier=, degree=, include_events=, events_limit=, fields=,
                limit=, offset=) -> SampleList

The ambiguous-tag question is the tool's business (it owns the call's protocol state); these
reads only answer what the upstream says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from eco_core.errors import EcoError
from eco_core.wire import Page, WireModel, page
from upstream import models as m
from upstream.client import UpstreamClient

# Input field -> the upstream's query parameter, in the order the tool documents them.
IDENTIFIERS = {"sample_tag": "sampleTag", "sample_uuid": "sampleUuid", "barcode": "barcode",
               "archive_guid": "archiveGuid"}


class SampleClass(WireModel):
    key: str
    description: str | None


@dataclass(frozen=True)
class ClassList:
    sample_tag: str | None
    items: list[SampleClass]
    page: Page
    source_endpoint: Literal["classes", "supportedClasses"]


async def list_sample_classes(client: UpstreamClient, *, sample_tag: str | None, query: str | None,
                              limit: int, offset: int) -> ClassList:
    """A tag's classes (`/samples/classes`; none is an empty list), else every supported class;
    `query` keeps those whose key or description contains it (case-insensitive)."""
    if sample_tag is not None:
        keys = (await client.sample_classes(sample_tag)).sample_classes
        rows = [SampleClass(key=k, description=None) for k in keys]
        endpoint: Literal["classes", "supportedClasses"] = "classes"
    else:
        entries = (await client.supported_sample_classes()).entries
        rows = [SampleClass(key=e.key, description=e.value) for e in entries]
        endpoint = "supportedClasses"
    if query:
        q = query.lower()
        rows = [r for r in rows if q in r.key.lower() or q in (r.description or "").lower()]
    kept = rows[offset: offset + limit]
    return ClassList(sample_tag, kept, page(offset, limit, len(kept), len(rows)), endpoint)


async def tag_classes(client: UpstreamClient, tag: str, *, fresh: bool = False) -> list[str]:
    """The classes a tag belongs to (distinct, upstream order)."""
    keys = (await client.sample_classes(tag, fresh=fresh)).sample_classes
    return list(dict.fromkeys(keys))


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


@dataclass(frozen=True)
class SampleList:
    items: list[SampleView]
    page: Page
    notes: list[str] = field(default_factory=list)


def _ref(r: m.SampleRef) -> SampleRef:
    return SampleRef(sample_uuid=r.sample_uuid, sample_tag=r.sample_tag, sample_class=r.sample_class,
                     barcode=r.barcode, archive_guid=r.archive_guid)


def _events(v: m.SampleView, fields: set[str] | None, limit: int) -> list[SampleEvent]:
    out = []
    for ev in v.sample_events:
        entries = [SmsEntry(sms_key=f.sms_key, sms_value=f.sms_value) for f in ev.sms_field_entries
                   if fields is None or f.sms_key in fields]
        if entries or fields is None:  # an event none of whose fields were asked for says nothing
            out.append(SampleEvent(ingest_table_name=ev.ingest_table_name, sms_field_entries=entries))
    return out[:limit]


async def get_samples(client: UpstreamClient, *, identifier: dict[str, str], degree: int | None,
                      include_events: bool, events_limit: int, fields: list[str] | None,
                      limit: int, offset: int) -> SampleList:
    """The identified sample (with `degree`, its relatives too), paged; upstream 404 becomes
    not_found naming the identifier. `identifier` maps upstream parameter names to values."""
    ident = {k: v for k, v in identifier.items()}
    try:
        if degree is None:
            views = await client.sample_view(**_kwargs(ident))
        else:
            views = await client.sample_download(degree=degree, **_kwargs(ident))
    except EcoError as exc:
        if exc.code == "not_found":
            named = ", ".join(f"{_field(k)}={v!r}" for k, v in ident.items())
            raise EcoError("not_found", f"no sample matches {named}", details={"identifier": ident}) from None
        raise
    keep = set(fields) if fields else None
    items, notes = [], []
    clipped = 0
    for v in views.sample_views:
        events = _events(v, keep, events_limit) if include_events else None
        total = len(v.sample_events)
        if include_events and keep is None and total > events_limit:
            clipped += 1
        items.append(SampleView(**dict(_ref(v)), sample_events=events, events_total=total,
                                parent_sample_identifiers=[_ref(p) for p in v.parent_sample_identifiers],
                                child_sample_identifiers=[_ref(c) for c in v.child_sample_identifiers]))
    if clipped:
        notes.append(f"{clipped} sample(s) had more than events_limit={events_limit} events; raise it to see all.")
    kept = items[offset: offset + limit]
    return SampleList(kept, page(offset, limit, len(kept), len(items)), notes)


def _field(param: str) -> str:
    back = {v: k for k, v in IDENTIFIERS.items()}
    return back.get(param, "sample_class" if param == "sampleClass" else param)


def _kwargs(ident: dict[str, str]) -> dict[str, str]:
    names = {**{v: k for k, v in IDENTIFIERS.items()}, "sampleClass": "sample_class"}
    return {names[k]: v for k, v in ident.items()}
