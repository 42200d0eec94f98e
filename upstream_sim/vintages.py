"""Older vintages of NEON's files, made from the simulator's current ones, so tests can publish
what NEON published years ago under today's names (DataFiles.republish).

sensor_positions has been published in three forms (the values are the same kind; the header
changed):

  - current (2023 onwards): the simulator's own header, as NEON-IS-data-processing writes it
    (NEONScience/NEON-IS-data-processing, modules/pub_files/output_files/sensor_positions/
    sensor_positions_file.py, get_column_names) and neonutilities lists it
    (__resources__/sensor_positions_variables.csv);
  - "2019-2022": the same columns under their former names, `HOR.VER,name,description,start,end,
    referenceName,referenceDescription,referenceStart,referenceEnd,xOffset,yOffset,zOffset,pitch,
    roll,azimuth,referenceLatitude,referenceLongitude,referenceElevation,eastOffset,northOffset,
    xAzimuth,yAzimuth` (NEON-IS-data-processing's earlier publication_files_generator,
    COLUMN_NAMES; neonutilities' sensor_positions_variables_mapping.csv names each former name,
    and its align_sp_cols maps them to the current ones);
  - "2017-2018": no location name, description, period or reference identity at all:
    `HOR.VER,xOffset,yOffset,zOffset,pitch,roll,azimuth,referenceLatitude,referenceLongitude,
    referenceElevation` (the columns R neonUtilities' makePosColumns selected from such files,
    NEONScience/NEON-utilities commit 9d961c3, 2019-10-23, which added empty start, end,
    referenceStart and referenceEnd columns because those files had none). Such a file lists
    each position once, where it was when the file was made.

A variables file of an earlier vintage may put a field in the basic package that today's puts in
the expanded one (a `finalQFSciRvw` flag): `earlier_basic` and `variables_with_basic` make the
data file and the variables file such a month was published with.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

CURRENT = "current"
FORMER_NAMES = {
    "sensorLocationID": "name", "sensorLocationDescription": "description", "positionStartDateTime": "start",
    "positionEndDateTime": "end", "referenceLocationID": "referenceName",
    "referenceLocationIDDescription": "referenceDescription", "referenceLocationIDStartDateTime": "referenceStart",
    "referenceLocationIDEndDateTime": "referenceEnd", "locationReferenceLatitude": "referenceLatitude",
    "locationReferenceLongitude": "referenceLongitude", "locationReferenceElevation": "referenceElevation",
}
FORM_2017 = ("HOR.VER", "xOffset", "yOffset", "zOffset", "pitch", "roll", "azimuth", "referenceLatitude",
             "referenceLongitude", "referenceElevation")
FORMS = (CURRENT, "2019-2022", "2017-2018")


def _rows(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode("utf-8-sig"), newline="")))


def _csv(rows: Iterable[Iterable[str]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    w.writerows(rows)
    return buf.getvalue().encode()


def sensor_positions_as(body: bytes, form: str) -> bytes:
    """A current-form sensor_positions file as NEON published it in `form`."""
    if form == CURRENT:
        return body
    header, *rows = _rows(body)
    if form == "2019-2022":
        return _csv([[FORMER_NAMES.get(h, h) for h in header], *rows])
    if form != "2017-2018":
        raise ValueError(f"no sensor_positions form {form!r}")
    renamed = [FORMER_NAMES.get(h, h) for h in header]
    keep = [renamed.index(c) for c in FORM_2017]
    start = header.index("positionStartDateTime")
    latest: dict[str, list[str]] = {}
    for r in rows:  # one row per position: the period that was current when the file was made
        if r[0] not in latest or r[start] > latest[r[0]][start]:
            latest[r[0]] = r
    return _csv([list(FORM_2017), *([r[i] for i in keep] for r in latest.values())])


def earlier_basic(basic: bytes, expanded: bytes, fields: tuple[str, ...], order: list[str]) -> bytes:
    """The basic file of a month published when `fields` were in the basic package: the basic
    file's columns plus those fields (their values from the expanded file of the same month and
    position), in the variables file's `order`."""
    bh, *brows = _rows(basic)
    eh, *erows = _rows(expanded)
    assert len(brows) == len(erows)
    columns = [c for c in order if c in bh or c in fields]
    out = [columns]
    for b, e in zip(brows, erows, strict=True):
        row = dict(zip(bh, b, strict=True))
        row.update({f: e[eh.index(f)] for f in fields})
        out.append([row[c] for c in columns])
    return _csv(out)


def variables_with_basic(body: bytes, table: str, fields: tuple[str, ...]) -> bytes:
    """A variables file in which `fields` of `table` are in the basic package."""
    header, *rows = _rows(body)
    t, n, pkg = header.index("table"), header.index("fieldName"), header.index("downloadPkg")
    for r in rows:
        if r[t] == table and r[n] in fields:
            r[pkg] = "basic"
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([header, *rows])
    return buf.getvalue().encode()
