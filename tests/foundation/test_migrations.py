"""Migrations apply from nothing on both databases the service supports."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _migrate(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=300,
    )


def _check_no_missing_migrations(env: dict[str, str]) -> None:
    out = subprocess.run(
        [sys.executable, "manage.py", "makemigrations", "--check", "--dry-run"], cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, f"models and migrations disagree:\n{out.stdout}{out.stderr}"


def test_migrations_apply_on_a_fresh_sqlite_file(tmp_path):
    env = {"ECO_MCP_DATA_DIR": str(tmp_path)}
    out = _migrate(env)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "eco.sqlite3").stat().st_size > 0
    _check_no_missing_migrations(env)


@pytest.mark.postgres
def test_migrations_apply_on_a_fresh_postgres_database(postgres_url):
    name = f"eco_mig_{uuid.uuid4().hex[:10]}"
    admin = postgres_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        out = _migrate({"DATABASE_URL": postgres_url.rsplit("/", 1)[0] + f"/{name}"})
        assert out.returncode == 0, out.stderr
        with psycopg.connect(postgres_url.rsplit("/", 1)[0] + f"/{name}") as conn:
            tables = {r[0] for r in conn.execute("select tablename from pg_tables where schemaname='public'")}
        assert "django_migrations" in tables and "django_celery_beat_periodictask" in tables
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
