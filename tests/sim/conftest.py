"""Fixtures for the simulator's own tests: one server per session, reset before every test."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from upstream_sim.server import SimServer

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "upstream_samples"


@pytest.fixture(scope="session")
def sim_server():
    with SimServer(seed=1, port=0) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean_sim(request):
    if "sim_server" in request.fixturenames:
        server = request.getfixturevalue("sim_server")
        server.reset()
        yield
        server.reset()
    else:
        yield


@pytest.fixture(scope="session")
def token(sim_server) -> str:
    return sim_server.issue_token(exp_s=3600)


@pytest.fixture
def api(sim_server, token):
    """An httpx client on the REST base that sends a valid token."""
    with httpx.Client(base_url=sim_server.base_url, headers={"X-API-Token": token}, timeout=30) as client:
        yield client


@pytest.fixture
def anon(sim_server):
    with httpx.Client(base_url=sim_server.base_url, timeout=30) as client:
        yield client


def load_sample(rel: str):
    return json.loads((SAMPLES / rel).read_text(encoding="utf-8"))


def sample_headers(rel: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (SAMPLES / rel).read_text(encoding="utf-8").splitlines()[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            out.setdefault(k.strip().lower(), []).append(v.strip())
    return out
