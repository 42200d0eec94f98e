"""The index stores each equal immutable value once (catalog/index.py, _Shared): the cells of a
catalog repeat a few thousand month intervals hundreds of thousands of times."""

from __future__ import annotations

from catalog.index import parse_ranges


def test_equal_month_runs_and_intervals_of_different_cells_are_one_object_and_still_read_the_same(idx):
    runs: dict[tuple, tuple] = {}
    intervals: dict[tuple, tuple] = {}
    seen = 0
    for p in idx.products:
        for c in p.cells.values():
            for rel, run in c.by_release.items():
                # What the cell holds is still exactly its stored ranges, parsed.
                assert run == parse_ranges(c.ranges[rel])
                assert runs.setdefault(run, run) is run
                seen += 1
                for iv in run:
                    assert intervals.setdefault(iv, iv) is iv
    assert len(runs) < seen  # the catalog does repeat runs, so sharing was exercised
