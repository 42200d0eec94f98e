"""Start-up work shared by every entry point."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

log = logging.getLogger("eco.bootstrap")


def prepare_database() -> None:
    """Apply pending migrations, so the embedded SQLite default works on first start with
    nothing else to run. Migration output goes to stderr (stdout may be MCP framing)."""
    import sys

    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        from pathlib import Path

        Path(settings.DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        log.info("applying %d database migrations", len(plan))
        call_command("migrate", interactive=False, verbosity=0, stdout=sys.stderr, stderr=sys.stderr)
