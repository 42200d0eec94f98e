"""Docstrings and comments in product code say why; measurements, instruction counts and issue
numbers belong to bench/ docstrings, commit messages and notes, where they can age in the open."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("eco_core", "upstream", "catalog", "downloads", "families", "mcp_gateway", "eco_service")
FIGURE = re.compile(
    r"issue \d+|\(#\d+\)|\d[\d,.]* (?:k |M )?instructions|\d+(?:\.\d+)? ?(?:ms|µs)\b|\d+(?:\.\d+)? ?s of (?:cpu|wall)"
    r"|\bp(?:50|99)\b|\d+(?:\.\d+)?x (?:faster|slower)|\d+ ?% (?:of|faster|less|more)|\d[\d.]* ?(?:MB|KB) (?:RSS|of memory)",
    re.IGNORECASE)
FILES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "migrations" not in p.parts)


def _prose(source: str) -> list[tuple[int, str]]:
    """Comments and string literals standing alone as statements (docstrings), with their line."""
    found = []
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.COMMENT:
            found.append((tok.start[0], tok.string))
        elif tok.type == tokenize.STRING and (i == 0 or tokens[i - 1].type in (
                tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)):
            found.append((tok.start[0], tok.string))
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_docstring_or_comment_carries_an_issue_number_or_a_measurement(path):
    hits = [f"{path.name}:{line}: {m.group(0)}" for line, text in _prose(path.read_text())
            for m in FIGURE.finditer(text)]
    assert hits == []
