"""What a stacker reads from a NEON file name: the table it feeds, how that table is published
(per site and month, once per site, once per lab), its site and domain, its sensor position, and
its publication time.

The grammar is downloads.kinds' (the product's one copy of it); this adds the parts stacking
needs. A table's layout comes from its file names as neonUtilities tells it: no domain in the
name is a lab table, a YYYY-MM in it a site-date table, otherwise a site-all table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from downloads import kinds

Layout = Literal["sensor", "site-date", "site-all", "lab"]
# The publication time in a name; neonUtilities compares copies by its day.
GENTIME = re.compile(r"(20\d{6})T(\d{6})Z?")
MONTH = re.compile(r"\.(\d{4}-\d{2})\.")
# Metadata files stacked or kept like tables.
SENSOR_POSITIONS, SCIENCE_REVIEW_FLAGS = "sensor_positions", "science_review_flags"


@dataclass(frozen=True, slots=True)
class Parsed:
    name: str
    kind: kinds.FileKind
    table: str | None = None
    layout: Layout | None = None
    domain: str | None = None
    site: str | None = None
    lab: str | None = None
    hor: str | None = None
    ver: str | None = None
    tmi: str | None = None
    month: str | None = None
    published: str = ""  # YYYYMMDDTHHMMSSZ, or "" when the name carries none

    @property
    def published_day(self) -> str:
        return self.published[:8]


def _published(name: str) -> str:
    m = GENTIME.search(name)
    return f"{m.group(1)}T{m.group(2)}Z" if m else ""


def _table(raw: str) -> str:
    return raw.removesuffix("_pub")


def parse(name: str) -> Parsed:
    """The parts of one file name; unknown names are kind 'other' with nothing else."""
    published = _published(name)
    m = kinds.META.match(name)
    if m:
        word = m["word"]
        kind = kinds.classify(name).kind
        table = word if word in (SENSOR_POSITIONS, SCIENCE_REVIEW_FLAGS) else None
        return Parsed(name, kind, table=table, domain=m["dom"], site=m["site"], published=published)
    m = kinds.SENSOR.match(name)
    if m:
        month = MONTH.search(name)
        return Parsed(name, "data", table=_table(m["table"]), layout="sensor", domain=m["dom"], site=m["site"],
                      hor=m["hor"], ver=m["ver"], tmi=m["tmi"], month=month.group(1) if month else None,
                      published=published)
    m = kinds.OBSERVED.match(name)
    if m and name.endswith(".csv"):
        month = MONTH.search(name)
        return Parsed(name, "data", table=_table(m["table"]), layout="site-date", domain=m["dom"], site=m["site"],
                      month=month.group(1) if month else None, published=published)
    m = kinds.SITE_ALL.match(name)
    if m:
        return Parsed(name, "data", table=_table(m["table"]), layout="site-all", domain=m["dom"], site=m["site"],
                      published=published)
    m = kinds.LAB.match(name)
    if m and not kinds.PACKAGE.match(name):
        return Parsed(name, "data", table=_table(m["table"]), layout="lab", lab=m["lab"], published=published)
    return Parsed(name, kinds.classify(name).kind, published=published)
