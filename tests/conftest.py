"""Project-wide fixtures.

Real services: tests that need PostgreSQL or Redis use the `postgres_url` / `redis_url` fixtures.
On a laptop without them those tests skip with a loud reason; under CI (CI=true) a missing
service is a failure, never a silent skip.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from eco_core import config as eco_config

pytest_plugins = ["tests.reliability.canary"]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _reachable(url: str, default_port: int) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or default_port), timeout=1.0):
            return True
    except OSError:
        return False


def _missing(what: str) -> None:
    reason = f"{what} is not available: set it up (see README) to run this test"
    if IN_CI:
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def duplicate_ids(items: list[Any]) -> list[str]:
    """Node ids collected more than once: pytest then reports fewer outcomes than it ran tests."""
    seen: set[str] = set()
    return sorted({i.nodeid for i in items if i.nodeid in seen or seen.add(i.nodeid)})


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[Any]) -> None:
    dupes = duplicate_ids(items)
    if dupes:
        raise pytest.UsageError("tests collected under the same id (give each parametrised case its own id): "
                                + ", ".join(dupes[:10]))


@pytest.fixture(scope="session")
def postgres_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        url = os.environ.get("ECO_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    if not _reachable(url, 5432):
        _missing(f"PostgreSQL at {urlparse(url).hostname}")
    return url


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    if not _reachable(url, 6379):
        _missing(f"Redis at {urlparse(url).hostname}")
    return url


@pytest.fixture
def active_config() -> Iterator[Callable[[eco_config.EcoConfig], eco_config.EcoConfig]]:
    """`active_config(cfg)` makes `cfg` the active configuration for the rest of the test (call it
    again to switch); the configuration that was active before the test comes back afterwards."""
    with contextlib.ExitStack() as installed:
        yield lambda cfg: installed.enter_context(eco_config.use_config(cfg))


@pytest.fixture
def eco_cfg() -> Iterator[eco_config.EcoConfig]:
    """A fresh default configuration (no environment), installed as the active one."""
    with eco_config.use_config(eco_config.load_config(env={}, warn=False)) as cfg:
        yield cfg


@pytest.fixture(scope="session")
def sim():
    """One NEON simulator on an ephemeral loopback port for the whole session.
    Tests that inject faults must call `sim.reset()` when done (use `fresh_sim`)."""
    server_mod = pytest.importorskip("upstream_sim.server")
    with server_mod.SimServer(seed=1, port=0) as server:
        yield server


@pytest.fixture
def fresh_sim(sim):
    sim.reset()
    yield sim
    sim.reset()
