"""Charts of a query's result: the Vega-Lite specification (with its data inline) and its PNG.

The PNG is rendered from that very specification by vl-convert (Vega-Lite and Vega in an embedded
JavaScript engine, no browser), so the image an MCP client shows and the interactive chart a
client or the dataset pages draw from the spec are one source. vl-convert was chosen over
matplotlib by measurement (bench/bench_plot.py's docstring). It loads on the first render only:
a stdio server's start imports none of it.

The data's field names are short (x, y, c): a chart of POINT_BUDGET points is sent in every
answer, and the columns' own names (with units) are in the encodings' titles and tooltips.
"""

from __future__ import annotations

import io
import struct
import textwrap
import threading
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["line", "bar", "scatter"]

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
# The plot area; axes, legend and caption add to it (the PNG is about 800 px wide).
WIDTH, HEIGHT = 640, 320
TEMPORAL = ("timestamp", "date")
NUMERIC = ("double", "int64", "int32", "int16", "int8", "int128", "uint64")
CAPTION_WIDTH = 110  # characters per caption line
# A rendered PNG larger than this is re-encoded with a palette (Pillow, loaded then).
COMPRESS_ABOVE = 96 << 10

# vl-convert's JavaScript engine is shared by the process; one render at a time keeps its
# memory at one chart's (renders take a fraction of a second).
_render_lock = threading.Lock()


@dataclass(frozen=True)
class Field:
    """A column as a chart shows it: the key in the data, its title (units included) and its
    Vega-Lite type."""

    key: str
    title: str
    type: Literal["temporal", "quantitative", "nominal", "ordinal"]


def axis_title(name: str, column_type: str, units: str | None) -> str:
    if column_type in TEMPORAL:
        return f"{name} (UTC)"
    return f"{name} ({units})" if units else name


def vega_type(column_type: str, kind: Kind, axis: str) -> Literal["temporal", "quantitative", "nominal", "ordinal"]:
    if column_type in TEMPORAL:
        return "temporal"
    if column_type in NUMERIC and not (kind == "bar" and axis == "x"):
        return "quantitative"
    return "ordinal" if axis == "x" else "nominal"


def caption(citations: list[str]) -> list[str]:
    lines: list[str] = []
    for text in citations:
        lines += textwrap.wrap(text, CAPTION_WIDTH) or [text]
    return lines


def spec(kind: Kind, values: list[dict[str, Any]], x: Field, y: Field, color: Field | None, *, title: str,
         subtitle: list[str]) -> dict[str, Any]:
    """The Vega-Lite specification of the chart, its data inline."""
    enc: dict[str, Any] = {}
    xe: dict[str, Any] = {"field": "x", "type": x.type, "title": x.title}
    if x.type == "temporal":
        xe["scale"] = {"type": "utc"}  # times are UTC in the data: shown as such, whatever the viewer's zone
    elif x.type in ("nominal", "ordinal"):
        xe["sort"] = None  # the query's order (its ORDER BY)
        xe["axis"] = {"labelLimit": 120}
    if kind == "scatter" and x.type == "quantitative":
        xe["scale"] = {"zero": False}
    enc["x"] = xe
    enc["y"] = {"field": "y", "type": "quantitative", "title": y.title, "scale": {"zero": kind == "bar"}}
    tooltip = [{"field": "x", "type": x.type, "title": x.title}, {"field": "y", "type": "quantitative", "title": y.title}]
    if color is not None:
        enc["color"] = {"field": "c", "type": "nominal", "title": color.title, "sort": None}
        tooltip.append({"field": "c", "type": "nominal", "title": color.title})
        if kind == "bar":
            enc["xOffset"] = {"field": "c", "type": "nominal", "sort": None}  # grouped, not stacked
    enc["tooltip"] = tooltip
    marks: dict[str, dict[str, Any]] = {"line": {"type": "line", "strokeWidth": 1.5}, "bar": {"type": "bar"},
                                        "scatter": {"type": "point", "filled": True, "size": 18, "opacity": 0.7}}
    mark = marks[kind]
    if kind == "line" and x.type == "temporal":
        mark["interpolate"] = "linear"
    return {
        "$schema": SCHEMA,
        "title": {"text": title, "subtitle": subtitle, "anchor": "start", "subtitleColor": "#555",
                  "subtitleFontSize": 10, "fontSize": 15},
        "width": WIDTH,
        "height": HEIGHT,
        "background": "white",
        "data": {"values": values},
        "mark": mark,
        "encoding": enc,
        "config": {"axis": {"titleFontSize": 12, "labelFontSize": 11}, "legend": {"titleFontSize": 12,
                                                                                   "labelFontSize": 11}},
    }


def render_png(vl_spec: dict[str, Any]) -> bytes:
    """The specification as PNG. No request leaves the process: the data is inline and no base
    URL is allowed."""
    import vl_convert

    with _render_lock:
        png = bytes(vl_convert.vegalite_to_png(vl_spec, scale=1.0, allowed_base_urls=[]))
    return png if len(png) <= COMPRESS_ABOVE else _palette(png)


def _palette(png: bytes) -> bytes:
    """The PNG with a palette of 256 colours: a chart has few, and vl-convert's true-colour PNG of
    a dense line is 250-300 KB, a tenth of that with a palette, text as legible."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    out = io.BytesIO()
    small.save(out, "PNG", optimize=True)
    return out.getvalue()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from the PNG's IHDR chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    w, h = struct.unpack(">II", png[16:24])
    return int(w), int(h)
