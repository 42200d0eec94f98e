"""docker-compose.yml is valid and describes the five processes of the team deployment."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


SECRETS = {"DJANGO_SECRET_KEY": "compose-config-test-key", "POSTGRES_PASSWORD": "compose-config-test-password"}


def _compose_config(tmp_path: Path, **values: str) -> subprocess.CompletedProcess[str]:
    """`docker-compose config` with exactly `values` set: nothing from the caller's environment or
    a developer's .env (an empty env file stands in for it)."""
    exe = shutil.which("docker-compose")
    if exe is None:
        from tests.conftest import _missing

        _missing("docker-compose (Debian package docker-compose; .ci/run installs it)")
    empty = tmp_path / "empty.env"
    empty.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in SECRETS and not k.startswith(("ECO_", "POSTGRES_"))}
    return subprocess.run([exe, "-f", "docker-compose.yml", "--env-file", str(empty), "config"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**env, **values})


def test_compose_file_is_valid_for_docker_compose(tmp_path):
    out = _compose_config(tmp_path, **SECRETS)
    assert out.returncode == 0, out.stderr
    spec = yaml.safe_load(out.stdout)
    # The web port on loopback only: callers' tokens need https, which a TLS proxy in front adds.
    assert spec["services"]["web"]["ports"] in (["127.0.0.1:8080:8080/tcp"], ["127.0.0.1:8080:8080"])
    assert "compose-config-test-password" in spec["services"]["web"]["environment"]["DATABASE_URL"]


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_start_without_a_secret_and_names_it(tmp_path, missing):
    out = _compose_config(tmp_path, **{k: v for k, v in SECRETS.items() if k != missing})
    assert out.returncode != 0
    assert f"set {missing} in .env" in out.stderr, out.stderr


def test_web_and_worker_share_the_dataset_store_volume_where_the_store_defaults_to():
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    mounts = {name: s.get("volumes") or [] for name, s in spec["services"].items()}
    # The image's data folder is /app/data; the store defaults to its datasets/ (tables.store_directory).
    assert "datasets:/app/data/datasets" in mounts["web"] and "datasets:/app/data/datasets" in mounts["worker"]
    assert "datasets" in spec["volumes"]
    assert "mkdir -p /app/data/datasets && chown -R eco /app/data" in (ROOT / "Dockerfile").read_text()


def test_long_running_services_restart_and_the_one_shot_migration_does_not():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {name: s.get("restart") for name, s in services.items()} == {
        "postgres": "unless-stopped", "redis": "unless-stopped", "migrate": "no", "web": "unless-stopped",
        "worker": "unless-stopped", "beat": "unless-stopped"}


def test_the_image_installs_the_locked_runtime_set_and_its_context_leaves_local_files_out():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r requirements.lock" in dockerfile
    assert "pip install --no-cache-dir --no-deps ." in dockerfile and "-r requirements-dev" not in dockerfile
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".venv", ".git", "data", "staticfiles", ".env"} <= ignored


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
