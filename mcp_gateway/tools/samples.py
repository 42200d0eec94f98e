"""Registration of the samples family's tools (families/samples.py)."""

from __future__ import annotations

from families import samples
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_list_sample_classes",
        title="Sample classes",
        description=(
            "Sample classes (keys '<table>.<field>'): every one, filtered by query, or the ones a sample_tag "
            "belongs to (empty when none). No token needed."
        ),
        surface="discovery",
        input_model=samples.ListSampleClassesInput,
        output_model=samples.ListSampleClassesOutput,
        read=samples.list_sample_classes,
        endpoints=("GET /samples/supportedClasses", "GET /samples/classes"),
    ),
    ToolSpec(
        name="eco_get_sample",
        title="Sample custody record",
        description=(
            "One physical sample (custody events, parents, children) by exactly one of sample_tag (plus "
            "sample_class if ambiguous), sample_uuid, barcode or archive_guid; degree adds relatives. Needs a "
            "token."
        ),
        surface="data",
        input_model=samples.GetSampleInput,
        output_model=samples.GetSampleOutput,
        read=samples.get_sample,
        requires_token=True,
        endpoints=("GET /samples/view", "GET /samples/download", "GET /samples/classes"),
    ),
]
