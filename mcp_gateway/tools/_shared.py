"""Nested output types shared by the discovery tools (products, sites, availability), and the
few helpers their thin handlers share. Field names follow NEON's camelCase on the wire."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections
from pydantic import Field

from catalog.index import CatalogIndex, get_index
from catalog.services import due_catalogs, ensure_catalogs
from eco_core.config import EcoConfig
from mcp_gateway import ports
from mcp_gateway.models import Page, Source, WireModel

MONTH_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])$"
DOMAIN_PATTERN = r"^[Dd](0[1-9]|1\d|20)$"
NEEDED = ("products", "sites")
T = TypeVar("T")

# Catalog reads (the in-memory index, and its once-a-second version check in the database) run
# on their own few threads. asgiref's default (thread_sensitive=True) runs every sync call of
# the process on ONE shared thread, so catalog-served calls queued there behind everyone else's
# sync work; a bounded pool of their own keeps them moving and caps their DB connections.
CATALOG_READ_THREADS = 4
_catalog_pool = ThreadPoolExecutor(max_workers=CATALOG_READ_THREADS, thread_name_prefix="eco-catalog-read")


def _closing_connections(fn: Callable[..., T]) -> Callable[..., T]:
    def run(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        finally:
            # A pool thread's connection would otherwise live as long as the thread (and keep a
            # test database from being dropped); the index touches the database at most once a
            # second, so reconnecting then costs little.
            connections.close_all()

    return run


async def catalog_read(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` (sync: index, search, ORM) on the catalog-read pool."""
    return await sync_to_async(_closing_connections(fn), thread_sensitive=False, executor=_catalog_pool)(
        *args, **kwargs)


class Window(WireModel):
    start_month: str | None = Field(None, description="First month kept (YYYY-MM), or open.")
    end_month: str | None = Field(None, description="Last month kept (YYYY-MM), or open.")


class AvailabilityRow(WireModel):
    """One product at one site. `byRelease` holds month ranges, months or counts depending on the
    format; PROVISIONAL is its own key."""

    product_code: str
    product_name: str | None = None
    site_code: str
    site_name: str | None = None
    month_count: int
    provisional_month_count: int
    first_month: str | None
    last_month: str | None
    ranges: list[str] | None = Field(None, description="ISO 8601 month intervals YYYY-MM/YYYY-MM (ranges format).")
    months: list[str] | None = Field(None, description="Every month (months format).")
    by_release: dict[str, list[str] | int] = Field(default_factory=dict)


class AvailabilityTotals(WireModel):
    rows: int = Field(description="Rows with data (all pages).")
    site_months: int = Field(description="Product-site-months over all rows.")
    by_release: dict[str, int] = Field(default_factory=dict, description="Site-months per release (PROVISIONAL too).")
    first_month: str | None = None
    last_month: str | None = None


class AvailabilitySummary(WireModel):
    site_count: int
    first_month: str | None
    last_month: str | None
    month_range: str | None = Field(None, description="YYYY-MM/YYYY-MM over every site.")
    site_months: int
    by_release: dict[str, int] = Field(default_factory=dict, description="Site-months per release (PROVISIONAL too).")


class ProductSummary(WireModel):
    product_code: str
    product_name: str
    product_status: str
    product_science_team_abbr: str | None
    level: int
    themes: list[str]
    product_has_expanded: bool
    description: str | None = Field(None, description="Start of the description, clipped.")
    score: float
    matched_on: list[str]
    site_count: int
    first_month: str | None
    last_month: str | None
    month_range: str | None
    latest_release: str | None


class Utm(WireModel):
    easting: float | None
    northing: float | None
    zone: int | None
    hemisphere: str | None


class SiteSummary(WireModel):
    site_code: str
    site_name: str
    site_type: str
    state_code: str
    state_name: str
    domain_code: str
    domain_name: str
    site_latitude: float | None
    site_longitude: float | None
    product_count: int
    score: float
    matched_on: list[str]
    distance_km: float | None = Field(None, description="Distance from the given point (proximity search).")
    elevation: float | None = Field(None, description="Metres; only with include_elevation.")
    utm: Utm | None = Field(None, description="Only with include_elevation.")


def page(offset: int, limit: int, returned: int, total: int) -> Page:
    more = offset + returned < total
    return Page(offset=offset, limit=limit, returned=returned, total=total,
                next_offset=offset + returned if more else None)


def catalog_source(cfg: EcoConfig, endpoints: list[str]) -> Source:
    return Source(origin="catalog", endpoints=endpoints, api_base_url=cfg.eco.base_url)


async def catalog_index(cfg: EcoConfig) -> CatalogIndex:
    """The warm catalog index; builds missing catalogs first (their requests count in this
    call's accounting), so a cold stdio server still answers its first search.

    The common case (warm, nothing due, not even a refresh-ahead) is decided on the catalog-read
    pool; only when something is due does ensure_catalogs build or schedule it."""
    if await catalog_read(due_catalogs, cfg, ahead=cfg.cache.refresh_ahead):
        await ensure_catalogs(cfg, client=ports.upstream_client(), need=NEEDED)
    return await catalog_read(get_index)


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


Provisional = Literal["include", "exclude", "only"]
