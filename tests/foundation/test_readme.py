"""The README keeps its promises: two opening commands, then the offline demo and a desktop client's set-up,
the worker and beat commands, and a configuration table that matches the model."""

from __future__ import annotations

import json
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


def test_readme_goes_from_the_two_commands_to_the_offline_demo_to_a_desktop_client():
    text = (ROOT / "README.md").read_text()
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[:2] == ["Offline in one minute: the demo", "A desktop client (Claude Desktop, VS Code, Cursor)"]
    demo = text[text.index("## Offline in one minute"):text.index("## A desktop client")]
    assert "manage.py eco_demo" in demo
    desktop = text[text.index("## A desktop client"):text.index("## Running it")]
    # Set up once first (a desktop client would time out waiting for the first install).
    assert desktop.index("scripts/serve --check` once first") < desktop.index('"mcpServers"')
    config = json.loads(re.search(r"```json\n(.*?)```", desktop, re.S)[1])  # type: ignore[index]
    server = config["mcpServers"]["eco"]
    assert server["command"].endswith("/.venv/bin/eco-mcp") and set(server["env"]) == {"ECO_TOKEN"}
    for where in ("claude_desktop_config.json", "~/Library/Application Support/Claude/", "%APPDATA%\\Claude\\",
                  ".vscode/mcp.json", "~/.cursor/mcp.json", "https://data.neonscience.org", '"API token"'):
        assert where in desktop, where
    # Nothing points outside the clone (the specification is not part of it).
    assert "../" not in text


def test_readme_gives_the_worker_and_beat_commands_with_their_variables():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("#### Web, worker and beat without compose"):text.index("#### Exposing it")]
    for needed in ("DATABASE_URL=", "REDIS_URL=", "CELERY_BROKER_URL=", "DJANGO_SECRET_KEY=",
                   ".venv/bin/celery -A eco_service worker", ".venv/bin/celery -A eco_service beat",
                   "django_celery_beat.schedulers:DatabaseScheduler", "manage.py migrate"):
        assert needed in section, needed
