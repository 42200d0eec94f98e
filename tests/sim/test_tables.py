"""The simulator's data tables against its own variables files: every data file's header is its
table's fieldNames for its package, every value parses as the field's dataType (and pubFormat),
sensor products name every position in sensor_positions, and the files a stacker de-duplicates
(site-all, lab, variables) repeat with the same bytes where NEON repeats them."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from datetime import datetime

import pytest

from upstream_sim.state import files_for

SOIL, WIND, SAAT, TAAT = "DP1.00041.001", "DP1.00001.001", "DP1.00002.001", "DP1.00003.001"
LITTER, BIRDS, CN_LAB_ONLY, WATER = "DP1.10033.001", "DP1.10003.001", "DP1.10100.001", "DP1.20288.001"
RELEASE = "RELEASE-2026"

TIME_FORMATS = {"yyyy-MM-dd'T'HH:mm:ss'Z'(floor)": "%Y-%m-%dT%H:%M:%SZ", "yyyy-MM-dd'T'HH:mm'Z'(floor)": "%Y-%m-%dT%H:%MZ",
                "yyyy-MM-dd": "%Y-%m-%d"}
# NEON's file-name grammar, written out here on its own (not read from the simulator)
SENSOR = re.compile(r"^NEON\.D\d\d\.[A-Z]{4}\.DP\d\.\d{5}\.\d{3}\.(?P<hor>\d{3})\.(?P<ver>\d{3})\.(?P<tmi>\d{3})\."
                    r"(?P<table>\w+)\.\d{4}-\d{2}\.(?P<pkg>basic|expanded)\.\d{8}T\d{6}Z\.csv$")
SITE_DATE = re.compile(r"^NEON\.D\d\d\.[A-Z]{4}\.DP\d\.\d{5}\.\d{3}\.(?P<table>\w+)\.\d{4}-\d{2}\."
                       r"(?P<pkg>basic|expanded)\.\d{8}T\d{6}Z\.csv$")
SITE_ALL = re.compile(r"^NEON\.D\d\d\.[A-Z]{4}\.DP\d\.\d{5}\.\d{3}\.(?P<table>\w+)\.(?P<pkg>basic|expanded)\."
                      r"\d{8}T\d{6}Z\.csv$")
LAB = re.compile(r"^NEON\.(?P<lab>[A-Za-z_]+)\.(?P<table>\w+)\.\d{8}T\d{6}Z\.csv$")
META = re.compile(r"^NEON\.D\d\d\.[A-Z]{4}\.DP[01]\.\d{5}\.\d{3}\.(?P<kind>variables|sensor_positions|"
                  r"science_review_flags|validation|categoricalCodes)\.\d{8}T\d{6}Z\.csv$")


@pytest.fixture(scope="module")
def files():
    return files_for(1)


def month_of(files, code: str, site: str, after: str = "2023-01") -> str:
    return next(m for m in files.world.availability(code)[site] if after <= m <= "2025-06")


def package(files, code: str, site: str, ym: str, pkg: str, release: str = RELEASE) -> dict[str, bytes]:
    return {s.name: files.content(s) for s in files.package_files(code, site, ym, pkg, release)}


def read_csv(body: bytes) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(body.decode())))
    return rows[0], rows[1:]


def sampled_csv(body: bytes, keep: int = 400) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and (index, row) of every row of a small file; of a big sensor file (no quoted commas
    in its values) every row's field count is checked and an even sample plus every row with an
    empty value is parsed."""
    if len(body) < 1_000_000:
        header, rows = read_csv(body)
        return header, list(enumerate(rows))
    lines = body.decode().splitlines()
    header = next(csv.reader([lines[0]]))
    data = lines[1:]
    assert all(line.count(",") == len(header) - 1 for line in data)
    step = max(1, len(data) // keep)
    picked = [i for i, line in enumerate(data) if i % step == 0 or ",," in line or line.endswith(",")]
    return header, [(i, next(csv.reader([data[i]]))) for i in picked]


def variables(pkg_files: dict[str, bytes]) -> list[dict]:
    [body] = [b for n, b in pkg_files.items() if ".variables." in n]
    return list(csv.DictReader(io.StringIO(body.decode())))


def table_of(name: str) -> tuple[str, str] | None:
    """(table, package) of a data file name; lab files belong to both packages."""
    for pattern in (SENSOR, SITE_DATE, SITE_ALL):
        m = pattern.match(name)
        if m:
            return m["table"], m["pkg"]
    m = LAB.match(name)
    return (m["table"], "") if m and not META.match(name) else None


def check_value(field: dict, value: str) -> None:
    """Raise unless the text is a value of the field's dataType written in its pubFormat."""
    if value == "":
        return
    kind, fmt = field["dataType"], field["pubFormat"]
    if kind == "real":
        float(value)
        m = re.match(r"^\*\.(#+)\(round\)$", fmt)
        if m:
            assert len(value.split(".")[1]) == len(m.group(1)), (field["fieldName"], value, fmt)
    elif kind == "integer":
        int(value)
    elif kind == "dateTime":
        datetime.strptime(value, TIME_FORMATS[fmt])
    else:
        assert kind in ("string", "uri"), kind


CASES = [(SOIL, "HARV"), (WIND, "KONZ"), (SAAT, "CPER"), (TAAT, "HARV"), (LITTER, "HARV"), (BIRDS, "BART"),
         (CN_LAB_ONLY, "ABBY"), (WATER, "ARIK")]


@pytest.mark.parametrize(("code", "site"), CASES)
def test_every_data_file_has_its_tables_variables_columns_and_values_of_their_types(files, code, site):
    ym = month_of(files, code, site)
    for pkg in ("basic", "expanded"):
        got = package(files, code, site, ym, pkg)
        fields: dict[str, list[dict]] = {}
        for v in variables(got):
            fields.setdefault(v["table"], []).append(v)
        data = {n: table_of(n) for n in got if table_of(n)}
        assert data, f"{code} {site} {ym} {pkg}: no data files"
        for name, (table, file_pkg) in data.items():
            assert file_pkg in ("", pkg), name
            want = [f for f in fields[table] if pkg == "expanded" or f["downloadPkg"] == "basic"]
            header, rows = sampled_csv(got[name])
            assert header == [f["fieldName"] for f in want], name
            assert rows, name
            for i, row in rows:
                assert len(row) == len(header), (name, i)
                for f, value in zip(want, row, strict=True):
                    try:
                        check_value(f, value)
                    except ValueError as exc:
                        raise AssertionError(f"{name} row {i} {f['fieldName']}={value!r}") from exc
        for table in fields:  # every unit is a NEON unit name or NA, every dataType one NEON uses
            assert all(f["units"] and " " not in f["units"] for f in fields[table]), table
            assert {f["dataType"] for f in fields[table]} <= {"string", "real", "integer", "dateTime", "uri"}


def test_sensor_files_are_one_per_position_and_interval_with_a_month_of_intervals(files):
    ym = "2023-02"
    got = package(files, SOIL, "HARV", ym, "basic")
    names = [n for n in got if SENSOR.match(n)]
    positions = {(SENSOR.match(n)["hor"], SENSOR.match(n)["ver"]) for n in names}
    assert len({h for h, _ in positions}) == 1 and {v for _, v in positions} == {"501", "502"}  # two depths
    assert {SENSOR.match(n)["tmi"] for n in names} == {"001", "030"} and len(names) == 2 * len(positions)
    # air temperature: single-aspirated on every tower level but the top, triple-aspirated on the top
    levels = files.world.sites["HARV"]["_levels"]
    saat = {(m["hor"], m["ver"]) for m in map(SENSOR.match, package(files, SAAT, "HARV", ym, "basic")) if m}
    assert saat == {("000", f"0{lv}0") for lv in range(1, levels)} and len(saat) >= 3
    assert files.positions(TAAT, "HARV") == [("000", f"0{levels}0")]
    for n in names:
        _, rows = read_csv(got[n])
        minutes = int(SENSOR.match(n)["tmi"])
        assert len(rows) == 28 * 1440 // minutes, n
        assert rows[0][0] == "2023-02-01T00:00:00Z" and rows[-1][1] == "2023-03-01T00:00:00Z"
        assert all(rows[i][1] == rows[i + 1][0] for i in range(0, len(rows) - 1, 97))


def test_values_are_plausible_for_their_quantity(files):
    half_hours = [s for s in files.package_files(SOIL, "OSBS", "2023-07", "basic", RELEASE) if ".ST_30_minute." in s.name]
    assert len(half_hours) == 2
    for spec in half_hours:
        name = spec.name
        _, rows = read_csv(files.content(spec))
        vals = [(float(r[2]), float(r[3]), float(r[4])) for r in rows if r[2]]
        assert vals and all(-40 < lo <= mean <= hi < 60 for mean, lo, hi in vals), name
        assert 15 < sum(m for m, _, _ in vals) / len(vals) < 40, name  # Florida soil in July
        assert all(int(r[6]) in (0, 180) for r in rows)  # NumPts: 0 in an outage, else 30 min at 0.1 Hz
    wind = package(files, WIND, "KONZ", month_of(files, WIND, "KONZ"), "basic")
    for name in (n for n in wind if ".2DWSD_2min." in n):
        header, rows = read_csv(wind[name])
        speed, low, high = (header.index(f"windSpeed{s}") for s in ("Mean", "Minimum", "Maximum"))
        assert all(0 <= float(r[low]) <= float(r[speed]) <= float(r[high]) < 40 for r in rows if r[speed])
    litter = package(files, LITTER, "HARV", "2023-07", "basic")
    site = files.world.sites["HARV"]
    for name, body in litter.items():
        if ".ltr_massdata." in name:
            header, rows = read_csv(body)
            assert all(0 <= float(r[header.index("dryMass")]) <= 40 for r in rows)
        if ".ltr_pertrap." in name:
            header, rows = read_csv(body)
            lat, lon = header.index("decimalLatitude"), header.index("decimalLongitude")
            assert all(abs(float(r[lat]) - site["siteLatitude"]) < 0.05 and
                       abs(float(r[lon]) - site["siteLongitude"]) < 0.05 for r in rows)


def test_sensor_positions_name_every_position_and_a_moved_sensor_twice(files):
    got = package(files, SOIL, "HARV", "2023-02", "basic")
    in_names = {f"{m['hor']}.{m['ver']}" for m in map(SENSOR.match, got) if m}
    [body] = [b for n, b in got.items() if ".sensor_positions." in n]
    header, rows = read_csv(body)
    spec = [v["fieldName"] for v in variables(got) if v["table"] == "sensor_positions"]
    assert header == spec
    assert header[:5] == ["HOR.VER", "sensorLocationID", "sensorLocationDescription", "positionStartDateTime",
                          "positionEndDateTime"]
    assert {"referenceLocationID", "xOffset", "yOffset", "zOffset"} <= set(header)
    col = {h: i for i, h in enumerate(header)}
    assert {r[0] for r in rows} == in_names
    twice = [hv for hv in in_names if sum(r[0] == hv for r in rows) == 2]
    assert len(twice) == 1 and len(rows) == len(in_names) + 1
    before, after = (r for r in rows if r[0] == twice[0])
    assert before[col["positionEndDateTime"]] == after[col["positionStartDateTime"]] != ""
    assert after[col["positionEndDateTime"]] == "" and before[col["zOffset"]] != after[col["zOffset"]]
    assert all(float(r[col["zOffset"]]) < 0 for r in rows)  # soil sensors sit below the soil array's surface
    assert all(r[col["referenceLocationID"]].startswith("SOILAR") for r in rows)


def test_a_release_publishes_one_variables_file_whose_bytes_repeat_in_every_site_month(files):
    seen = set()
    for site in ("HARV", "BART"):
        for ym in files.world.months_in_release(files.world.availability(SOIL)[site], RELEASE)[-3:]:
            names = [s for s in files.package_files(SOIL, site, ym, "basic", RELEASE) if ".variables." in s.name]
            assert len(names) == 1 and names[0].name.startswith(f"NEON.D01.{site}.{SOIL}.variables.")
            seen.add(hashlib.md5(files.content(names[0])).hexdigest())
    prov = [m for m in files.world.availability(SOIL)["HARV"] if m > "2025-06"][:2]
    for ym in prov:
        [spec] = [s for s in files.package_files(SOIL, "HARV", ym, "basic", "PROVISIONAL") if ".variables." in s.name]
        seen.add(hashlib.md5(files.content(spec)).hexdigest())
    assert len(seen) == 1


def test_site_all_files_repeat_per_site_and_lab_files_across_sites(files):
    months = [m for m in files.world.availability(LITTER)["HARV"] if "2023-01" <= m <= "2024-12"]
    site_all: dict[str, set] = {}
    lab: dict[str, set] = {}
    for site in ("HARV", "KONZ"):
        for ym in (m for m in files.world.availability(LITTER)[site] if m in months):
            for name, body in package(files, LITTER, site, ym, "basic").items():
                if SITE_ALL.match(name) and not META.match(name):
                    site_all.setdefault(name, set()).add(hashlib.md5(body).hexdigest())
                elif LAB.match(name) and not META.match(name):
                    lab.setdefault(name, set()).add(hashlib.md5(body).hexdigest())
    assert {n.split(".")[6] for n in site_all} == {"ltr_pertrap", "ltr_vegetationCover"}
    assert len(site_all) == 4 and all(len(v) == 1 for v in site_all.values())  # one per site and table
    assert sorted(n.split(".")[2] for n in lab) == ["bgc_CNiso_externalSummary", "lig_externalSummary"]
    assert all(len(v) == 1 for v in lab.values())


def test_expanded_files_hold_the_basic_columns_with_the_same_values(files):
    for code, site in ((SOIL, "HARV"), (LITTER, "KONZ"), (WIND, "KONZ")):
        ym = month_of(files, code, site)
        basic, expanded = package(files, code, site, ym, "basic"), package(files, code, site, ym, "expanded")
        pairs = [(n, n.replace(".basic.", ".expanded.")) for n in basic if ".basic." in n and len(basic[n]) < 1e6]
        assert pairs and all(e in expanded for _, e in pairs)
        assert any(read_csv(basic[b])[0] != read_csv(expanded[e])[0] for b, e in pairs)
        for b, e in pairs:
            bh, brows = read_csv(basic[b])
            eh, erows = read_csv(expanded[e])
            assert set(bh) <= set(eh) and len(brows) == len(erows), b
            idx = [eh.index(h) for h in bh]
            assert all([er[i] for i in idx] == br for br, er in zip(brows[::50], erows[::50], strict=True)), b


def test_chemistry_tables_are_published_only_in_some_months(files):
    present = []
    for ym in files.world.availability(LITTER)["HARV"][:12]:
        names = [s.name for s in files.package_files(LITTER, "HARV", ym, "basic", files.world.release_of_month(ym))]
        present.append(any(".ltr_litterLignin." in n for n in names))
        assert any(".ltr_massdata." in n for n in names)
    assert any(present) and not all(present)


def test_a_republished_csv_keeps_its_header_and_types_with_other_values(files):
    for kind in (".ltr_massdata.", ".variables.", ".sensor_positions."):
        code = SOIL if kind == ".sensor_positions." else LITTER
        spec = next(s for s in files.package_files(code, "HARV", month_of(files, code, "HARV"), "basic", RELEASE)
                    if kind in s.name)
        before = files.content(spec)
        try:
            files.change(spec.name)
            after = files.content(spec)
            assert after != before
            assert read_csv(after)[0] == read_csv(before)[0] and read_csv(after)[1]
        finally:
            files.revisions.pop(spec.name, None)
            files._meta.pop(spec.name, None)
            files.bytes_cache.drop(spec.name)
        assert files.content(spec) == before


def test_package_zips_are_named_for_their_release_or_provisional(files):
    ym = month_of(files, LITTER, "HARV")
    assert files.package_name(LITTER, "HARV", ym, "basic", RELEASE).endswith(f".basic.20260123T000749Z.{RELEASE}.zip")
    prov = next(m for m in files.world.availability(LITTER)["HARV"] if m > "2025-06")
    name = files.package_name(LITTER, "HARV", prov, "basic", "PROVISIONAL")
    assert re.match(rf"^NEON\.D01\.HARV\.{LITTER}\.{prov}\.basic\.\d{{8}}T\d{{6}}Z\.PROVISIONAL\.zip$", name)


def test_science_review_flags_have_ids_unique_across_sites(files):
    ids = []
    for site in files.world.availability(SOIL):
        ids += [f.srf_id for f in files.srf_flags(SOIL, site)]
    assert ids and len(ids) == len(set(ids))
    flagged = next(s for s in files.world.availability(SOIL) if files.srf_flags(SOIL, s))
    ym = month_of(files, SOIL, flagged, after="2024-01")
    got = package(files, SOIL, flagged, ym, "basic")
    [body] = [b for n, b in got.items() if ".science_review_flags." in n]
    header, rows = read_csv(body)
    spec = {v["fieldName"]: v for v in variables(got) if v["table"] == "science_review_flags"}
    assert header == list(spec) and rows
    for row in rows:  # no numeric or time field is ever empty (neonutilities' de-duplication needs them)
        for h, value in zip(header, row, strict=True):
            check_value(spec[h], value)
            assert value or spec[h]["dataType"] == "string", h
