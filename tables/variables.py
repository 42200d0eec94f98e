"""NEON's variables file: the field dictionary of a product, one row per table field.

    parse(data) -> tuple[FieldDef, ...]
    for_table(fields, table, package) -> the fields a file of that table and package carries
    column_type(field) -> the stacked column's type: double, int64, string, date or timestamp

Column types follow neonUtilities (its `get_variables`): real is a double, the integer types an
int64, a dateTime whose pubFormat has hours a UTC timestamp (stored in milliseconds: Parquet has
no seconds unit), a yyyy-MM-dd date a date, a yyyy year an int64, anything else (string, uri, unknown) a
string. Pure Python: describing tables must not load the columnar engine.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass

COLUMNS = ("table", "fieldName", "description", "dataType", "units", "downloadPkg", "pubFormat", "primaryKey",
           "categoricalCodeName")
REQUIRED = ("table", "fieldName", "dataType")

TIMESTAMP_S = frozenset({
    "yyyy-MM-dd'T'HH:mm:ss'Z'(floor)", "yyyy-MM-dd'T'HH:mm:ss'Z'", "yyyy-MM-dd'T'HH:mm:ss'Z'(round)",
    "yyyy-MM-dd'T'HH:mm'Z'(floor)", "yyyy-MM-dd'T'HH:mm'Z'", "yyyy-MM-dd'T'HH:mm'Z'(round)",
    "yyyy-MM-dd'T'HH'Z'(floor)", "yyyy-MM-dd'T'HH'Z'", "yyyy-MM-dd'T'HH'Z'(round)",
})
TIMESTAMP_MS = frozenset({"yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"})
DATE = frozenset({"yyyy-MM-dd(floor)", "yyyy-MM-dd"})
YEAR = frozenset({"yyyy(floor)", "yyyy(round)"})
INTEGERS = frozenset({"integer", "unsigned integer", "signed integer"})


@dataclass(frozen=True, slots=True)
class FieldDef:
    table: str
    name: str
    description: str
    data_type: str
    units: str
    package: str  # downloadPkg: basic, expanded (or none)
    pub_format: str
    primary_key: str
    categorical_code_name: str

    def as_row(self) -> list[str]:
        return [self.table, self.name, self.description, self.data_type, self.units, self.package, self.pub_format,
                self.primary_key, self.categorical_code_name]

    @classmethod
    def from_row(cls, row: Iterable[str]) -> FieldDef:
        return cls(*row)

    @property
    def unit(self) -> str | None:
        """The units, or None where the file says there are none (NA or empty)."""
        return None if self.units in ("", "NA") else self.units


def parse(data: bytes) -> tuple[FieldDef, ...]:
    """The rows of a variables file; ValueError when it is not one (no table, fieldName and
    dataType columns, or not text)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("not a NEON variables file: not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ValueError(f"not a NEON variables file: no {', '.join(missing)} column")
    out = []
    for row in reader:
        if not row.get("table") or not row.get("fieldName"):
            continue
        out.append(FieldDef(*((row.get(c) or "").strip() for c in COLUMNS)))
    if not out:
        raise ValueError("not a NEON variables file: no fields")
    return tuple(out)


def tables_of(fields: Iterable[FieldDef]) -> list[str]:
    """Table names in the file's order."""
    return list(dict.fromkeys(f.table for f in fields))


def for_table(fields: Iterable[FieldDef], table: str, package: str) -> list[FieldDef]:
    """The fields of `table` a file of `package` carries, in file order (NEON sometimes names a
    published table `<table>_pub` in the variables file)."""
    rows = [f for f in fields if f.table == table] or [f for f in fields if f.table == f"{table}_pub"]
    return rows if package == "expanded" else [f for f in rows if f.package == "basic"]


def column_type(f: FieldDef) -> str:
    if f.data_type == "real":
        return "double"
    if f.data_type in INTEGERS:
        return "int64"
    if f.data_type == "dateTime":
        if f.pub_format in TIMESTAMP_S or f.pub_format in TIMESTAMP_MS:
            return "timestamp"
        if f.pub_format in DATE:
            return "date"
        if f.pub_format in YEAR:
            return "int64"
    return "string"


_CONTENTS_LINE = re.compile(r"^-\s+(?P<name>\S+)\s+-\s+(?P<desc>.+?)\s*$")


def table_descriptions(readme: bytes) -> dict[str, str]:
    """Each table's description from a package readme ("DATA PACKAGE CONTENTS": one
    "- <table> - <description>" line per table after "This data product contains up to N data
    tables:"); nothing when the readme has no such list."""
    text = readme.decode("utf-8", errors="replace")
    out: dict[str, str] = {}
    listing = False
    for line in text.splitlines():
        if re.search(r"contains up to \d+ data tables", line):
            listing = True
            continue
        if listing:
            m = _CONTENTS_LINE.match(line.strip())
            if not m:
                if out:
                    break
                continue
            out[m["name"]] = m["desc"]
    return out


# sensor_positions as neonUtilities reads it when the variables file does not describe it (its
# sensor_positions_variables.csv): the current names, in the current order, with their units.
_TS = "yyyy-MM-dd'T'HH:mm:ss'Z'(floor)"
_POSITION_ROWS = (
    ("HOR.VER", "The horizontal and vertical location indices of the data file names, as HOR.VER", "string", "NA",
     "asIs"),
    ("sensorLocationID", "The identifier of the location where the sensor was installed", "string", "NA", "asIs"),
    ("sensorLocationDescription", "The description of that location", "string", "NA", "asIs"),
    ("effectiveStartDateTime", "The start of the period the row's combined position information is valid for",
     "dateTime", "NA", _TS),
    ("effectiveEndDateTime", "The end of the period the row's combined position information is valid for",
     "dateTime", "NA", _TS),
    ("positionStartDateTime", "The start (UTC) of the period the position applies to", "dateTime", "NA", _TS),
    ("positionEndDateTime", "The end (UTC) of the period the position applies to; empty: still valid when "
     "published", "dateTime", "NA", _TS),
    ("referenceLocationID", "The identifier of the reference location the offsets are measured from", "string",
     "NA", "asIs"),
    ("referenceLocationIDDescription", "The description of the reference location", "string", "NA", "asIs"),
    ("referenceLocationIDStartDateTime", "The start (UTC) of the reference location's position", "dateTime", "NA",
     _TS),
    ("referenceLocationIDEndDateTime", "The end (UTC) of the reference location's position", "dateTime", "NA", _TS),
    ("xOffset", "Offset along the local x-axis from the reference location to the sensor", "real", "meter",
     "*.##(round)"),
    ("yOffset", "Offset along the local y-axis from the reference location to the sensor", "real", "meter",
     "*.##(round)"),
    ("zOffset", "Offset along the z-axis (up) from the reference location to the sensor", "real", "meter",
     "*.##(round)"),
    ("pitch", "Elevation angle of the sensor relative to the horizontal plane", "real", "degrees", "*.##(round)"),
    ("roll", "Roll angle of the sensor about its longitudinal axis", "real", "degrees", "*.##(round)"),
    ("azimuth", "Azimuth (yaw) of the sensor relative to true north", "real", "degrees", "*.##(round)"),
    ("locationReferenceLatitude", "Latitude of the reference location", "real", "degrees", "*.######(round)"),
    ("locationReferenceLongitude", "Longitude of the reference location", "real", "degrees", "*.######(round)"),
    ("locationReferenceElevation", "Elevation of the reference location above mean sea level", "real", "meter",
     "*.##(round)"),
    ("eastOffset", "Offset towards east from the reference location to the sensor", "real", "meter", "*.##(round)"),
    ("northOffset", "Offset towards true north from the reference location to the sensor", "real", "meter",
     "*.##(round)"),
    ("xAzimuth", "Azimuth of the local x-axis relative to true north", "real", "degrees", "*.##(round)"),
    ("yAzimuth", "Azimuth of the local y-axis relative to true north", "real", "degrees", "*.##(round)"),
)
SENSOR_POSITIONS_FIELDS = tuple(FieldDef("sensor_positions", n, d, t, u, "basic", p, "N", "")
                                for n, d, t, u, p in _POSITION_ROWS)
