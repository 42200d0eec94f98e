"""Registration of the downloads family's tool (families/downloads.py)."""

from __future__ import annotations

from families import downloads
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_download_files",
        title="Download files",
        description=(
            "Download to the server's download directory (stdio only): data files by the eco_list_files "
            "selectors, package ZIPs (as_zip), a prototype dataset's files (prototype_uuid, file_names) or one "
            "document (spec_number). Caps: 50 files, 2 GiB a call, 1 GiB a file, max_bytes. Files are "
            "MD5-verified, land under product/site/month, resume from .part, skip identical files, and are "
            "recorded in eco-manifest.json (changedUpstream). Token needed for data files."
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
