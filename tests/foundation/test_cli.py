"""The command line: flags map onto settings, and answers go to stdout while words go to stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from eco_service import __version__
from eco_service.cli import flags_from_options

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "ECO_MCP_DATA_DIR": "/tmp/eco-test-data"}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **(env or {})},
        capture_output=True, text=True, timeout=timeout,
    )


def test_version_prints_the_service_version():
    for command in ("eco_mcp", "eco_mcp_stdio"):
        out = _run(command, "--version")
        assert out.returncode == 0
        assert out.stdout.strip() == f"eco-mcp {__version__}"


def test_every_spec_flag_maps_onto_its_setting():
    flags = flags_from_options(
        {"transport": "http", "bind_address": "0.0.0.0", "bind_port": 9000, "eco_log_level": "debug",
         "download_dir": "/tmp/d", "no_downloads": True, "prewarm": False}
    )
    assert flags == {
        "server.transport": "http", "server.bind_address": "0.0.0.0", "server.bind_port": 9000,
        "server.log_level": "debug", "downloads.directory": "/tmp/d", "downloads.enabled": False,
        "cache.prewarm": False,
    }


def test_flags_reach_the_printed_configuration(tmp_path):
    cfg_file = tmp_path / "eco.yaml"
    cfg_file.write_text("server:\n  bind_port: 7000\n  log_level: warning\n")
    out = _run("eco_mcp", "--config", str(cfg_file), "--transport", "http", "--bind-port", "9123",
               "--no-prewarm", "--no-downloads", "--download-dir", str(tmp_path / "dl"), "--print-config",
               env={"DJANGO_INSECURE_DEV_SECRET": "1"})
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["server"]["bind_port"] == 9123
    assert shown["server"]["log_level"] == "warning"
    assert shown["server"]["transport"] == "http"
    assert shown["resolved"]["cache.prewarm"] is False
    assert shown["downloads"]["directory"] == str(tmp_path / "dl")


def test_stdio_command_pins_the_transport():
    out = _run("eco_mcp_stdio", "--print-config", env={"ECO_MCP_SERVER__TRANSPORT": "http"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["server"]["transport"] == "stdio"


def test_bad_configuration_stops_start_up_with_a_message_not_a_traceback():
    out = _run("eco_mcp", "--print-config", env={"ECO_MCP_ECO__MAX_CONCURRENCY": "999"})
    assert out.returncode == 2
    assert "eco.max_concurrency" in out.stderr and "allowed range 1 to 64" in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stdout == ""


def test_check_prints_a_json_verdict_and_fails_when_upstream_is_unreachable():
    # Port 9 on loopback: nothing listens there, so the connection is refused at once.
    out = _run("eco_mcp", "--check", env={"ECO_MCP_ECO__BASE_URL": "http://127.0.0.1:9/api/v0"})
    assert out.returncode == 1, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["reachable"] is False
    assert verdict["apiBaseUrl"] == "http://127.0.0.1:9/api/v0"


def test_check_exits_zero_with_a_json_verdict_when_the_upstream_answers(sim):
    out = _run("eco_mcp", "--check", env={"ECO_MCP_ECO__BASE_URL": sim.base_url,
                                          "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url})
    assert out.returncode == 0, out.stdout + out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["reachable"] is True
    assert verdict["latencyMs"] >= 0
    assert sim.requests.count(r"^/api/v0/taxonomy$") >= 1


def test_a_tools_list_over_its_byte_bound_stops_start_up_naming_the_setting():
    out = _run("eco_mcp_stdio", env={"ECO_MCP_LIMITS__TOOLS_LIST_MAX_BYTES": "1000"})
    assert out.returncode == 2, out.stderr
    assert "limits.tools_list_max_bytes" in out.stderr and "over the bound of 1000" in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stdout == ""


def test_a_configured_token_that_is_not_printable_ascii_stops_start_up_with_check_e005_never_showing_it(tmp_path):
    # No header could carry it: every request that sends it would fail (internal_error, before).
    token = "tøken-from-a-pasted-document-7f3a"
    for command in ("eco_mcp", "eco_mcp_stdio"):
        out = _run(command, "--print-config", env={"ECO_TOKEN": token, "ECO_MCP_DATA_DIR": str(tmp_path)})
        assert out.returncode == 2, out.stderr
        assert "eco.E005" in out.stderr and "eco.api_token" in out.stderr and "ECO_TOKEN" in out.stderr
        assert token not in out.stderr + out.stdout
    printable = _run("eco_mcp_stdio", "--print-config",
                     env={"ECO_TOKEN": "printable-token-7f3a", "ECO_MCP_DATA_DIR": str(tmp_path)})
    assert printable.returncode == 0, printable.stderr
