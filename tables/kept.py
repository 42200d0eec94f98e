"""Variables files kept in the catalog database (catalog.models.VariablesFileRow): a product's
field dictionary per release, as last fetched, with each table's description from the readme.

    get(upstream, product, release) -> Kept | None
    put(upstream, product, release, ...) -> Kept

Synchronous (the ORM): async callers go through catalog.access.catalog_read. A row read once is
kept in memory by its MD5, so a describe call whose file has not changed parses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from catalog.models import VariablesFileRow
from eco_core.memo import memos
from tables.variables import FieldDef

_parsed = memos.by_value("tables.variables", max_entries=64)


@dataclass(frozen=True)
class Kept:
    product: str
    release: str
    file_name: str
    md5: str
    size: int
    fields: tuple[FieldDef, ...]
    tables: dict[str, str]
    fetched_at: str


def _kept(row: VariablesFileRow) -> Kept:
    # The file's name too: the same content is published under each site's name, and the answer names it.
    key = (row.upstream, row.product_code, row.release, row.md5, row.file_name)
    got = _parsed.get(key)
    if got is None:
        got = Kept(product=row.product_code, release=row.release, file_name=row.file_name, md5=row.md5,
                   size=row.size, fields=tuple(FieldDef.from_row(r) for r in row.fields), tables=dict(row.tables),
                   fetched_at=row.fetched_at.strftime("%Y-%m-%dT%H:%M:%SZ"))
        _parsed.put(key, got)
    return got


def get(upstream: str, product: str, release: str) -> Kept | None:
    row = VariablesFileRow.objects.filter(upstream=upstream, product_code=product, release=release).first()
    return None if row is None else _kept(row)


def put(upstream: str, product: str, release: str, *, file_name: str, md5: str, size: int,
        fields: tuple[FieldDef, ...], tables: dict[str, str]) -> Kept:
    row, _ = VariablesFileRow.objects.update_or_create(
        upstream=upstream, product_code=product, release=release,
        defaults={"file_name": file_name, "md5": md5, "size": size, "fields": [f.as_row() for f in fields],
                  "tables": tables, "fetched_at": datetime.now(UTC)})
    return _kept(row)
