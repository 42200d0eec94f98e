"""Argument checks the reads share. The tools' input schemas catch most bad values first; these
repeat the rules for callers that come in below the gateway, with the same stable codes and a
message that starts with the field's name."""

from __future__ import annotations

import re

from catalog.index import CatalogIndex
from catalog.months import MONTH, month_index
from catalog.status import upstream_mismatch
from eco_core.config import get_config
from eco_core.errors import EcoError
from upstream.mapping import host_of, unreachable_hint

# The tools accept the domain in either case; the reads upper-case it before comparing. ASCII
# digits only, as in catalog.months.MONTH_PATTERN (\d would take other scripts' digits).
DOMAIN_PATTERN = r"^[Dd](0[1-9]|1[0-9]|20)$"
DOMAIN = re.compile(r"^D(0[1-9]|1[0-9]|20)$")


def bad(field_name: str, message: str) -> EcoError:
    return EcoError("invalid_argument", f"{field_name}: {message}", details={"field": field_name})


def month(field_name: str, value: str | None) -> int | None:
    """The month's index, or None when it is not given."""
    if value is None:
        return None
    if not MONTH.match(value):
        raise bad(field_name, f"expected a month YYYY-MM, got {value!r}")
    return month_index(value)


def paging(limit: int, offset: int, max_limit: int) -> None:
    if not isinstance(limit, int) or not 1 <= limit <= max_limit:
        raise bad("limit", f"must be an integer from 1 to {max_limit}")
    if not isinstance(offset, int) or offset < 0:
        raise bad("offset", "must be an integer >= 0")


def domain_code(value: str | None) -> str | None:
    if value is None:
        return None
    code = value.strip().upper()
    if not DOMAIN.match(code):
        raise bad("domain_code", f"expected D01 to D20, got {value!r}")
    return code


def built(idx: CatalogIndex, catalog: str) -> None:
    """Raise catalog_unavailable when `catalog` has never been built, or was built from another
    upstream than the configured one (never served: see catalog.status.upstream_mismatch)."""
    info = idx.info.get(catalog)
    if info is None or not info.row_count:
        raise EcoError("catalog_unavailable", f"the {catalog} catalog has not been built yet")
    cfg = get_config()
    why = upstream_mismatch(info.rest_base, info.graphql_url, cfg)
    if why:
        raise EcoError("catalog_unavailable", f"the {catalog} catalog is not served: {why}",
                       details={"catalog": catalog, "builtFrom": info.rest_base or None,
                                "configured": cfg.eco.base_url},
                       hint=unreachable_hint(host_of(cfg.eco.base_url)))
