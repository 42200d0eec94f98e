"""NEON's file-name grammar, read into a file's kind, table and sensor position.

The product's own copy of the grammar recorded in the shared reference
(`upstream-samples/reference/file_name_grammar.json`): the simulator keeps its own, so a change
to one cannot hide a mismatch with the other.

    NEON.DOM.SITE.DPL.PRNUM.REV.HOR.VER.TMI.DESC.YYYY-MM.PKGTYPE.GENTIME.csv   sensor data
    NEON.DOM.SITE.DPL.PRNUM.REV.DESC.YYYY-MM.PKGTYPE.GENTIME.csv               observational data
    NEON.DOM.SITE.DPL.PRNUM.REV.DESC.PKGTYPE.GENTIME.csv                       site-all table
    NEON.LABNAME.TABLENAME.GENTIME.csv                                         lab table
    NEON.DOM.SITE.DPL.PRNUM.REV.variables|readme|sensor_positions|science_review_flags.GENTIME.*
    NEON.DOM.SITE.DP0.PRNUM.REV.validation|categoricalCodes.GENTIME.csv
    NEON.DOM.SITE.DPL.PRNUM.REV.EML.YYYYMMDD-YYYYMMDD.GENTIME.xml
    NEON.DOM.SITE.DPL.PRNUM.REV.YYYY-MM.PKGTYPE.GENTIME[.RELEASE-YYYY].zip      package ZIP
    NEON.DOM.SITE.DP4.00200.001.DESC.YYYY-MM[-DD].PKGTYPE.GENTIME.h5           eddy covariance
    NEON_DOM_SITE_DPL_..._DESC.tif|laz|h5|zip                                  AOP
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# What a NEON file is, read from its name.
FileKind = Literal["data", "variables", "readme", "sensor_positions", "eml", "science_review_flags",
                   "categorical_codes", "validation", "package", "other"]

_PRODUCT = r"DP\d\.\d{5}\.\d{3}"
_HEAD = rf"^NEON\.(?P<dom>D\d\d)\.(?P<site>[A-Z]{{4}})\.(?:{_PRODUCT}|DP0\.\d{{5}}\.\d{{3}})\."
_GENTIME = r"\d{8}T\d{6}Z?"
# The descriptor words that name a metadata file rather than a data table.
_META = {"variables": "variables", "readme": "readme", "sensor_positions": "sensor_positions",
         "science_review_flags": "science_review_flags", "categoricalCodes": "categorical_codes",
         "validation": "validation", "EML": "eml"}

SENSOR = re.compile(_HEAD + r"(?P<hor>\d{3})\.(?P<ver>\d{3})\.(?P<tmi>\d{2,3})\.(?P<table>[^.]+)\."
                    r"\d{4}-\d{2}\.(?:basic|expanded)\." + _GENTIME + r"\.csv$")
OBSERVED = re.compile(_HEAD + r"(?P<table>[^.]+)\.\d{4}-\d{2}(?:-\d{2})?\.(?:basic|expanded)\."
                      + _GENTIME + r"\.(?:csv|h5)$")
SITE_ALL = re.compile(_HEAD + r"(?P<table>[^.]+)\.(?:basic|expanded)\." + _GENTIME + r"\.csv$")
LAB = re.compile(r"^NEON\.(?P<lab>[^.]+)\.(?P<table>[^.]+)(?:\." + _GENTIME + r")?\.csv$")
META = re.compile(_HEAD + r"(?P<word>" + "|".join(_META) + r")\.")
PACKAGE = re.compile(r"^NEON\.D\d\d\.[A-Z]{4}\." + _PRODUCT + r"\.\d{4}-\d{2}\.(?:basic|expanded)\." + _GENTIME + r"(?:\.RELEASE-\d{4})?\.zip$")
AOP = re.compile(r"^NEON_D\d\d_[A-Z]{4}_DP\d_.+\.(?:tif|laz|h5|zip|wvz|plz)$")


@dataclass(frozen=True)
class NameParts:
    kind: FileKind
    table: str | None = None
    hor: str | None = None
    ver: str | None = None
    tmi: str | None = None


def classify(name: str) -> NameParts:
    """The kind (and for data files the table and HOR.VER.TMI) of one NEON file name."""
    if PACKAGE.match(name):
        return NameParts("package")
    m = META.match(name)
    if m:
        return NameParts(_META[m["word"]])  # type: ignore[arg-type]  # values are FileKind literals
    m = SENSOR.match(name)
    if m:
        return NameParts("data", m["table"], m["hor"], m["ver"], m["tmi"])
    for pattern in (OBSERVED, SITE_ALL):
        m = pattern.match(name)
        if m:
            return NameParts("data", m["table"])
    m = LAB.match(name)
    if m:
        return NameParts("data", m["table"])
    if AOP.match(name):
        return NameParts("data")
    return NameParts("other")
