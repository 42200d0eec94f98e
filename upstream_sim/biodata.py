"""Taxonomy, samples and prototype datasets, generated per seed around a few real anchors."""

from __future__ import annotations

from functools import cached_property

from . import refdata
from .world import World, det_uuid

RANK_KEYS = ["kingdom", "phylum", "division", "order", "class", "family", "genus"]
VERBOSE_KEYS = [
    "taxonTypeCode", "taxonID", "acceptedTaxonID", "updateDate", "dwc:scientificName",
    "dwc:scientificNameAuthorship", "dwc:taxonRank", "dwc:vernacularName", "taxonProtocolCategory",
    "dwc:nameAccordingToID", "dwc:nameAccordingToTitle", "dwc:kingdom", "gbif:subkingdom",
    "gbif:infrakingdom", "gbif:superdivision", "gbif:division", "gbif:subdivision", "gbif:infradivision",
    "gbif:parvdivision", "gbif:superphylum", "dwc:phylum", "gbif:subphylum", "gbif:infraphylum",
    "gbif:superclass", "dwc:class", "gbif:subclass", "gbif:infraclass", "gbif:superorder", "dwc:order",
    "gbif:suborder", "gbif:infraorder", "gbif:section", "gbif:subsection", "gbif:superfamily", "dwc:family",
    "gbif:subfamily", "gbif:tribe", "gbif:subtribe", "dwc:genus", "dwc:subgenus", "gbif:subspecies",
    "gbif:variety", "gbif:subvariety", "gbif:form", "gbif:subform", "speciesGroup", "dwc:specificEpithet",
    "dwc:infraspecificEpithet",
]
BRIEF_KEYS = [
    "taxonTypeCode", "taxonID", "acceptedTaxonID", "updateDate", "dwc:scientificName",
    "dwc:scientificNameAuthorship", "dwc:taxonRank", "dwc:vernacularName", "dwc:nameAccordingToID",
    "dwc:kingdom", "dwc:phylum", "dwc:class", "dwc:order", "dwc:family", "dwc:genus", "gbif:subspecies",
    "gbif:variety",
]
# kingdom, phylum, class, order, family, [genus...], vernacular suffix, count
LINEAGE = {
    "ALGAE": ("Chromista", "Ochrophyta", "Bacillariophyceae", "Naviculales", "Naviculaceae", 300),
    "BEETLE": ("Animalia", "Arthropoda", "Insecta", "Coleoptera", "Carabidae", 700),
    "BIRD": ("Animalia", "Chordata", "Aves", "Passeriformes", "Parulidae", 2244),
    "FISH": ("Animalia", "Chordata", "Actinopterygii", "Cypriniformes", "Cyprinidae", 400),
    "HERPETOLOGY": ("Animalia", "Chordata", "Amphibia", "Anura", "Ranidae", 250),
    "MACROINVERTEBRATE": ("Animalia", "Arthropoda", "Insecta", "Ephemeroptera", "Baetidae", 900),
    "MOSQUITO": ("Animalia", "Arthropoda", "Insecta", "Diptera", "Culicidae", 150),
    "MOSQUITO_PATHOGENS": ("Viruses", "Negarnaviricota", "Ellioviricetes", "Bunyavirales", "Peribunyaviridae", 40),
    "SMALL_MAMMAL": ("Animalia", "Chordata", "Mammalia", "Rodentia", "Cricetidae", 180),
    "PLANT": ("Plantae", "Magnoliophyta", "Magnoliopsida", "Fagales", "Fagaceae", 1500),
    "TICK": ("Animalia", "Arthropoda", "Arachnida", "Ixodida", "Ixodidae", 71),
}
ANCHORS = {
    "BIRD": [("ABDU", "Anas rubripes", "Brewster", "American Black Duck", "Anseriformes", "Anatidae")],
    "TICK": [("AMBAME", "Amblyomma americanum", "(Linnaeus)", "Lone star tick", "Ixodida", "Ixodidae")],
    "PLANT": [(f"QU{s[:2].upper()}{i or ''}", f"Quercus {s}", "L.", f"{s} oak", "Fagales", "Fagaceae")
              for i, s in enumerate(["acutissima", "alba", "agrifolia", "bicolor", "coccinea", "rubra",
                                     "velutina", "macrocarpa", "stellata", "palustris"])],
}
SYL = ["ba", "ca", "da", "fe", "gi", "lo", "mu", "na", "pe", "ri", "sa", "to", "vu", "xe", "zo", "li", "ra"]


class Taxonomy:
    def __init__(self, world: World):
        self.world = world
        self._by_type: dict[str, list[dict]] = {}

    def rows(self, code: str) -> list[dict]:
        got = self._by_type.get(code)
        if got is None:
            got = self._by_type[code] = self._generate(code)
        return got

    def all_rows(self) -> list[dict]:
        return [r for code in refdata.taxon_type_codes() for r in self.rows(code)]

    def _generate(self, code: str) -> list[dict]:
        r = self.world.rng("taxa", code)
        kingdom, phylum, klass, order, family, n = LINEAGE[code]
        out = []
        for tid, sci, auth, vern, ordr, fam in ANCHORS.get(code, []):
            out.append(self._row(code, tid, sci, auth, vern, kingdom, phylum, klass, ordr, fam,
                                 "2017-07-18T20:42:22Z" if code == "BIRD" else "2014-08-26"))
        genera = ["".join(r.choice(SYL) for _ in range(3)).capitalize() + "us" for _ in range(max(3, n // 8))]
        seen = {row["taxonID"] for row in out}
        while len(out) < n:
            genus = r.choice(genera)
            epithet = "".join(r.choice(SYL) for _ in range(3)) + r.choice(["a", "is", "um", "ensis"])
            tid = (genus[:2] + epithet[:2]).upper()
            k = 2
            while tid in seen:
                tid = (genus[:2] + epithet[:2]).upper() + str(k)
                k += 1
            seen.add(tid)
            out.append(self._row(code, tid, f"{genus} {epithet}", r.choice(["L.", "Say", "(Linnaeus)", "Gray"]),
                                 f"{epithet} {code.lower().replace('_', ' ')}", kingdom, phylum, klass, order,
                                 family, f"20{r.randint(14, 24)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"))
        out.sort(key=lambda x: x["taxonID"])
        return out

    @staticmethod
    def _row(code, tid, sci, auth, vern, kingdom, phylum, klass, order, family, updated) -> dict:
        genus, _, epithet = sci.partition(" ")
        row = dict.fromkeys(VERBOSE_KEYS)
        row.update({
            "taxonTypeCode": code, "taxonID": tid, "acceptedTaxonID": tid, "updateDate": updated,
            "dwc:scientificName": sci, "dwc:scientificNameAuthorship": auth, "dwc:taxonRank": "species",
            "dwc:vernacularName": vern, "taxonProtocolCategory": "target", "dwc:nameAccordingToID": "",
            "dwc:nameAccordingToTitle": "NEON taxon list (simulated)", "dwc:kingdom": kingdom,
            "dwc:phylum": phylum, "dwc:class": klass, "dwc:order": order, "dwc:family": family,
            "dwc:genus": genus, "dwc:specificEpithet": epithet or None,
        })
        return row

    def query(self, params: dict) -> tuple[list[dict], int]:
        """(matching rows, total) for a /taxonomy filter; paging is the caller's job."""
        code = params.get("taxonTypeCode")
        rows = self.rows(code) if code else self.all_rows()
        for rank in RANK_KEYS:
            want = params.get(rank)
            if want:
                key = "gbif:division" if rank == "division" else f"dwc:{rank}"
                rows = [x for x in rows if (x.get(key) or "").lower() == want.lower()]
        sci = params.get("scientificname")
        if sci:  # NEON matches the whole name (case-insensitively), never a prefix
            rows = [x for x in rows if x["dwc:scientificName"].lower() == sci.lower()]
        return rows, len(rows)


def brief(row: dict, verbose: bool) -> dict:
    keys = VERBOSE_KEYS if verbose else BRIEF_KEYS
    return {k: row[k] for k in keys}


class Samples:
    """Sample chains (parent > child > grandchild) with custody events, plus two anchors from
    upstream docs: barcode A00000123456, and a tag shared by two sample classes."""

    SHARED_TAG = "SHARED.TAG.2019"

    def __init__(self, world: World):
        self.world = world

    @cached_property
    def supported(self) -> list[dict]:
        return list(refdata.supported_classes())

    @cached_property
    def samples(self) -> list[dict]:
        w = self.world
        r = w.rng("samples")
        out: list[dict] = []
        classes = [("bet_fielddata_in.sampleID", "bet_sorting_in.subsampleID", "bet_IDandpinning_in.individualID"),
                   ("sls_soilCoreCollection_in.sampleID", "sls_bgcSubsampling_in.bgcSampleID",
                    "sls_chemistry_in.analyticalSampleID"),
                   ("mos_trapping_in.sampleID", "mos_sorting_in.subsampleID", "mos_identification_in.individualID")]
        sites = sorted(w.sites)
        for i in range(60):
            site = sites[i % len(sites)]
            chain = classes[i % len(classes)]
            date = f"20{r.randint(16, 24)}{r.randint(5, 9):02d}{r.randint(1, 28):02d}"
            parent = None
            for depth, cls in enumerate(chain):
                tag = f"{site}_{r.randint(1, 40):03d}.{date}" + ("" if depth == 0 else f".{depth}.{r.randint(1, 9)}")
                barcode = f"A{r.randint(10**10, 10**11 - 1):011d}" if r.random() < 0.5 else None
                s = self._sample(len(out), tag, cls, barcode, site, date, parent)
                out.append(s)
                parent = s
        # anchors
        pin = self._sample(len(out), "A00000123456", "bet_IDandpinning_in.individualID", "A00000123456",
                           "HARV", "20190612", None)
        out.append(pin)
        out.append(self._sample(len(out), "A00000123456.1", "bet_sorting_in.subsampleID", None, "HARV",
                                "20190612", pin))
        for cls in ("sls_soilCoreCollection_in.sampleID", "cfc_fieldData_in.sampleID"):
            out.append(self._sample(len(out), self.SHARED_TAG, cls, None, "BART", "20190715", None))
        return out

    def _sample(self, idx: int, tag: str, cls: str, barcode: str | None, site: str, date: str,
                parent: dict | None) -> dict:
        uid = det_uuid(self.world.seed, "sample", idx, tag, cls)
        s = {
            "sampleUuid": uid, "sampleTag": tag, "sampleClass": cls, "barcode": barcode,
            "archiveGuid": det_uuid(self.world.seed, "archive", uid) if idx % 7 == 0 else None,
            "sampleEvents": [
                {"ingestTableName": cls.split(".")[0], "smsFieldEntries": [
                    {"smsKey": "collectDate", "smsValue": f"{date[:4]}-{date[4:6]}-{date[6:]}T00:00:00Z"},
                    {"smsKey": "siteID", "smsValue": site},
                    {"smsKey": "custodyStatus", "smsValue": "received"}]},
                {"ingestTableName": "shipment_in", "smsFieldEntries": [
                    {"smsKey": "shipmentDate", "smsValue": f"{date[:4]}-{date[4:6]}-28T00:00:00Z"},
                    {"smsKey": "destination", "smsValue": "NEON Biorepository"}]},
            ],
            "_parents": [parent] if parent else [],
            "_children": [],
        }
        if parent:
            parent["_children"].append(s)
        return s

    def find(self, params: dict) -> list[dict]:
        for key in ("sampleUuid", "barcode", "archiveGuid"):
            if params.get(key):
                return [s for s in self.samples if s[key] == params[key]]
        tag = params.get("sampleTag")
        if tag:
            hits = [s for s in self.samples if s["sampleTag"] == tag]
            cls = params.get("sampleClass")
            return [s for s in hits if s["sampleClass"] == cls] if cls else hits
        return []

    def classes_for_tag(self, tag: str) -> list[str]:
        return [s["sampleClass"] for s in self.samples if s["sampleTag"] == tag]

    @staticmethod
    def ident(s: dict) -> dict:
        return {k: s[k] for k in ("sampleUuid", "sampleTag", "sampleClass", "barcode", "archiveGuid")}

    def view(self, s: dict) -> dict:
        out = {k: s[k] for k in ("sampleUuid", "sampleTag", "sampleClass", "barcode", "archiveGuid",
                                 "sampleEvents")}
        out["parentSampleIdentifiers"] = [self.ident(p) for p in s["_parents"]]
        out["childSampleIdentifiers"] = [self.ident(c) for c in s["_children"]]
        return out

    def download(self, s: dict, degree: int) -> list[dict]:
        """The sample and its relatives up to `degree` steps away (each once)."""
        seen, frontier, out = {s["sampleUuid"]}, [s], [s]
        for _ in range(max(0, degree)):
            nxt = []
            for cur in frontier:
                for rel in cur["_parents"] + cur["_children"]:
                    if rel["sampleUuid"] not in seen:
                        seen.add(rel["sampleUuid"])
                        nxt.append(rel)
            out += nxt
            frontier = nxt
        return [self.view(x) for x in out]


RECORDED_PROTO_UUID = "07dccab1-4990-4d2f-9c5b-bf97e10517e3"
PROTO_THEMES = [["Ecohydrology", "Biogeochemistry"], ["Organisms, Populations, and Communities"],
                ["Atmosphere"], ["Ecohydrology"]]
PROTO_TEAMS = [["Aquatic Observational Systems (AOS)"], ["Terrestrial Observation System (TOS)"],
               ["Airborne Observation Platform (AOP)", "Aquatic Observational Systems (AOS)"]]
PROTO_FILE_TYPES = [["CSV", "PDF", "TXT"], ["CSV"], ["ZIP", "CSV"], ["TXT"]]


class Prototypes:
    def __init__(self, world: World):
        self.world = world

    @cached_property
    def datasets(self) -> dict[str, dict]:
        w = self.world
        out = {}
        sites = sorted(w.sites)
        for i in range(6):
            r = w.rng("proto", i)
            uid = RECORDED_PROTO_UUID if i == 0 else det_uuid(w.seed, "proto", i)
            site = w.sites["BLUE" if i == 0 else sites[r.randrange(len(sites))]]
            year = 2016 if i == 0 else r.randint(2014, 2020)
            title = (f"NEON prototype reaeration data from {site['siteName'].replace(' NEON', '')} "
                     f"({site['siteCode']}), {year}")
            files = []
            for j, (fname, ftype, ext) in enumerate([("Dataset EML", "EML", "xml"), ("Readme", "README", "txt"),
                                                     ("Field data", "DATA", "csv")]):
                file_name = (f"NEON.PROTOTYPE.DATASET.EML.{uid}.xml" if j == 0
                             else f"NEON.PROTOTYPE.{site['siteCode']}.{ftype.lower()}.{year}.{ext}")
                files.append({"name": fname, "description": f"{fname} for the dataset", "fileName": file_name,
                              "type": {"name": ftype, "description": f"{ftype} file"},
                              "_seed": f"proto|{uid}|{file_name}", "_size": r.randint(2_000, 60_000)})
            out[uid] = {
                "uuid": uid, "projectTitle": title,
                "projectDescription": f"This data package includes field data collected at {site['siteCode']}.",
                "designDescription": "Tracer injections were performed at the top of the reach.",
                "metadataDescription": "A readme txt file and variables csv are included with the dataset.",
                "studyAreaDescription": f"The study area is the NEON site {site['siteName']}.",
                "datasetAbstract": f"This data package contains prototype data from {site['siteCode']}.",
                "startYear": year, "endYear": year + (i % 2),
                "dateUploaded": f"2021-02-{r.randint(1, 28):02d}T22:38:29Z", "isPublished": i % 3 == 0,
                "version": "v1", "versionDescription": None,
                "doi": {"url": "https://doi.org/10.48443/" + uid[:4] + "-" + uid[4:8],
                        "generationDate": "2021-05-12T23:18:08Z"},
                "relatedVersions": [],
                "_files": files,
                # Varied across datasets so every search filter has something to tell apart.
                "dataThemes": PROTO_THEMES[i % len(PROTO_THEMES)],
                "fileTypes": [{"name": t, "description": t} for t in PROTO_FILE_TYPES[i % len(PROTO_FILE_TYPES)]],
                "keywords": ["reaeration", "conductivity", site["siteCode"].lower()],
                "locations": [{"domain": site["domainCode"], "state": site["stateCode"], "siteCode": site["siteCode"],
                               "siteName": site["siteName"].replace(" NEON", ""),
                               "latitude": site["siteLatitude"], "longitude": site["siteLongitude"]}],
                "publicationCitations": ([{"citation": f"Doe J. (2021) Reaeration at {site['siteCode']}.",
                                           "doi": "https://doi.org/10.1000/sim." + uid[:8]}] if i == 1 else []),
                "relatedDataProducts": ([{"dataProductCode": "DP1.20190.001", "dataProductIdq": None,
                                          "dataProductName": "Reaeration field and lab collection",
                                          "dataProductDescription": None}] if i == 1 else []),
                "scienceTeams": PROTO_TEAMS[i % len(PROTO_TEAMS)],
            }
        return out
