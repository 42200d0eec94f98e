"""Registration of the downloads family's tool (families/downloads.py)."""

from __future__ import annotations

from families import downloads
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_download_files",
        title="Download files",
        description=(
            "Download (stdio only) data files as eco_list_files selects them, package ZIPs (as_zip), a prototype "
            "dataset's files (prototype_uuid) or a document (spec_number). At most 50 files, 2 GiB a call, 1 GiB "
            "a file; MD5-checked, resumable, kept in eco-manifest.json. Data files need a token."
        ),
        surface="data",
        input_model=downloads.DownloadInput,
        output_model=downloads.DownloadOutput,
        read=downloads.download_files,
        requires_token=True,
        endpoints=("GET /data/package/{productCode}/{siteCode}/{yearMonth}", "GET /prototype/data/{uuid}",
                   "GET /documents/{specNumber}", "POST /data/query"),
        stdio_only=True,
        read_only=False,
        page_lists={},
    ),
]
