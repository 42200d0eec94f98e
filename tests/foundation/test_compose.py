"""docker-compose.yml is valid and describes the five processes of the team deployment."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_file_is_valid_for_docker_compose():
    exe = shutil.which("docker-compose")
    if exe is None:
        from tests.conftest import _missing

        _missing("docker-compose (Debian package docker-compose; .ci/run installs it)")
    # The file demands a secret key (no published default); any value satisfies `config`.
    env = {**os.environ, "DJANGO_SECRET_KEY": "compose-config-test-key"}
    out = subprocess.run([exe, "-f", "docker-compose.yml", "config", "--quiet"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr


def test_compose_runs_postgres_redis_web_worker_and_beat_with_health_checks():
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = spec["services"]
    assert set(services) == {"postgres", "redis", "migrate", "web", "worker", "beat"}
    for name, service in services.items():
        # migrate is one-shot: its exit status is its health (see test_migrate_race.py).
        assert name == "migrate" or "healthcheck" in service, f"{name} has no health check"
    assert "eco_service.asgi:application" in " ".join(services["web"]["command"])
    assert services["worker"]["command"][:4] == ["celery", "-A", "eco_service", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "eco_service", "beat"]
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgresql://") and env["REDIS_URL"].startswith("redis://")
        assert env["CELERY_BROKER_URL"].startswith("redis://")


@pytest.mark.parametrize("name", ["Dockerfile", ".env.example"])
def test_deployment_files_exist(name):
    assert (ROOT / name).read_text().strip()
