"""The unit of each result column derived from the parsed query (tables.units), over many shapes:
the parse is DuckDB's own (json_serialize_sql), the derivation a pure function of it."""

from __future__ import annotations

import json

import duckdb
import pytest

from tables import units

ST = units.Source({"siteID": None, "startDateTime": None, "soilTempMean": "celsius", "soilTempMinimum": "celsius",
                   "soilTempVariance": "celsiusSquared", "soilTempNumPts": "number", "zOffset": "meter",
                   "finalQF": None}, frozenset({"startDateTime"}))
WIND = units.Source({"siteID": None, "startDateTime": None, "windSpeedMean": "metersPerSecond"},
                    frozenset({"startDateTime"}))
RELATIONS = {"st_30_minute": ST, "wind": WIND}


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    yield c
    c.close()


def derive(con, sql: str) -> list[units.Derived]:
    tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    node = tree["statements"][0]["node"]
    derivation = units.derive(node, RELATIONS)
    assert derivation.ordered is not None, sql
    return [d for _, d in derivation.ordered]


@pytest.mark.parametrize("sql, unit", [
    ("SELECT soilTempMean FROM ST_30_minute", "celsius"),
    ("SELECT soilTempMean AS t FROM ST_30_minute", "celsius"),
    ("SELECT s.soilTempMean FROM ST_30_minute s", "celsius"),
    *[(f"SELECT {fn}(soilTempMean) FROM ST_30_minute", "celsius")
      for fn in ("min", "max", "avg", "sum", "median", "stddev", "first", "last", "any_value", "mean")],
    ("SELECT quantile(soilTempMean, 0.9) FROM ST_30_minute", "celsius"),
    ("SELECT quantile_cont(soilTempMean, 0.5) AS q FROM ST_30_minute", "celsius"),
    ("SELECT avg(soilTempMean) FILTER (WHERE finalQF = 0) FROM ST_30_minute", "celsius"),
    ("SELECT avg(soilTempMean) OVER (PARTITION BY siteID) FROM ST_30_minute", "celsius"),
    ("SELECT round(avg(soilTempMean), 2) FROM ST_30_minute", "celsius"),
    ("SELECT CAST(soilTempMean AS DECIMAL(6,2)) FROM ST_30_minute", "celsius"),
    ("SELECT soilTempMean - soilTempMinimum AS spread FROM ST_30_minute", "celsius"),
    ("SELECT soilTempMean + soilTempMinimum FROM ST_30_minute", "celsius"),
    ("SELECT -soilTempMean FROM ST_30_minute", "celsius"),
    ("SELECT max(soilTempMean) - min(soilTempMean) FROM ST_30_minute", "celsius"),
    ("SELECT count(*) FROM ST_30_minute", "number"),
    ("SELECT count(DISTINCT siteID) AS n FROM ST_30_minute", "number"),
    ("SELECT count(soilTempMean) FILTER (WHERE finalQF <> 0) FROM ST_30_minute", "number"),
    ("SELECT sum(soilTempNumPts) FROM ST_30_minute", "number"),
])
def test_a_column_and_what_keeps_its_unit_keep_it(con, sql, unit):
    (got,) = derive(con, sql)
    assert got.unit == unit and got.reason is None, got


@pytest.mark.parametrize("sql, why", [
    ("SELECT soilTempMean * 1.8 + 32 AS f FROM ST_30_minute", "term of no unit"),
    ("SELECT soilTempMean * zOffset FROM ST_30_minute", "product or ratio"),
    ("SELECT soilTempMean / zOffset FROM ST_30_minute", "product or ratio"),
    ("SELECT soilTempMean + zOffset FROM ST_30_minute", "mixed units"),
    ("SELECT soilTempMean - 273.15 FROM ST_30_minute", "term of no unit"),
    ("SELECT variance(soilTempMean) FROM ST_30_minute", "square of the unit (celsius squared)"),
    ("SELECT 1.5 AS c FROM ST_30_minute", "a constant"),
    ("SELECT CASE WHEN finalQF = 0 THEN soilTempMean END FROM ST_30_minute", "CASE"),
    ("SELECT soilTempMean > 10 FROM ST_30_minute", "condition"),
    ("SELECT CAST(soilTempMean AS VARCHAR) FROM ST_30_minute", "cast to varchar"),
    ("SELECT exp(soilTempMean) FROM ST_30_minute", "exp(): no rule"),
    ("SELECT siteID FROM ST_30_minute", "siteID has no unit in NEON's variables file"),
    ("SELECT (SELECT max(soilTempMean) FROM ST_30_minute) AS m", "subquery"),
    ("SELECT coalesce(soilTempMean, zOffset) FROM ST_30_minute", "different units"),
    ("SELECT nosuch FROM ST_30_minute", "not a column"),
    ("SELECT w.soilTempMean FROM ST_30_minute s, wind w", "not a column"),
])
def test_anything_else_has_no_unit_and_says_why(con, sql, why):
    (got,) = derive(con, sql)
    assert got.unit is None and got.reason and why in got.reason, got


def test_date_trunc_and_friends_keep_a_time_a_time(con):
    cols = derive(con, "SELECT startDateTime, date_trunc('month', startDateTime) AS m, time_bucket(INTERVAL '1 day', "
                       "startDateTime), min(startDateTime), CAST(startDateTime AS DATE), "
                       "sum(startDateTime), startDateTime - startDateTime FROM ST_30_minute")
    assert [c.time for c in cols] == [True, True, True, True, True, False, False]
    assert all(c.reason == units.TIME_REASON for c in cols[:5])
    assert "of a time" in cols[5].reason and "interval" in cols[6].reason


def test_stars_subqueries_ctes_joins_and_set_operations_are_followed(con):
    star = derive(con, "SELECT * EXCLUDE (finalQF) FROM ST_30_minute")
    assert [c.unit for c in star] == [None, None, "celsius", "celsius", "celsiusSquared", "number", "meter"]
    sub = derive(con, "SELECT avg(t) AS mean FROM (SELECT soilTempMean AS t FROM ST_30_minute WHERE finalQF = 0) q")
    assert sub[0].unit == "celsius"
    cte = derive(con, "WITH m AS (SELECT siteID, avg(soilTempMean) AS v FROM ST_30_minute GROUP BY ALL) "
                      "SELECT siteID, max(v) FROM m GROUP BY ALL")
    assert [c.unit for c in cte] == [None, "celsius"]
    join = derive(con, "SELECT s.soilTempMean, w.windSpeedMean, startDateTime FROM ST_30_minute s JOIN wind w "
                       "USING (siteID, startDateTime)")
    assert [c.unit for c in join] == ["celsius", "metersPerSecond", None] and join[2].time
    same = derive(con, "SELECT soilTempMean FROM ST_30_minute UNION ALL SELECT soilTempMinimum FROM ST_30_minute")
    assert same[0].unit == "celsius"
    mixed = derive(con, "SELECT soilTempMean FROM ST_30_minute UNION ALL SELECT windSpeedMean FROM wind")
    assert mixed[0].unit is None and "different units" in mixed[0].reason


def test_unknown_shapes_fall_back_to_names_and_say_so(con):
    tree = json.loads(con.execute("SELECT json_serialize_sql(?)", ["SELECT * FROM range(3)"]).fetchone()[0])
    derivation = units.derive(tree["statements"][0]["node"], RELATIONS)
    assert derivation.ordered is None
    (got,) = derivation.for_columns(["range"])
    assert got.unit is None and got.reason == "not derived from the query"
    tree = json.loads(con.execute("SELECT json_serialize_sql(?)",
                                  ["SELECT COLUMNS('soil.*') FROM ST_30_minute"]).fetchone()[0])
    assert units.derive(tree["statements"][0]["node"], RELATIONS).for_columns(["soilTempMean"])[0].unit is None
