"""Resources and resource templates, declared as specs; the protocol handlers live in server.py.

    eco://guide/*                 Markdown files in mcp_gateway/guides/, served through `render_guide`:
                                  a block fenced by `<!-- if eco_tool ... -->` / `<!-- end -->` is kept
                                  only while every tool it names is registered, so a guide never
                                  sends an agent to a tool this server lacks
    eco://reference/vocabularies  filter values read from the live catalog and the tools' own schemas
    eco://reference/graphql-schema  the schema eco_graphql validates against
    eco://reference/sites, /releases  derived from the catalog (no upstream request once warm)
    eco://products/{productCode}  the eco_get_product result, through the tool pipeline itself
    eco://sites/{siteCode}        the eco_get_site result (products section)
    eco://releases/{release}      the eco_get_release result; listed only while that tool is registered

An unknown URI or code is the spec's JSON-RPC -32602 with data.code not_found and data.didYouMean.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from importlib import resources as pkg_resources
from typing import Any, Literal

import mcp_types as types
from django.db.models import Count
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from catalog.access import catalog_index, catalog_read
from catalog.index import CatalogIndex
from catalog.location_trees import stored_trees
from catalog.models import LocationNodeRow, LocationRow
from catalog.outage import DATABASE_DOWN
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.calls import database_unavailable, execute
from mcp_gateway.registry import Registry
from upstream.context import call_scope

STATIC_TTL_MS = 24 * 3600 * 1000
DERIVED_TTL_MS = 3600 * 1000
JSON = "application/json"


@dataclass(frozen=True)
class ReadScope:
    """What a read may use: the server's configuration and registry, and a fresh tool-call
    context (with the caller's token choice) for templates that run a tool."""

    cfg: EcoConfig
    registry: Registry
    transport: Literal["stdio", "http"]
    new_call: Callable[[], CallContext]
    token: str | None = None


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    description: str
    read: Callable[[ReadScope], Awaitable[str]]
    mime_type: str = "text/markdown"
    ttl_ms: int = STATIC_TTL_MS
    tool: str | None = None  # the tool the resource describes; listed only while it is registered

    def resource(self) -> types.Resource:
        return types.Resource(uri=self.uri, name=self.name, description=self.description, mime_type=self.mime_type)

    async def fetch(self, scope: ReadScope) -> str:
        try:
            try:
                return await self.read(scope)
            except DATABASE_DOWN as down:
                raise await database_unavailable(down) from None
        except EcoError as exc:
            # A catalog that cannot be built is the server's trouble, not a bad URI.
            raise MCPError(code=INTERNAL_ERROR, message=exc.message,
                           data={"code": exc.code, "uri": self.uri, "hint": exc.hint}) from exc


@dataclass(frozen=True)
class TemplateSpec:
    uri_template: str  # e.g. eco://products/{productCode}
    name: str
    description: str
    tool: str  # the tool whose result the template reads as; listed only while it is registered
    argument: str  # that tool's input the template variable fills
    mime_type: str = JSON
    ttl_ms: int = DERIVED_TTL_MS

    def template(self) -> types.ResourceTemplate:
        return types.ResourceTemplate(
            uri_template=self.uri_template, name=self.name, description=self.description, mime_type=self.mime_type
        )

    @property
    def variable(self) -> str:
        found = re.search(r"\{(\w+)\}", self.uri_template)
        assert found is not None, self.uri_template
        return found.group(1)

    def match(self, uri: str) -> dict[str, str] | None:
        pattern = re.escape(self.uri_template)
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern)
        m = re.fullmatch(pattern, uri)
        return m.groupdict() if m else None

    async def read(self, values: dict[str, str], scope: ReadScope) -> str:
        """The tool's structuredContent for the code, as JSON: the same pipeline as tools/call
        (argument parsing, envelope, byte budget), so the two can never disagree."""
        uri = self.uri_template.replace("{" + self.variable + "}", values[self.variable])
        spec = scope.registry.get(self.tool)
        if spec is None:
            raise unknown_uri(uri, [])
        result = await execute(spec, {self.argument: values[self.variable]}, scope.new_call(), token=scope.token)
        if not isinstance(result, types.CallToolResult):
            raise MCPError(code=INTERNAL_ERROR, message=f"{self.tool} asked a question a resource read cannot answer")
        body = result.structured_content or {}
        if result.is_error:
            raise _read_error(uri, body.get("error", {}))
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def _read_error(uri: str, err: dict[str, Any]) -> MCPError:
    code = err.get("code", "internal_error")
    details = err.get("details") or {}
    if code in ("not_found", "invalid_argument", "ambiguous_input"):
        near = details.get("didYouMean") or details.get("validReleases") or details.get("candidates") or []
        # A template variable takes a code: suggestions are codes already, candidates objects holding one.
        near = [c if isinstance(c, str) else str(c.get("code") or c.get("productCode") or c.get("siteCode") or c)
                for c in near]
        return MCPError(code=INVALID_PARAMS, message=err.get("message", f"Unknown resource: {uri}"),
                        data={"code": code, "uri": uri, "didYouMean": near[:10]})
    return MCPError(code=INTERNAL_ERROR, message=err.get("message", "the read failed"),
                    data={"code": code, "uri": uri, "hint": err.get("hint")})


def unknown_uri(uri: str, known: list[str]) -> MCPError:
    from rapidfuzz import process  # loaded by the first unknown address, as in arguments

    near = [m[0] for m in process.extract(uri, known, limit=3, score_cutoff=50)] if known else []
    return MCPError(
        code=INVALID_PARAMS,
        message=f"Unknown resource: {uri}",
        data={"code": "not_found", "uri": uri, "didYouMean": near},
    )


# --- guides -------------------------------------------------------------------------------------

_IF = re.compile(r"^<!--\s*if\s+([\w\s]+?)\s*-->\s*$")
_END = re.compile(r"^<!--\s*end\s*-->\s*$")


def guide_source(slug: str) -> str:
    return pkg_resources.files("mcp_gateway").joinpath("guides", f"{slug}.md").read_text(encoding="utf-8")


def render_guide(text: str, tools: Iterable[str]) -> str:
    """Drop the blocks about tools that are not registered; blocks do not nest."""
    have = set(tools)
    out: list[str] = []
    keep = True
    inside = False
    for line in text.splitlines():
        opened = _IF.match(line)
        if opened:
            if inside:
                raise ValueError(f"guide blocks do not nest: {line!r}")
            inside, keep = True, set(opened.group(1).split()) <= have
            continue
        if _END.match(line):
            inside, keep = False, True
            continue
        if keep:
            out.append(line)
    if inside:
        raise ValueError("a guide block is not closed with <!-- end -->")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"


def _guide(slug: str) -> Callable[[ReadScope], Awaitable[str]]:
    async def read(scope: ReadScope) -> str:
        return render_guide(guide_source(slug), scope.registry.names())

    return read


# --- catalog-backed references ------------------------------------------------------------------

async def warm_index(cfg: EcoConfig, need: tuple[str, ...] = ("products", "sites", "releases")) -> CatalogIndex:
    """The catalog index with `need` built; warm, it costs no upstream request. Outside a tool
    call, so the catalog's requests get a call scope of their own to count in."""
    with call_scope(deadline_s=cfg.eco.call_deadline_s):
        return await catalog_index(cfg, ports.upstream_client(), need=need)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def tool_enum(registry: Registry, tool: str, argument: str) -> list[str] | None:
    """The allowed values of a tool's input as its inputSchema declares them (None when the
    tool is not registered or the input takes free text)."""
    spec = registry.get(tool)
    if spec is None:
        return None
    schema = spec.tool.input_schema
    prop = schema.get("properties", {}).get(argument)
    if prop is None:
        return None
    values: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                walk(schema.get("$defs", {}).get(ref.split("/")[-1]))
            for v in node.get("enum", []):
                if isinstance(v, str) and v not in values:
                    values.append(v)
            if isinstance(node.get("const"), str) and node["const"] not in values:
                values.append(node["const"])
            for key in ("anyOf", "oneOf", "allOf"):
                for sub in node.get(key, []):
                    walk(sub)
            walk(node.get("items"))

    walk(prop)
    return values or None


def _location_types(cfg: EcoConfig) -> tuple[list[dict[str, Any]], int]:
    """Every location type the locations catalog and the servable site subtrees hold, with how
    many locations have it, and how many sites' subtrees are stored. A site is in both (a catalog
    SITE row and its subtree's root): each type counts the larger of the two sets, which holds
    the other."""
    counts = dict(LocationRow.objects.order_by().values_list("location_type").annotate(n=Count("id")))
    sites = 0
    if stored_trees(cfg) is not None:
        for kind, n in LocationNodeRow.objects.order_by().values_list("location_type").annotate(n=Count("id")):
            counts[kind] = max(n, counts.get(kind, 0))
        sites = LocationNodeRow.objects.filter(depth=0).count()
    return [{"locationType": k, "count": n} for k, n in sorted(counts.items()) if k], sites


async def vocabularies(scope: ReadScope) -> str:
    idx = await warm_index(scope.cfg)
    reg = scope.registry
    themes = sorted({t for p in idx.products for t in p.themes})
    teams = sorted({p.team_abbr for p in idx.products if p.team_abbr})
    releases = sorted((r.tag for r in idx.releases), reverse=True)
    location_types, walked = await catalog_read(_location_types, scope.cfg)
    out: dict[str, Any] = {
        "themes": themes,
        "scienceTeams": teams,
        "productStatuses": tool_enum(reg, "eco_search_products", "status"),
        "domains": [{"domainCode": c, "domainName": n} for c, n in sorted(idx.domains.items())],
        "siteTypes": sorted({s.site_type for s in idx.sites}),
        "stateCodes": sorted({s.state_code for s in idx.sites}),
        "releases": releases,
        "latestRelease": releases[0] if releases else None,
        "locationTypes": location_types,
        "taxonTypes": tool_enum(reg, "eco_search_taxonomy", "taxon_type_code"),
        "fileKinds": tool_enum(reg, "eco_list_files", "kind"),
        "packages": tool_enum(reg, "eco_list_files", "package"),
    }
    missing = sorted(k for k, v in out.items() if v is None)
    out["notes"] = [f"Not offered by this server yet (its tool is not registered): {', '.join(missing)}."] if missing else []
    out["locationTypesNote"] = (
        f"Types of the catalogued locations (realm, domains, sites) and of the {walked} stored site subtrees "
        "(towers, plots, ...), each with its count of locations; a site not yet walked may hold other types. "
        "Type matching is case-insensitive.")
    return _dump(out)


async def sites_reference(scope: ReadScope) -> str:
    idx = await warm_index(scope.cfg, ("sites",))
    sites = [
        {"siteCode": s.code, "siteName": s.name, "siteType": s.site_type, "domainCode": s.domain_code,
         "domainName": s.domain_name, "stateCode": s.state_code, "stateName": s.state_name,
         "latitude": s.latitude, "longitude": s.longitude}
        for s in sorted(idx.sites, key=lambda s: s.code)
    ]
    return _dump({"count": len(sites), "sites": sites})


async def releases_reference(scope: ReadScope) -> str:
    idx = await warm_index(scope.cfg, ("releases",))
    rows = sorted(idx.releases, key=lambda r: r.tag, reverse=True)
    releases = [
        {"release": r.tag, "uuid": r.uuid or None,
         "generationDate": r.generation_date.isoformat() if r.generation_date else None,
         "productCount": r.product_count}
        for r in rows
    ]
    return _dump({"latestRelease": releases[0]["release"] if releases else None, "count": len(releases),
                  "releases": releases,
                  "note": "PROVISIONAL is not a release: data newer than the latest release is provisional "
                          "and may change."})


async def graphql_schema(scope: ReadScope) -> str:
    """Root fields, inputs and object fields reachable from what eco_graphql allows, from the very
    schema it validates queries against."""
    from graphql import GraphQLInputObjectType, GraphQLObjectType, get_named_type

    from upstream.graphql_window import window_schema

    ws = window_schema()
    query_type = ws.schema.query_type
    assert query_type is not None
    roots, objects, inputs = [], {}, {}
    todo: list[Any] = []

    def args_of(fdef: Any) -> list[dict[str, Any]]:
        out = []
        for aname, arg in fdef.args.items():
            out.append({"name": aname, "type": str(arg.type)})
            todo.append(get_named_type(arg.type))
        return out

    for name in ws.root_fields:
        fdef = query_type.fields[name]
        roots.append({"name": name, "args": args_of(fdef), "type": str(fdef.type), "description": fdef.description})
        todo.append(get_named_type(fdef.type))
    while todo:
        t = todo.pop()
        if isinstance(t, GraphQLObjectType) and t.name not in objects:
            objects[t.name] = [{"name": n, "type": str(f.type), **({"args": args_of(f)} if f.args else {})}
                               for n, f in t.fields.items()]
            todo.extend(get_named_type(f.type) for f in t.fields.values())
        elif isinstance(t, GraphQLInputObjectType) and t.name not in inputs:
            inputs[t.name] = [{"name": n, "type": str(f.type)} for n, f in t.fields.items()]
            todo.extend(get_named_type(f.type) for f in t.fields.values())
    return _dump({"rootFields": roots, "inputs": dict(sorted(inputs.items())), "objects": dict(sorted(objects.items())),
                  "introspection": "one __type or __schema per query"})


RESOURCES: list[ResourceSpec] = [
    ResourceSpec("eco://guide/agent-workflow", "Agent workflow",
                 "Read first: the call recipe (search, availability, files, download, cite), input rules, "
                 "error remedies.", _guide("agent-workflow")),
    ResourceSpec("eco://guide/api-token", "API token",
                 "Which calls need an upstream token, how to set it, rate limits.", _guide("api-token")),
    ResourceSpec("eco://guide/citing-neon-data", "Citing NEON data",
                 "Data policy, citation templates, DOIs, provisional data.", _guide("citing-neon-data")),
    ResourceSpec("eco://guide/product-code-anatomy", "Product code anatomy",
                 "Product codes, packages, file-name grammar, releases and PROVISIONAL.",
                 _guide("product-code-anatomy")),
    ResourceSpec("eco://reference/vocabularies", "Vocabularies",
                 "Valid filter values: themes, teams, domains, taxon types, location types, releases, file kinds.",
                 vocabularies, mime_type=JSON),
    ResourceSpec("eco://reference/graphql-schema", "GraphQL schema",
                 "Root fields, inputs and object fields eco_graphql allows.", graphql_schema, mime_type=JSON,
                 tool="eco_graphql"),
    ResourceSpec("eco://reference/sites", "Field sites",
                 "Every field site: code, name, type, domain, state, coordinates.", sites_reference,
                 mime_type=JSON, ttl_ms=DERIVED_TTL_MS),
    ResourceSpec("eco://reference/releases", "Releases",
                 "Every release with generation date and product count, plus the latest tag.", releases_reference,
                 mime_type=JSON, ttl_ms=DERIVED_TTL_MS),
]

TEMPLATES: list[TemplateSpec] = [
    TemplateSpec("eco://products/{productCode}", "Data product",
                 "One data product, exactly as eco_get_product returns it.", "eco_get_product", "product"),
    TemplateSpec("eco://sites/{siteCode}", "Field site",
                 "One field site with its products, exactly as eco_get_site returns it.", "eco_get_site", "site"),
    TemplateSpec("eco://releases/{release}", "Release",
                 "One release, exactly as eco_get_release returns it.", "eco_get_release", "release"),
]


def listed(registry: Registry) -> list[ResourceSpec]:
    """The resources this server offers: one about a tool only while that tool is registered."""
    return [r for r in RESOURCES if r.tool is None or registry.get(r.tool) is not None]


def templates(registry: Registry) -> list[TemplateSpec]:
    """The templates whose tool this server has."""
    return [t for t in TEMPLATES if registry.get(t.tool) is not None]


# --- completions --------------------------------------------------------------------------------

COMPLETION_MAX = 100  # the protocol's cap on values per completion


async def complete_value(kind: str, prefix: str, cfg: EcoConfig) -> tuple[list[str], int]:
    """Codes of one kind (product, site, release) starting with `prefix`, case-insensitively."""
    idx = await warm_index(cfg, ("products", "sites", "releases"))
    pool: list[str]
    if kind == "product":
        pool = sorted(p.code for p in idx.products)
    elif kind == "site":
        pool = sorted(s.code for s in idx.sites)
    elif kind == "release":
        pool = [*sorted((r.tag for r in idx.releases), reverse=True), "latest"]
    else:
        return [], 0
    hits = [v for v in pool if v.upper().startswith(prefix.upper())]
    return hits[:COMPLETION_MAX], len(hits)


TEMPLATE_COMPLETIONS = {"productCode": "product", "siteCode": "site", "release": "release"}


async def complete(params: types.CompleteRequestParams, cfg: EcoConfig, registry: Registry) -> types.CompleteResult:
    """Completions for template variables and prompt arguments that take codes."""
    from mcp_gateway.prompts import PROMPT_COMPLETIONS

    ref = params.ref
    kind: str | None = None
    if isinstance(ref, types.ResourceTemplateReference):
        if any(t.uri_template == ref.uri for t in templates(registry)):
            kind = TEMPLATE_COMPLETIONS.get(params.argument.name)
    elif isinstance(ref, types.PromptReference):
        kind = PROMPT_COMPLETIONS.get((ref.name, params.argument.name))
    if kind is None:
        return types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))
    # In a comma-separated list (a prompt's sites) the last item is the one being typed.
    head, _, prefix = params.argument.value.rpartition(",")
    try:
        values, total = await complete_value(kind, prefix.strip(), cfg)
    except EcoError:
        values, total = [], 0
    values = [f"{head}," + v if head else v for v in values]
    return types.CompleteResult(completion=types.Completion(values=values, total=total, has_more=total > len(values)))
