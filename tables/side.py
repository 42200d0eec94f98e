"""The dataset's side tables, each queryable by name beside the stacked tables: `variables` (with
rows for the columns the stack adds, as neonUtilities describes them), `validation`,
`categoricalCodes`, `readme` (one row per site: each site's newest readme) and `issue_log`.

    relations(record, by_source) -> {lower name: Table}   what a query may name (tables.query.check)
    create(con, folder, record)                           the tables, in the engine before it is locked

The files are the ones tables.dataset keeps beside the Parquet files; every value is text, as in
NEON's files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tables import names
from tables.layout import POSITIONED, READMES

if TYPE_CHECKING:
    import duckdb

# Name in a query -> the kind tables.dataset records it under (dataset.json's files).
CSV_TABLES = {"validation": "validation", "categoricalCodes": "categorical_codes", "issue_log": "issue_log"}
README = "readme"
VARIABLES = "variables"
# The columns a stack adds to NEON's tables, described as neonUtilities describes them
# (its added_fields.csv): sensor tables get the first four, every table the last two.
ADDED = {
    "domainID": ("Unique identifier of the NEON domain", "string"),
    "siteID": ("NEON site code", "string"),
    "horizontalPosition": ("Index of horizontal location at a NEON site", "string"),
    "verticalPosition": ("Index of vertical location at a NEON site", "string"),
    "publicationDate": ("Date of data publication on the NEON data portal", "dateTime"),
    "release": ("Identifier for data release", "string"),
}
# Columns only the <table>_positioned views have (from sensor_positions, joined by period).
POSITIONED_ADDED = {
    "heightRank": ("Rank of the sensor's height at its site and horizontal position: 1 is the tower top or the "
                   "shallowest soil sensor", "integer", None),
    "sensorElevation": ("Elevation of the sensor: the location's reference elevation plus its zOffset", "real",
                        "meter"),
}
ADDED_BY = "appended by stackByTable"


def relations(record: dict[str, Any], by_source: dict[str, Any]) -> dict[str, tuple[str, set[str]]]:
    """The side tables the dataset has: lower-case name -> (name, releases of their sources)."""
    files = record.get("files") or {}
    out: dict[str, tuple[str, set[str]]] = {}
    for name, kind in CSV_TABLES.items():
        f = files.get(kind)
        if f:
            rel = by_source.get(f.get("source"))
            out[name.lower()] = (name, {rel} if rel else set())
    readmes = [v for k, v in files.items() if k.startswith(READMES)]
    if readmes:
        out[README] = (README, {r for r in (by_source.get(v.get("source")) for v in readmes) if r})
    return out


def _csv(path: Path) -> str:
    return "read_csv('" + str(path).replace("'", "''") + "', header = true, all_varchar = true, quote = '\"', " \
                                                         "escape = '\"')"


def added_rows(record: dict[str, Any], described: set[tuple[str, str]]) -> list[list[str]]:
    """Variables rows for the columns of each stacked table the variables file does not describe."""
    rows = []
    for t in (record.get("tables") or {}).values():
        for c in t.get("columns") or []:
            name = c["name"]
            if name in ADDED and (t["name"], name) not in described:
                desc, typ = ADDED[name]
                rows.append([t["name"], name, desc, typ, "", ADDED_BY, "", "N", ""])
        if t.get("layout") == "sensor" and names.SENSOR_POSITIONS in (record.get("tables") or {}):
            view = t["name"] + POSITIONED
            for name, (desc, typ, unit) in POSITIONED_ADDED.items():
                rows.append([view, name, desc, typ, unit or "", "added by eco-mcp", "", "N", ""])
    return rows


def create(con: duckdb.DuckDBPyConnection, folder: Path, record: dict[str, Any],
           made: Callable[[str, str], bool]) -> None:
    """The side tables in the engine (called while files may still be read); `made(ddl, key)`
    runs one table's DDL, leaving the relation out when it fails (tables.query._made)."""
    files = record.get("files") or {}
    var = files.get("variables")
    if var and made(f"CREATE TABLE {VARIABLES} AS SELECT * FROM {_csv(folder / var['file'])}", VARIABLES):
        header = [d[0] for d in con.execute(f"SELECT * FROM {VARIABLES} LIMIT 0").description or []]
        if {"table", "fieldName"} <= set(header):
            described = {(str(a), str(b)) for a, b in con.execute(f'SELECT "table", fieldName FROM {VARIABLES}')
                         .fetchall()}
            cols = ["table", "fieldName", "description", "dataType", "units", "downloadPkg", "pubFormat",
                    "primaryKey", "categoricalCodeName"]
            present = [c for c in cols if c in header]
            for row in added_rows(record, described):
                values = dict(zip(cols, row, strict=True))
                con.execute(f"INSERT INTO {VARIABLES} ({', '.join(_q(c) for c in present)}) VALUES "
                            f"({', '.join('?' for _ in present)})", [values[c] for c in present])
    for name, kind in CSV_TABLES.items():
        f = files.get(kind)
        if f:
            made(f"CREATE TABLE {_q(name)} AS SELECT * FROM {_csv(folder / f['file'])}", name.lower())
    readmes = sorted((v for k, v in files.items() if k.startswith(READMES)), key=lambda v: v["site"])
    if readmes and made(f"CREATE TABLE {README} (siteID VARCHAR, release VARCHAR, file VARCHAR, text VARCHAR)",
                        README):
        by_source = {s["name"]: s.get("release") for s in record.get("sources") or []}
        for v in readmes:
            text = (folder / v["file"]).read_text(encoding="utf-8", errors="replace")
            con.execute(f"INSERT INTO {README} VALUES (?, ?, ?, ?)",
                        [v["site"], by_source.get(v["source"]), v["source"], text])


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
