"""A stacked dataset for the query tests, made as eco_stack_tables makes one: the simulator's soil
temperature files (two depths of one plot, one sensor moved mid-record) written out as NEON's
packages and stacked with tables.dataset into `<downloads>/datasets/<id>`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tables import dataset
from tests.tables.neon_support import write_packages
from upstream_sim.state import files_for

SOIL = "DP1.00041.001"
# HARV's shallow soil sensor moves on 2024-08-21 in the simulator: these months hold both periods.
WINDOW = ("2024-08", "2024-09")
CITATIONS = [{"release": "RELEASE-2026", "doi": "10.48443/sim-soil", "text": "NEON (2026). Soil temperature "
              "(DP1.00041.001), RELEASE-2026.", "bibtex": "@misc{soil, title={Soil temperature}}"},
             {"release": "PROVISIONAL", "doi": None, "text": "NEON. Soil temperature, provisional data.",
              "bibtex": "@misc{soilp}"}]


# A call that reads the dataset stack_soil makes with its defaults (reliability suites call every tool).
QUERY_ID = dataset.dataset_id(SOIL, ["HARV"], WINDOW[0], WINDOW[1], "basic", None, True, None)
QUERY_CALL = {"dataset_id": QUERY_ID, "sql": "SELECT siteID, verticalPosition, count(*) AS n FROM ST_30_minute "
                                             "GROUP BY ALL ORDER BY ALL"}


def stack_soil(downloads: Path, sites: tuple[str, ...] = ("HARV",), window: tuple[str, str] = WINDOW,
               tables: list[str] | None = None, into: Path | None = None) -> tuple[str, dict[str, Any]]:
    """Stacks the selection into the download directory's datasets folder (or `into`/<id>, a
    server's dataset store); its id and record."""
    files = files_for(1)
    # The packages beside the download directory, as a stack's sources would be in it.
    sources = write_packages(files, SOIL, list(sites), window[0], window[1], downloads.parent / f"{downloads.name}-src")
    ds_id = dataset.dataset_id(SOIL, list(sites), window[0], window[1], "basic", None, True, tables)
    folder = (downloads / dataset.FOLDER if into is None else into) / ds_id
    selection = {"product": SOIL, "siteCodes": list(sites), "startMonth": window[0], "endMonth": window[1],
                 "package": "basic", "release": None, "includeProvisional": True, "tables": tables}
    built = dataset.build(folder, dataset.table_sources(sources), root=downloads, product=SOIL, package="basic",
                          wanted=tables, selection=selection, citations=CITATIONS, issue_log=None)
    return ds_id, built.record
