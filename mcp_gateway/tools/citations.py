"""eco_get_citation: citation text and BibTeX for a data product in a release (DOI cross-checked
against the release record), for its provisional data, or for a prototype dataset."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from catalog.access import catalog_index
from catalog.citations import CitationRecord, citation
from eco_core.wire import Envelope, NextStep, Source, ToolInput
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec


class GetCitationInput(ToolInput):
    product: str | None = Field(None, max_length=300, description="Product code or name.")
    prototype_uuid: str | None = Field(None, max_length=64, description="Cite a prototype dataset instead.")
    release: str = Field("latest", max_length=64, description=(
        "RELEASE-YYYY, a uuid, or latest: the newest release with a DOI for the product."))
    provisional: bool = Field(False, description="Provisional form (no DOI, may change); not with a release.")
    format: Literal["text", "bibtex", "all"] = "all"
    accessed_on: str | None = Field(None, max_length=32, description="YYYY-MM-DD; default today (UTC).")
    site_codes: list[str] | None = Field(None, max_length=81, description="Sites named in the citation.")


class GetCitationOutput(CitationRecord, Envelope):
    pass


def _steps(out: CitationRecord) -> list[NextStep]:
    if out.release:
        return [NextStep(tool="eco_get_release", arguments={"release": out.release, "product_code": out.product_code},
                         why=f"{out.release} and the product as published in it.")]
    if out.product_code:
        return [NextStep(tool="eco_get_availability", arguments={"product": out.product_code},
                         why="Which months are provisional and which are released.")]
    return [NextStep(tool="eco_get_prototype_dataset", arguments={"uuid": out.prototype_uuid},
                     why="The dataset's files and description.")]


async def get_citation_tool(args: GetCitationInput, call: CallContext) -> GetCitationOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client, need=("products", "sites", "releases"))
    a = await citation(
        idx=idx, client=ports.upstream_client(), product=args.product, prototype_uuid=args.prototype_uuid,
        release=args.release if "release" in args.model_fields_set else None, provisional=args.provisional,
        fmt=args.format, accessed_on=args.accessed_on, site_codes=list(args.site_codes) if args.site_codes else None,
    )
    src = (Source(origin="upstream", endpoints=["GET /prototype/datasets/{uuid}"], api_base_url=cfg.eco.base_url)
           if a.from_upstream else Source(origin="catalog", api_base_url=cfg.eco.base_url))
    return GetCitationOutput(**dict(a.record), resolved=a.resolved, notes=a.notes, next_steps=_steps(a.record),
                             source=src)


TOOLS = [
    ToolSpec(
        name="eco_get_citation",
        title="Cite a data product",
        description=(
            "Citation text and BibTeX (@misc) for a data product (code or name) in a release, following NEON's "
            "data policy (CC BY 4.0), or for a prototype dataset (prototype_uuid; exactly one of the two). "
            "release latest means the newest release with a DOI for the product; provisional=true gives the "
            "provisional form (no DOI, may change). The DOI is cross-checked against the release record; "
            "disagreements are in notes. No upstream request for products once the catalog is warm."
        ),
        surface="discovery",
        input_model=GetCitationInput,
        output_model=GetCitationOutput,
        read=get_citation_tool,
        endpoints=("GET /releases", "GET /prototype/datasets/{uuid}"),
    ),
]
