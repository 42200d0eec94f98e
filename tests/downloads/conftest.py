"""Fixtures of the files and downloads tests: the simulator's configuration with a valid upstream
token (stdio, as the server would run it), a download directory of the test's own, and
`call_tool`, which runs a tool through the gateway's real pipeline with that token and checks
every success against the tool's output schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import mcp_types as types
import pytest

from eco_core import config as eco_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.tools.conftest import Outcome, sim_cfg  # noqa: F401  (fixture)
from upstream.client import close_clients


def token_config(sim: Any, token: str | None, download_dir: Path | None = None, **flags: Any) -> eco_config.EcoConfig:
    base: dict[str, Any] = {"eco.base_url": sim.base_url, "eco.graphql_url": sim.graphql_url,
                            "downloads.allowed_hosts": ["127.0.0.1", "localhost"]}
    if download_dir is not None:
        base["downloads.directory"] = str(download_dir)
    base.update({k.replace("__", "."): v for k, v in flags.items()})
    env = {"ECO_TOKEN": token} if token else {}
    return eco_config.load_config(flags=base, env=env, warn=False)


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Everything under `root`: files with their bytes, directories and symlinks by kind."""
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "symlink" if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return out


@pytest.fixture
def sim_token(sim) -> str:
    return sim.issue_token(exp_s=3600)


@pytest.fixture
def dl_dir(tmp_path: Path) -> Path:
    d = tmp_path / "downloads"
    d.mkdir()
    return d


@pytest.fixture
def call_tool(sim_cfg, sim, sim_token, dl_dir):  # noqa: F811  (the imported fixture)
    """call_tool(name, args, transport=, token=, **config flags) -> Outcome."""

    async def run(name: str, arguments: dict[str, Any] | None = None, *, transport: str = "stdio",
                  token: str | None = sim_token, **flags: Any) -> Outcome:
        cfg = token_config(sim, token, dl_dir, **flags)
        with eco_config.use_config(cfg):
            spec = default_registry().get(name)
            assert spec is not None, name
            call = CallContext(cfg=cfg, transport=transport,  # type: ignore[arg-type]
                               protocol_version="2026-07-28", token_source="config" if token else "none")
            try:
                result = await execute(spec, arguments or {}, call, token=token)
            finally:
                await close_clients()
        assert isinstance(result, types.CallToolResult)
        if not result.is_error:
            jsonschema.Draft202012Validator(spec.tool.output_schema).validate(result.structured_content)
        return Outcome(result)

    return run
