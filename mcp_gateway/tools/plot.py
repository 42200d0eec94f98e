"""Registration of the plot family's tool (families/plot.py)."""

from __future__ import annotations

from families import plot
from mcp_gateway.registry import ToolSpec

TOOLS = [
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
