"""Registration of the tables family's tools (families/tables.py)."""

from __future__ import annotations

from families import tables
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_describe_tables",
        title="Describe data tables",
        description=(
            "A product's tables and every field (description, data type, units, basic/expanded) from NEON's "
            "variables file, with table type and, for sensor data, positions (HOR.VER) and averaging interval. "
            "Filter by tables or search words; paged. Needs a token."
        ),
        surface="data",
        input_model=tables.DescribeTablesInput,
        output_model=tables.DescribeTablesOutput,
        read=tables.describe_tables,
        requires_token=True,
        endpoints=("GET /data/{productCode}/{siteCode}/{yearMonth}",),
        page_lists={"fields": "page"},
    ),
    ToolSpec(
        name="eco_stack_tables",
        title="Stack data tables",
        description=(
            "Stack a product's per-site, per-month CSVs (1-30 sites, a month range) into one typed Parquet file "
            "per table, as neonUtilities stacks them: columns typed from the variables file, units in the metadata, "
            "domainID/siteID/positions, publicationDate, release; files MD5-verified. stdio: into the download "
            "directory, answered when done; a second call rebuilds only what changed upstream. HTTP: built on the "
            "server, shared by callers asking the same selection; the call answers at once with dataset_id and "
            "state (building with progress, ready, failed): call again with dataset_id until ready. Answers rows, "
            "columns, time spans and citations. Needs a token."
        ),
        surface="data",
        input_model=tables.StackTablesInput,
        output_model=tables.StackTablesOutput,
        read=tables.stack_tables,
        requires_token=True,
        endpoints=("GET /data/{productCode}/{siteCode}/{yearMonth}", "POST /data/query"),
        read_only=False,
        page_lists={},
    ),
    ToolSpec(
        name="eco_query_tables",
        title="Query stacked tables",
        description=(
            "Read-only SQL (one DuckDB SELECT/WITH) over one dataset from eco_stack_tables: its tables by NEON name, "
            "variables, sensor_positions, and <table>_positioned (each sensor row with its location, height and "
            "coordinates; heightRank = 1 is the tower top or shallowest sensor). Answers columns with units, rows "
            "(limit, result budget), the row count, the time taken and the citations of the releases read."
        ),
        surface="data",
        input_model=tables.QueryTablesInput,
        output_model=tables.QueryTablesOutput,
        read=tables.query_tables,
        page_lists={},
    ),
]
