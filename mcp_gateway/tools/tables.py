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
]
