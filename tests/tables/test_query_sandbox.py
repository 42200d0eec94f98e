"""eco_query_tables' engine (tables/query.py) on a dataset stacked from the simulator's soil
temperature files: every way out of the dataset is refused, a query past its time limit is
cancelled and leaves the engine idle, a cartesian join is stopped by the memory limit with the
process alive, units follow the variables file for bare columns only, bad SQL says where, and
the positioned views join each sensor row to the position of its period."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from eco_core.errors import EcoError
from eco_core.memo import memos
from tables import query
from tests.tables.query_support import stack_soil

LIMITS = query.Limits(timeout_s=20, memory_mb=256, threads=1)


@pytest.fixture(scope="module")
def soil(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    downloads = tmp_path_factory.mktemp("downloads")
    ds_id, _ = stack_soil(downloads)
    other_id, _ = stack_soil(downloads, window=("2024-10", "2024-10"))
    yield downloads / "datasets" / ds_id, downloads / "datasets" / other_id
    memos.drop_all()


def run(folder: Path, sql: str, limit: int = 100, limits: query.Limits = LIMITS) -> query.Result:
    return query.QueryRun(folder, sql, limit, limits).start().result(timeout=60)


def refused(folder: Path, sql: str, limits: query.Limits = LIMITS) -> EcoError:
    with pytest.raises(EcoError) as got:
        run(folder, sql, limits=limits)
    err = got.value
    assert err.message.startswith("sql: ") and err.details["field"] == "sql", err.message
    return err


def test_the_dataset_lookup_takes_only_a_dataset_folder_directly_under_datasets(soil, tmp_path):
    folder, _ = soil
    downloads = folder.parent.parent
    assert query.dataset_folder(downloads, folder.name) == folder
    for bad in ("..", ".", "../datasets", "x/../" + folder.name, "/etc", folder.name + "/", "nope", ""):
        assert query.dataset_folder(downloads, bad) is None, bad
    (downloads / "datasets" / "linked").symlink_to(folder)
    assert query.dataset_folder(downloads, "linked") is None


FORBIDDEN = {
    "passwd by reader": "SELECT * FROM read_csv('/etc/passwd')",
    "passwd by name": "SELECT * FROM '/etc/passwd'",
    "passwd as text": "SELECT * FROM read_text('/etc/passwd')",
    "glob": "SELECT * FROM glob('/etc/*')",
    "url by reader": "SELECT * FROM read_csv('https://data.neonscience.org/x.csv')",
    "url by name": "SELECT * FROM 'http://127.0.0.1:9/x.parquet'",
    "install": "INSTALL httpfs",
    "load": "LOAD httpfs",
    "copy": "COPY (SELECT 1) TO '/tmp/eco-query-copy.csv'",
    "attach": "ATTACH '/tmp/eco-query.db' AS other",
    "set": "SET threads = 8",
    "reset": "RESET memory_limit",
    "pragma": "PRAGMA database_list",
    "two statements": "SELECT 1; SELECT 2",
    "create": "CREATE TABLE x AS SELECT 1",
    "insert": "INSERT INTO variables VALUES ('a')",
    "drop": "DROP VIEW ST_30_minute",
    "call": "CALL pragma_version()",
    "explain": "EXPLAIN SELECT 1",
    "settings": "SELECT current_setting('allowed_paths')",
    "catalog": "SELECT sql FROM duckdb_views()",
    "information schema": "SELECT view_definition FROM information_schema.views",
    "view definition": "SELECT pg_get_viewdef(x) AS d FROM range(0, 40000) t(x) WHERE pg_get_viewdef(x) LIKE '%a%'",
    "qualified pg function": "SELECT pg_catalog.pg_get_viewdef(1)",
    "catalog macro": "SELECT * FROM duckdb_logs_parsed('x')",
    "catalog behind a sibling CTE": "FROM sqlite_master, (WITH sqlite_master AS (SELECT 1) SELECT 1)",
    "settings behind a sibling CTE": "FROM pg_settings, (WITH pg_settings AS (SELECT 1) SELECT 1)",
    "columns behind a sibling CTE": "FROM duckdb_columns, (WITH duckdb_columns AS (SELECT 1) SELECT 1)",
    "views behind a sibling CTE": "FROM pg_views, (WITH pg_views AS (SELECT 1) SELECT 1)",
    "functions behind a sibling CTE": "FROM pg_proc, (WITH pg_proc AS (SELECT 1) SELECT 1)",
    "catalog behind a later CTE": "WITH a AS (SELECT * FROM pg_settings), pg_settings AS (SELECT 1) SELECT * FROM a",
    "catalog read by its own CTE": "WITH pg_settings AS (SELECT * FROM pg_settings) SELECT * FROM pg_settings",
    "catalog in a scalar subquery": "SELECT (SELECT count(*) FROM duckdb_views) AS n",
    "described catalog": "DESCRIBE pg_settings",
    "show all tables": "SHOW ALL TABLES",
    "current database": "SELECT current_database() AS d",
}


@pytest.mark.parametrize("sql", list(FORBIDDEN.values()), ids=list(FORBIDDEN))
def test_each_form_that_leaves_the_dataset_or_changes_the_engine_is_refused(soil, sql):
    folder, _ = soil
    err = refused(folder, sql)
    assert err.code in ("invalid_argument", "not_found")
    assert str(folder) not in err.message and not Path("/tmp/eco-query-copy.csv").exists()


def test_another_datasets_files_are_out_of_reach(soil):
    folder, other = soil
    for sql in (f"SELECT count(*) FROM read_parquet('{other}/ST_30_minute.parquet')",
                f"SELECT count(*) FROM '{other}/ST_30_minute.parquet'"):
        assert refused(folder, sql).code in ("invalid_argument", "not_found")
    # The engine itself refuses too, should a form get past the parser's checks.
    engine = query.engine_for(folder, LIMITS)
    cur = engine.cursor()
    for sql in (f"SELECT count(*) FROM read_parquet('{other}/ST_30_minute.parquet')",
                "SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM read_csv('https://example.org/x.csv')"):
        with pytest.raises(duckdb.PermissionException):
            cur.execute(sql)
    with pytest.raises(duckdb.Error, match="locked"):
        cur.execute("SET enable_external_access = true")
    # ... while its own tables read as usual
    assert run(folder, "SELECT count(*) AS n FROM ST_30_minute").rows == [[5856]]


def test_a_query_past_its_time_limit_is_cancelled_and_the_engine_is_idle_afterwards(soil):
    folder, _ = soil
    short = query.Limits(timeout_s=0.5, memory_mb=256, threads=1)
    q = query.QueryRun(folder, "SELECT count(*) FROM range(1000000000000) a", 10, short)
    future = q.start()
    with pytest.raises(EcoError) as got:
        future.result(timeout=60)
    assert got.value.code == "query_too_large" and got.value.details["reason"] == "time"
    assert "tables.query_timeout_s" in got.value.message
    assert q.thread is not None
    q.thread.join(timeout=10)
    assert not q.thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name == "eco-query"]
    # the same engine answers the next query at once
    assert run(folder, "SELECT count(*) AS n FROM sensor_positions", limits=short).rows == [[3]]


def test_a_cancelled_call_interrupts_its_query(soil):
    folder, _ = soil
    q = query.QueryRun(folder, "SELECT count(*) FROM range(1000000000000) a", 10, LIMITS)
    future = q.start()
    while q._con is None and future.running():
        threading.Event().wait(0.01)
    q.cancel()
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(timeout=30)
    assert q.thread is not None
    q.thread.join(timeout=10)
    assert not q.thread.is_alive()


def test_a_query_cancelled_before_it_starts_never_runs(soil):
    folder, _ = soil
    q = query.QueryRun(folder, "SELECT count(*) FROM range(1000000000000) a", 10, LIMITS)
    q.cancel()
    with pytest.raises(concurrent.futures.CancelledError):
        q.start().result(timeout=30)


def test_a_cartesian_join_is_stopped_by_the_memory_limit_and_the_process_lives_on(soil):
    folder, _ = soil
    small = query.Limits(timeout_s=60, memory_mb=64, threads=1)
    err = refused(folder, "SELECT a.siteID, list(b.soilTempMean) FROM ST_30_minute a, ST_30_minute b GROUP BY ALL",
                  limits=small)
    assert err.code == "query_too_large" and err.details["reason"] == "memory" and err.details["limitMb"] == 64
    assert run(folder, "SELECT count(*) AS n FROM ST_30_minute", limits=small).rows == [[5856]]


def test_units_are_derived_from_the_query_through_aggregates_and_ctes(soil):
    folder, _ = soil
    got = run(folder, "SELECT siteID, soilTempMean, soilTempMean AS t, s.soilTempMaximum, avg(soilTempMean) OVER () "
                      "AS soilTempMinimum, soilTempMean * 1.8 + 32 AS f FROM ST_30_minute s LIMIT 3")
    units = {c.name: c.units for c in got.columns}
    assert units == {"siteID": None, "soilTempMean": "celsius", "t": "celsius", "soilTempMaximum": "celsius",
                     "soilTempMinimum": "celsius", "f": None}
    assert "no unit" in {c.name: c.units_reason for c in got.columns}["f"]
    star = run(folder, "SELECT * FROM sensor_positions")
    units = {c.name: c.units for c in star.columns}
    assert units["zOffset"] == "meter" and units["locationReferenceLatitude"] == "degrees"
    assert {c.name: c.type for c in star.columns}["positionStartDateTime"] == "timestamp"
    agg = run(folder, "SELECT siteID, avg(soilTempMean), count(*) FROM ST_30_minute GROUP BY siteID")
    assert [c.units for c in agg.columns] == [None, "celsius", "number"]
    cte = run(folder, "WITH x AS (SELECT soilTempMean FROM ST_30_minute) SELECT soilTempMean FROM x LIMIT 1")
    assert cte.columns[0].units == "celsius"
    assert [t.name for t in got.tables] == ["ST_30_minute"] and got.tables[0].releases == {"RELEASE-2026"}


def test_rows_are_json_values_with_times_in_utc_and_the_rest_is_counted(soil):
    folder, _ = soil
    got = run(folder, "SELECT startDateTime, soilTempMean, 'NaN'::DOUBLE AS n FROM ST_30_minute ORDER BY 1", limit=2)
    assert got.rows[0][0] == "2024-08-01T00:00:00Z" and got.rows[0][2] is None
    assert got.more and got.total == 5856 and len(got.rows) == 2


def test_the_variables_file_is_a_table(soil):
    folder, _ = soil
    got = run(folder, "SELECT units FROM variables WHERE \"table\" = 'ST_30_minute' AND fieldName = 'soilTempMean'")
    assert got.rows == [["celsius"]]


def test_bad_sql_is_invalid_argument_with_the_engines_message_and_the_position(soil):
    folder, _ = soil
    err = refused(folder, "SELECT siteID FROM ST_30_minute WHERE")
    assert err.code == "invalid_argument" and "syntax error" in err.message
    assert err.details["position"] == len("SELECT siteID FROM ST_30_minute ") and err.details["line"] == 1
    err = refused(folder, "SELECT siteID,\n  sum(soilTempMean\nFROM ST_30_minute")
    assert err.code == "invalid_argument" and err.details["line"] == 3
    err = refused(folder, "SELECT nosuchfn(siteID) FROM ST_30_minute")
    assert err.code == "invalid_argument" and "nosuchfn" in err.message and err.details["position"] == 7


def test_an_unknown_table_or_column_suggests_the_right_names(soil):
    folder, _ = soil
    err = refused(folder, "SELECT * FROM ST_30_minutes")
    assert err.code == "not_found" and err.details["didYouMean"][0] == "ST_30_minute"
    assert err.details["position"] == len("SELECT * FROM ")
    err = refused(folder, "SELECT soilTempMeen FROM ST_30_minute")
    assert err.code == "not_found" and err.details["didYouMean"][0] == "soilTempMean"
    assert err.details["position"] == len("SELECT ")


def _expected_positions(folder: Path) -> list[tuple]:
    """Each ST_30_minute row's zOffset, worked out by hand from the stacked files."""
    rows = pq.read_table(folder / "ST_30_minute.parquet").to_pylist()
    spos = pq.read_table(folder / "sensor_positions.parquet").to_pylist()
    out = []
    for r in rows:
        match = [p for p in spos if p["siteID"] == r["siteID"]
                 and p["HOR.VER"] == f"{r['horizontalPosition']}.{r['verticalPosition']}"
                 and (p["positionStartDateTime"] is None or r["startDateTime"] >= p["positionStartDateTime"])
                 and (p["positionEndDateTime"] is None or r["startDateTime"] < p["positionEndDateTime"])]
        assert len(match) == 1
        out.append((r["startDateTime"].strftime("%Y-%m-%dT%H:%M:%SZ"), r["verticalPosition"], match[0]["zOffset"],
                    match[0]["sensorLocationID"]))
    return sorted(out)


def test_the_positioned_view_gives_each_row_the_position_of_its_period(soil):
    folder, _ = soil
    got = run(folder, "SELECT startDateTime, verticalPosition, zOffset, sensorLocationID FROM ST_30_minute_positioned",
              limit=5000)
    assert got.total == 5856 and len(got.rows) == 5000
    everything = run(folder, "SELECT count(*) AS n, count(zOffset) AS placed FROM ST_30_minute_positioned").rows
    assert everything == [[5856, 5856]]  # each row once, each with its position
    full = [tuple(r) for r in run(folder, "SELECT startDateTime, verticalPosition, zOffset, sensorLocationID FROM "
                                          "ST_30_minute_positioned ORDER BY 1, 2 LIMIT 5000 OFFSET 0", limit=5000).rows]
    rest = [tuple(r) for r in run(folder, "SELECT startDateTime, verticalPosition, zOffset, sensorLocationID FROM "
                                          "ST_30_minute_positioned ORDER BY 1, 2 OFFSET 5000", limit=5000).rows]
    assert sorted(full + rest) == _expected_positions(folder)
    # the sensor that moved: two heights, before and after the move
    moved = run(folder, "SELECT verticalPosition, count(DISTINCT zOffset) AS heights, min(positionEndDateTime) AS "
                        "moved FROM ST_30_minute_positioned GROUP BY 1 HAVING count(DISTINCT zOffset) > 1").rows
    assert len(moved) == 1 and moved[0][1] == 2 and moved[0][2].startswith("2024-08-21")
    units = {c.name: c.units for c in got.columns}
    assert units["zOffset"] == "meter"
    assert [t.name for t in got.tables] == ["ST_30_minute_positioned"]


def test_the_top_position_is_a_filter(soil):
    folder, _ = soil
    spos = pq.read_table(folder / "sensor_positions.parquet").to_pylist()
    latest: dict[str, tuple] = {}
    for p in spos:
        if p["HOR.VER"] not in latest or p["positionStartDateTime"] > latest[p["HOR.VER"]][0]:
            latest[p["HOR.VER"]] = (p["positionStartDateTime"], p["zOffset"])
    top = max(latest, key=lambda k: latest[k][1])
    got = run(folder, "SELECT DISTINCT horizontalPosition || '.' || verticalPosition AS hv, sensorLocationDescription "
                      "FROM ST_30_minute_positioned WHERE heightRank = 1")
    assert [r[0] for r in got.rows] == [top] and "Depth 1" in got.rows[0][1]  # the shallowest soil sensor


def test_the_top_of_the_tower_is_heightrank_one(tmp_path):
    from tables import dataset
    from tests.tables.neon_support import write_packages
    from upstream_sim.state import files_for

    code = "DP1.00002.001"  # single-aspirated air temperature: every tower level but the top's
    sources = write_packages(files_for(1), code, ["HARV", "CPER"], "2023-05", "2023-05", tmp_path / "src",
                             keep="SAAT_30min")
    folder = tmp_path / "datasets" / "saat"
    dataset.build(folder, dataset.table_sources(sources), root=tmp_path, product=code, package="basic", wanted=None,
                  selection={}, citations=[], issue_log=None)
    spos = pq.read_table(folder / "sensor_positions.parquet").to_pylist()
    highest = {}
    for p in spos:
        if p["positionEndDateTime"] is None and p["zOffset"] > highest.get(p["siteID"], ("", -1e9))[1]:
            highest[p["siteID"]] = (p["HOR.VER"].split(".")[1], p["zOffset"])
    got = run(folder, "SELECT siteID, verticalPosition, max(zOffset) AS z, max(sensorElevation) - max(referenceElevation) "
                      "AS above FROM SAAT_30min_positioned WHERE heightRank = 1 GROUP BY ALL ORDER BY ALL")
    assert {r[0]: (r[1], r[2]) for r in got.rows} == highest and len(highest) == 2
    assert all(abs(r[3] - r[2]) < 1e-6 for r in got.rows)


def test_the_step_a_stacked_dataset_offers_is_a_query_that_runs(soil):
    from families.tables.query import query_next_step
    from tables import dataset

    folder, _ = soil
    step = query_next_step(dataset.load(folder))
    assert step is not None and step.tool == "eco_query_tables" and step.arguments["dataset_id"] == folder.name
    assert "ST_30_minute_positioned" in step.arguments["sql"] and "any_value" not in step.arguments["sql"]
    assert "WHERE finalQF = 0" in step.arguments["sql"] and "flagged rows left out" in step.why
    got = run(folder, step.arguments["sql"])
    assert [c.name for c in got.columns][:3] == ["siteID", "verticalPosition", "zOffset"]
    # By period, worked out again from the stacked files: the sensor that moved on 2024-08-21 gives
    # August two rows, each at the height it had then, with the mean of its own rows.
    data = pq.read_table(folder / "ST_30_minute.parquet").to_pylist()
    spos = pq.read_table(folder / "sensor_positions.parquet").to_pylist()
    sums: dict[tuple, list[float]] = {}
    for r in data:
        [p] = [p for p in spos if p["HOR.VER"] == f"{r['horizontalPosition']}.{r['verticalPosition']}"
               and r["startDateTime"] >= p["positionStartDateTime"]
               and (p["positionEndDateTime"] is None or r["startDateTime"] < p["positionEndDateTime"])]
        key = (r["siteID"], r["verticalPosition"], p["zOffset"], r["startDateTime"].strftime("%Y-%m"))
        if r["soilTempMean"] is not None and r["finalQF"] == 0:  # the suggestion leaves out flagged rows
            sums.setdefault(key, []).append(r["soilTempMean"])
    mine = {(r[0], r[1], r[2], r[4][:7]): r[5] for r in got.rows}
    assert got.total == len(sums) == 5 and mine.keys() == sums.keys()
    for key, values in sums.items():
        assert abs(mine[key] - sum(values) / len(values)) < 1e-9, key
    august = sorted(k[2] for k in sums if k[3] == "2024-08" and k[1] == "501")
    assert len(august) == 2 and august[0] != august[1]


def test_ctes_are_read_in_their_scope_and_the_datasets_own_names_still_work(soil):
    folder, _ = soil
    assert run(folder, "WITH x AS (SELECT 1 AS a) SELECT * FROM (SELECT a FROM x) y").rows == [[1]]
    assert run(folder, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
                       "SELECT count(*) AS c FROM r").rows == [[3]]
    assert run(folder, "WITH a AS (SELECT 2 AS v), b AS (SELECT v FROM a) SELECT v FROM b").rows == [[2]]
    assert run(folder, "WITH ST_30_minute AS (SELECT count(*) AS n FROM ST_30_minute) SELECT n FROM "
                       "ST_30_minute").rows == [[5856]]
    assert run(folder, "SHOW TABLES").total == 7  # readme too (tables.side)
    # a CTE of one subquery is no name outside it
    err = refused(folder, "SELECT * FROM x, (WITH x AS (SELECT 1) SELECT 1) y")
    assert err.code == "not_found" and "'x'" in err.message


@pytest.mark.parametrize("sql", [
    "SELECT " + "+".join(["1"] * 900) + " AS n",
    "SELECT " + "(SELECT " * 400 + "1" + ")" * 400 + " AS n",
    "SELECT * FROM " + "(SELECT * FROM " * 200 + "range(3)" + ") t" * 200,
    "SELECT " + "abs(" * 400 + "1" + ")" * 400 + " AS n",
], ids=["900 terms", "400 nested subqueries", "200 nested FROM subqueries", "400 nested calls"])
def test_nesting_past_the_bound_is_invalid_argument_naming_it(soil, sql):
    folder, _ = soil
    err = refused(folder, sql)
    assert err.code == "invalid_argument" and err.details["reason"] == "depth"
    assert "tables.query_max_depth (100)" in err.message and err.details["maxDepth"] == 100


def test_nesting_within_the_bound_runs(soil):
    folder, _ = soil
    assert run(folder, "SELECT " + "+".join(["1"] * 40) + " AS n").rows == [[40]]
    assert run(folder, "SELECT " + "(SELECT " * 10 + "1" + ")" * 10 + " AS n").rows == [[1]]


def test_an_engine_message_never_carries_a_path():
    err = query._engine_message(RuntimeError('IO Error: cannot read "/srv/eco/store/x/ST.parquet": gone'),
                                Path("/elsewhere"))
    assert "/srv" not in err and "<path>" in err
    assert query._engine_message(RuntimeError("Binder Error: a / b and 1/2"), Path("/x")).endswith("a / b and 1/2")
    advice = query._engine_message(RuntimeError('Error: too deep. Use "SET max_expression_depth TO x" to raise it.\n\n'
                                                "Possible solutions:\n* (SET memory_limit='...GB')"), Path("/x"))
    assert advice == "Error: too deep." and "memory_limit" not in advice
