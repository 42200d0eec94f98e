"""eco_get_document: a NEON document (ATBD, protocol, user guide) by spec number or documents URL:
its metadata, or its PDF text paged by characters or pages."""

from __future__ import annotations

from pydantic import Field

from catalog.access import catalog_index
from catalog.documents import DocumentRecord, get_document
from eco_core.wire import Envelope, NextStep, Source, ToolInput
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec


class GetDocumentInput(ToolInput):
    spec_number: str | None = Field(None, min_length=1, max_length=100, description="e.g. NEON.DOC.000780vB.")
    url: str | None = Field(None, max_length=500, description="A documents URL on the upstream REST base.")
    product: str | None = Field(None, max_length=300, description="Check the document belongs to this product.")
    extract_text: bool = Field(False, description="Read the PDF's text in memory (nothing written to disk).")
    max_chars: int = Field(20000, ge=500, le=100000)
    char_offset: int = Field(0, ge=0)
    pages: str | None = Field(None, max_length=20, description="PDF pages: '3' or '2-5'.")


class GetDocumentOutput(DocumentRecord, Envelope):
    pass


def _steps(rec: DocumentRecord, args: GetDocumentInput) -> list[NextStep]:
    base = {"spec_number": rec.spec_number, "extract_text": True}
    if rec.next_char_offset is not None:
        more = {"pages": args.pages} if args.pages else {}
        return [NextStep(tool="eco_get_document", arguments={**base, **more, "char_offset": rec.next_char_offset,
                                                             "max_chars": args.max_chars}, why="The next part of the text.")]
    if not args.extract_text and "pdf" in (rec.content_type or ""):
        return [NextStep(tool="eco_get_document", arguments={**base, "pages": "1-2"}, why="Read its first pages.")]
    return []


async def get_document_tool(args: GetDocumentInput, call: CallContext) -> GetDocumentOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client) if args.product is not None else None
    a = await get_document(ports.upstream_client(), cfg, spec_number=args.spec_number, url=args.url,
                           product=args.product, idx=idx, extract_text=args.extract_text, max_chars=args.max_chars,
                           char_offset=args.char_offset, pages=args.pages)
    return GetDocumentOutput(**dict(a.record), resolved=a.resolved, notes=a.notes, next_steps=_steps(a.record, args),
                             source=Source(origin="upstream", endpoints=["/documents/{specNumber}"],
                                           api_base_url=cfg.eco.base_url))


TOOLS = [
    ToolSpec(
        name="eco_get_document",
        title="Document (ATBD, protocol, user guide)",
        description=(
            "A NEON document by spec_number or by its documents URL on the upstream (no other address). "
            "Default: metadata only (type, size, file name). extract_text=true reads a PDF (up to 25 MiB) in "
            "memory: text paged by max_chars/char_offset (follow nextCharOffset) or by pages ('3', '2-5'); "
            "pageCount and charsTotal say how much there is. product checks the document belongs to it. "
            "Find spec numbers with eco_get_product include=['specs']."
        ),
        surface="discovery",
        input_model=GetDocumentInput,
        output_model=GetDocumentOutput,
        read=get_document_tool,
        endpoints=("GET /documents/{specNumber}",),
        page_lists={},
    ),
]
