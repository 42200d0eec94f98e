"""REST routes under /api/v0 in NEON's shapes, plus the signed-URL storage paths."""

from __future__ import annotations

import hashlib
import json
import re
from typing import cast
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from . import documents as docs
from .biodata import brief
from .locations import render_location
from .state import SimState
from .views import Urls, product_json, release_json, site_json

API = "/api/v0"
STORAGE = "/storage/neon-publication"
PROTO_STORAGE = "/storage/neon-publication-proto"
YM = re.compile(r"^\d{4}-\d{2}$")
CONTENT_TYPES = {"csv": "text/csv", "zip": "application/zip", "xml": "application/xml", "txt": "text/plain",
                 "h5": "application/x-hdf5", "tif": "image/tiff", "json": "application/json",
                 "pdf": "application/pdf"}


def dumps(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def ok(data, status: int = 200) -> Response:
    return Response(dumps({"data": data}), status, media_type="application/json")


def err(status: int, detail: str, data=None) -> Response:
    return Response(dumps({"error": {"status": status, "detail": detail}, "data": data}), status,
                    media_type="application/json")


def st(request: Request) -> SimState:
    return request.app.state.sim


def urls_for(request: Request) -> Urls:
    sim = st(request)
    host = request.headers.get("host", "127.0.0.1")
    return Urls(api=f"http://{host}{API}", storage=sim.storage_base or f"http://{host}{STORAGE}")


def bad_release(sim: SimState) -> Response:
    return err(400, "Release not found. See data response element for valid releases.",
               {"validReleases": sim.world.release_tags})


def denied() -> Response:
    return err(403, "Access Denied")


def has_token(request: Request) -> bool:
    return request.scope.get("sim.token") == "valid"


def cached(request: Request, key: tuple, build) -> Response:
    """Big catalog lists are built once per (base URL, view) and then served as bytes."""
    sim = st(request)
    full = (request.headers.get("host"), *key)
    body = sim.body_cache.get(full)
    if body is None:
        body = dumps({"data": build()})
        sim.body_cache[full] = body
    return Response(body, media_type="application/json")


def _release_param(request: Request) -> tuple[str | None, Response | None]:
    tag = request.query_params.get("release")
    if tag and tag not in st(request).world.release_by_key:
        return None, bad_release(st(request))
    return (st(request).world.release_by_key[tag]["release"] if tag else None), None


# --------------------------------------------------------------------------- record faults
MISMATCH_DOI = "https://doi.org/10.48443/sim0-mismatch"


def record_faults(request: Request) -> list:
    """Live doi_mismatch / release_omits faults for this path (params: product, release)."""
    return [f for f in st(request).faults.list()
            if f.kind in ("doi_mismatch", "release_omits") and f.matches(request.url.path)]


def _hits(f, product: str, tag: str) -> bool:
    return f.params.get("product") == product and f.params.get("release", tag) == tag


def _rewrite_release(faults: list, body: dict) -> dict:
    """A release record as the faults see it: a product's DOI replaced, or the product left out."""
    out = []
    for dp in body["dataProducts"]:
        if any(f.kind == "release_omits" and _hits(f, dp["productCode"], body["release"]) for f in faults):
            continue
        if any(f.kind == "doi_mismatch" and _hits(f, dp["productCode"], body["release"]) for f in faults):
            dp = dict(dp, productDoi=MISMATCH_DOI)
        out.append(dp)
    return dict(body, dataProducts=out)


def _rewrite_product(faults: list, body: dict) -> dict:
    """A product record without the releases a release_omits fault names (all when no release)."""
    omit = [f for f in faults if f.kind == "release_omits" and f.params.get("product") == body["productCode"]]
    if not omit:
        return body
    return dict(body, releases=[r for r in body["releases"] if not any(_hits(f, body["productCode"], r["release"])
                                                                       for f in omit)])


# --------------------------------------------------------------------------- catalog
async def products(request: Request) -> Response:
    rel, bad = _release_param(request)
    if bad:
        return bad
    w, u = st(request).world, urls_for(request)
    faults = record_faults(request)
    if faults:
        return ok([_rewrite_product(faults, product_json(w, c, u, rel))
                   for c in w.products if not rel or rel in w.product_releases(c)])
    return cached(request, ("products", rel), lambda: [
        product_json(w, c, u, rel) for c in w.products if not rel or rel in w.product_releases(c)])


async def product(request: Request) -> Response:
    rel, bad = _release_param(request)
    if bad:
        return bad
    code = request.path_params["code"]
    if code not in st(request).world.products:
        return err(400, "Product code not found")
    return ok(_rewrite_product(record_faults(request), product_json(st(request).world, code, urls_for(request), rel)))


async def sites(request: Request) -> Response:
    rel, bad = _release_param(request)
    if bad:
        return bad
    w, u = st(request).world, urls_for(request)
    return cached(request, ("sites", rel), lambda: [site_json(w, s, u, rel) for s in sorted(w.sites)])


async def site(request: Request) -> Response:
    rel, bad = _release_param(request)
    if bad:
        return bad
    code = request.path_params["code"]
    if code not in st(request).world.sites:
        return err(400, "Site code not found")
    return ok(site_json(st(request).world, code, urls_for(request), rel))


def _artifact(request: Request, tag: str) -> dict:
    sim = st(request)
    rel = sim.world.release_by_key[tag]
    name, body = manifest(sim, tag)
    path = f"release/build/{rel['uuid']}/{name}"
    return {"name": name, "type": "MANIFEST_AVAILABLE", "url": sim.sign(urls_for(request).storage, path),
            "size": len(body), "md5": hashlib.md5(body).hexdigest()}


def manifest(sim: SimState, tag: str) -> tuple[str, bytes]:
    rel = sim.world.release_by_key[tag]
    stamp = rel["generationDate"].replace("-", "").replace(":", "")
    name = f"manifest-available-{stamp[:-3]}{int(stamp[-3:-1]) // 2:02d}Z.json"
    key = "manifest|" + tag
    body = sim.files.bytes_cache.get(key)
    if body is None:
        w = sim.world
        items = [{"productCode": c, "sites": {s: w.months_in_release(m, rel["release"])
                                              for s, m in w.availability(c).items()}}
                 for c in w.products if rel["release"] in w.product_releases(c)]
        body = dumps({"release": rel["release"], "products": items})
        sim.files.bytes_cache.put(key, body)
    return name, body


async def releases(request: Request) -> Response:
    w = st(request).world
    faults = record_faults(request)
    return ok([_rewrite_release(faults, release_json(w, r["release"], urls_for(request), _artifact(request, r["release"])))
               for r in w.releases])


async def release(request: Request) -> Response:
    w = st(request).world
    rid = request.path_params["rid"]
    if rid not in w.release_by_key:
        return bad_release(st(request))
    tag = w.release_by_key[rid]["release"]
    return ok(_rewrite_release(record_faults(request), release_json(w, tag, urls_for(request), _artifact(request, tag))))


def _tag(request: Request) -> tuple[str | None, Response | None]:
    tag = request.path_params["tag"]
    if tag not in st(request).world.release_tags:
        return None, bad_release(st(request))
    return tag, None


async def release_products(request: Request) -> Response:
    tag, bad = _tag(request)
    if bad:
        return bad
    w, u = st(request).world, urls_for(request)
    return cached(request, ("rel-products", tag), lambda: [
        product_json(w, c, u, tag, via_release_path=True) for c in w.products if tag in w.product_releases(c)])


async def release_product(request: Request) -> Response:
    tag, bad = _tag(request)
    if bad:
        return bad
    code = request.path_params["code"]
    if code not in st(request).world.products:
        return err(400, "Product code not found")
    return ok(product_json(st(request).world, code, urls_for(request), tag, via_release_path=True))


async def release_sites(request: Request) -> Response:
    tag, bad = _tag(request)
    if bad:
        return bad
    w, u = st(request).world, urls_for(request)
    return cached(request, ("rel-sites", tag),
                  lambda: [site_json(w, s, u, tag, via_release_path=True) for s in sorted(w.sites)])


async def release_site(request: Request) -> Response:
    tag, bad = _tag(request)
    if bad:
        return bad
    code = request.path_params["code"]
    if code not in st(request).world.sites:
        return err(400, "Site code not found")
    return ok(site_json(st(request).world, code, urls_for(request), tag, via_release_path=True))


# --------------------------------------------------------------------------- locations
def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "").lower() == "true"


async def locations_sites(request: Request) -> Response:
    sim = st(request)
    api = urls_for(request).api
    locs = sim.locations
    # Locations builds a node for every world site up front, so get() finds each of them.
    return cached(request, ("locations-sites",),
                  lambda: [render_location(locs, cast(dict, locs.get(s)), api) for s in sorted(sim.world.sites)])


async def location(request: Request) -> Response:
    locs = st(request).locations
    node = locs.get(request.path_params["name"])
    if node is None:
        return err(400, "Location not found.")
    return ok(render_location(locs, node, urls_for(request).api, hierarchy=_flag(request, "hierarchy"),
                              location_type=request.query_params.get("locationType") or None,
                              history=_flag(request, "history")))


# --------------------------------------------------------------------------- data
def _check_psm(request: Request, code: str, site: str, ym: str) -> Response | None:
    w = st(request).world
    if code not in w.products:
        return err(400, "Product code not found")
    if site not in w.sites:
        return err(400, "Site code not found")
    if not YM.match(ym):
        return err(400, "Invalid year-month format, expected YYYY-MM")
    return None


def _file_record(sim: SimState, u: Urls, spec, with_crc32: bool = True) -> dict:
    size, md5, crc32c = sim.files.meta(spec)
    rec = {"name": spec.name, "size": size, "md5": md5}
    if with_crc32:
        rec["crc32"] = None
    rec["crc32c"] = crc32c
    rec["url"] = sim.sign(u.storage, spec.path)
    return rec


def _data_target(request: Request):
    """Resolve (code, site, ym, release-or-None, error) for /data and /releases/{tag}/data routes."""
    p = request.path_params
    code, site, ym = p["code"], p["site"], p["ym"]
    bad = _check_psm(request, code, site, ym)
    if bad:
        return None, bad
    if "tag" in p:
        tag, bad = _tag(request)
    else:
        tag, bad = _release_param(request)
    if bad:
        return None, bad
    served = st(request).world.release_for_month(code, site, ym, tag)
    return (code, site, ym, served, tag), None


async def data_month(request: Request) -> Response:
    if not has_token(request):
        return denied()
    target, bad = _data_target(request)
    if bad:
        return bad
    code, site, ym, served, tag = target
    sim, u = st(request), urls_for(request)
    body = {"productCode": code, "siteCode": site, "month": ym, "release": served,
            "packages": [], "files": [], "externalData": []}
    if served:
        pkgs = ["basic"] + (["expanded"] if sim.world.products[code]["productHasExpanded"] else [])
        prefix = f"{u.api}/releases/{tag}/data/package" if "tag" in request.path_params else f"{u.api}/data/package"
        rel_q = f"&release={tag}" if tag and "tag" not in request.path_params else ""
        body["packages"] = [{"type": k, "url": f"{prefix}/{code}/{site}/{ym}?package={k}{rel_q}"} for k in pkgs]
        for k in pkgs:
            body["files"] += [_file_record(sim, u, f) for f in sim.files.package_files(code, site, ym, k, served)]
    return ok(body)


async def data_file(request: Request) -> Response:
    if not has_token(request):
        return denied()
    target, bad = _data_target(request)
    if bad:
        return bad
    code, site, ym, served, _ = target
    sim, u = st(request), urls_for(request)
    name = request.path_params["filename"]
    if served:
        for k in ("basic", "expanded"):
            for f in sim.files.package_files(code, site, ym, k, served):
                if f.name == name:
                    return RedirectResponse(sim.sign(u.storage, f.path), status_code=302)
    return err(404, "File not found")


async def data_package(request: Request) -> Response:
    if not has_token(request):
        return denied()
    target, bad = _data_target(request)
    if bad:
        return bad
    code, site, ym, served, _ = target
    if not served:
        return err(404, "No data found for the requested site and month")
    sim = st(request)
    package = request.query_params.get("package", "basic")
    if package not in ("basic", "expanded"):
        return err(400, "Invalid package type, expected basic or expanded")
    name, body = sim.files.package_zip(code, site, ym, package, served)
    headers = {"content-disposition": f'inline; filename="{name}"'}
    if request.method == "HEAD":
        headers["content-length"] = str(len(body))
        return Response(b"", media_type="application/zip", headers=headers)
    return Response(body, media_type="application/zip", headers=headers)


async def data_query(request: Request) -> Response:
    if not has_token(request):
        return denied()
    sim, u = st(request), urls_for(request)
    w = sim.world
    if request.method == "POST":
        try:
            q = json.loads(await request.body() or b"{}")
        except ValueError:
            return err(400, "Malformed request body")
        sites_req = q.get("siteCodes") or []
    else:
        q = dict(request.query_params)
        sites_req = request.query_params.getlist("siteCode") or request.query_params.getlist("siteCodes")
    code = q.get("productCode")
    start, end = q.get("startDateMonth"), q.get("endDateMonth")
    if not code or not sites_req or not start or not end:
        return err(400, "productCode, siteCodes, startDateMonth and endDateMonth are required")
    if code not in w.products:
        return err(400, "Product code not found")
    for s in sites_req:
        if s not in w.sites:
            return err(400, "Site code not found")
    tag = q.get("release") or None
    if tag and tag not in w.release_tags:
        return bad_release(sim)
    package = q.get("package") or "basic"
    raw = q.get("includeProvisional")
    include_prov = raw.lower() == "true" if isinstance(raw, str) else bool(raw)
    blocks: dict[str, list] = {}
    for s in sites_req:
        for ym in w.availability(code).get(s, []):
            if not (start <= ym <= end):
                continue
            served = w.release_for_month(code, s, ym, tag)
            if not served or (served == "PROVISIONAL" and not include_prov):
                continue
            gt = sim.files.gentime(code, s, ym, served)
            blocks.setdefault(served, []).append({
                "domainCode": w.sites[s]["domainCode"], "siteCode": s, "month": ym, "packageType": package,
                "generationDate": f"{gt[:4]}-{gt[4:6]}-{gt[6:8]}T{gt[9:11]}:{gt[11:13]}:{gt[13:15]}Z",
                "files": [_file_record(sim, u, f, with_crc32=False)
                          for f in sim.files.package_files(code, s, ym, package, served)],
            })
    rels = []
    for t in sorted(blocks, key=lambda x: (x == "PROVISIONAL", x)):
        gen = None if t == "PROVISIONAL" else w.release_by_key[t]["generationDate"]
        rels.append({"release": t, "generationDate": gen, "packages": blocks[t]})
    return ok({"productCode": code, "siteCodes": sites_req, "startDate": f"{start}-01T00:00:00Z",
               "endDate": f"{end}-{_last_day(end):02d}T23:59:59Z", "packageType": package, "releases": rels})


def _last_day(ym: str) -> int:
    import calendar
    return calendar.monthrange(int(ym[:4]), int(ym[5:]))[1]


# --------------------------------------------------------------------------- taxonomy, samples
async def taxonomy(request: Request) -> Response:
    sim = st(request)
    qp = request.query_params
    ranks = [k for k in ("kingdom", "phylum", "division", "class", "order", "family", "genus") if qp.get(k)]
    if qp.get("taxonTypeCode") and ranks:
        return err(400, "Taxon type code and taxon rank parameters must not both be specified")
    code = qp.get("taxonTypeCode")
    if code and code not in _codes():
        return err(400, f"Invalid taxon type code: {code}")
    try:
        offset = max(0, int(qp.get("offset", 0)))
        limit = max(1, int(qp.get("limit", 100)))
    except ValueError:
        return err(400, "offset and limit must be integers")
    verbose = qp.get("verbose", "false").lower() == "true"
    rows, total = sim.taxonomy.query(dict(qp))
    page = rows[offset: offset + limit]
    base = [(k, v) for k, v in qp.multi_items() if k not in ("offset", "limit", "verbose")]
    base.append(("verbose", "true" if verbose else "false"))

    def link(off: int) -> str:
        return f"{urls_for(request).api}/taxonomy?" + urlencode([*base, ("offset", off), ("limit", limit)])

    body = {"count": len(page), "total": total,
            "prev": link(max(0, offset - limit)) if offset > 0 else None,
            "next": link(offset + limit) if offset + limit < total else None,
            "data": [brief(x, verbose) for x in page]}
    return Response(dumps(body), media_type="application/json")


def _codes() -> tuple[str, ...]:
    from . import refdata
    return refdata.taxon_type_codes()


async def supported_classes(request: Request) -> Response:
    return ok({"entries": st(request).samples.supported})


def _no_classes(tag: str) -> Response:
    return err(404, f"Request replied with status: 404\nError response: No Sample Classes Found for Sample Tag: "
                    f"[{tag}]\n Status: Request failed with code 404")


async def sample_classes(request: Request) -> Response:
    tag = request.query_params.get("sampleTag")
    if not tag:
        return err(400, "sampleTag is required")
    classes = st(request).samples.classes_for_tag(tag)
    return ok({"sampleClasses": classes}) if classes else _no_classes(tag)


def _find_samples(request: Request) -> tuple[list, Response | None]:
    qp = dict(request.query_params)
    if not any(qp.get(k) for k in ("sampleTag", "sampleUuid", "barcode", "archiveGuid")):
        return [], err(400, "One of sampleTag, sampleUuid, barcode or archiveGuid is required")
    hits = st(request).samples.find(qp)
    if not hits:
        return [], err(404, "Request replied with status: 404\nError response: No Samples Found\n"
                            " Status: Request failed with code 404")
    return hits, None


async def sample_view(request: Request) -> Response:
    if not has_token(request):
        return denied()
    hits, bad = _find_samples(request)
    if bad:
        return bad
    return ok({"sampleViews": [st(request).samples.view(s) for s in hits]})


async def sample_download(request: Request) -> Response:
    if not has_token(request):
        return denied()
    hits, bad = _find_samples(request)
    if bad:
        return bad
    try:
        degree = int(request.query_params.get("degree", 1))
    except ValueError:
        return err(400, "degree must be an integer")
    views, seen = [], set()
    for s in hits:
        for v in st(request).samples.download(s, degree):
            if v["sampleUuid"] not in seen:
                seen.add(v["sampleUuid"])
                views.append(v)
    return ok({"sampleViews": views})


# --------------------------------------------------------------------------- prototype, documents
def proto_files(sim: SimState, u: Urls, ds: dict, with_url: bool) -> list[dict]:
    out = []
    proto_base = u.storage.replace("/neon-publication", "/neon-publication-proto")
    for f in ds["_files"]:
        body = proto_bytes(f)
        rec = {"name": f["name"], "description": f["description"], "size": len(body), "fileName": f["fileName"],
               "md5": hashlib.md5(body).hexdigest(), "type": f["type"]}
        if with_url:
            rec["url"] = sim.sign(proto_base, f"datasets/{ds['uuid']}/{f['fileName']}")
        out.append(rec)
    return out


def proto_bytes(f: dict) -> bytes:
    import random
    r = random.Random(f["_seed"])
    lines = [f"# {f['fileName']}"] + [f"{i},{r.random():.6f},{r.randint(0, 999)}" for i in range(f["_size"] // 20)]
    return ("\n".join(lines) + "\n").encode()


def proto_dataset_json(sim: SimState, u: Urls, ds: dict) -> dict:
    out = {k: v for k, v in ds.items() if not k.startswith("_")}
    data = {"url": f"{u.api}/prototype/data/{ds['uuid']}", "files": proto_files(sim, u, ds, False),
            "dataLocations": []}
    ordered = {}
    for k, v in out.items():
        ordered[k] = v
        if k == "relatedVersions":
            ordered["data"] = data
    return ordered


async def prototype_datasets(request: Request) -> Response:
    sim, u = st(request), urls_for(request)
    return ok([proto_dataset_json(sim, u, ds) for ds in sim.prototypes.datasets.values()])


async def prototype_dataset(request: Request) -> Response:
    sim = st(request)
    ds = sim.prototypes.datasets.get(request.path_params["uuid"])
    if ds is None:
        return err(400, "Prototype dataset not found")
    return ok(proto_dataset_json(sim, urls_for(request), ds))


async def prototype_data(request: Request) -> Response:
    sim, u = st(request), urls_for(request)
    ds = sim.prototypes.datasets.get(request.path_params["uuid"])
    if ds is None:
        return err(400, "Prototype dataset not found")
    return ok({"datasetUuid": ds["uuid"], "datasetProjectTitle": ds["projectTitle"],
               "files": proto_files(sim, u, ds, True), "dataLocations": []})


async def prototype_file(request: Request) -> Response:
    sim, u = st(request), urls_for(request)
    ds = sim.prototypes.datasets.get(request.path_params["uuid"])
    if ds is None:
        return err(400, "Prototype dataset not found")
    for rec in proto_files(sim, u, ds, True):
        if rec["fileName"] == request.path_params["filename"]:
            return RedirectResponse(rec["url"], status_code=302)
    return err(404, "File not found")


async def _special_document(request: Request, number: str) -> Response | None:
    head = request.method == "HEAD"
    disp = {"content-disposition": f'attachment; filename="{number}.pdf"'}
    if number == docs.ELSEWHERE:
        return RedirectResponse(urls_for(request).storage + "/documents/elsewhere.pdf", status_code=302)
    if number in (docs.DAMAGED, docs.NOT_PDF):
        body = docs.damaged_pdf() if number == docs.DAMAGED else docs.not_pdf()
        ctype = "application/pdf" if number == docs.DAMAGED else "text/plain"
        if number == docs.NOT_PDF:
            disp = {"content-disposition": f'attachment; filename="{number}.txt"'}
        if head:
            return Response(b"", media_type=ctype, headers={**disp, "content-length": str(len(body))})
        return Response(body, media_type=ctype, headers=disp)
    if number in (docs.HUGE, docs.HUGE_CHUNKED, docs.LYING):
        declared = {docs.HUGE: str(docs.HUGE_BYTES), docs.LYING: "4096"}.get(number) if head or number == docs.HUGE \
            else None
        headers = {**disp, **({"content-length": declared} if declared else {})}
        if head:
            return Response(b"", media_type="application/pdf", headers=headers)
        return StreamingResponse(docs.huge_stream(), media_type="application/pdf", headers=headers)
    return None


async def document(request: Request) -> Response:
    number = request.path_params["spec"]
    special = await _special_document(request, number)
    if special is not None:
        return special
    body = st(request).documents.pdf(number)
    if body is None:
        return err(404, "Document not found")
    headers = {"content-disposition": f'attachment; filename="{number}.pdf"'}
    if request.method == "HEAD":
        headers["content-length"] = str(len(body))
        return Response(b"", media_type="application/pdf", headers=headers)
    return Response(body, media_type="application/pdf", headers=headers)


def routes() -> list[Route]:
    g = ["GET"]
    return [
        Route(f"{API}/products", products, methods=g),
        Route(f"{API}/products/{{code}}", product, methods=g),
        Route(f"{API}/sites", sites, methods=g),
        Route(f"{API}/sites/{{code}}", site, methods=g),
        Route(f"{API}/locations/sites", locations_sites, methods=g),
        Route(f"{API}/locations/{{name}}", location, methods=g),
        Route(f"{API}/releases", releases, methods=g),
        Route(f"{API}/releases/{{rid}}", release, methods=g),
        Route(f"{API}/releases/{{tag}}/products", release_products, methods=g),
        Route(f"{API}/releases/{{tag}}/products/{{code}}", release_product, methods=g),
        Route(f"{API}/releases/{{tag}}/sites", release_sites, methods=g),
        Route(f"{API}/releases/{{tag}}/sites/{{code}}", release_site, methods=g),
        Route(f"{API}/releases/{{tag}}/data/package/{{code}}/{{site}}/{{ym}}", data_package, methods=g),
        Route(f"{API}/releases/{{tag}}/data/{{code}}/{{site}}/{{ym}}", data_month, methods=g),
        Route(f"{API}/releases/{{tag}}/data/{{code}}/{{site}}/{{ym}}/{{filename}}", data_file, methods=g),
        Route(f"{API}/data/query", data_query, methods=["GET", "POST"]),
        Route(f"{API}/data/package/{{code}}/{{site}}/{{ym}}", data_package, methods=g),
        Route(f"{API}/data/{{code}}/{{site}}/{{ym}}", data_month, methods=g),
        Route(f"{API}/data/{{code}}/{{site}}/{{ym}}/{{filename}}", data_file, methods=g),
        Route(f"{API}/taxonomy", taxonomy, methods=g),
        Route(f"{API}/samples/supportedClasses", supported_classes, methods=g),
        Route(f"{API}/samples/classes", sample_classes, methods=g),
        Route(f"{API}/samples/view", sample_view, methods=g),
        Route(f"{API}/samples/download", sample_download, methods=g),
        Route(f"{API}/prototype/datasets", prototype_datasets, methods=g),
        Route(f"{API}/prototype/datasets/{{uuid}}", prototype_dataset, methods=g),
        Route(f"{API}/prototype/data/{{uuid}}", prototype_data, methods=g),
        Route(f"{API}/prototype/data/{{uuid}}/{{filename}}", prototype_file, methods=g),
        Route(f"{API}/documents/{{spec}}", document, methods=g),
    ]
