"""Nested output types shared by the discovery tools (products, sites, availability), and the
few helpers their thin handlers share. Field names follow NEON's camelCase on the wire."""

from __future__ import annotations

from typing import Any, Literal

from asgiref.sync import sync_to_async
from pydantic import Field

from catalog.index import CatalogIndex, get_index
from catalog.services import ensure_catalogs
from eco_service.config import EcoConfig
from mcp_gateway import ports
from mcp_gateway.models import Page, Source, WireModel

MONTH_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])$"
DOMAIN_PATTERN = r"^[Dd](0[1-9]|1\d|20)$"
NEEDED = ("products", "sites")


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
    call's accounting), so a cold stdio server still answers its first search."""
    await ensure_catalogs(cfg, client=ports.upstream_client(), need=NEEDED)
    return await sync_to_async(get_index)()


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


Provisional = Literal["include", "exclude", "only"]
