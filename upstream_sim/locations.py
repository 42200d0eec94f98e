"""Named-location tree: REALM > domains > sites > towers, levels, booms, huts, soil arrays,
megapits, sensor configs and observation plots. Built per site on first use."""

from __future__ import annotations

import re
from threading import Lock

from .world import World

PLOT_MODULES = [("basePlot", "all"), ("basePlot", "bet"), ("basePlot", "bgc"), ("basePlot", "div"),
                ("basePlot", "vst"), ("basePlot", "cfc"), ("birdGrid", "brd"), ("mammalGrid", "mam"),
                ("tickPlot", "tck"), ("mosquitoPoint", "mos"), ("phenology", "phe")]
AQUATIC_MODULES = [("reach", "rea"), ("fish", "fsh"), ("invertebrate", "inv"), ("sediment", "sed")]
BOOM_CONFIGS = ["Single Aspirated Air Temperature", "2D Wind", "ECSE Inlet Pressure"]
SITE_NUM = re.compile(r"^[A-Z]+(\d{6})(\.\d+)?$")


def _base(d: dict) -> dict:
    return {
        "alphaOrientation": 0.0, "betaOrientation": 0.0, "gammaOrientation": 0.0,
        "xOffset": 0.0, "yOffset": 0.0, "zOffset": 0.0, "offsetLocation": None,
        **d,
    }


def _props(pairs: list[tuple[str, object]]) -> list[dict]:
    return [{"locationPropertyName": f"Value for {k}", "locationPropertyValue": v} for k, v in pairs]


class Locations:
    def __init__(self, world: World):
        self.world = world
        self._sites_sorted = sorted(world.sites)
        self._nodes: dict[str, dict] = {}
        self._built: set[str] = set()
        self._lock = Lock()
        self._build_top()

    # ---------------------------------------------------------------- index
    def block(self, site: str) -> int:
        """First number of the site's 1000-id block (HARV's tower is TOWER100450, as upstream)."""
        idx = self._sites_sorted.index(site)
        harv = self._sites_sorted.index("HARV") if "HARV" in self._sites_sorted else 0
        return 100000 + ((idx - harv) % len(self._sites_sorted)) * 1000 + 450

    def _site_of(self, name: str) -> str | None:
        if "_" in name[:5] or "." in name[:5]:
            head = name[:4]
            return head if head in self.world.sites else None
        m = SITE_NUM.match(name)
        if m:
            off = (int(m.group(1)) - 100000) // 1000
            harv = self._sites_sorted.index("HARV")
            if 0 <= off < len(self._sites_sorted):
                return self._sites_sorted[(off + harv) % len(self._sites_sorted)]
        return None

    def get(self, name: str) -> dict | None:
        node = self._nodes.get(name)
        if node is None:
            site = self._site_of(name)
            if site:
                self._ensure_site(site)
                node = self._nodes.get(name)
        elif node["locationType"] == "SITE":
            self._ensure_site(name)
        return node

    def children(self, node: dict) -> list[dict]:
        if node["locationType"] == "SITE":
            self._ensure_site(node["locationName"])
        return [self._nodes[c] for c in node["_children"]]

    # ---------------------------------------------------------------- build
    def _add(self, node: dict, parent: str | None) -> dict:
        node["_children"] = []
        node["_parent"] = parent
        self._nodes[node["locationName"]] = node
        if parent:
            self._nodes[parent]["_children"].append(node["locationName"])
        return node

    def _build_top(self) -> None:
        self._add({"locationName": "REALM", "locationDescription": "Realm", "locationType": "FIELD",
                   "_props": []}, None)
        for code, d in self.world.domains.items():
            self._add(_base({"locationName": code, "locationDescription": f"{d['domainName']} Domain",
                             "locationType": "DOMAIN", "domainCode": code,
                             "_props": [("Required Asset Management Location Code", code)]}), "REALM")
        for code, s in sorted(self.world.sites.items()):
            e, n, zone, hemi = s["_utm"]
            self._add(_base({
                "locationName": code, "locationDescription": s["siteName"], "locationType": "SITE",
                "domainCode": s["domainCode"], "siteCode": code,
                "locationDecimalLatitude": s["siteLatitude"], "locationDecimalLongitude": s["siteLongitude"],
                "locationElevation": s["_elevation"], "locationUtmEasting": e, "locationUtmNorthing": n,
                "locationUtmHemisphere": hemi, "locationUtmZone": zone,
                "_active": (None, None),
                "_props": [("Country", "USA"), ("County", s["_county"]), ("State province", s["stateCode"]),
                           ("Site Timezone", "UTC"), ("UTM Zone", f"{zone}{hemi}"), ("Geodetic datum", "WGS84"),
                           ("DEIMS-SDR Site ID", s["deimsId"]), ("NEONSCI_FIELD_SITE_URL_PATH", s["_url"]),
                           ("Required Asset Management Location Code", code)],
            }), s["domainCode"])

    def _point(self, site: dict, r, name: str, desc: str, ltype: str, parent: str, spread: float = 0.01,
               **extra) -> dict:
        dlat, dlon = r.uniform(-spread, spread), r.uniform(-spread, spread)
        e, n, zone, hemi = site["_utm"]
        start = f"{r.randint(2012, 2019)}-{r.randint(1, 12):02d}-01T00:00:00Z"
        node = _base({
            "locationName": name, "locationDescription": desc, "locationType": ltype,
            "domainCode": site["domainCode"], "siteCode": site["siteCode"],
            "locationDecimalLatitude": round(site["siteLatitude"] + dlat, 6),
            "locationDecimalLongitude": round(site["siteLongitude"] + dlon, 6),
            "locationElevation": round(site["_elevation"] + r.uniform(-20, 20), 2),
            "locationUtmEasting": round(e + dlon * 80000, 2), "locationUtmNorthing": round(n + dlat * 111000, 2),
            "locationUtmHemisphere": hemi, "locationUtmZone": zone,
            "_active": (start, None), "_props": [], **extra,
        })
        return self._add(node, parent)

    def _ensure_site(self, code: str) -> None:
        if code in self._built:
            return
        with self._lock:
            if code in self._built:
                return
            self._build_site(code)
            self._built.add(code)

    def _build_site(self, code: str) -> None:
        w = self.world
        s = w.sites[code]
        r = w.rng("locations", code)
        b = self.block(code)
        nm = s["siteName"].replace(" NEON", "")
        if not s["_aquatic"]:
            tower = self._point(s, r, f"TOWER{b}", f"{nm} Tower", "TOWER", code, 0.002)
            boom_id, cfg_id = b + 20, b + 100
            for lv in range(1, (s["_levels"] or 4) + 1):
                level = self._point(s, r, f"LEVEL{b + 1 + lv}", f"{nm} Tower Level, L{lv}", "LEVEL",
                                    tower["locationName"], 0.0002, zOffset=float(lv * 5))
                for kind in ("Combined", "Radiation"):
                    boom = self._point(s, r, f"BOOM{boom_id}", f"{nm} Level {lv} {kind} Boom", "BOOM",
                                       level["locationName"], 0.0002)
                    boom_id += 1
                    for cfg in (BOOM_CONFIGS if kind == "Combined" else ["PAR Radiation"]):
                        self._point(s, r, f"CFGLOC{cfg_id}", f"{nm} {cfg} L{lv}", "CONFIG",
                                    boom["locationName"], 0.0002,
                                    gammaOrientation=float(r.randint(0, 359)), zOffset=float(lv * 5))
                        cfg_id += 1
            self._point(s, r, f"HUT{b + 300}", f"{nm} Instrument Hut", "HUT", code, 0.002)
            for i in range(1, 6):
                self._point(s, r, f"SOILAR{b + 310 + i}", f"{nm} Soil Array {i}", "SOIL ARRAY", code, 0.003)
            self._point(s, r, f"MEGAPT{b + 320}", f"{nm} Megapit", "MEGAPIT", code, 0.01)
            self._point(s, r, f"CFGLOC{b + 330}", f"{nm} Primary Precipitation", "CONFIG", code, 0.002)
            modules = PLOT_MODULES
        else:
            self._point(s, r, f"HUT{b + 300}", f"{nm} Instrument Hut", "HUT", code, 0.002)
            for i, st in enumerate(("S1", "S2"), start=1):
                self._point(s, r, f"CFGLOC{b + 330 + i}", f"{nm} Sensor Station {st}", "CONFIG", code, 0.003)
            modules = AQUATIC_MODULES
        for i in range(1, 13):
            ptype, mod = modules[(i - 1) % len(modules)]
            name = f"{code}_{i:03d}.{ptype}.{mod}"
            node = self._point(s, r, name, f'Plot "{code}_{i:03d}" at site "{code}"', f"OS Plot - {mod}", code,
                               0.02)
            lat, lon, el = node["locationDecimalLatitude"], node["locationDecimalLongitude"], node["locationElevation"]
            d = 0.00018
            node["_polygon"] = {"coordinates": [
                {"latitude": round(lat + dy, 6), "longitude": round(lon + dx, 6), "elevation": el}
                for dx, dy in ((-d, -d), (d, -d), (d, d), (-d, d), (-d, -d))]}
            node["_props"] = [("Plot type", "distributed" if i % 2 else "tower"), ("Plot size", 400),
                              ("Plot dimensions", "20m x 20m"), ("NLCD class", "deciduousForest"),
                              ("Slope aspect", r.randint(0, 359))]
            if mod == "bet":
                # Beetle plots hold their pitfall traps as 'Point' children (recorded HARV hierarchy:
                # HARV_001.basePlot.bet > HARV_001.basePlot.bet.E, .N). Their own random stream
                # leaves every other node where it was.
                traps = w.rng("location-points", name)
                for side in ("E", "N", "S", "W"):
                    self._point(s, traps, f"{name}.{side}", f"{name}.{side}", "Point", name, 0.0002)


def _loc_url(api: str, name: str) -> str:
    return f"{api}/locations/{name}"


def _coords(node: dict) -> dict:
    keys = ("locationDecimalLatitude", "locationDecimalLongitude", "locationElevation", "locationUtmEasting",
            "locationUtmNorthing", "locationUtmHemisphere", "locationUtmZone", "alphaOrientation",
            "betaOrientation", "gammaOrientation", "xOffset", "yOffset", "zOffset")
    return {k: node[k] for k in keys if k in node}


def render_location(locs: Locations, node: dict, api: str, hierarchy: bool = False,
                    location_type: str | None = None, history: bool = False) -> dict:
    """A /locations/{name} body in upstream key order (absent keys stay absent)."""
    out: dict = {k: node[k] for k in ("locationName", "locationDescription", "locationType") if k in node}
    if not hierarchy:
        for k in ("domainCode", "siteCode"):
            if k in node:
                out[k] = node[k]
    out.update(_coords(node))
    if "offsetLocation" in node:
        out["offsetLocation"] = None
    if "_polygon" in node:
        out["locationPolygon"] = node["_polygon"]
    if not hierarchy and node["locationType"] != "FIELD":
        start, end = node.get("_active", (None, None))
        out["activePeriods"] = [{"activatedDate": start, "deactivatedDate": end}]
    props = node.get("_props", [])
    out["locationProperties"] = _props(props[:4] if hierarchy else props)
    parent = node["_parent"]
    out["locationParent"] = parent
    out["locationParentUrl"] = _loc_url(api, parent) if parent else None
    if hierarchy:
        out["locationParentHierarchy"] = _parent_chain(locs, parent, api)
        if location_type:
            out["locationChildHierarchy"] = [_child_tree(locs, n) for n in _find_type(locs, node, location_type)]
        else:
            out["locationChildHierarchy"] = [_child_tree(locs, c) for c in locs.children(node)]
            out["locationChildren"] = []
            out["locationChildrenUrls"] = []
    else:
        kids = [c["locationName"] for c in locs.children(node)]
        out["locationChildren"] = kids
        out["locationChildrenUrls"] = [_loc_url(api, k) for k in kids]
    if history:
        out["locationHistory"] = _history(node)
    return out


def _history(node: dict) -> list[dict]:
    start, _ = node.get("_active", (None, None))
    current: dict = {"current": True, "locationStartDate": start or "2014-06-10T00:00:00Z", "locationEndDate": None}
    current.update(_coords(node))
    if "_polygon" in node:
        current["locationPolygon"] = node["_polygon"]
    current["locationProperties"] = _props(node.get("_props", []))
    if node["locationType"] in ("DOMAIN", "FIELD"):
        return [current]
    older = dict(current, current=False, locationStartDate="2012-10-01T00:00:00Z",
                 locationEndDate=current["locationStartDate"])
    if "locationElevation" in older:
        older["locationElevation"] = round(older["locationElevation"] - 1.5, 2)
    return [current, older]


def _parent_chain(locs: Locations, name: str | None, api: str) -> dict | None:
    if not name:
        return None
    node = locs.get(name)
    if node is None:
        raise LookupError(f"parent location {name!r} is not in the simulated hierarchy")
    out = {"locationName": name, "locationDescription": node["locationDescription"],
           "locationType": node["locationType"]}
    if node["_parent"]:
        out["locationParent"] = node["_parent"]
        out["locationParentUrl"] = _loc_url(api, node["_parent"])
        out["locationParentHierarchy"] = _parent_chain(locs, node["_parent"], api)
    return out


def _child_tree(locs: Locations, node: dict) -> dict:
    return {"locationName": node["locationName"], "locationDescription": node["locationDescription"],
            "locationType": node["locationType"],
            "locationChildHierarchy": [_child_tree(locs, c) for c in locs.children(node)]}


def _find_type(locs: Locations, node: dict, ltype: str) -> list[dict]:
    found = []
    for c in locs.children(node):
        if c["locationType"] == ltype:
            found.append(c)
        else:
            found.extend(_find_type(locs, c, ltype))
    return found
