"""The official MCP conformance suite (npm @modelcontextprotocol/conformance) runs its server
scenarios against the real HTTP server: the default suite and the 2026-07-28 requirements.

Installs into tests/gateway/conformance/ on first run (about 10 s; the two runs take a few
seconds); skips loudly when node or npm is missing or the package cannot be installed. The
0.2.0 alphas import fs.globSync, which Node 20 lacks: register.mjs gives the package a small
shim on such a Node (its only use is the tier-check command, not the server scenarios).

Out of scope, so not held against the server: checks that need the diagnostic tools, prompts and
resources only the suite's own test server lists (test_simple_text, test://static-text,
x-mcp-header tools, ...), scenarios for capabilities the server does not declare (logging,
resources.subscribe; NOT_APPLICABLE) and the tasks extension, which the server does not
advertise. Every other check must pass.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.catalog.conftest import catalog_module, fresh_index, mini_client  # noqa: F401  (fixtures)
from tests.tools.conftest import sim_cfg, sim_config  # noqa: F401  (fixtures)

NODE_DIR = Path(__file__).parent / "conformance"
PACKAGE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance"
NOT_APPLICABLE = {
    "logging-set-level": "the server declares no logging capability",
    "tools-call-with-logging": "it sets a log level first; the server declares no logging capability",
    "resources-subscribe": "the server declares no resources.subscribe capability",
    "resources-unsubscribe": "the server declares no resources.subscribe capability",
}
NOT_ADVERTISED_PREFIX = "tasks-"  # the tasks extension: not advertised, not scored for 2026-07-28
# What a check says when it needed a tool, prompt or resource only the suite's test server has.
DIAGNOSTIC = re.compile(
    r"Not testable: server (does not list the diagnostic tool|exposes no tool with x-mcp-header)"
    r"|Unknown (tool|prompt): (test_|json_schema_|slow_compute)"
    r"|Unknown resource: test://"
    r"|Tool '(test_|json_schema_)\w*' not found"
    r"|Resource template '?test://")
# Scenarios that call a diagnostic tool whose failure message does not name it
# (test_input_required_result_multi_round, test_input_required_result_tampered_state).
DIAGNOSTIC_SCENARIOS = {"input-required-result-multi-round", "input-required-result-tampered-state"}
# Checks that call a diagnostic tool (test_*) and judge its answer, not an error: this server
# answers an unknown tool as the spec's table says, a tool result with isError and unknown_tool,
# so the check reports the feature missing instead of naming the tool.
DIAGNOSTIC_CHECKS = {
    "elicitation-sep1034-defaults/elicitation-sep1034-general", "elicitation-sep1330-enums/elicitation-sep1330-general",
    "input-required-result-basic-elicitation/sep-2322-elicitation-incomplete",
    "input-required-result-basic-list-roots/sep-2322-list-roots-incomplete",
    "input-required-result-basic-sampling/sep-2322-sampling-incomplete",
    "input-required-result-capability-check/sep-2322-respect-client-capabilities",
    "input-required-result-multiple-input-requests/sep-2322-multiple-inputs-incomplete",
    "input-required-result-request-state/sep-2322-request-state-incomplete",
    "input-required-result-result-type/sep-2322-result-type-included",
    "server-stateless/sep-2575-server-rejects-undeclared-capability",
    "tools-call-audio/tools-call-audio", "tools-call-elicitation/tools-call-elicitation",
    "tools-call-embedded-resource/tools-call-embedded-resource", "tools-call-image/tools-call-image",
    "tools-call-mixed-content/tools-call-mixed-content", "tools-call-sampling/tools-call-sampling",
    "tools-call-with-progress/tools-call-with-progress",
}
# Scenarios that must run and pass whole: the protocol edges the review found included.
MUST_PASS = {
    "default": {"server-initialize", "ping", "tools-list", "resources-list", "prompts-list", "completion-complete",
                "dns-rebinding-protection"},
    "2026-07-28": {"tools-list", "resources-list", "prompts-list", "caching", "http-header-validation",
                   "sep-2164-resource-not-found", "dns-rebinding-protection", "server-sse-multiple-streams"},
}
RUNS = {"default": [], "2026-07-28": ["--requirements", "2026-07-28"]}


@pytest.fixture(scope="module")
def conformance() -> Path:
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("CONFORMANCE SUITE NOT RUN: node/npm are not installed")
    major = int(subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"], capture_output=True,
                               text=True, check=True).stdout.strip())
    if major < 20:
        pytest.skip(f"CONFORMANCE SUITE NOT RUN: Node {major} is too old (the suite needs Node 20 or newer)")
    if not (PACKAGE / "package.json").exists():
        try:
            subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True,
                           capture_output=True, timeout=300)
        except (subprocess.SubprocessError, OSError) as exc:
            pytest.skip(f"CONFORMANCE SUITE NOT RUN: could not install @modelcontextprotocol/conformance: {exc}")
    if not (PACKAGE / "package.json").exists():
        pytest.skip("CONFORMANCE SUITE NOT RUN: @modelcontextprotocol/conformance is not installed")
    return PACKAGE / "dist" / "index.js"


def _run(cli: Path, url: str, args: list[str], out: Path) -> dict[str, list[dict]]:
    """scenario -> its checks, as the suite saved them."""
    proc = subprocess.run(["node", "--import", "./register.mjs", str(cli), "server", "--url", url, "-o", str(out),
                           *args], cwd=NODE_DIR, capture_output=True, text=True, timeout=240)
    scenarios: dict[str, list[dict]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        name = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name)
        scenarios[name] = json.loads(checks.read_text())
    assert scenarios, f"the suite saved no results (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return scenarios


@pytest.mark.parametrize("run", list(RUNS))
async def test_the_official_conformance_suites_applicable_server_scenarios_pass(
        http_server, conformance, sim, sim_cfg, active_config, tmp_path, run):  # noqa: F811
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)  # the server thread's upstream client reads the active configuration
    # The tools answer from the simulated catalog; the suite runs in its own process.
    with http_server(cfg) as srv:
        scenarios = _run(conformance, srv.url, RUNS[run], tmp_path)
    failed, out_of_scope = [], 0
    for name, checks in scenarios.items():
        if name in NOT_APPLICABLE or name.startswith(NOT_ADVERTISED_PREFIX):
            continue
        for c in checks:
            if c["status"] not in ("FAILURE", "ERROR"):
                continue
            if (name in DIAGNOSTIC_SCENARIOS or f"{name}/{c['id']}" in DIAGNOSTIC_CHECKS
                    or DIAGNOSTIC.search(c.get("errorMessage") or "")):
                out_of_scope += 1
                continue
            failed.append(f"{name}/{c['id']}: {(c.get('errorMessage') or '')[:300]}")
    assert not failed, "\n".join(failed)
    for name in MUST_PASS[run]:
        checks = scenarios.get(name)
        assert checks, f"scenario {name} did not run"
        assert all(c["status"] in ("SUCCESS", "INFO", "SKIPPED", "WARNING") for c in checks), (name, checks)
        assert any(c["status"] == "SUCCESS" for c in checks), name
    assert out_of_scope > 0  # the diagnostic-tool checks are seen, and set aside by the rule above
    if run == "2026-07-28":
        by_id = {c["id"]: c["status"] for c in scenarios["http-header-validation"]}
        assert by_id.get("sep-2243-server-accepts-whitespace-header-value") == "SUCCESS", by_id
