"""Registration of the documents family's tool (families/documents.py)."""

from __future__ import annotations

from families import documents
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_get_document",
        title="Document (ATBD, protocol, user guide)",
        description=(
            "A NEON document by spec_number or URL: metadata, or with extract_text its PDF text (up to 25 MiB) "
            "paged by max_chars/char_offset (follow nextCharOffset) or pages. Spec numbers: eco_get_product "
            "include=['specs']."
        ),
        surface="discovery",
        input_model=documents.GetDocumentInput,
        output_model=documents.GetDocumentOutput,
        read=documents.get_document,
        endpoints=("GET /documents/{specNumber}",),
        page_lists={},
    ),
]
