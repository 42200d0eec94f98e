"""Loaders for the reference lists shipped in upstream_sim/reference (read once per process)."""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path

REF_DIR = Path(__file__).resolve().parent / "reference"

STATE_NAMES = {
    "AK": "Alaska", "AL": "Alabama", "AZ": "Arizona", "CA": "California", "CO": "Colorado",
    "FL": "Florida", "GA": "Georgia", "HI": "Hawaii", "KS": "Kansas", "MA": "Massachusetts",
    "MD": "Maryland", "MI": "Michigan", "ND": "North Dakota", "NH": "New Hampshire",
    "NM": "New Mexico", "OK": "Oklahoma", "OR": "Oregon", "PR": "Puerto Rico",
    "TN": "Tennessee", "TX": "Texas", "UT": "Utah", "VA": "Virginia", "WA": "Washington",
    "WI": "Wisconsin", "WY": "Wyoming",
}


def _csv(name: str) -> list[dict]:
    with open(REF_DIR / name, encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


@cache
def field_sites() -> tuple[dict, ...]:
    return tuple(_csv("neon_field_site_metadata_20250214.csv"))


@cache
def domains() -> tuple[dict, ...]:
    return tuple(_csv("domains.csv"))


@cache
def catalog_products() -> tuple[dict, ...]:
    with open(REF_DIR / "products_full.json", encoding="utf-8") as fh:
        return tuple(json.load(fh)["data"])


@cache
def releases() -> tuple[dict, ...]:
    with open(REF_DIR / "releases_full.json", encoding="utf-8") as fh:
        return tuple(json.load(fh)["releases"])


@cache
def known_dois() -> dict[tuple[str, str], dict]:
    return {(r["release"], r["productCode"]): r for r in _csv("release_product_dois_known.csv")}


@cache
def table_types() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in _csv("table_types.csv"):
        out.setdefault(row["productID"], []).append(row)
    return out


@cache
def taxon_type_codes() -> tuple[str, ...]:
    return tuple(r["taxonTypeCode"] for r in _csv("taxon_type_codes.csv"))


@cache
def supported_classes() -> tuple[dict, ...]:
    with open(REF_DIR / "samples_supportedClasses.json", encoding="utf-8") as fh:
        return tuple(json.load(fh)["data"]["entries"])


def graphql_sdl() -> str:
    return (REF_DIR / "schema_reconstructed.graphql").read_text(encoding="utf-8")
