"""A record, kept in the data folder, of a database found up to date, so that a stdio server can
tell that its database needs nothing without loading every app: the migration check
(eco_service.bootstrap.prepare_database) reads every app's migration files, and every app's models
must be loaded for it (django-celery-beat's alone pull in Celery and kombu), a good part of a
stdio server's work up to its first search, for apps its calls never use.

    record(alias)  -> None   after prepare_database, every app loaded: keep what was found
    settled(alias) -> bool   whether the kept record still holds; False whenever unsure

A record holds the installed apps and MIGRATION_MODULES it was made under, each app's migrations
folder with the migration files in it, the migrations the database had applied (its
django_migrations rows), and the mark of the post-migrate work (the catalog's beat entries, and
the table they are in). It still holds when the code is the same (same apps, same migration files
by name), every migration recorded as applied still is, and the beat entries are there. Then the
migration plan prepare_database would make is empty (applying more never adds to a plan) and the
post-migrate work is done: what prepare_database would find, without its reads. Anything else (no
record, other code, a database recreated or restored to older migrations, a read that fails) is
"not settled", and the caller loads every app and runs prepare_database as always.

Reads here import no app's modules: migrations folders are found on disk from their top-level
package's location (importing django.contrib.admin to find its migrations would import the admin).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import pkgutil
from pathlib import Path
from typing import Any

log = logging.getLogger("eco.bootstrap")

FORMAT = 1
PREFIX = "schema-"
SUFFIX = ".json"


def _database(alias: str) -> str | None:
    """What identifies the database (the record's file name); None for a private in-memory
    database, which no other process sees."""
    from django.db import connections

    s = connections[alias].settings_dict
    name = str(s.get("NAME") or "")
    if connections[alias].vendor == "sqlite" and (name == ":memory:" or "mode=memory" in name):
        return None
    return f"{connections[alias].vendor}|{name}|{s.get('HOST') or ''}|{s.get('PORT') or ''}"


def _path(alias: str) -> Path | None:
    from django.conf import settings

    database = _database(alias)
    if database is None:
        return None
    digest = hashlib.sha256(database.encode()).hexdigest()[:32]
    return Path(settings.DATA_DIR) / "cache" / f"{PREFIX}{digest}{SUFFIX}"


def _folder(module: str) -> Path | None:
    """The folder of package `module`, found without importing it or its parents (beyond the
    top-level package's location); None when it is not a plain folder on disk."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location).joinpath(*rest)
        if folder.is_dir():
            return folder
    return None


def _listing(module: str) -> list[list[Any]] | None:
    """The modules in migrations package `module` (name, is a package), as a loader would list
    them; None when there is no such folder."""
    folder = _folder(module)
    if folder is None:
        return None
    return sorted([name, is_pkg] for _, name, is_pkg in pkgutil.iter_modules([str(folder)]))


def _settings_part() -> dict[str, Any]:
    from django.conf import settings

    return {"installed_apps": list(settings.INSTALLED_APPS),
            "migration_modules": {k: v for k, v in sorted(getattr(settings, "MIGRATION_MODULES", {}).items())}}


def record(alias: str = "default") -> None:
    """Keep what the database is now, with every app loaded and the database just prepared
    (prepare_database returned: nothing pending, the post-migrate work done). Best effort: a
    record not kept costs the next stdio start the full check, as before records."""
    try:
        path = _path(alias)
        if path is None:
            return
        from django.apps import apps
        from django.db import connections
        from django.db.migrations.loader import MigrationLoader
        from django.db.migrations.recorder import MigrationRecorder
        from django_celery_beat.models import PeriodicTask

        from catalog.schedule import PERIODIC_TASK_NAME, SUBTREES_PERIODIC_TASK_NAME

        modules = {}
        for app in apps.get_app_configs():
            name, _ = MigrationLoader.migrations_module(app.label)
            if name is not None:
                modules[app.label] = [name, _listing(name)]
        applied = sorted([app, name] for app, name in MigrationRecorder(connections[alias]).applied_migrations())
        data = {"format": FORMAT, **_settings_part(), "modules": modules,
                "migrations_table": MigrationRecorder.Migration._meta.db_table, "applied": applied,
                "beat": {"table": PeriodicTask._meta.db_table,
                         "names": sorted([PERIODIC_TASK_NAME, SUBTREES_PERIODIC_TASK_NAME])}}
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole under a name of its own, then renamed: a reader sees one record or the other.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(data))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    except Exception as exc:  # e.g. a read-only data folder
        log.debug("could not keep the schema record: %s", exc)


def settled(alias: str = "default") -> bool:
    """Whether the kept record still holds (see the module docstring): the database needs nothing
    from prepare_database. Reads the record, the migrations folders and two small queries; loads
    no app. Any doubt answers False."""
    try:
        path = _path(alias)
        if path is None:
            return False
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return False
        if data.get("format") != FORMAT or {k: data.get(k) for k in _settings_part()} != _settings_part():
            return False
        if any(_listing(module) != listing for module, listing in data["modules"].values()):
            return False
        from django.db import connections

        connection = connections[alias]
        quote = connection.ops.quote_name
        names = data["beat"]["names"]
        with connection.cursor() as wrapper:
            # The driver's cursor under Django's wrapper (whose parameter style it keeps): Django's
            # own warns of database reads before the apps are loaded, which is the point here.
            cursor = wrapper.cursor
            cursor.execute(f"SELECT app, name FROM {quote(data['migrations_table'])}")
            applied = {(app, name) for app, name in cursor.fetchall()}
            if not {(app, name) for app, name in data["applied"]} <= applied:
                return False
            cursor.execute(f"SELECT count(DISTINCT name) FROM {quote(data['beat']['table'])} "
                           f"WHERE name IN ({', '.join(['%s'] * len(names))})", names)
            return bool(cursor.fetchone()[0] == len(names))
    except Exception as exc:  # unreadable record, missing tables, no database: the full check decides
        log.debug("the schema record does not settle the database: %s", exc)
        return False
