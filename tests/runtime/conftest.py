"""What ships, tested as it ships: the runtime environment, `.venv-runtime`, made by
`scripts/setup --venv .venv-runtime` from requirements.lock alone plus the project without its
dependencies (what scripts/setup makes for scripts/serve, and what the image installs).
scripts/test makes it and exports its interpreter as ECO_RUNTIME_PYTHON; without one these tests
skip loudly, and under CI=true fail."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_VENV = ROOT / ".venv-runtime"
# Test tools only the development lock brings: found in the runtime environment, it is not one.
DEV_ONLY = ("pytest", "pandas", "neonutilities")


@pytest.fixture(scope="session")
def runtime_python() -> str:
    path = os.environ.get("ECO_RUNTIME_PYTHON") or str(RUNTIME_VENV / "bin" / "python")
    if not Path(path).is_file():
        reason = f"the runtime environment ({path}) is missing: scripts/test makes it"
        if IN_CI:
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)
    probe = subprocess.run([path, "-c", f"import importlib.util as u; print([m for m in {DEV_ONLY!r} if u.find_spec(m)])"],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.strip() == "[]", f"{path} holds development tools ({probe.stdout.strip()}): not the runtime set"
    return path


def runtime_env(data_dir: Path) -> dict[str, str]:
    """The caller's environment without a deployment's settings: the service reads its own data folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN"))}
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "PYTHONPATH", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    env.update({"ECO_MCP_DATA_DIR": str(data_dir), "DJANGO_SECRET_KEY": "runtime-" + "x" * 50})
    return env
