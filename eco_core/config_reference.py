"""Rewrite the README's configuration table from the settings model: `python -m eco_core.config_reference`."""

from __future__ import annotations

import re
from pathlib import Path

from eco_core.config import render_reference

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def updated(text: str) -> str:
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    return pattern.sub(lambda _m: f"{START}\n{render_reference()}{END}", text)


if __name__ == "__main__":
    README.write_text(updated(README.read_text()))
