"""Where the upstream token comes from, and that it never shows itself."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from eco_core.config import ConfigError, load_config

CANARY = "canary-TOKEN-5f1d9c0e7a"
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("env", "origin"),
    [
        ({"ECO_MCP_ECO__API_TOKEN": "a" * 12, "ECO_TOKEN": "b" * 12, "ECO_API_TOKEN": "c" * 12}, "ECO_MCP_ECO__API_TOKEN"),
        ({"ECO_TOKEN": "b" * 12, "ECO_API_TOKEN": "c" * 12}, "ECO_TOKEN"),
        ({"ECO_API_TOKEN": "c" * 12}, "ECO_API_TOKEN"),
    ],
)
def test_token_sources_follow_the_spec_order(env, origin, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("eco:\n  api_token: yamltoken-123456\n")
    cfg = load_config(env=env, config_path=path, warn=False)
    assert cfg.token_origin == origin
    assert cfg.eco.api_token.reveal() == env[origin]


def test_yaml_token_is_used_when_no_environment_token(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("eco:\n  api_token: yamltoken-123456\n")
    cfg = load_config(env={}, config_path=path, warn=False)
    assert cfg.token_origin == "yaml" and cfg.eco.api_token.reveal() == "yamltoken-123456"


def test_empty_token_variable_counts_as_unset():
    cfg = load_config(env={"ECO_MCP_ECO__API_TOKEN": "", "ECO_TOKEN": "tok-from-eco-token"}, warn=False)
    assert cfg.token_origin == "ECO_TOKEN"


def test_token_is_masked_in_repr_str_and_dumps():
    cfg = load_config(env={"ECO_TOKEN": CANARY}, warn=False)
    for text in (repr(cfg), str(cfg), repr(cfg.eco), f"{cfg.eco.api_token}", json.dumps(cfg.masked_dict())):
        assert CANARY not in text
    assert cfg.masked_dict()["eco"]["api_token"] == "********"


def test_token_is_masked_in_every_log_line(caplog):
    load_config(env={"ECO_TOKEN": CANARY}, warn=False)
    logger = logging.getLogger("eco.test")
    from eco_core.redact import RedactingFilter

    handler_filter = RedactingFilter()
    with caplog.at_level(logging.INFO, logger="eco.test"):
        caplog.handler.addFilter(handler_filter)
        try:
            logger.info("calling upstream with %s", CANARY)
            try:
                raise RuntimeError(f"boom {CANARY}")
            except RuntimeError:
                logger.exception("failed")
        finally:
            caplog.handler.removeFilter(handler_filter)
    assert caplog.records
    assert CANARY not in caplog.text


def test_token_never_appears_in_a_config_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(f"eco:\n  api_token: ['{CANARY}']\n  max_concurrency: 0\n")
    with pytest.raises(ConfigError) as err:
        load_config(env={}, config_path=path, warn=False)
    assert CANARY not in str(err.value) and CANARY not in repr(err.value)


def test_print_config_masks_the_token_and_shows_its_source():
    out = subprocess.run(
        [sys.executable, "manage.py", "eco_mcp", "--print-config"],
        cwd=ROOT, env={"PATH": "/usr/bin:/bin", "ECO_TOKEN": CANARY, "ECO_MCP_DATA_DIR": "/tmp/eco-test-data"},
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert CANARY not in out.stdout and CANARY not in out.stderr
    shown = json.loads(out.stdout)
    assert shown["eco"]["api_token"] == "********"
    assert (shown["resolved"]["token_source"], shown["resolved"]["token_origin"]) == ("config", "ECO_TOKEN")


def test_there_is_no_token_flag():
    out = subprocess.run(
        [sys.executable, "manage.py", "eco_mcp", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0
    assert "--config" in out.stdout
    assert "--api-token" not in out.stdout and "--token" not in out.stdout
