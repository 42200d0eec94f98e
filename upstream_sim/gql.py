"""GraphQL at /graphql: NEON's schema (SDL) executed by graphql-core over the simulated world,
with errors rewritten into the graphql-java shapes NEON returns."""

from __future__ import annotations

import json
from functools import lru_cache

from graphql import (
    ExecutionResult,
    GraphQLError,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    build_schema,
    execute,
    parse,
    validate,
    visit,
)
from graphql.language import get_location
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import refdata
from .locations import render_location
from .rest import proto_dataset_json, proto_files, urls_for
from .views import Urls, product_json, site_json


@lru_cache(maxsize=1)
def schema():
    s = build_schema(refdata.graphql_sdl())
    s.type_map["DataProductSpec"].fields["specSize"].resolve = lambda src, _i: (
        None if src.get("specSize") is None else str(src["specSize"]))
    s.type_map["PrototypeDataFile"].fields["fileSize"].resolve = lambda src, _i: src.get("size")
    return s


class Lazy(dict):
    """A dict whose expensive keys are computed only if a query selects them."""

    def __init__(self, base: dict, **later):
        super().__init__(base)
        self._later = later

    def get(self, key, default=None):
        if key in self._later and not dict.__contains__(self, key):
            self[key] = self._later.pop(key)()
        return dict.get(self, key, default)


class NotFound(Exception):
    pass


def _window(months: list[str], start: str | None, end: str | None) -> list[str]:
    return [m for m in months if (not start or m >= start) and (not end or m <= end)]


class Resolvers:
    def __init__(self, sim, urls: Urls):
        self.sim, self.urls, self.w = sim, urls, sim.world

    def _release(self, release: str | None) -> str | None:
        if release is None:
            return None
        if release not in self.w.release_tags:
            raise NotFound("Release not found")
        return release

    def _product(self, code: str, release: str | None) -> Lazy:
        base = {k: v for k, v in self.w.products[code].items() if not k.startswith("_")}
        full = lambda: product_json(self.w, code, self.urls, release)  # noqa: E731
        return Lazy(base, releases=lambda: full()["releases"], siteCodes=lambda: full()["siteCodes"])

    def _site(self, code: str, release: str | None) -> Lazy:
        base = {k: v for k, v in self.w.sites[code].items() if not k.startswith("_")}
        full = lambda: site_json(self.w, code, self.urls, release)  # noqa: E731
        return Lazy(base, releases=lambda: full()["releases"], dataProducts=lambda: full()["dataProducts"])

    def products(self, _info, release=None):
        rel = self._release(release)
        return [self._product(c, rel) for c in self.w.products if not rel or rel in self.w.product_releases(c)]

    def product(self, _info, productCode, release=None):
        rel = self._release(release)
        if productCode not in self.w.products:
            raise NotFound("Product code not found")
        return self._product(productCode, rel)

    def demoProduct(self, info, productCode):
        return self.product(info, productCode)

    def filterProducts(self, _info, filter):
        rel = self._release(filter.get("release"))
        start, end, want_sites = filter.get("startMonth"), filter.get("endMonth"), filter.get("siteCodes")
        out = []
        for code in filter["productCodes"]:
            if code not in self.w.products:
                continue
            body = product_json(self.w, code, self.urls, rel)
            keep = []
            for sc in body["siteCodes"]:
                if want_sites and sc["siteCode"] not in want_sites:
                    continue
                months = _window(sc["availableMonths"], start, end)
                if not months:
                    continue
                urls = [u for u, m in zip(sc["availableDataUrls"], sc["availableMonths"], strict=False) if m in months]
                keep.append(dict(sc, availableMonths=months, availableDataUrls=urls))
            body["siteCodes"] = keep
            out.append(body)
        return out

    def sites(self, _info, release=None):
        rel = self._release(release)
        return [self._site(s, rel) for s in sorted(self.w.sites)]

    def site(self, _info, siteCode, release=None):
        rel = self._release(release)
        if siteCode not in self.w.sites:
            raise NotFound("Site code not found")
        return self._site(siteCode, rel)

    def filterSites(self, _info, filter):
        rel = self._release(filter.get("release"))
        start, end, want = filter.get("startMonth"), filter.get("endMonth"), filter.get("productCodes")
        out = []
        for code in filter["siteCodes"]:
            if code not in self.w.sites:
                continue
            body = site_json(self.w, code, self.urls, rel)
            keep = []
            for dp in body["dataProducts"]:
                if want and dp["dataProductCode"] not in want:
                    continue
                months = _window(dp["availableMonths"], start, end)
                if not months:
                    continue
                urls = [u for u, m in zip(dp["availableDataUrls"], dp["availableMonths"], strict=False) if m in months]
                keep.append(dict(dp, availableMonths=months, availableDataUrls=urls))
            body["dataProducts"] = keep
            out.append(body)
        return out

    def _loc(self, name, **kw):
        locs = self.sim.locations
        node = locs.get(name)
        if node is None:
            raise NotFound("Location not found.")
        return render_location(locs, node, self.urls.api, **kw)

    def location(self, _info, name):
        return self._loc(name, history=True)

    def locationHierarchy(self, _info, name, locationType=None):
        return self._loc(name, hierarchy=True, location_type=locationType)

    def findLocations(self, _info, query):
        names = query["locationNames"]
        if len(names) > 1000:
            raise NotFound("The maximum allowable number of locations for a single request is 1000.")
        locs = self.sim.locations
        return [render_location(locs, n, self.urls.api) for n in (locs.get(x) for x in names) if n]

    def _proto(self, ds):
        body = proto_dataset_json(self.sim, self.urls, ds)
        body["data"]["files"] = proto_files(self.sim, self.urls, ds, True)
        return body

    def prototypeDatasets(self, _info):
        return [self._proto(ds) for ds in self.sim.prototypes.datasets.values()]

    def prototypeDataset(self, _info, uuid):
        ds = self.sim.prototypes.datasets.get(uuid)
        if ds is None:
            raise NotFound("Prototype dataset not found")
        return self._proto(ds)

    def root(self) -> dict:
        names = ("products", "product", "demoProduct", "filterProducts", "sites", "site", "filterSites", "location",
                 "locationHierarchy", "findLocations", "prototypeDatasets", "prototypeDataset")
        return {n: getattr(self, n) for n in names}


def _loc_json(node) -> list[dict]:
    if node.loc is None:
        return []
    where = get_location(node.loc.source, node.loc.start)
    return [{"line": where.line, "column": where.column}]


class _UndefinedFields(Visitor):
    """Finds unknown fields with their path, which graphql-java prints as FieldUndefined@[a/b]."""

    def __init__(self, type_info: TypeInfo):
        super().__init__()
        self.ti = type_info
        self.stack: list[str] = []
        self.errors: list[dict] = []

    def enter_field(self, node, *_):
        name = node.name.value
        self.stack.append(name)
        parent = self.ti.get_parent_type()
        if parent is not None and self.ti.get_field_def() is None and not name.startswith("__"):
            path = "/".join(self.stack)
            self.errors.append({
                "message": f"Validation error (FieldUndefined@[{path}]) : Field '{name}' in type "
                           f"'{parent.name}' is undefined",
                "locations": _loc_json(node), "extensions": {"classification": "ValidationError"}})

    def leave_field(self, *_):
        self.stack.pop()


def _classify(msg: str) -> str:
    for needle, kind in (("Unknown argument", "UnknownArgument"), ("required", "MissingFieldArgument"),
                         ("Unknown type", "UnknownType"), ("Expected value", "WrongType"),
                         ("cannot represent", "WrongType"), ("must have a selection", "SubselectionRequired"),
                         ("must not have a selection", "SubselectionNotAllowed"),
                         ("Variable", "VariableTypeMismatch")):
        if needle in msg:
            return kind
    return "ValidationError"


def _validation_errors(doc) -> list[dict]:
    ti = TypeInfo(schema())
    finder = _UndefinedFields(ti)
    visit(doc, TypeInfoVisitor(ti, finder))
    errors = finder.errors
    intro = sum(1 for d in doc.definitions for _ in _introspection_fields(d))
    if intro > 1:
        errors.append({"message": "This request is not asking for introspection in good faith - "
                                  "__schema or __type is present more than once",
                       "locations": [], "extensions": {"classification": "BadFaithIntrospection"}})
    if errors:
        return errors
    for e in validate(schema(), doc):
        if e.message.startswith("Cannot query field"):
            continue
        locs = [{"line": loc.line, "column": loc.column} for loc in (e.locations or [])]
        errors.append({"message": f"Validation error ({_classify(e.message)}) : {e.message}",
                       "locations": locs, "extensions": {"classification": "ValidationError"}})
    return errors


def _introspection_fields(definition):
    sel = getattr(definition, "selection_set", None)
    for f in (sel.selections if sel else []):
        if getattr(f, "name", None) and f.name.value in ("__schema", "__type"):
            yield f


def _exec_error(e: GraphQLError) -> dict:
    path = "/" + "/".join(str(p) for p in (e.path or []))
    cause = e.original_error
    text = str(cause) if isinstance(cause, NotFound) else e.message
    out = {"message": f"Exception while fetching data ({path}) : {text}",
           "locations": [{"line": loc.line, "column": loc.column} for loc in (e.locations or [])],
           "path": list(e.path or []), "extensions": {"classification": "DataFetchingException"}}
    return out


def run_query(sim, urls: Urls, query: str, variables: dict | None, operation: str | None) -> dict:
    try:
        doc = parse(query)
    except GraphQLError as e:
        locs = [{"line": loc.line, "column": loc.column} for loc in (e.locations or [])]
        return {"errors": [{"message": f"Invalid Syntax : {e.message}", "locations": locs,
                            "extensions": {"classification": "InvalidSyntax"}}]}
    errors = _validation_errors(doc)
    if errors:
        return {"errors": errors}
    result = execute(schema(), doc, root_value=Resolvers(sim, urls).root(), variable_values=variables,
                     operation_name=operation)
    if not isinstance(result, ExecutionResult):  # an awaitable: only async resolvers produce one
        raise RuntimeError("the simulator's GraphQL schema must resolve synchronously")
    out: dict = {}
    if result.errors:
        out["errors"] = [_exec_error(e) for e in result.errors]
    out["data"] = result.data
    return out


async def graphql_endpoint(request: Request) -> Response:
    sim = request.app.state.sim
    if request.method == "GET":
        q = request.query_params
        payload = {"query": q.get("query", ""), "variables": json.loads(q.get("variables") or "null"),
                   "operationName": q.get("operationName")}
    else:
        try:
            payload = json.loads(await request.body() or b"{}")
        except ValueError:
            return Response(json.dumps({"errors": [{"message": "Invalid JSON body", "locations": [],
                                                    "extensions": {"classification": "InvalidSyntax"}}]}),
                            400, media_type="application/json")
    body = run_query(sim, urls_for(request), payload.get("query") or "", payload.get("variables"),
                     payload.get("operationName") or None)
    return Response(json.dumps(body, separators=(",", ":")), media_type="application/json")


def routes() -> list[Route]:
    return [Route("/graphql", graphql_endpoint, methods=["GET", "POST"])]
