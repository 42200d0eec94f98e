"""Running the service installs only its runtime dependencies, at the versions of requirements.lock
(scripts/serve, the image); the test command installs the development tools on top, from
requirements-dev.lock, with the same pins for what the two share. Both files come from
pyproject.toml through scripts/lock."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9._-]+)==([^\s;]+)", line)
        if match:
            pins[canonicalize_name(match[1])] = match[2]
    return pins


def test_each_lock_pins_every_dependency_pyproject_asks_for_within_its_range():
    for lock, wanted in (("requirements.lock", PROJECT["dependencies"]),
                         ("requirements-dev.lock", PROJECT["dependencies"] + PROJECT["optional-dependencies"]["dev"])):
        pins = _pins(lock)
        for spec in map(Requirement, wanted):
            name = canonicalize_name(spec.name)
            assert name in pins, f"{lock} lacks {spec.name}: run scripts/lock"
            assert spec.specifier.contains(pins[name], prereleases=True), f"{lock}: {name}=={pins[name]} not {spec}"


def test_the_runtime_lock_holds_no_test_tool_and_the_dev_lock_agrees_with_it():
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    # The heavy ones (jsonschema, say, the MCP SDK needs at run time too).
    tools = {"pytest", "mypy", "ruff", "playwright", "schemathesis", "hypothesis", "neonutilities", "pandas", "psutil"}
    assert not tools & set(runtime), sorted(tools & set(runtime))
    assert {name: dev.get(name) for name in runtime} == runtime


def test_serving_installs_the_runtime_lock_and_testing_the_dev_lock():
    setup = (ROOT / "scripts" / "setup").read_text()
    assert 'pip install -q -r "$lock"' in setup and "pip install -q --no-deps -e ." in setup
    assert "lock=requirements.lock" in setup and "lock=requirements-dev.lock" in setup
    assert "bash scripts/setup\n" in (ROOT / "scripts" / "serve").read_text()
    assert "bash scripts/setup --dev\n" in (ROOT / "scripts" / "test").read_text()
    # Beside the development set, the runtime set alone, which tests/runtime runs the service with.
    assert "bash scripts/setup --venv .venv-runtime\n" in (ROOT / "scripts" / "test").read_text()
