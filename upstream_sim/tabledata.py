"""Values for the simulated data tables, written as NEON writes its CSVs.

Every writer takes a `random.Random` private to one file, so a file's bytes are a pure function
of (seed, file name). Strings and times are quoted, numbers bare and a missing value is empty,
as in NEON's files. Basic and expanded files of one table share a stream for the columns they
share, so the expanded file holds the basic one's values plus its own columns.
"""

from __future__ import annotations

import calendar
import itertools
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .tables import DATE, FUNCTIONAL_GROUPS, INSTRUMENTS, SRF_FIELDS, TS_MIN, TS_SEC, SensorSpec, SensorVar, Table

FMT = {TS_SEC: "%Y-%m-%dT%H:%M:%SZ", TS_MIN: "%Y-%m-%dT%H:%MZ", DATE: "%Y-%m-%d"}


@dataclass(frozen=True)
class Site:
    code: str
    domain: str
    name: str
    lat: float
    lon: float
    elevation: float


def q(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def header(table: Table, package: str) -> str:
    return ",".join(q(f.name) for f in table.columns(package))


def month_start(ym: str) -> datetime:
    return datetime(int(ym[:4]), int(ym[5:7]), 1, tzinfo=UTC)


def days_in(ym: str) -> int:
    return calendar.monthrange(int(ym[:4]), int(ym[5:7]))[1]


def gentime_dt(gt: str) -> datetime:
    return datetime.strptime(gt, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


# ------------------------------------------------------------------------------- sensor data
def _coarse(tmi: int) -> int:
    """Every how many intervals the smooth part of a series is computed (every 30 minutes at most)."""
    return max(1, 30 // tmi) if 0 < tmi < 30 else 1


_STAMPS: dict[tuple[str, int], tuple[list[str], list[float], list[int]]] = {}


def _stamps(ym: str, tmi: int) -> tuple[list[str], list[float], list[int]]:
    """Per interval of the month: the quoted `"start","end"` pair, the season (-1 in late January,
    +1 in late July) and the minute of the UTC day. Shared by every file of that month."""
    key = (ym, tmi)
    got = _STAMPS.get(key)
    if got is None:
        step = {24: 1440, 12: 43200, 365: 43200, 100: 15}.get(tmi, tmi)
        t0 = month_start(ym)
        total = days_in(ym) * 1440
        doy0 = t0.timetuple().tm_yday
        if step < 1440:  # every day has the same times of day
            days = [f'"{ym}-{d:02d}T' for d in range(1, days_in(ym) + 1)]
            times = [f"{t // 60:02d}:{t % 60:02d}:00Z\"" for t in range(0, 1440, step)]
            marks = [d + t for d in days for t in times]
        elif step < total:  # daily
            marks = [(t0 + timedelta(minutes=t)).strftime('"%Y-%m-%dT%H:%M:%SZ"') for t in range(0, total, step)]
        else:  # monthly and yearly tables: one interval per month's file
            marks, step = [t0.strftime('"%Y-%m-%dT%H:%M:%SZ"')], total
        # the end of the month's last interval is the next month's first instant
        marks.append((t0 + timedelta(minutes=len(marks) * step)).strftime('"%Y-%m-%dT%H:%M:%SZ"'))
        pairs = [f"{a},{b}" for a, b in itertools.pairwise(marks)]
        # season and minute of day only where _var_values samples them (every 30 minutes at most)
        coarse = _coarse(tmi)
        season = [-math.cos(2 * math.pi * (doy0 + t / 1440 - 20) / 365.25) if i % coarse == 0 else 0.0
                  for i, t in enumerate(range(0, len(pairs) * step, step))]
        minute = [t % 1440 for t in range(0, len(pairs) * step, step)]
        got = (pairs, season, minute)
        if len(_STAMPS) > 48:
            _STAMPS.clear()
        _STAMPS[key] = got
    return got


SOIL_DEPTH = {501: 0.02, 502: 0.06, 503: 0.16, 504: 0.26, 505: 0.56, 506: 0.96, 507: 1.36, 508: 1.76, 509: 2.06}


def soil_depth(ver: str) -> float:
    return SOIL_DEPTH.get(int(ver), 0.1) if ver.isdigit() else 0.1


def mean_temperature(site: Site) -> float:
    """Annual mean air temperature: warm at low latitude, colder with latitude and altitude."""
    return 27.0 - 0.75 * (abs(site.lat) - 18.0) - 0.004 * site.elevation


# A 1-minute file has ~44,000 rows and a site-month lists a dozen of them, so rows are built from
# shared tables instead of per-value float formatting: values in hundredths index pre-formatted
# strings, and noise comes from fixed pools read at a per-file offset.
_H_LO, _H_HI = -10_000, 40_000
_POOL_N = 1 << 16
_pools: dict[str, list] = {}


def _pool(name: str) -> list:
    got = _pools.get(name)
    if got is None:
        r = random.Random(f"{name}-pool")
        if name == "H":  # "-100.00" .. "400.00"
            got = [f"{k / 100:.2f}" for k in range(_H_LO, _H_HI + 1)]
        elif name == "noise":  # a smooth AR(1) series in hundredths, spread about +-1
            e, got = 0.0, []
            for _ in range(_POOL_N):
                e = 0.97 * e + (r.random() - 0.5) * 0.5
                got.append(round(100 * e))
        elif name.startswith("offset"):  # min/max distances from the mean: 0..15 steps of `offsetN`
            step = int(name[6:])
            got = [r.getrandbits(4) * step for _ in range(_POOL_N)]
        else:  # levels 0..63
            got = [r.getrandbits(6) for _ in range(_POOL_N)]
        _pools[name] = got
    return got


def _window(name: str, r: random.Random, n: int) -> list:
    pool = _pool(name)
    start = r.randrange(_POOL_N)
    out = pool[start:start + n]
    while len(out) < n:
        out += pool[: n - len(out)]
    return out


def _var_values(r: random.Random, v: SensorVar, site: Site, layout: str, ver: str, tmi: int, n: int,
                season: list[float], minute: list[int], gaps: list[bool], npts: int) -> list[str]:
    """One variable's statistics per interval, already joined: Mean[,Min,Max],Variance,NumPts,ExpUncert,StdErMean.

    The smooth part (season and day) is computed every 30 minutes at most, the rest is integer
    arithmetic on pooled noise: the values stay plausible and a month of 1-minute rows stays cheap."""
    H, lo = _pool("H"), -_H_LO
    coarse = _coarse(tmi)
    shift = site.lon / 15.0  # local solar hour = UTC hour + lon/15

    def smooth(f) -> list[int]:
        pts = [f(season[i], math.cos(2 * math.pi * ((minute[i] / 60.0 + shift) - 15.0) / 24.0))
               for i in range(0, n, coarse)]
        return [pts[i // coarse] for i in range(n)] if coarse > 1 else pts

    noise = _window("noise", r, n)
    if v.kind == "temp":
        depth = soil_depth(ver) if layout == "soil" else 0.0
        base = mean_temperature(site) + (1.0 if layout == "soil" else 0.0)
        amp_s = (3.0 + 0.35 * abs(abs(site.lat) - 10.0)) * math.exp(-depth / 1.7)
        amp_d = (5.0 if layout != "soil" else 4.0) * math.exp(-depth / 0.08)
        scale = max(1, round(64 * (0.6 * math.exp(-depth / 0.3) + 0.04)))  # noise amplitude in 64ths
        spread = (0.05 if layout == "soil" else 0.2) * max(1.0, math.sqrt(tmi))
        exp_unc = 0.15 + 0.1 * r.random()
        s = smooth(lambda se, di: lo + round(100 * (base + amp_s * se + amp_d * di)))
        xs = [a + ((z * scale) >> 6) for a, z in zip(s, noise, strict=True)]
    elif v.kind == "speed":
        base = 1.5 + 2.5 * r.random()
        spread, exp_unc = 0.6 * base, 0.3
        s = smooth(lambda se, di: lo + round(100 * base * (1.0 + 0.4 * di)))
        scale = max(1, round(32 * base))
        xs = [max(lo + 5, a + ((z * scale) >> 6)) for a, z in zip(s, noise, strict=True)]
    elif v.kind == "direction":
        d0 = round(36000 * r.random())
        spread, exp_unc = 0.0, 5.0
        xs = [lo + (d0 + z * 40) % 36000 for z in noise]
    else:
        base = 20.0 * r.random()
        spread, exp_unc = 1.0, 0.5
        xs = [lo + round(100 * base) + (z >> 1) for z in noise]
    # variance, NumPts, uncertainty and standard error in 64 steps of the interval's spread
    tails = []
    for j in range(64):
        var = (360.0 * (0.1 + j / 64)) if v.kind == "direction" else (spread * (0.3 + j / 64) / 3.0) ** 2
        tails.append(f"{var:.4f},{npts},{exp_unc:.2f},{math.sqrt(var / npts):.4f}")
    ks = _window("level", r, n)
    if v.has_minmax:
        step = max(1, round(100 * spread / 16))
        below, above = _window(f"offset{step}", r, n), _window(f"offset{step}", r, n)
        if v.kind == "speed":  # a speed's minimum is never below zero
            below = [min(a, x - lo) for x, a in zip(xs, below, strict=True)]
        out = [f"{H[x]},{H[x - a]},{H[x + b]},{tails[k]}" for x, a, b, k in zip(xs, below, above, ks, strict=True)]
        empty = ",,,,0,,"
    else:
        out = [f"{H[x]},{tails[k]}" for x, k in zip(xs, ks, strict=True)]
        empty = ",,0,,"
    if any(gaps):
        for i, g in enumerate(gaps):
            if g:
                out[i] = empty
    return out


# The expanded quality block: range and step pass-fail-NA, alpha, beta (then finalQF, finalQFSciRvw).
_QM_OK = "100.00,0.00,0.00,100.00,0.00,0.00,0.00,0.00"
_QM_FLAGGED = "80.00,20.00,0.00,100.00,0.00,0.00,20.00,0.00"
_QM_GAP = "0.00,0.00,100.00,0.00,0.00,100.00,0.00,100.00"


def sensor_csv(r: random.Random, spec: SensorSpec, table: Table, package: str, site: Site, ym: str,
               ver: str) -> bytes:
    tmi = table.tmi
    pairs, season, minute = _stamps(ym, tmi)
    n = len(pairs)
    step = max(1, {24: 1440, 12: 43200, 365: 43200, 100: 15}.get(tmi, tmi))
    gaps = [False] * n
    if r.random() < 0.4:  # a sensor outage of 20 minutes to 10 hours
        length = max(1, r.randint(20, 600) // step)
        start = r.randrange(n)
        for i in range(start, min(n, start + length)):
            gaps[i] = True
    flagged = list(gaps)
    for i in r.sample(range(n), n // 50):
        flagged[i] = True
    npts = max(1, round(spec.points_per_minute * step))
    blocks = [_var_values(r, v, site, spec.layout, ver, tmi, n, season, minute, gaps, npts) for v in spec.variables]
    if package == "expanded":
        qf = [(_QM_GAP if g else _QM_FLAGGED if f else _QM_OK) + (",1,0" if f else ",0,0")
              for g, f in zip(gaps, flagged, strict=True)]
    else:
        qf = ["1" if f else "0" for f in flagged]
    lines = [header(table, package)]
    if spec.qf_per_variable:
        lines += [p + "," + ",".join(b[i] + "," + qf[i] for b in blocks) for i, p in enumerate(pairs)]
    elif len(blocks) == 1:
        lines += [f"{p},{b},{f}" for p, b, f in zip(pairs, blocks[0], qf, strict=True)]
    else:
        lines += [p + "," + ",".join(b[i] for b in blocks) + "," + qf[i] for i, p in enumerate(pairs)]
    return ("\n".join(lines) + "\n").encode()


# ---------------------------------------------------------------------------- observational
def fmt_value(f, v) -> str:
    if v is None or v == "":
        return ""
    if f.dataType == "dateTime":
        return q(v.strftime(FMT.get(f.pubFormat, "%Y-%m-%dT%H:%M:%SZ")))
    if f.dataType == "real":
        digits = f.pubFormat.count("#") if f.pubFormat.startswith("*.") else 3
        return f"{v:.{digits}f}"
    if f.dataType in ("integer", "unsigned integer", "signed integer"):
        return str(int(v))
    return q(str(v))


def rows_csv(table: Table, package: str, rows: list[dict]) -> bytes:
    cols = table.columns(package)
    lines = [header(table, package)]
    for row in rows:
        lines.append(",".join(fmt_value(f, row.get(f.name)) for f in cols))
    return ("\n".join(lines) + "\n").encode()


def uid(r: random.Random) -> str:
    return (f"{r.getrandbits(32):08x}-{r.getrandbits(16):04x}-4{r.getrandbits(12):03x}-"
            f"{8 + r.getrandbits(2):x}{r.getrandbits(12):03x}-{r.getrandbits(48):012x}")


def person(r: random.Random) -> str:
    return "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(5)) + "@battelleecology.org"


def in_month(r: random.Random, ym: str, hour_from: int = 8, hour_to: int = 17) -> datetime:
    return month_start(ym) + timedelta(days=r.randrange(days_in(ym)), hours=r.randint(hour_from, hour_to),
                                       minutes=r.choice((0, 15, 30, 45)))


def _site_cols(site: Site, plot: str, module: str) -> dict:
    return {"namedLocation": f"{plot}.basePlot.{module}", "domainID": site.domain, "siteID": site.code,
            "plotID": plot}


TAXA = ("ACRU", "QURU", "PIST", "TSCA", "FAGR", "BEAL2", "PIPA2", "QUAL", "LITU", "ABBA")


def litter_traps(seed: int, site: Site) -> list[dict]:
    """The site's litter traps (same in every month): two per plot, one elevated and one on the ground."""
    r = random.Random(f"{seed}|ltr-traps|{site.code}")
    plots = sorted(r.sample(range(1, 60), r.randint(8, 10)))
    out = []
    for p in plots:
        plot = f"{site.code}_{p:03d}"
        for kind in ("Elevated", "Ground"):
            out.append({"plotID": plot, "trapID": f"{plot}_{r.randint(100, 399)}", "trapType": kind,
                        "plotType": "tower" if p % 3 == 0 else "distributed",
                        "uid": uid(r), "dlat": r.uniform(-0.01, 0.01), "dlon": r.uniform(-0.01, 0.01),
                        "established": datetime(r.randint(2015, 2018), r.randint(4, 10), r.randint(1, 28),
                                                r.randint(13, 20), r.choice((0, 30)), tzinfo=UTC)})
    return out


def litter_bouts(seed: int, site: Site, ym: str) -> list[dict]:
    """One month's collections: each trap once (elevated traps sometimes twice), a few not sampled."""
    r = random.Random(f"{seed}|ltr-bouts|{site.code}|{ym}")
    out = []
    for trap in litter_traps(seed, site):
        if trap["trapType"] == "Ground" and r.random() < 0.5:
            continue
        for _bout in range(1 + (trap["trapType"] == "Elevated" and r.random() < 0.3)):
            collect = in_month(r, ym)
            out.append({**trap, "uid": uid(r), "collectDate": collect,
                        "setDate": collect - timedelta(days=r.randint(13, 30), hours=r.randint(-2, 2)),
                        "ok": r.random() > 0.08, "tech": (person(r), person(r))})
    return sorted(out, key=lambda b: (b["collectDate"], b["trapID"]))


_MASS_RANGE = {"Leaves": 40.0, "Needles": 15.0, "Twigs/branches": 10.0, "Woody material": 5.0, "Seeds": 3.0,
               "Flowers": 1.0, "Other": 2.0, "Mixed": 0.5}
_FG_CODE = {"Leaves": "LV", "Needles": "ND", "Twigs/branches": "TB", "Woody material": "WM", "Seeds": "SD",
            "Flowers": "FL", "Other": "OT", "Mixed": "MX"}


def litter_rows(seed: int, r: random.Random, table: Table, site: Site, ym: str) -> list[dict]:
    name = table.name
    if name == "ltr_pertrap":
        rows = []
        for t in litter_traps(seed, site):
            rows.append({**_site_cols(site, t["plotID"], "ltr"), "uid": t["uid"], "trapID": t["trapID"],
                         "plotType": t["plotType"], "trapType": t["trapType"],
                         "trapSize": 0.5 if t["trapType"] == "Elevated" else 3.0,
                         "decimalLatitude": site.lat + t["dlat"], "decimalLongitude": site.lon + t["dlon"],
                         "geodeticDatum": "WGS84", "coordinateUncertainty": r.uniform(20, 45),
                         "elevation": site.elevation + r.uniform(-30, 30),
                         "elevationUncertainty": r.uniform(0.5, 5), "nlcdClass": "deciduousForest",
                         "date": t["established"], "remarks": "", "measuredBy": person(r), "recordedBy": person(r)})
        return rows
    if name == "ltr_vegetationCover":
        return [{**_site_cols(site, t["plotID"], "ltr"), "uid": uid(r), "trapID": t["trapID"],
                 "date": t["established"] + timedelta(days=r.randint(30, 400)),
                 "canopyCover": r.uniform(20, 98), "dominantTaxonID": r.choice(TAXA), "remarks": ""}
                for t in litter_traps(seed, site)]
    bouts = litter_bouts(seed, site, ym)
    if name == "ltr_fielddata":
        return [{**_site_cols(site, b["plotID"], "ltr"), "uid": b["uid"], "trapID": b["trapID"],
                 "plotType": b["plotType"], "setDate": b["setDate"], "collectDate": b["collectDate"],
                 "eventID": f"LTR.{site.code}.{ym[:4]}.{ym[5:7]}", "samplingImpractical": "OK" if b["ok"] else
                 r.choice(("Logistical", "Snow", "Other")),
                 "trapCondition": "OK - no problems" if r.random() > 0.1 else r.choice(("Trap damaged", "Trap full")),
                 "remarks": "" if r.random() > 0.1 else "Trap partly covered by a fallen branch",
                 "measuredBy": b["tech"][0], "recordedBy": b["tech"][1]} for b in bouts]
    samples = []
    for b in bouts:
        if not b["ok"]:
            continue
        groups = ["Leaves" if site.lat < 45 else "Needles", *r.sample(FUNCTIONAL_GROUPS[2:], r.randint(1, 4))]
        for g in groups:
            samples.append((b, g))
    if name == "ltr_massdata":
        rows = []
        for b, g in samples:
            oven = b["collectDate"] + timedelta(days=r.randint(1, 3), hours=r.randint(-3, 3))
            rows.append({**_site_cols(site, b["plotID"], "ltr"), "uid": uid(r), "trapID": b["trapID"],
                         "plotType": b["plotType"], "setDate": b["setDate"], "collectDate": b["collectDate"],
                         "ovenStartDate": oven, "ovenEndDate": oven + timedelta(hours=r.randint(48, 96)),
                         "weighDate": (oven + timedelta(days=r.randint(4, 12))),
                         "massSampleID": f"{b['trapID']}.{b['collectDate']:%Y%m%d}.{_FG_CODE[g]}",
                         "functionalGroup": g, "dryMass": r.uniform(0.0, _MASS_RANGE[g]) ** 1.0,
                         "qaDryMass": "Y" if r.random() < 0.05 else "N", "remarks": "",
                         "measuredBy": person(r), "recordedBy": person(r),
                         "dataQF": "legacyData" if r.random() < 0.02 else ""})
        return rows
    # chemistry: the leaf or needle samples of the month that went to the labs
    chem = [(b, g) for b, g in samples if g in ("Leaves", "Needles")][:8]
    rows = []
    for b, _g in chem:
        base = {**_site_cols(site, b["plotID"], "ltr"), "uid": uid(r), "collectDate": b["collectDate"],
                "cnSampleID": f"{b['plotID']}.{b['collectDate']:%Y%m%d}.CN",
                "ligninSampleID": f"{b['plotID']}.{b['collectDate']:%Y%m%d}.LIG",
                "remarks": "", "measuredBy": person(r), "recordedBy": person(r)}
        analysed = b["collectDate"] + timedelta(days=r.randint(60, 200))
        if name == "ltr_chemistrySubsampling":
            rows.append({**base, "processedDate": b["collectDate"] + timedelta(days=r.randint(10, 40)),
                         "subsampleMass": r.uniform(1.0, 5.0)})
        elif name == "ltr_litterCarbonNitrogen":
            n_pct, c_pct = r.uniform(0.6, 2.2), r.uniform(44.0, 52.0)
            rows.append({**base, "d15N": r.uniform(-6.0, 2.0), "d13C": r.uniform(-32.0, -26.0),
                         "nitrogenPercent": n_pct, "carbonPercent": c_pct, "CNratio": c_pct / n_pct,
                         "analysisDate": analysed, "laboratoryName": "University of Wyoming Stable Isotope Facility"})
        else:
            rows.append({**base, "ligninPercent": r.uniform(10.0, 35.0), "cellulosePercent": r.uniform(25.0, 45.0),
                         "dryMass": r.uniform(0.05, 0.5), "analysisDate": analysed,
                         "laboratoryName": "A and L Great Lakes Laboratories"})
    return rows


def generic_rows(r: random.Random, table: Table, site: Site, ym: str, site_all: bool) -> list[dict]:
    n = r.randint(20, 40) if site_all else r.randint(30, 60)
    module = table.name.split("_")[0][:3]
    rows = []
    for i in range(n):
        plot = f"{site.code}_{r.randint(1, 40):03d}"
        when = (datetime(r.randint(2015, 2020), r.randint(1, 12), r.randint(1, 28), r.randint(8, 17),
                         r.choice((0, 15, 30, 45)), tzinfo=UTC) if site_all else in_month(r, ym))
        rows.append({**_site_cols(site, plot, module), "uid": uid(r), "collectDate": when,
                     "sampleID": f"{plot}.{when:%Y%m%d}.{i}", "measurement": r.uniform(0.0, 100.0),
                     "sampleCount": r.randint(0, 50), "remarks": "" if r.random() > 0.05 else "Sample damaged",
                     "dataQF": "legacyData" if r.random() < 0.02 else ""})
    return sorted(rows, key=lambda x: x["collectDate"])


LAB_PERIODS = ((2017, 2018), (2019, 2020), (2021, 2022), (2023, 2024), (2025, 2026))
ANALYTE_UNITS = {"d15N": "permil", "d13C": "permil"}


def lab_rows(r: random.Random, table: Table, published: datetime) -> list[dict]:
    """A lab's long-term summary: one row per analyte and period begun before publication."""
    analytes = next(f.choices for f in table.fields if f.name == "analyte")
    rows = []
    for a, b in LAB_PERIODS:
        start = datetime(a, 1, 1, tzinfo=UTC)
        if start > published:
            break
        for analyte in analytes:
            rows.append({"uid": uid(r), "laboratoryName": table.lab.replace("_", " "), "labSpecificStartDate": start,
                         "labSpecificEndDate": datetime(b, 12, 31, tzinfo=UTC), "analyte": analyte,
                         "analyteUnits": ANALYTE_UNITS.get(analyte, "percent"),
                         "methodDetectionLimit": r.uniform(0.001, 0.05), "precision": r.uniform(0.01, 0.3),
                         "accuracy": r.uniform(-0.2, 0.2), "instrument": INSTRUMENTS.get(table.lab, "Not recorded"),
                         "remarks": ""})
    return rows


# ------------------------------------------------------------------------------ positions
@dataclass(frozen=True)
class Position:
    hor: str
    ver: str
    location_id: str
    description: str
    reference_id: str
    reference_description: str
    reference_start: datetime
    ref_lat: float
    ref_lon: float
    ref_elevation: float
    start: datetime
    end: datetime | None
    x: float
    y: float
    z: float
    azimuth: float
    x_azimuth: float


def _iso(d: datetime | None) -> str:
    return q(d.strftime("%Y-%m-%dT%H:%M:%SZ")) if d else ""


def sensor_positions_csv(table: Table, positions: list[Position], published: datetime, note: str = "") -> bytes:
    """One row per position and period, as published at `published` (later moves are not yet known)."""
    lines = [header(table, "basic")]
    for i, p in enumerate(positions):
        if p.start > published:
            continue
        end = p.end if p.end and p.end <= published else None
        ya = (p.x_azimuth - 90.0) % 360.0
        east = p.x * math.sin(math.radians(p.x_azimuth)) + p.y * math.sin(math.radians(ya))
        north = p.x * math.cos(math.radians(p.x_azimuth)) + p.y * math.cos(math.radians(ya))
        desc = p.description + (f" {note}" if note and i == 0 else "")
        lines.append(",".join((
            q(f"{p.hor}.{p.ver}"), q(p.location_id), q(desc), _iso(p.start), _iso(end), q(p.reference_id),
            q(p.reference_description), _iso(p.reference_start), "",
            f"{p.x:.2f}", f"{p.y:.2f}", f"{p.z:.2f}", "0.00", "0.00", f"{p.azimuth:.2f}",
            f"{p.ref_lat:.6f}", f"{p.ref_lon:.6f}", f"{p.ref_elevation:.2f}", f"{east:.2f}", f"{north:.2f}",
            f"{p.x_azimuth:.2f}", f"{ya:.2f}")))
    return ("\n".join(lines) + "\n").encode()


# ------------------------------------------------------------------ science review flags
@dataclass(frozen=True)
class Flag:
    srf_id: int
    start: datetime
    end: datetime
    field_name: str
    hor: str
    ver: str
    value: int
    justification: str
    created: datetime
    updated: datetime


def srf_csv(table: Table, site: Site, code: str, flags: list[Flag], published: datetime, note: str = "") -> bytes:
    lines = [header(table, "basic")]
    assert [f.name for f in table.fields] == [f.name for f in SRF_FIELDS]
    for f in flags:
        if f.created > published:
            continue
        updated = f.updated if f.updated <= published else f.created
        lines.append(",".join((str(f.srf_id), _iso(f.start), _iso(f.end), q(site.domain), q(site.code), q(code),
                               q(f.field_name), q(f.hor), q(f.ver), str(f.value),
                               q(f.justification + (f" {note}" if note else "")), _iso(f.created), _iso(updated))))
    return ("\n".join(lines) + "\n").encode()


# ------------------------------------------------------------------------ documentation files
TEAM_NAMES = {"TIS": "Terrestrial Instrument System", "AIS": "Aquatic Instrument System",
              "TOS": "Terrestrial Observation System", "AOS": "Aquatic Observation System",
              "AOP": "Airborne Observation Platform"}


def readme_txt(product: dict, site: Site, tables: tuple[Table, ...], gt: str, release: str, note: str = "") -> bytes:
    """NEON's readme layout (the sections neonutilities' format_readme looks for: QUERY, CONTENTS,
    'Basic download package'); no tabs or double quotes, which its line reader would split on."""
    code = product["productCode"]
    pub = gentime_dt(gt)
    stem = f"NEON.{site.domain}.{site.code}.{code}"

    def clean(s: str) -> str:
        return s.replace('"', "'").replace("\t", " ").replace("\n", " ")

    lines = [
        "This data package was produced by and downloaded from the National Ecological Observatory Network (NEON). "
        "NEON is funded by the National Science Foundation and managed cooperatively by Battelle. These data are "
        "provided under the terms of the NEON data policy at https://www.neonscience.org/data-policy.",
        "",
        "DATA PRODUCT INFORMATION", "------------------------", "",
        f"ID: NEON.DOM.SITE.{code}", "",
        f"Name: {clean(product['productName'])}", "",
        f"Description: {clean(product['productDescription'])}", "",
        f"NEON Science Team Supplier: {TEAM_NAMES.get(product['_team'], product['_team'])}", "",
        f"Abstract: {clean(product['productAbstract'])}", "",
        "QUERY INFORMATION", "-----------------", "",
        f"Date-Time for Data Publication: {pub:%Y-%m-%d %H:%M} (UTC)", "",
        f"Site: {site.code}",
        f"Geographic coordinates (lat/long datum): {site.lat:.6f} {site.lon:.6f} WGS 84",
        f"Domain: {site.domain}", "",
        "DATA PACKAGE CONTENTS", "---------------------", "",
        "This folder contains the following documentation files:", "",
        f"- Readme file: {stem}.readme.{gt}.txt",
        f"- Variables file: {stem}.variables.{gt}.csv",
        f"- EML file: {stem}.EML.(first day)-(last day).{gt}.xml",
        "",
        f"Additional documentation for this data product or other related information can be found at "
        f"https://data.neonscience.org/data-products/{code}.", "",
        f"This data product contains up to {len(tables)} data tables:",
    ]
    lines += [f"- {t.name} - {clean(t.description)}" for t in tables]
    lines += [
        "If data are unavailable for the particular sites and dates queried, some tables may be absent.",
        f"Basic download package definition: {clean(product.get('productBasicDescription') or '')}",
        f"Expanded download package definition: {clean(product.get('productExpandedDescription') or 'none')}", "",
        "FILE NAMING CONVENTIONS", "-----------------------", "",
        "NEON data files are named using a series of component abbreviations separated by periods. File naming "
        "conventions for NEON data files can be found at https://data.neonscience.org/file-naming-conventions.", "",
        "ISSUE LOG", "----------", "",
        "This log provides a list of issues that were identified during data collection or processing, prior to "
        f"publication of this data package. For a more recent log, please visit https://data.neonscience.org/"
        f"data-products/{code}.", "",
    ]
    for c in product.get("changeLogs") or []:
        lines += [f"Issue Date: {(c['issueDate'] or '')[:10]}", f"Issue: {clean(c['issue'])}",
                  f"       Date Range: {(c['dateRangeStart'] or '')[:10]} to {(c['dateRangeEnd'] or '')[:10]}",
                  f"       Location(s) Affected: {c['locationAffected']}",
                  f"Resolution Date: {(c['resolvedDate'] or '')[:10]}", f"Resolution: {clean(c['resolution'])}", ""]
    lines += [
        "DATA QUALITY AND VERSIONING", "---------------------------", "",
        (f"These data are part of {release}." if release.startswith("RELEASE") else
         "These data are PROVISIONAL: they may be updated without notice until they are part of a release."), "",
    ]
    if note:
        lines.append(note)
    return ("\n".join(lines) + "\n").encode()


def eml_xml(product: dict, site: Site, tables: tuple[Table, ...], name: str, ym: str, note: str = "") -> bytes:
    from xml.sax.saxutils import escape

    first, last = f"{ym}-01", f"{ym}-{days_in(ym):02d}"
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<eml:eml packageId="{escape(name)}" system="http://neonscience.org" '
           'xmlns:eml="https://eml.ecoinformatics.org/eml-2.2.0">',
           "  <dataset>",
           f"    <title>{escape(product['productName'])} at {site.code}, {ym}</title>",
           f"    <pubDate>{ym}</pubDate>",
           "    <coverage>",
           f"      <geographicCoverage><geographicDescription>{site.code}</geographicDescription>"
           f"<boundingCoordinates><westBoundingCoordinate>{site.lon:.6f}</westBoundingCoordinate>"
           f"<eastBoundingCoordinate>{site.lon:.6f}</eastBoundingCoordinate>"
           f"<northBoundingCoordinate>{site.lat:.6f}</northBoundingCoordinate>"
           f"<southBoundingCoordinate>{site.lat:.6f}</southBoundingCoordinate></boundingCoordinates>"
           "</geographicCoverage>",
           f"      <temporalCoverage><rangeOfDates><beginDate><calendarDate>{first}</calendarDate></beginDate>"
           f"<endDate><calendarDate>{last}</calendarDate></endDate></rangeOfDates></temporalCoverage>",
           "    </coverage>"]
    for t in tables:
        out.append(f"    <dataTable><entityName>{escape(t.name)}</entityName>"
                   f"<entityDescription>{escape(t.description)}</entityDescription><attributeList>")
        for f in t.fields:
            unit = "" if f.units == "NA" else f"<unit>{escape(f.units)}</unit>"
            out.append(f"      <attribute><attributeName>{escape(f.name)}</attributeName>"
                       f"<attributeDefinition>{escape(f.description)}</attributeDefinition>{unit}</attribute>")
        out.append("    </attributeList></dataTable>")
    out += ["  </dataset>", "</eml:eml>"]
    if note:
        out.append(f"<!-- {escape(note)} -->")
    return ("\n".join(out) + "\n").encode()


def validation_csv(tables: tuple[Table, ...], note: str = "") -> bytes:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(("table", "fieldName", "description", "dataType", "entryValidationRulesParser",
                "entryValidationRulesForm"))
    for i, t in enumerate(tables):
        for f in t.fields:
            if f.lov:
                rule = f"[LOV('{f.lov}')]"
            elif f.dataType == "real":
                rule = "[ASSERT(VALUE >= 0)]" if f.units in ("gram", "percent", "squareMeter") else ""
            elif f.primaryKey == "Y" or f.name in ("siteID", "domainID"):
                rule = "[REQUIRE]"
            else:
                rule = ""
            desc = f.description + (f" {note}" if note and i == 0 and f is t.fields[0] else "")
            w.writerow((t.name, f.name, desc, f.dataType, rule, rule.replace("VALUE", f.name)))
    return buf.getvalue().encode()


def categorical_csv(pairs: list[tuple[str, str]], note: str = "") -> bytes:
    lines = ['"lovName","lovElementName","lovElementCode","effectiveDate","endDate"']
    for i, (lov, code) in enumerate(pairs):
        name = code + (f" {note}" if note and i == 0 else "")
        lines.append(f"{q(lov)},{q(name)},{q(code)},{q('2014-01-01')},")
    return ("\n".join(lines) + "\n").encode()
