"""eco_get_availability's row, in a module of its own so that its class carries the name the spec
gives the type, AvailabilityRow (a tool schema's $defs key is the class name), while
catalog.availability keeps eco_get_product's fuller row under that same name; there this one is
imported as AvailabilityCell."""

from __future__ import annotations

import operator
from functools import partial

from pydantic import Field

from eco_core.wire import WireModel

# Whether a field is left out: `None is value`, called in C (per field of each row, each dump).
_absent_if_none = partial(operator.is_, None)


class AvailabilityRow(WireModel):
    # One product at one site: a row of eco_get_availability (a comment: a docstring would be
    # repeated in the tool schema). Its months are listed once, per release, in byRelease, and it
    # names only what varies between rows: the site in product mode, the product in site mode.

    product_code: str | None = Field(None, exclude_if=_absent_if_none,
                                     description="Absent: the answer's productCode.")
    product_name: str | None = Field(None, exclude_if=_absent_if_none,
                                     description="Absent: the answer's (or none known).")
    site_code: str | None = Field(None, exclude_if=_absent_if_none, description="Absent: the answer's siteCode.")
    site_name: str | None = Field(None, exclude_if=_absent_if_none, description="Absent: the answer's (or none known).")
    month_count: int = Field(description="Months with data in any kept release, each counted once.")
    provisional_month_count: int
    first_month: str
    last_month: str
    by_release: dict[str, list[str] | int] = Field(
        default_factory=dict,
        description="The row's months per release, PROVISIONAL too: YYYY-MM/YYYY-MM ranges, months or counts "
                    "(per format).")
