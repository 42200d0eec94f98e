"""Django's `migrate`, run under the database-wide migration lock.

Shadows the built-in command (apps take precedence over django.core) so every way of
migrating (compose's one-shot service, an operator's `manage.py migrate`, the automatic
migrate at start-up) is serialized against the others on the same database."""

from __future__ import annotations

from typing import Any

from django.core.management.commands.migrate import Command as DjangoMigrate

from eco_service.bootstrap import ensure_sqlite_folder, migration_lock


class Command(DjangoMigrate):
    def execute(self, *args: Any, **options: Any) -> Any:
        # Before the system checks, which already open the database.
        ensure_sqlite_folder(options.get("database") or "default")
        return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        with migration_lock(options["database"]):
            super().handle(*args, **options)
