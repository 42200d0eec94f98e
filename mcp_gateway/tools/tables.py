"""Registration of the tables family's tools (families/tables/: one module per tool)."""

from __future__ import annotations

from families.tables import describe, plot, query, stack
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_describe_tables",
        title="Describe data tables",
        description=(
            "A product's tables and fields (description, type, units) with table type and sensor positions "
            "(HOR.VER): read before querying its data. Paged. Needs a token."
        ),
        surface="data",
        input_model=describe.DescribeTablesInput,
        output_model=describe.DescribeTablesOutput,
        read=describe.describe_tables,
        requires_token=True,
        endpoints=("GET /data/{productCode}/{siteCode}/{yearMonth}",),
        page_lists={"fields": "page"},
    ),
    ToolSpec(
        name="eco_stack_tables",
        title="Stack data tables",
        description=(
            "Stack a product's monthly CSVs for 1-30 sites and a month range into one typed Parquet file per "
            "table (as neonUtilities does), to query with eco_query_tables. stdio: built before answering; HTTP: "
            "answers at once with dataset_id and state: call again with dataset_id until ready. Returns tables "
            "(rows, columns, time spans) and citations. Needs a token."
        ),
        surface="data",
        input_model=stack.StackTablesInput,
        output_model=stack.StackTablesOutput,
        read=stack.stack_tables,
        requires_token=True,
        endpoints=("GET /data/{productCode}/{siteCode}/{yearMonth}", "POST /data/query"),
        read_only=False,
        page_lists={},
    ),
    ToolSpec(
        name="eco_query_tables",
        title="Query stacked tables",
        description=(
            "SQL (one read-only DuckDB SELECT/WITH) over a dataset from eco_stack_tables: its tables, variables, "
            "sensor_positions, <table>_positioned (rows with location and height). Returns columns with units, "
            "rows, row count and citations."
        ),
        surface="data",
        input_model=query.QueryTablesInput,
        output_model=query.QueryTablesOutput,
        read=query.query_tables,
        page_lists={},
    ),
    ToolSpec(
        name="eco_plot_tables",
        title="Plot stacked tables",
        description=(
            "A chart of one read-only DuckDB query over a dataset from eco_stack_tables (as eco_query_tables): "
            "line over time, bars by group or scatter, axes with units, one colour per group, the citation as "
            "caption. Returns a PNG image and the chart's Vega-Lite spec with its data; long series are "
            "averaged into time buckets or sampled (a note says how)."
        ),
        surface="data",
        input_model=plot.PlotTablesInput,
        output_model=plot.PlotTablesOutput,
        read=plot.plot_tables,
        page_lists={},
        # The chart's data is brought to its point budget by the tool; the hard limit still applies.
        fits_own_budget=True,
    ),
]
