"""Replacing a catalog as a whole, and the refresh log.

The swap deletes the old rows and inserts the new ones inside ONE transaction that also bumps
the catalog's version: readers (other connections) see the old catalog until the commit and
the whole new one after it, never a mix. The CatalogState row is locked first, so two
refreshes of the same catalog run one after the other instead of interleaving.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from django.db import connection, models, transaction

from catalog.models import CatalogRefresh, CatalogState

BATCH = 500


def swap_catalog(
    catalog: str, tables: Sequence[tuple[type[models.Model], list[models.Model]]], *, source: str, row_count: int,
    rest_base: str, graphql_url: str,
) -> int:
    """Replace every table of `catalog` with the given rows, built from the upstream at `rest_base`
    and `graphql_url` (recorded with them, in the same transaction); returns the new version."""
    with transaction.atomic():
        CatalogState.objects.get_or_create(catalog=catalog)
        state = CatalogState.objects.select_for_update().get(catalog=catalog)
        for model, rows in tables:
            model.objects.all().delete()
            model.objects.bulk_create(rows, batch_size=BATCH)
        now = datetime.now(UTC)
        state.version += 1
        state.source = source
        state.refreshed_at = now
        state.last_attempt_at = now
        state.row_count = row_count
        state.rest_base = rest_base
        state.graphql_url = graphql_url
        state.last_error = ""
        state.save()
    return state.version


def record_failure(catalog: str, error: str) -> None:
    """The catalog stays as it was; only the state notes that the last attempt failed."""
    with transaction.atomic():
        CatalogState.objects.get_or_create(catalog=catalog)
        CatalogState.objects.filter(catalog=catalog).update(
            last_attempt_at=datetime.now(UTC), last_error=error[:2000]
        )


def log_refresh(
    *, catalog: str, source: str, trigger: str, started_at: datetime, ok: bool, rows: int, requests: int, error: str = ""
) -> CatalogRefresh:
    return CatalogRefresh.objects.create(
        catalog=catalog,
        source=source,
        trigger=trigger,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        ok=ok,
        rows=rows,
        upstream_requests=requests,
        error=error[:2000],
    )


def close_connection() -> None:
    """Close this thread's database connection once a build has written through it. SQLite keeps
    the pages a connection wrote in that connection's cache, which a serving process would hold
    for good; the next read opens a connection that caches only what reads touch. Inside a
    caller's transaction (an atomic block) the connection stays open."""
    if not connection.in_atomic_block:
        connection.close()
