"""Availability shaping remembers each run's merged form and texts (the "availability.runs" memo
table): repeated shaping answers the same, and many distinct runs never grow it past its bound."""

from __future__ import annotations

from catalog import availability as av
from eco_core.memo import memos


def test_shaping_a_cell_again_answers_the_same_and_many_distinct_cells_keep_the_memo_bounded():
    cell = {"RELEASE-2026": ["2019-04/2019-06", "2019-07/2019-08", "2020-01/2020-02"],
            "PROVISIONAL": ["2025-07/2025-09"]}
    first = av.shape_row(cell, provisional="include", start=None, end=None, fmt="ranges")
    again = av.shape_row(cell, provisional="include", start=None, end=None, fmt="ranges")
    assert first == again
    # Adjacent stored ranges come back merged, as before the memo.
    assert first.by_release["RELEASE-2026"] == ["2019-04/2019-08", "2020-01/2020-02"]
    assert first.ranges == ["2019-04/2019-08", "2020-01/2020-02", "2025-07/2025-09"]
    # The answer's lists are the caller's own: changing one does not change the next answer.
    first.by_release["RELEASE-2026"].append("changed")
    assert av.shape_row(cell, provisional="include", start=None, end=None, fmt="ranges") == again
    for year in range(1000, 1000 + av.RUNS_KEPT + 50):
        av.shape_row({"RELEASE-2026": [f"{year}-01/{year}-03"]}, provisional="include", start=None, end=None,
                     fmt="counts")
        assert memos.sizes()["availability.runs"] <= av.RUNS_KEPT
    assert memos.sizes()["availability.runs"] == av.RUNS_KEPT
