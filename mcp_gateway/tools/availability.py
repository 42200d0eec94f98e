"""eco_get_availability: which months exist, per site (product mode), per product (site mode) or
for one product at one site (cell mode), split by release with PROVISIONAL as its own key."""

from __future__ import annotations

from pydantic import Field

from catalog.access import catalog_index
from catalog.availability import AvailabilityRecord, Format, Provisional, get_availability
from catalog.checks import DOMAIN_PATTERN
from catalog.index import CatalogIndex
from catalog.months import MONTH_PATTERN
from eco_core.kept import KeptByIdentity
from eco_core.wire import Envelope, NextStep, Source, ToolInput, returned_again
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.arguments import keepable
from mcp_gateway.registry import ToolSpec


class AvailabilityInput(ToolInput):
    product: str | None = Field(None, max_length=300, description="Product code or name.")
    site: str | None = Field(None, max_length=200, description="Site code or name.")
    site_codes: list[str] | None = Field(None, min_length=1, max_length=81,
                                         description="Product mode: only these sites (codes or names).")
    domain_code: str | None = Field(None, pattern=DOMAIN_PATTERN, description="Product mode: only sites in D01-D20.")
    product_codes: list[str] | None = Field(None, min_length=1, max_length=200,
                                            description="Site mode: only these products (codes or names).")
    release: str | None = Field(None, max_length=64, description="RELEASE-YYYY or latest.")
    provisional: Provisional = Field("include", description="Provisional months: include, exclude or only.")
    start_month: str | None = Field(None, pattern=MONTH_PATTERN, description="YYYY-MM, window start.")
    end_month: str | None = Field(None, pattern=MONTH_PATTERN, description="YYYY-MM, window end.")
    format: Format | None = Field(
        None, description="Default ranges (cell mode: months).")
    limit: int = Field(100, ge=1, le=500)
    offset: int = Field(0, ge=0)


class AvailabilityOutput(AvailabilityRecord, Envelope):
    pass


def _steps(args: AvailabilityInput, a: AvailabilityRecord) -> list[NextStep]:
    steps: list[NextStep] = []
    rows, pg = a.rows, a.page
    if rows:
        # A row names only what varies between rows; the answer names the rest.
        last = max(rows, key=lambda r: r.last_month)
        month, product, site = last.last_month, last.product_code or a.product_code, last.site_code or a.site_code
        steps.append(NextStep(
            tool="eco_list_files",
            arguments={"product": product, "site_codes": [site], "start_month": month, "end_month": month},
            why=f"Files of {product} at {site} for {month} (needs a token)."))
        if a.mode == "product":
            steps.append(NextStep(tool="eco_get_site", arguments={"site": rows[0].site_code},
                                  why="What else is measured at that site."))
        if a.mode == "site":
            steps.append(NextStep(tool="eco_get_product", arguments={"product": rows[0].product_code},
                                  why="What that product is."))
    if pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_get_availability", arguments={**more, "offset": pg.next_offset},
                              why="The next page of rows."))
    return steps


# Whole answers read off the index alone (no pinned release), for the same input on the same
# index: such an answer depends on nothing else, and returning the same object again lets the
# gateway reuse its dump and its text (calls._finish) instead of rebuilding and re-encoding a
# 20 KB answer every call. Inputs are kept per JSON text (mcp_gateway.arguments), so a repeated
# input is the same object; an input that is not kept (one holding a list) keeps no answer. Only
# the latest index's answers are held, at most 20,000 rows in all (a default answer's rows are
# the index's kept rows, catalog.availability._rows, so mostly shared).
_answers: KeptByIdentity[AvailabilityOutput] = KeptByIdentity(max_entries=256, max_weight=20_000)


async def get_availability_tool(args: AvailabilityInput, call: CallContext) -> AvailabilityOutput:
    idx = await catalog_index(call.cfg, call.client)
    kept = _answers.get(idx, args, call.cfg)
    if kept is not None:
        return kept
    out, from_index = await _answer(idx, args, call)
    if from_index and keepable(args):
        _answers.put_latest(idx, args, call.cfg, value=returned_again(out), weight=len(out.rows))
    return out


async def _answer(idx: CatalogIndex, args: AvailabilityInput, call: CallContext) -> tuple[AvailabilityOutput, bool]:
    a = await get_availability(
        idx=idx, client=ports.upstream_client(), product=args.product, site=args.site, site_codes=args.site_codes,
        domain_code=args.domain_code, product_codes=args.product_codes, release=args.release,
        provisional=args.provisional, start_month=args.start_month, end_month=args.end_month, fmt=args.format,
        limit=args.limit, offset=args.offset,
    )
    source = Source(origin="upstream" if a.from_upstream else "catalog", api_base_url=call.cfg.eco.base_url)
    out = AvailabilityOutput(**dict(a.record), resolved=a.resolved, notes=a.notes,
                             next_steps=_steps(args, a.record), source=source)
    return out, not a.from_upstream


TOOLS = [
    ToolSpec(
        name="eco_get_availability",
        title="Data availability by month",
        description=(
            "Which months of data exist. product only: a row per site; site only: a row per product; both: "
            "one cell. Rows split months by release in byRelease (PROVISIONAL its own key); summary totals "
            "site-months per release."
        ),
        surface="discovery",
        input_model=AvailabilityInput,
        output_model=AvailabilityOutput,
        read=get_availability_tool,
        endpoints=("POST /graphql", "GET /products/{productCode}", "GET /sites/{siteCode}"),
        page_lists={"rows": "page"},
    ),
]
