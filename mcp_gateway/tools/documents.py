"""Registration of the documents family's tool (families/documents.py)."""

from __future__ import annotations

from families import documents
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_get_document",
        title="Document (ATBD, protocol, user guide)",
        description=(
            "A NEON document by spec_number or by its documents URL on the upstream (no other address). "
            "Default: metadata only (type, size, file name). extract_text=true reads a PDF (up to 25 MiB) in "
            "memory: text paged by max_chars/char_offset (follow nextCharOffset) or by pages; "
            "pageCount and charsTotal say how much there is. "
            "Find spec numbers with eco_get_product include=['specs']."
        ),
        surface="discovery",
        input_model=documents.GetDocumentInput,
        output_model=documents.GetDocumentOutput,
        read=documents.get_document,
        endpoints=("GET /documents/{specNumber}",),
        page_lists={},
    ),
]
