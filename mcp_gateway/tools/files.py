"""Registration of the files family's tool (families/files.py)."""

from __future__ import annotations

from families import files
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_list_files",
        title="List data files",
        description=(
            "Data files of a product for 1-30 sites and a month range (<=500 site-months), with signed URLs; "
            "detail summary or site_months sizes a download. Needs a token."
        ),
        surface="data",
        input_model=files.ListFilesInput,
        output_model=files.ListFilesOutput,
        read=files.list_files,
        requires_token=True,
        endpoints=("GET /data/{productCode}/{siteCode}/{yearMonth}",
                   "GET /data/{productCode}/{siteCode}/{yearMonth}/{filename}", "POST /data/query"),
        page_lists={"files": "page", "siteMonths": "page"},
    ),
]
