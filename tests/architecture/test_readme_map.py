"""The README's map of the code tells the truth: every package and module it names exists, each
family's row points at its tool module and its read module (or package of read modules), and a
family marked `planned` has not quietly landed without the map being updated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
SECTION = README[README.index("## Where things are"): README.index("## Configuration reference")]


def _table_rows(text: str, header_start: str) -> list[list[str]]:
    lines = text[text.index(header_start):].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


PACKAGE_ROWS = _table_rows(SECTION, "| Path | What it owns |")
FAMILY_ROWS = _table_rows(SECTION, "| Family | Tools |")


def _paths(cell: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"`([^`]+)`", cell) if "/" in m.group(1)]


def test_the_map_has_both_tables():
    assert len(PACKAGE_ROWS) >= 7 and len(FAMILY_ROWS) >= 14


@pytest.mark.parametrize("row", PACKAGE_ROWS, ids=lambda r: r[0].strip("`"))
def test_every_package_and_module_the_map_names_exists(row):
    top = row[0].strip("`")
    missing = [p for p in [top, *(f"{top}{p}" if not p.startswith(top) else p for p in _module_names(row[1], top))]
               if not (ROOT / p).exists()]
    assert missing == []


def _module_names(cell: str, top: str) -> list[str]:
    # In the "what it owns" cell, modules are named relative to the package (`config.py`, `tools/<family>.py`).
    return [name for name in re.findall(r"`([\w/]+(?:\.py|/))`", cell) if "<" not in name]


@pytest.mark.parametrize("row", FAMILY_ROWS, ids=lambda r: r[0])
def test_each_family_row_points_at_what_exists_for_its_status(row):
    family, tools, tool_module, reads, status = row
    tool_path, reads_path = _paths(tool_module)[0], _paths(reads)[0]
    assert status in {"built", "planned"}, f"{family}: status must be built or planned"
    if status == "built":
        assert (ROOT / tool_path).is_file(), f"{family}: {tool_path} is missing"
        # A family's reads are one module, or a package of one module per tool (families/tables/).
        reads = ROOT / reads_path
        assert reads.is_file() or (reads / "__init__.py").is_file(), f"{family}: {reads_path} is missing"
        source = (ROOT / tool_path).read_text()
        for tool in (t.strip() for t in tools.split(",")):
            assert f'"{tool}"' in source, f"{family}: {tool} is not declared in {tool_path}"
    else:
        # A planned family's read module may already hold shared reads; its tools are what land it.
        assert not (ROOT / tool_path).exists(), f"{family} has landed: mark its row built in the README"


def test_every_registered_tool_belongs_to_exactly_one_family_row():
    from mcp_gateway.registry import discover_specs

    named = [t.strip() for row in FAMILY_ROWS for t in row[1].split(",")]
    assert len(named) == len(set(named))
    registered = {spec.name for spec in discover_specs()}
    assert registered <= set(named), f"tools missing from the README map: {sorted(registered - set(named))}"
