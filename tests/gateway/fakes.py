"""Small tool specs for exercising the gateway's machinery without real tool families."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from eco_core.errors import EcoError
from eco_core.wire import Envelope, Page, ToolInput, WireModel
from families.call import CallContext
from mcp_gateway.registry import ToolSpec


class EchoInput(ToolInput):
    product_code: str | None = Field(None, description="A product code.")
    start_date_month: str | None = Field(None, pattern=r"^\d{4}-\d{2}$")
    limit: int = Field(25, ge=1, le=100)
    offset: int = Field(0, ge=0)
    size: int = Field(0, ge=0, le=10_000_000, description="Bytes of padding per item.")
    count: int = Field(0, ge=0, le=100_000)
    fail: Literal["none", "eco", "bug", "bad_output"] = "none"
    code: str = "not_found"


class Item(WireModel):
    n: int
    pad: str


class EchoOutput(Envelope):
    product_code: str | None
    items: list[Item]
    page: Page


async def echo(args: EchoInput, call: CallContext) -> EchoOutput:
    if args.fail == "eco":
        raise EcoError(args.code, f"failing with {args.code} as asked", details={"asked": True})
    if args.fail == "bug":
        raise ZeroDivisionError("a bug")
    if args.fail == "bad_output":
        return {"productCode": 1}  # type: ignore[return-value]
    items = [Item(n=i, pad="x" * args.size) for i in range(args.count)]
    return EchoOutput(
        product_code=args.product_code,
        items=items,
        page=Page(offset=args.offset, limit=args.limit, returned=len(items), total=len(items)),
        resolved={"product": args.product_code} if args.product_code else {},
    )


def echo_spec(**overrides) -> ToolSpec:
    base = dict(name="eco_echo", title="Echo", description="Test tool.", surface="test",
                input_model=EchoInput, output_model=EchoOutput, read=echo)
    base.update(overrides)
    return ToolSpec(**base)


class ChooseInput(ToolInput):
    tag: str = "A1"


class ChooseOutput(Envelope):
    chosen: str
    elicitation_declared: bool


async def choose(args: ChooseInput, call: CallContext) -> ChooseOutput:
    """Asks which of two classes the tag means, like eco_get_sample with an ambiguous tag."""
    from families.call import InputNeeded

    state = call.continuation()
    answer = (call.input_responses or {}).get("sample_class")
    if state is not None and answer and answer.get("action") == "accept":
        chosen = answer["content"]["sample_class"]
        if chosen not in state["candidates"]:
            raise EcoError("invalid_argument", f"sample_class {chosen!r} is not one of the candidates")
        return ChooseOutput(chosen=chosen, elicitation_declared=call.client_elicitation)
    candidates = ["table.a", "table.b"]
    raise InputNeeded(
        key="sample_class",
        message=f"Tag {args.tag} belongs to several classes; which one?",
        requested_schema={"type": "object", "properties": {"sample_class": {"type": "string", "enum": candidates}},
                          "required": ["sample_class"]},
        question={"sample_tag": args.tag},
        candidates=candidates,
        fallback=EcoError("ambiguous_input", f"tag {args.tag} fits several classes",
                          details={"candidates": candidates}),
    )


def choose_spec() -> ToolSpec:
    return ToolSpec(name="eco_choose", title="Choose", description="Test tool.", surface="test",
                    input_model=ChooseInput, output_model=ChooseOutput, read=choose)
