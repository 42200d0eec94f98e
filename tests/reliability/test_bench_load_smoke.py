"""bench/bench_load.py kept runnable: its core (simulator and `manage.py eco_mcp --transport http`
as processes, the registry-driven mix over raw 2026-07-28 HTTP) run small on one worker, and its
table held to what tools/list shows, so a newly registered tool cannot be left out of the load."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_load  # found through the path insertion above


def test_a_tool_listed_without_a_row_or_a_row_without_a_listed_tool_stops_the_run_before_it_starts():
    listed = list(bench_load.TABLE)
    bench_load.check_table(listed)
    with pytest.raises(SystemExit, match="eco_brand_new_tool"):
        bench_load.check_table([*listed, "eco_brand_new_tool"])
    with pytest.raises(SystemExit, match="eco_ping"):
        bench_load.check_table([t for t in listed if t != "eco_ping"])


def test_ten_clients_for_five_seconds_on_one_worker_get_only_successes_or_rate_limited():
    # Limits and budget ten times NEON's: at NEON's, the start-up walk and a few seconds of cache
    # misses spend the anonymous burst and the calls still waiting for it (up to 10 s each)
    # would double the test's time; the full-size run in bench/ keeps NEON's.
    report = bench_load.run_setup("one", clients=10, seconds=5, warm_up_calls=1, call_timeout=60,
                                  rate_limit_scale=10)

    # run_setup checked the table against the live tools/list before any client started, so
    # every tool the service lists over HTTP has a row here, and none that is stdio-only.
    assert set(report["tools"]) == set(bench_load.TABLE)
    assert bench_load.STDIO_ONLY.isdisjoint(report["tools"])
    assert report["calls"] > 0 and report["calls_per_s"] > 0
    assert sum(row["calls"] for row in report["tools"].values()) == report["calls"]
    for tool, row in report["tools"].items():
        assert sum(row["outcomes"].values()) == row["calls"], tool
        if row["calls"]:
            assert 0 < row["p50_ms"] <= row["p99_ms"], (tool, row)
    assert report["errors_other_than_rate_limited"] == 0, report["outcomes"]
    assert set(report["outcomes"]) <= {"ok", "rate_limited"}, report["outcomes"]

    lifetime, load = report["simulator"]["lifetime"], report["simulator"]["load"]
    for span in (lifetime, load):
        for who in ("token", "anonymous"):
            row = span[who]
            assert row["limit"] > 0 and abs(row["percent"] - 100 * row["requests"] / row["limit"]) < 0.5
            assert row["answered_429"] == 0
    # The prewarm's catalog requests came before the load; the load's are part of the lifetime's.
    assert lifetime["anonymous"]["requests"] > load["anonymous"]["requests"]
    assert lifetime["seconds"] > load["seconds"] >= 5

    for when in ("memory_before", "memory_after"):
        workers = report[when]["workers_mb"]
        assert len(workers) == 1 and all(mb > 20 for mb in workers.values()), report[when]
    assert report["service_log_errors"] == []
