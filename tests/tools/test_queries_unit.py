"""The pure pieces under the discovery tools: text clipping and availability cells."""

from __future__ import annotations

from types import SimpleNamespace

from catalog.availability import AvailabilityTotals, cell_from_upstream, shape_row, totals
from catalog.text import clip

CELL = {"RELEASE-2026": ["2019-04/2019-06", "2020-01/2020-02"], "PROVISIONAL": ["2025-07/2025-09"]}


def test_clip_keeps_short_text_and_cuts_long_text_at_a_word_with_an_ellipsis():
    assert clip("short", 10) == ("short", False)
    assert clip(None, 10) == (None, False)
    text, cut = clip("alpha beta gamma delta epsilon", 20)
    assert cut and text == "alpha beta gamma…" and len(text) <= 20


def test_clip_cuts_inside_a_long_word_when_no_space_is_near():
    text, cut = clip("x" * 50, 10)
    assert cut and text == "x" * 9 + "…"


def test_ranges_format_merges_releases_and_keeps_provisional_as_its_own_key():
    row = shape_row(CELL, provisional="include", start=None, end=None, fmt="ranges")
    assert row.ranges == ["2019-04/2019-06", "2020-01/2020-02", "2025-07/2025-09"]
    assert row.by_release == {"PROVISIONAL": ["2025-07/2025-09"], "RELEASE-2026": CELL["RELEASE-2026"]}
    assert (row.month_count, row.provisional_month_count) == (8, 3)
    assert (row.first_month, row.last_month) == ("2019-04", "2025-09")
    assert row.months is None


def test_window_clips_intervals_and_drops_releases_left_empty():
    row = shape_row(CELL, provisional="include", start="2019-05", end="2020-01", fmt="months")
    assert row.months == ["2019-05", "2019-06", "2020-01"]
    assert row.by_release == {"RELEASE-2026": ["2019-05", "2019-06", "2020-01"]}
    assert row.provisional_month_count == 0 and row.ranges is None


def test_provisional_only_and_exclude_and_nothing_left_gives_none():
    assert shape_row(CELL, provisional="only", start=None, end=None, fmt="counts").by_release == {"PROVISIONAL": 3}
    assert shape_row(CELL, provisional="exclude", start=None, end=None, fmt="counts").by_release == {
        "RELEASE-2026": 5}
    assert shape_row(CELL, provisional="only", start=None, end="2024-12", fmt="counts") is None


def test_totals_sum_site_months_per_release_over_every_row():
    rows = [shape_row(CELL, provisional="include", start=None, end=None, fmt="counts"),
            shape_row({"PROVISIONAL": ["2025-08/2025-08"]}, provisional="include", start=None, end=None,
                      fmt="counts")]
    assert totals(rows) == AvailabilityTotals(rows=2, site_months=9,
                                              by_release={"PROVISIONAL": 4, "RELEASE-2026": 5},
                                              first_month="2019-04", last_month="2025-09")


def test_upstream_entry_becomes_a_cell_per_release_and_unlabelled_months_go_under_the_pinned_release():
    rel = SimpleNamespace(release="RELEASE-2025", available_months=["2020-01", "2020-02", "2020-04"])
    assert cell_from_upstream([rel], [], None) == {"RELEASE-2025": ["2020-01/2020-02", "2020-04/2020-04"]}
    assert cell_from_upstream([], ["2021-01"], "RELEASE-2024") == {"RELEASE-2024": ["2021-01/2021-01"]}
    assert cell_from_upstream([], ["2021-01"], None) == {"UNSPECIFIED": ["2021-01/2021-01"]}
