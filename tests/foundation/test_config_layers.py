"""The four configuration layers, their precedence, and what counts as unset."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from eco_core.config import ConfigError, load_config


def _yaml(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "eco.yaml"
    p.write_text(text)
    return p


def test_defaults_match_the_spec():
    cfg = load_config(env={}, warn=False)
    assert cfg.eco.base_url == "https://data.neonscience.org/api/v0"
    assert cfg.eco.graphql_url == "https://data.neonscience.org/graphql"
    assert cfg.eco.rate_limit.anonymous_burst == 180 and cfg.eco.rate_limit.token_rps == 7.2
    assert cfg.eco.retries.max_attempts == 3 and cfg.eco.retries.backoff_max_s == 8.0
    assert cfg.cache.ttl_s.catalog == 3600 and cfg.cache.ttl_s.samples_view == 60
    assert cfg.limits.hard_max_result_bytes == 200000 and cfg.limits.tools_list_max_bytes == 135000
    assert cfg.downloads.max_bytes_per_call == 2147483648
    assert cfg.downloads.allowed_hosts == ["data.neonscience.org", "storage.googleapis.com", "*.storage.googleapis.com"]
    assert cfg.server.bind_port == 8080 and cfg.server.request_token_header == "X-API-Token"


def test_nested_setting_takes_flag_over_env_over_yaml_over_default(tmp_path):
    path = _yaml(tmp_path, "eco:\n  rate_limit:\n    token_rps: 5.0\n")
    assert load_config(env={}, config_path=path, warn=False).eco.rate_limit.token_rps == 5.0
    env = {"ECO_MCP_ECO__RATE_LIMIT__TOKEN_RPS": "6.5"}
    assert load_config(env=env, config_path=path, warn=False).eco.rate_limit.token_rps == 6.5
    flags = {"eco.rate_limit.token_rps": 4.0}
    assert load_config(flags=flags, env=env, config_path=path, warn=False).eco.rate_limit.token_rps == 4.0


def test_list_setting_is_comma_separated_in_env_and_env_beats_yaml(tmp_path):
    path = _yaml(tmp_path, "server:\n  allowed_hosts: [yaml.example]\n")
    assert load_config(env={}, config_path=path, warn=False).server.allowed_hosts == ["yaml.example"]
    cfg = load_config(env={"ECO_MCP_SERVER__ALLOWED_HOSTS": "a.example, b.example"}, config_path=path, warn=False)
    assert cfg.server.allowed_hosts == ["a.example", "b.example"]


@pytest.mark.parametrize("raw", ['["127.0.0.1","localhost"]', "127.0.0.1, local host", "https://127.0.0.1"])
def test_download_host_list_that_could_never_match_stops_naming_the_setting(raw):
    # A JSON list in the env splits at its comma into '["127.0.0.1"' and '"localhost"]',
    # which would deny every download; the start-up refusal names the setting instead.
    with pytest.raises(ConfigError, match=r"downloads\.allowed_hosts"):
        load_config(env={"ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": raw}, warn=False)


def test_download_host_list_takes_names_addresses_wildcards_and_bracketed_ipv6():
    raw = "127.0.0.1,localhost,*.storage.googleapis.com,[::1],data.neonscience.org."
    cfg = load_config(env={"ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": raw}, warn=False)
    assert cfg.downloads.allowed_hosts == raw.split(",")


@pytest.mark.parametrize("word", ["", "none", "null", "NULL", " None "])
def test_empty_none_and_null_unset_a_nullable_setting(tmp_path, word):
    path = _yaml(tmp_path, "cache:\n  prewarm: true\n")
    cfg = load_config(env={"ECO_MCP_CACHE__PREWARM": word}, config_path=path, warn=False)
    assert cfg.cache.prewarm is None
    assert cfg.prewarm is False  # unset on stdio resolves to off


def test_unset_word_on_a_non_nullable_setting_falls_back_to_the_default(tmp_path):
    path = _yaml(tmp_path, "eco:\n  max_concurrency: 9\n")
    cfg = load_config(env={"ECO_MCP_ECO__MAX_CONCURRENCY": "null"}, config_path=path, warn=False)
    assert cfg.eco.max_concurrency == 4


def test_unknown_keys_are_ignored_with_one_warning_naming_them(tmp_path, caplog):
    path = _yaml(tmp_path, "eco:\n  bogus_key: 1\nnosection: {a: 1}\n")
    with caplog.at_level(logging.WARNING, logger="eco.config"):
        cfg = load_config(env={"ECO_MCP_SERVER__NOPE": "1"}, config_path=path)
    warnings = [r for r in caplog.records if r.name == "eco.config"]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert "eco.bogus_key" in text and "nosection" in text and "ECO_MCP_SERVER__NOPE" in text
    assert cfg.eco.max_concurrency == 4


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"ECO_MCP_ECO__MAX_CONCURRENCY": "0"}, "eco.max_concurrency"),
        ({"ECO_MCP_ECO__MAX_CONCURRENCY": "many"}, "eco.max_concurrency"),
        ({"ECO_MCP_SERVER__BIND_PORT": "70000"}, "server.bind_port"),
        ({"ECO_MCP_CACHE__REFRESH_AHEAD": "1.5"}, "cache.refresh_ahead"),
        ({"ECO_MCP_SERVER__TRANSPORT": "tcp"}, "server.transport"),
    ],
)
def test_bad_value_stops_with_a_message_naming_the_setting(env, needle):
    with pytest.raises(ConfigError) as err:
        load_config(env=env, warn=False)
    assert needle in str(err.value)


def test_out_of_bounds_message_states_the_allowed_range():
    with pytest.raises(ConfigError, match=r"eco\.max_concurrency.*allowed range 1 to 64"):
        load_config(env={"ECO_MCP_ECO__MAX_CONCURRENCY": "65"}, warn=False)


def test_unreadable_or_invalid_yaml_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="--config"):
        load_config(env={}, config_path=tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(env={}, config_path=_yaml(tmp_path, "eco: [unclosed\n"))


@pytest.mark.parametrize(
    ("transport", "expected"),
    [("stdio", (True, False, True)), ("http", (False, True, False))],
)
def test_unset_rules_resolve_by_transport(transport, expected):
    cfg = load_config(flags={"server.transport": transport}, env={}, warn=False)
    assert (cfg.token_for_public_endpoints, cfg.prewarm, cfg.downloads_enabled) == expected


def test_downloads_are_never_enabled_over_http_even_when_set():
    cfg = load_config(flags={"server.transport": "http"}, env={"ECO_MCP_DOWNLOADS__ENABLED": "true"}, warn=False)
    assert cfg.downloads_enabled is False


def test_dns_rebinding_protection_is_on_for_loopback_and_allow_lists_off_otherwise():
    assert load_config(env={}, warn=False).dns_rebinding_protection is True
    public = load_config(flags={"server.bind_address": "0.0.0.0"}, env={}, warn=False)
    assert public.dns_rebinding_protection is False
    listed = load_config(flags={"server.bind_address": "0.0.0.0"}, env={"ECO_MCP_SERVER__ALLOWED_HOSTS": "x.org"}, warn=False)
    assert listed.dns_rebinding_protection is True
    forced = load_config(env={"ECO_MCP_SERVER__DNS_REBINDING_PROTECTION": "false"}, warn=False)
    assert forced.dns_rebinding_protection is False
