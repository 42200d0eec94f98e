"""The README keeps its promises: two opening commands, and a configuration table that matches the model."""

from __future__ import annotations

import os
import re
from pathlib import Path

from eco_core import config_reference

ROOT = Path(__file__).resolve().parents[2]


def test_configuration_reference_in_readme_is_generated_from_the_model():
    text = (ROOT / "README.md").read_text()
    assert config_reference.updated(text) == text, "README is stale: run `python -m eco_core.config_reference`"


def test_configuration_reference_lists_every_setting():
    text = (ROOT / "README.md").read_text()
    from eco_core.config import iter_settings

    for path, _field, _default in iter_settings():
        assert f"| `{path}` |" in text


def test_readme_opens_with_exactly_two_commands_that_exist():
    text = (ROOT / "README.md").read_text()
    first_block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert first_block and text.index("```sh") < text.index("\n## ")
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines() if line.strip()]
    assert commands == ["scripts/serve", "scripts/test"]
    for command in commands:
        assert os.access(ROOT / command, os.X_OK)


def test_ci_runs_the_readme_test_command():
    assert "bash scripts/test" in (ROOT / ".ci/run").read_text()
