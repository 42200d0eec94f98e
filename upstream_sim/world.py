"""Deterministic NEON catalog (sites, products, releases, availability) built from a seed.

Everything is derived from the reference lists plus random.Random streams keyed by the
seed and a name, so the same seed always gives the same world and nothing depends on
the order in which parts are first asked for. Heavy parts are built lazily and cached.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from functools import cached_property
from threading import Lock

from . import refdata

# The recordings were made on 2026-09-10; the newest provisional month then was 2026-08.
WORLD_END = "2026-08"
FIELD_ONLY_PRODUCTS = {"DP1.00001.001", "DP1.00002.001", "DP1.00006.001", "DP1.00004.001",
                       "DP1.00098.001", "DP1.00023.001", "DP1.00024.001"}
TEAM_THEMES = {
    "TIS": ["Atmosphere", "Biogeochemistry"],
    "AIS": ["Ecohydrology", "Biogeochemistry"],
    "TOS": ["Organisms, Populations, and Communities", "Biogeochemistry"],
    "AOS": ["Organisms, Populations, and Communities", "Ecohydrology"],
    "AOP": ["Land Use, Land Cover, and Land Processes", "Ecohydrology"],
}
PUB_FORMAT = {
    "TIS": "TIS Data Product Type", "AIS": "AIS Data Product Type",
    "TOS": "TOS Data Product Type", "AOS": "AOS Data Product Type",
    "AOP": "AOP Data Product Type",
}
WORDS = ("seasonal", "tower", "plot", "sensor", "sample", "transect", "canopy", "stream",
         "soil", "flux", "quality", "uncertainty", "calibration", "field", "laboratory")


def rng_for(seed: int, *keys: object) -> random.Random:
    """A random stream private to (seed, keys): independent of call order elsewhere."""
    return random.Random(f"{seed}|" + "|".join(map(str, keys)))


def det_uuid(seed: int, *keys: object) -> str:
    digest = hashlib.sha256(f"{seed}|{'|'.join(map(str, keys))}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def month_add(ym: str, n: int) -> str:
    y, m = int(ym[:4]), int(ym[5:7])
    k = y * 12 + (m - 1) + n
    return f"{k // 12:04d}-{k % 12 + 1:02d}"


ALL_MONTHS = [f"{y}-{m:02d}" for y in range(2010, 2031) for m in range(1, 13)]
MONTH_INDEX = {m: i for i, m in enumerate(ALL_MONTHS)}


def month_range(a: str, b: str) -> list[str]:
    if a > b:
        return []
    return ALL_MONTHS[MONTH_INDEX[a]: MONTH_INDEX[b] + 1]


def doi_suffix(r: random.Random) -> str:
    alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
    return "".join(r.choice(alphabet) for _ in range(4)) + "-" + "".join(
        r.choice(alphabet) for _ in range(4))


# Simulated (no real NEON product has this code): listed by release records only.
WITHDRAWN: dict[str, dict] = {
    "DP1.00090.001": {
        "productName": "Dual aspirated air temperature",
        "productDescription": "Air temperature from two platinum resistance thermometers in a fan aspirated "
                              "shield; withdrawn from the catalog, still named by the releases that published it.",
        "releases": ("RELEASE-2021", "RELEASE-2022", "RELEASE-2023", "RELEASE-2024"),
    },
}


class World:
    def __init__(self, seed: int = 1):
        self.seed = seed
        self._lock = Lock()
        self._avail: dict[str, dict[str, list[str]]] = {}
        self._dois: dict[tuple[str, str], dict] = {}

    def rng(self, *keys: object) -> random.Random:
        return rng_for(self.seed, *keys)

    # ---------------------------------------------------------------- releases
    @cached_property
    def releases(self) -> list[dict]:
        out = []
        for r in refdata.releases():
            tag = r["release"]
            year = int(tag[-4:])
            uid = r["uuid"] if r["uuid"] != "unknown" else det_uuid(self.seed, "release", tag)
            out.append({
                "release": tag,
                "uuid": uid,
                "generationDate": r["generationDate"]["value"],
                "cutoff": f"{year - 1}-06",
            })
        return out

    @cached_property
    def release_by_key(self) -> dict[str, dict]:
        idx = {}
        for r in self.releases:
            idx[r["release"]] = r
            idx[r["uuid"]] = r
        return idx

    @property
    def withdrawn_products(self) -> dict[str, dict]:
        """Products that older release records list but GET /products no longer does (NEON drops a
        withdrawn product from its catalog, not from the releases that published it)."""
        return {code: dict(p) for code, p in WITHDRAWN.items()}

    def release_withdrawn(self, tag: str) -> list[str]:
        return [code for code, p in WITHDRAWN.items() if tag in p["releases"]]

    @property
    def release_tags(self) -> list[str]:
        return [r["release"] for r in self.releases]

    @property
    def latest_release(self) -> dict:
        return self.releases[-1]

    def release_of_month(self, ym: str) -> str:
        """Current view: the newest release that contains the month, else PROVISIONAL."""
        return self.latest_release["release"] if ym <= self.latest_release["cutoff"] else "PROVISIONAL"

    def months_in_release(self, months: list[str], tag: str) -> list[str]:
        cutoff = self.release_by_key[tag]["cutoff"]
        return [m for m in months if m <= cutoff]

    # ------------------------------------------------------------------- sites
    @cached_property
    def domains(self) -> dict[str, dict]:
        return {d["domainCode"]: d for d in refdata.domains()}

    @cached_property
    def sites(self) -> dict[str, dict]:
        out = {}
        for row in refdata.field_sites():
            code = row["field_site_id"]
            kind = row["field_site_type"]
            r = self.rng("site", code)
            elev = float(row["field_mean_evelation_m"] or 0) or round(r.uniform(5, 2500), 1)
            zone = row["field_utm_zone"]
            out[code] = {
                "siteCode": code,
                "siteName": row["field_site_name"],
                "siteDescription": row["field_site_name"],
                "siteType": "CORE" if kind.startswith("Core") else "GRADIENT",
                "siteLatitude": float(row["field_latitude"]),
                "siteLongitude": float(row["field_longitude"]),
                "stateCode": row["field_site_state"],
                "stateName": refdata.STATE_NAMES.get(row["field_site_state"], row["field_site_state"]),
                "domainCode": row["field_domain_id"],
                "domainName": self.domains[row["field_domain_id"]]["domainName"],
                "deimsId": "https://deims.org/" + det_uuid(self.seed, "deims", code),
                # private fields (underscore) never leave the simulator
                "_aquatic": kind.endswith("Aquatic"),
                "_elevation": elev,
                "_utm": (float(row["field_utm_easting"] or 0), float(row["field_utm_northing"] or 0),
                         int(zone[:-1] or 0), "N" if zone.endswith("N") else "S"),
                "_levels": int(row["field_number_tower_levels"] or 0),
                "_start": month_add("2013-06", r.randint(0, 66)),
                "_county": row["field_site_county"],
                "_url": row["field_site_url"],
            }
        return out

    # ---------------------------------------------------------------- products
    @cached_property
    def products(self) -> dict[str, dict]:
        out = {}
        for row in refdata.catalog_products():
            out[row["productCode"]] = self._build_product(row)
        return out

    def _build_product(self, row: dict) -> dict:
        code = row["productCode"]
        team = row["productScienceTeamAbbr"]
        r = self.rng("product", code)
        if row["catalogStatus"] != "Available":
            status = "FUTURE"
        elif row["latestAvailableMonth"] and row["latestAvailableMonth"] <= "2019-12":
            status = "RETIRED"
        else:
            status = "ACTIVE"
        has_exp = row["productHasExpanded"]
        has_exp = (has_exp == "true") if has_exp in ("true", "false") else (
            team in ("TIS", "AIS") or r.random() < 0.4)
        themes = row["themes"].split("|") if row["themes"] not in ("", "unknown") else (
            TEAM_THEMES[team][: 1 + (r.random() < 0.3)])
        name = row["productName"]
        keywords = row["keywords"].split("|") if row["keywords"] not in ("", "unknown") else sorted(
            {w.strip(",()").lower() for w in name.split() if len(w) > 3} | set(r.sample(WORDS, 2)))
        is_sensor = team in ("TIS", "AIS")
        specs = []
        for i in range(r.randint(1, 3)):
            num = r.randint(1000, 5999)
            specs.append({
                "specId": str(r.randint(1000, 9999)),
                "specNumber": f"NEON.DOC.{num:06d}v{'ABCDEFGH'[r.randint(0, 7)]}",
                "specType": "application/pdf",
                "specSize": r.randint(60_000, 900_000),
                "specDescription": ("NEON Algorithm Theoretical Basis Document (ATBD) – " if i == 0 and is_sensor
                                    else "NEON User Guide to " if i == 0 else "NEON Protocol: ") + name,
            })
        change_logs = []
        for i in range(r.randint(0 if status == "FUTURE" else 1, 3)):
            y = r.randint(2015, 2025)
            d1 = f"{y}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T00:00:00Z"
            change_logs.append({
                "id": r.randint(100, 99999),
                "parentIssueID": None,
                "issueDate": d1,
                "resolvedDate": d1 if r.random() < 0.8 else None,
                "dateRangeStart": f"{y - 1}-{r.randint(1, 12):02d}-01T00:00:00Z",
                "dateRangeEnd": d1,
                "locationAffected": r.choice(["All sites", "ABBY", "HARV", "Multiple sites"]),
                "issue": f"Issue {i + 1} affecting {name.lower()}.",
                "resolution": "Data were reprocessed and flagged where needed.",
            })
        first = row["firstAvailableMonth"] or None
        last = row["latestAvailableMonth"] or None
        return {
            "productCodeLong": row["productCodeLong"],
            "productCode": code,
            "productCodePresentation": "NEON." + code[:9],
            "productName": name,
            "productDescription": row["productDescription"],
            "productStatus": status,
            "productCategory": row["productCategory"],
            "productHasExpanded": has_exp,
            "productScienceTeamAbbr": team,
            "productScienceTeam": row["productScienceTeam"],
            "productPublicationFormatType": PUB_FORMAT[team],
            "productAbstract": f"This data product contains {name.lower()} measured by NEON. "
                               + row["productDescription"],
            "productDesignDescription": f"{name} is collected following NEON's standardized design at "
                                        f"{'instrumented' if is_sensor else 'observational'} sites.",
            "productStudyDescription": f"{name} is measured at NEON field sites across domains D01-D20.",
            "productBasicDescription": "Includes the data product, summary statistics and quality flags.",
            "productExpandedDescription": ("Includes the basic package plus quality metrics for all "
                                           "quality assessment and quality control analyses.") if has_exp else None,
            "productSensor": r.choice(["Gill - Wind Observer II", "Campbell Scientific - CS300",
                                       "Vaisala - HMP155", "YSI - EXO2", "Kipp & Zonen - CMP22"])
            if is_sensor else None,
            "productRemarks": "Please review the change log and issue log before using these data.",
            "themes": themes,
            "changeLogs": change_logs,
            "specs": specs,
            "keywords": keywords,
            "biorepositoryCollections": None,
            "_team": team,
            "_first": first,
            "_last": last if status == "RETIRED" else WORLD_END,
        }

    def product_sites(self, code: str) -> list[str]:
        p = self.products[code]
        if p["productStatus"] == "FUTURE":
            return []
        team = p["_team"]
        r = self.rng("product-sites", code)
        all_sites = sorted(self.sites)
        terr = [s for s in all_sites if not self.sites[s]["_aquatic"]]
        aqua = [s for s in all_sites if self.sites[s]["_aquatic"]]
        if team == "TIS":
            pool, frac = (all_sites if code in FIELD_ONLY_PRODUCTS or "aquatic" in
                          p["productDescription"].lower() else terr), 1.0
        elif team == "TOS":
            pool, frac = terr, r.uniform(0.6, 1.0)
        elif team in ("AIS", "AOS"):
            pool, frac = aqua, r.uniform(0.6, 1.0)
        else:
            pool, frac = terr + [s for s in aqua if r.random() < 0.3], r.uniform(0.5, 0.9)
        keep = [s for s in pool if r.random() < frac]
        return keep or pool[:3]

    def availability(self, code: str) -> dict[str, list[str]]:
        """site -> sorted months with data (all releases and provisional together)."""
        got = self._avail.get(code)
        if got is not None:
            return got
        p = self.products[code]
        out: dict[str, list[str]] = {}
        team = p["_team"]
        for site in self.product_sites(code):
            r = self.rng("avail", code, site)
            start = max(p["_first"] or "2014-01", self.sites[site]["_start"])
            months = month_range(start, p["_last"])
            if team in ("TIS", "AIS"):
                months = [m for m in months if r.random() > 0.03]
            elif team in ("TOS", "AOS"):
                season = set(r.sample(range(4, 11), r.randint(2, 5)))
                months = [m for m in months if int(m[5:]) in season]
            else:
                flight = r.randint(5, 9)
                months = [m for m in months if int(m[5:]) == flight and r.random() < 0.75]
            if months:
                out[site] = months
        with self._lock:
            self._avail[code] = out
        return out

    def product_releases(self, code: str) -> list[str]:
        avail = self.availability(code)
        first = min((m[0] for m in avail.values()), default=None)
        if first is None:
            return []
        return [r["release"] for r in self.releases if first <= r["cutoff"]]

    def product_doi(self, code: str, tag: str) -> dict:
        got = self._dois.get((code, tag))
        if got is None:
            got = self._dois[(code, tag)] = self._make_doi(code, tag)
        return got

    def _make_doi(self, code: str, tag: str) -> dict:
        known = refdata.known_dois().get((tag, code))
        if known:
            return {"generationDate": known["productDoiGenerationDate"], "url": known["productDoiUrl"]}
        rel = self.release_by_key[tag]
        r = self.rng("doi", code, tag)
        gen = rel["generationDate"]
        minute = int(gen[14:16]) + r.randint(1, 50)
        hour = int(gen[11:13]) + minute // 60
        return {"generationDate": f"{gen[:11]}{hour:02d}:{minute % 60:02d}:{r.randint(0, 59):02d}Z",
                "url": "https://doi.org/10.48443/" + doi_suffix(r)}

    def site_products(self, site: str) -> list[str]:
        return [code for code in self.products if site in self.availability(code)]

    def months_for(self, code: str, site: str, release: str | None) -> list[str]:
        months = self.availability(code).get(site, [])
        return self.months_in_release(months, release) if release else months

    def release_for_month(self, code: str, site: str, ym: str, release: str | None) -> str | None:
        """Which release (or PROVISIONAL) a site-month is served under; None if no data."""
        if ym not in self.availability(code).get(site, ()):
            return None
        if release:
            return release if ym <= self.release_by_key[release]["cutoff"] else None
        return self.release_of_month(ym)
