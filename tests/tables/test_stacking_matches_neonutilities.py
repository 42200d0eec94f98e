"""eco's stacking engine against NEON's own stacker on the same files: a sensor product over three
sites and twelve months (several positions per site, a sensor that moved) and an observational
product with site-all and lab tables over a window of released and provisional months. Every table
both make is equal row for row and value for value, with the same column names in the same order;
every column's units in the Parquet metadata are the variables file's."""

from __future__ import annotations

import importlib.util

import pyarrow.parquet as pq
import pytest

from tables import dataset
from tests.tables.neon_support import assert_same_table, neonutilities_stack, variables_units, write_packages
from upstream_sim.state import files_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("neonutilities") is None, reason="neonutilities is not installed"),
]

AIR, AIR_SITES = "DP1.00002.001", ["BARR", "CPER", "KONZ"]
LITTER, LITTER_SITES = "DP1.10033.001", ["HARV", "SCBI", "KONZ"]


def _stack_both(tmp_path, code, sites, m0, m1, keep=None):
    files = files_for(1)
    folder = tmp_path / f"filesToStack{code[4:9]}"
    sources = write_packages(files, code, sites, m0, m1, folder, keep=keep)
    theirs = neonutilities_stack(folder, tmp_path / "nu.pickle")
    out = tmp_path / "dataset"
    built = dataset.build(out, dataset.table_sources(sources), root=tmp_path, product=code, package="basic",
                          wanted=None, selection={}, citations=[], issue_log=None)
    return sources, theirs, out, built


def _compare(theirs, out, built, code):
    num = code[4:9]
    compared = []
    for name, rec in built.record["tables"].items():
        key = f"{name}_{num}" if name in ("sensor_positions", "science_review_flags") else name
        assert key in theirs, (name, sorted(theirs))
        mine = pq.read_table(out / rec["file"]).to_pandas()
        assert_same_table(mine, theirs[key], name)
        assert rec["rows"] == len(mine)
        compared.append(name)
    stacked = {k for k in theirs if not k.startswith(("variables_", "readme_", "validation_", "categoricalCodes_",
                                                     "issueLog_", "citation_"))}
    assert {f"{n}_{num}" if n in ("sensor_positions", "science_review_flags") else n for n in compared} == stacked
    return compared


def test_a_sensor_product_over_three_sites_and_twelve_months_stacks_as_neonutilities_stacks_it(tmp_path):
    # The 30-minute table only (as zips_by_product(timeindex=30) fetches it): the 1-minute files
    # would make this test minutes long without adding a rule.
    sources, theirs, out, built = _stack_both(tmp_path, AIR, AIR_SITES, "2023-01", "2023-12", keep="SAAT_30min")
    compared = _compare(theirs, out, built, AIR)
    assert set(compared) == {"SAAT_30min", "sensor_positions", "science_review_flags"}
    saat = pq.read_table(out / "SAAT_30min.parquet").to_pandas()
    positions = set(zip(saat.siteID, saat.horizontalPosition, saat.verticalPosition, strict=True))
    assert len({site for site, _, _ in positions}) == 3 and len(positions) >= 9  # several positions per site
    assert saat.siteID.is_monotonic_increasing  # site, position, time order, as neonutilities sorts
    sp = pq.read_table(out / "sensor_positions.parquet").to_pandas()
    assert (sp.groupby("siteID")["HOR.VER"].value_counts() == 2).sum() == 3  # one moved sensor per site
    _assert_units_are_the_variables_files(sources, out, compared)
    assert pq.read_schema(out / "SAAT_30min.parquet").field("startDateTime").type.tz == "UTC"


def _assert_units_are_the_variables_files(sources, out, compared):
    """Units in the Parquet field metadata are the variables file's, field for field."""
    [var] = [s for s in sources if ".variables." in s.name][:1]
    units = variables_units(var.path.read_bytes())
    for name in compared:
        schema = pq.read_schema(out / f"{name}.parquet")
        for f in schema:
            if (name, f.name) in units:
                assert f.metadata[b"units"].decode() == units[(name, f.name)], (name, f.name)
            else:  # the columns neonutilities adds carry no units
                assert f.name in ("domainID", "siteID", "horizontalPosition", "verticalPosition", "publicationDate",
                                  "release") and b"units" not in (f.metadata or {})


def test_an_observational_product_keeps_the_newest_site_all_and_lab_files_as_neonutilities_does(tmp_path):
    sources, theirs, out, built = _stack_both(tmp_path, LITTER, LITTER_SITES, "2025-04", "2026-05")
    assert {s.release for s in sources} == {"RELEASE-2026", "PROVISIONAL"}
    compared = _compare(theirs, out, built, LITTER)
    layouts = {name: rec["layout"] for name, rec in built.record["tables"].items()}
    assert {layouts["ltr_pertrap"], layouts["bgc_CNiso_externalSummary"]} == {"site-all", "lab"}
    assert "ltr_massdata" in compared and "science_review_flags" in compared
    mass = pq.read_table(out / "ltr_massdata.parquet").to_pandas()
    assert set(mass.release) == {"RELEASE-2026", "PROVISIONAL"}
    _assert_units_are_the_variables_files(sources, out, compared)
