"""The smoke walk (tests/runtime/smoke_walk.py) in the runtime environment: the demo's simulator and
service, then every listed tool called once over stdio and over HTTP with real arguments (a stack
followed to ready and queried, a download, a citation among them), with no error answer, no
tool left uncalled and no traceback or import error on any stderr. A module that only the
development lock brings shows here as the call that needs it failing."""

from __future__ import annotations

import subprocess

import pytest

from tests.runtime.conftest import ROOT, runtime_env

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)  # the demo's start and two walks, on a loaded CI box: over the default
def test_every_listed_tool_answers_over_stdio_and_http_from_the_runtime_environment(runtime_python, tmp_path):
    run = subprocess.run([runtime_python, str(ROOT / "tests" / "runtime" / "smoke_walk.py"), "--data-dir",
                          str(tmp_path / "demo")], cwd=ROOT, env=runtime_env(tmp_path / "unused"),
                         capture_output=True, text=True, timeout=840)
    report = run.stdout[-12000:] + run.stderr[-6000:]
    assert run.returncode == 0, report
    assert "smoke walk:" in run.stdout and ", 0 problems" in run.stdout, report
    for transport in ("stdio", "http"):
        for tool in ("eco_stack_tables", "eco_query_tables", "eco_get_citation"):
            assert f"[{transport}] {tool} " in run.stdout, report
    assert "[stdio] eco_download_files " in run.stdout, report
