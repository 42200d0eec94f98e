"""eco_list_sample_classes and eco_get_sample: the sample classes (all, or one tag's) and a
sample's custody record (token-only). A tag in several classes, given without one, is the
spec's one multi-step exchange: an `input_required` question to clients that declared
elicitation, `ambiguous_input` to the others."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from catalog.samples import IDENTIFIERS, SampleClass, SampleView, get_samples, list_sample_classes, tag_classes
from eco_core.errors import EcoError
from eco_core.paging import DefaultLimit
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput
from families.call import CallContext, InputNeeded
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec

ANSWER_KEY = "sample_class"


class ListSampleClassesInput(ToolInput):
    sample_tag: str | None = Field(None, min_length=1, max_length=200,
                                   description="List the classes this tag belongs to (none: empty list).")
    query: str | None = Field(None, max_length=200, description="Substring of class key or description.")
    limit: DefaultLimit = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0)


class ListSampleClassesOutput(Envelope):
    sample_tag: str | None
    items: list[SampleClass]
    page: Page
    source_endpoint: Literal["classes", "supportedClasses"]


async def list_sample_classes_tool(args: ListSampleClassesInput, call: CallContext) -> ListSampleClassesOutput:
    r = await list_sample_classes(ports.upstream_client(), sample_tag=args.sample_tag, query=args.query,
                                  limit=args.limit, offset=args.offset)
    steps: list[NextStep] = []
    if args.sample_tag and r.items:
        steps.append(NextStep(tool="eco_get_sample",
                              arguments={"sample_tag": args.sample_tag, "sample_class": r.items[0].key},
                              why="The sample's custody record (needs a token)."))
    if r.page.next_offset is not None:
        steps.append(NextStep(tool="eco_list_sample_classes",
                              arguments={**args.model_dump(exclude_defaults=True), "offset": r.page.next_offset},
                              why="The next page of classes."))
    notes = [f"Tag {args.sample_tag} belongs to no class."] if args.sample_tag and not r.page.total else []
    return ListSampleClassesOutput(
        sample_tag=r.sample_tag, items=r.items, page=r.page, source_endpoint=r.source_endpoint, notes=notes,
        next_steps=steps, source=Source(origin="upstream", api_base_url=call.cfg.eco.base_url))


TOOLS = [
    ToolSpec(
        name="eco_list_sample_classes",
        title="Sample classes",
        description=(
            "Sample classes (keys '<table>.<field>' naming where an identifier comes from). Without "
            "sample_tag: every supported class, filtered by query over key and description. With "
            "sample_tag: the classes that tag belongs to (empty when none). No token needed."
        ),
        surface="discovery",
        input_model=ListSampleClassesInput,
        output_model=ListSampleClassesOutput,
        read=list_sample_classes_tool,
        endpoints=("GET /samples/supportedClasses", "GET /samples/classes"),
    ),
]


# -- eco_get_sample ------------------------------------------------------------------------

class GetSampleInput(ToolInput):
    sample_tag: str | None = Field(None, min_length=1, max_length=200)
    sample_class: str | None = Field(None, min_length=1, max_length=200,
                                     description="Class of sample_tag, needed when the tag is in several.")
    sample_uuid: str | None = Field(None, min_length=1, max_length=100)
    barcode: str | None = Field(None, min_length=1, max_length=100)
    archive_guid: str | None = Field(None, min_length=1, max_length=100)
    degree: int | None = Field(None, ge=1, le=5, description="Also return relatives up to this many steps away.")
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


def _identifier(args: GetSampleInput) -> dict[str, str]:
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
    client = ports.upstream_client()
    if call.request_state is not None:
        # A retry: the answer (or a class in the arguments) is checked against the upstream now,
        # never against the candidates the unsigned state carried.
        answer = _chosen(call, tag)  # decodes the state: a bad one fails the call here
        choice = sample_class or answer
        classes = await tag_classes(client, tag, fresh=True)
        if choice is None:
            raise EcoError("ambiguous_input", f"no class was chosen for sample_tag {tag!r}; give sample_class",
                           details={"field": "sample_class", "candidates": classes})
        if choice not in classes:
            raise EcoError("invalid_argument", f"sample_class {choice!r} is not a class of tag {tag!r}",
                           details={"field": "sample_class", "candidates": classes})
        return choice, {"sampleClass": {"from": "input_required", "value": choice}}
    if sample_class is not None:
        return sample_class, {}
    classes = await tag_classes(client, tag)
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


async def get_sample_tool(args: GetSampleInput, call: CallContext) -> GetSampleOutput:
    ident = _identifier(args)
    resolved: dict[str, Any] = {}
    if args.sample_tag is not None:
        ident["sampleClass"], resolved = await _resolve_tag(call, args.sample_tag, args.sample_class)
    elif call.request_state is not None:
        call.continuation()  # a bad state fails the call whatever it was sent with
    r = await get_samples(ports.upstream_client(), identifier=ident, degree=args.degree,
                          include_events=args.include_events, events_limit=args.events_limit,
                          fields=args.fields, limit=args.limit, offset=args.offset)
    steps: list[NextStep] = []
    if args.degree is None and r.items and (r.items[0].parent_sample_identifiers or r.items[0].child_sample_identifiers):
        steps.append(NextStep(tool="eco_get_sample", arguments={"sample_uuid": r.items[0].sample_uuid, "degree": 1},
                              why="The sample with its parents and children in full."))
    if r.page.next_offset is not None:
        steps.append(NextStep(tool="eco_get_sample",
                              arguments={**args.model_dump(exclude_defaults=True), **_ident_args(ident),
                                         "offset": r.page.next_offset},
                              why="The next page of samples."))
    return GetSampleOutput(items=r.items, degree=args.degree, identifier=ident, page=r.page, resolved=resolved,
                           notes=r.notes, next_steps=steps,
                           source=Source(origin="upstream", api_base_url=call.cfg.eco.base_url))


def _ident_args(ident: dict[str, str]) -> dict[str, str]:
    back = {**{v: k for k, v in IDENTIFIERS.items()}, "sampleClass": "sample_class"}
    return {back[k]: v for k, v in ident.items()}


TOOLS.append(
    ToolSpec(
        name="eco_get_sample",
        title="Sample custody record",
        description=(
            "One physical sample's record: custody events, parents and children. Needs a token. Identify it "
            "by exactly one of sample_tag (with sample_class when the tag is in several classes), sample_uuid, "
            "barcode or archive_guid. degree 1-5 adds relatives up to that many steps away. fields keeps only "
            "those smsKey fields in events. An ambiguous tag without a class asks which class (elicitation) "
            "or fails with ambiguous_input listing the candidates."
        ),
        surface="data",
        input_model=GetSampleInput,
        output_model=GetSampleOutput,
        read=get_sample_tool,
        requires_token=True,
        endpoints=("GET /samples/view", "GET /samples/download", "GET /samples/classes"),
    )
)
