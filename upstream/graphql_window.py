"""The GraphQL window's reads (eco_graphql): a caller's own read-only query, checked on its
parsed document before any request, validated against the NEON schema the service keeps
(`neon_schema.graphql`, the reconstructed SDL), sent without a token, never cached, outside the
catalog's breaker, its reply read within a bound and shortened to the caller's byte budget
(upstream.graphql_reply).

    window_schema() -> WindowSchema(root_fields, schema)      the allowed root fields and the
        parsed schema the window validates against (eco://reference/graphql-schema reads it)
    check_query(query, operation_name=, max_chars=, max_depth=, bounds=, variables=) -> CheckedQuery
        the guard rails, what the query asks for, then local validation; raises EcoError, sends nothing
    await run_query(client, checked, variables=, max_bytes=, max_reply_bytes=) -> GraphQLAnswer
    await describe_type(client, name, max_bytes=, max_reply_bytes=) -> GraphQLAnswer   local schema first

Policy refusals (mutations, a root field outside the list, a second introspection field, size,
depth, fragment cycles, operation choice) are `invalid_argument` naming what was wrong. A query
asking for too much (more aliases than QueryBounds allows, or more values by the estimate of
upstream.graphql_fields.CostEstimate), or whose reply is longer than the read bound, is
`query_too_large` with the numbers and what to ask instead. Schema refusals are `graphql_error`
worded as NEON words them (graphql-java's
`Validation error (FieldUndefined@[a/b]) : Field 'b' in type 'T' is undefined`), so an agent
reads the same text whether the service or NEON refused, with `details.didYouMean`.
"""
from __future__ import annotations

import asyncio
import threading
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from eco_core.errors import EcoError
from upstream import context, mapping
from upstream import models as upstream_models

# graphql-core is imported where it is used, not here: every tools/list imports this module
# (eco_graphql's tool declares its types from it), and importing graphql-core was the largest
# avoidable part of stdio start-up (~0.2 s of ~1.7 s of imports, -X importtime).
from upstream.graphql_reply import BadReply, Cancelled, Reply, read_reply, shorten
from upstream.http import deadline_exceeded

if TYPE_CHECKING:
    from graphql import (
        FragmentDefinitionNode,
        GraphQLSchema,
        OperationDefinitionNode,
        SelectionSetNode,
    )

    from upstream.client import UpstreamClient

SCHEMA_FILE = Path(__file__).with_name("neon_schema.graphql")
SCHEMA_RESOURCE = "eco://reference/graphql-schema"
ALLOWED_ROOT_FIELDS = (
    "products", "product", "demoProduct", "filterProducts", "sites", "site", "filterSites", "location",
    "locationHierarchy", "findLocations", "prototypeDatasets", "prototypeDataset",
)
INTROSPECTION_FIELDS = frozenset({"__type", "__schema"})
# The same selection NEON's recorded __type answer carries (introspection___type_Site.json), plus
# what inputs and enums need.
TYPE_QUERY = """query($name: String!) { __type(name: $name) { name kind description
  fields { name description args { name description type { ...T } defaultValue } type { ...T } }
  inputFields { name description type { ...T } defaultValue } enumValues { name description } } }
fragment T on __Type { name kind ofType { name kind ofType { name kind ofType { name kind } } } }"""


@dataclass(frozen=True)
class WindowSchema:
    """What eco_graphql accepts: these root fields (plus one __type or __schema) of this schema."""

    root_fields: tuple[str, ...]
    schema: GraphQLSchema

    def root_type_name(self, root_field: str) -> str | None:
        from graphql import get_named_type

        query_type = self.schema.query_type
        fdef = query_type.fields.get(root_field) if query_type else None
        return get_named_type(fdef.type).name if fdef else None


@lru_cache(maxsize=1)
def window_schema() -> WindowSchema:
    """The allowed root fields and the parsed schema eco_graphql validates against."""
    from graphql import build_schema

    schema = build_schema(SCHEMA_FILE.read_text(encoding="utf-8"))
    query_type = schema.query_type
    known = set(query_type.fields) if query_type else set()
    return WindowSchema(root_fields=tuple(f for f in ALLOWED_ROOT_FIELDS if f in known), schema=schema)


@dataclass(frozen=True)
class CheckedQuery:
    query: str
    operation_name: str | None
    root_fields: tuple[str, ...]
    depth: int


@dataclass
class GraphQLAnswer:
    data: Any
    errors: list[dict[str, Any]] | None
    bytes_total: int
    truncated: bool
    truncated_paths: list[str]
    schema_hint: str
    from_upstream: bool
    notes: list[str] = field(default_factory=list)


def _bad(message: str, **details: Any) -> EcoError:
    return EcoError("invalid_argument", message, details={"field": "query", **details})


# -- guard rails ---------------------------------------------------------------------------

def _pick_operation(ops: list[OperationDefinitionNode], operation_name: str | None) -> OperationDefinitionNode:
    names = [op.name.value for op in ops if op.name]
    if operation_name is not None:
        for op in ops:
            if op.name and op.name.value == operation_name:
                return op
        raise EcoError("invalid_argument", f"operation_name: no operation named {operation_name!r} in the query"
                       f" (operations: {', '.join(names) or 'one anonymous'})",
                       details={"field": "operation_name", "validNames": names})
    if len(ops) > 1:
        raise EcoError("invalid_argument", f"operation_name: the query holds {len(ops)} operations "
                       f"({', '.join(names) or 'anonymous'}); name the one to run",
                       details={"field": "operation_name", "validNames": names})
    return ops[0]


def _fragment_cycle(fragments: dict[str, FragmentDefinitionNode]) -> list[str] | None:
    """The first cycle of fragment spreads, as a path of names, or None."""
    spreads = {name: _spreads(f.selection_set) for name, f in fragments.items()}
    done: set[str] = set()

    def walk(name: str, trail: list[str]) -> list[str] | None:
        if name in trail:
            return [*trail[trail.index(name):], name]
        if name in done or name not in spreads:
            return None
        for nxt in spreads[name]:
            found = walk(nxt, [*trail, name])
            if found:
                return found
        done.add(name)
        return None

    for name in fragments:
        found = walk(name, [])
        if found:
            return found
    return None


def _spreads(sel: SelectionSetNode | None) -> list[str]:
    from graphql import FieldNode, FragmentSpreadNode, InlineFragmentNode

    out: list[str] = []
    for s in sel.selections if sel else ():
        if isinstance(s, FragmentSpreadNode):
            out.append(s.name.value)
        elif isinstance(s, (FieldNode, InlineFragmentNode)):
            out.extend(_spreads(s.selection_set))
    return out


def _root_names(sel: SelectionSetNode, fragments: dict[str, FragmentDefinitionNode],
                memo: dict[str, dict[str, int]]) -> dict[str, int]:
    """Root field names through fragments and inline fragments, each with how often it occurs once
    fragments are expanded, in the order first met. A fragment's names are counted once and then
    added as numbers wherever it is spread: a fragment spread twice by a fragment spread twice...
    is never expanded (cycles were refused before)."""
    from graphql import FieldNode, FragmentSpreadNode, InlineFragmentNode

    out: dict[str, int] = {}

    def add(part: dict[str, int]) -> None:
        for k, n in part.items():
            out[k] = out.get(k, 0) + n

    for s in sel.selections:
        if isinstance(s, FieldNode):
            add({s.name.value: 1})
        elif isinstance(s, InlineFragmentNode):
            add(_root_names(s.selection_set, fragments, memo))
        elif isinstance(s, FragmentSpreadNode) and s.name.value in fragments:
            name = s.name.value
            if name not in memo:
                memo[name] = _root_names(fragments[name].selection_set, fragments, memo)
            add(memo[name])
    return out


def _depth(sel: SelectionSetNode | None, fragments: dict[str, FragmentDefinitionNode],
           memo: dict[str, tuple[int, list[str]]]) -> tuple[int, list[str]]:
    """The deepest field chain below `sel` (fields count, fragments do not) and its path.
    A fragment's depth is computed once; cycles were refused before, so recursion ends."""
    from graphql import FieldNode, FragmentSpreadNode, InlineFragmentNode

    best: tuple[int, list[str]] = (0, [])
    for s in sel.selections if sel else ():
        if isinstance(s, FieldNode):
            d, path = _depth(s.selection_set, fragments, memo)
            cand = (d + 1, [s.name.value, *path])
        elif isinstance(s, InlineFragmentNode):
            cand = _depth(s.selection_set, fragments, memo)
        elif isinstance(s, FragmentSpreadNode) and s.name.value in fragments:
            name = s.name.value
            if name not in memo:
                memo[name] = _depth(fragments[name].selection_set, fragments, memo)
            cand = memo[name]
        else:
            continue
        if cand[0] > best[0]:
            best = cand
    return best


@dataclass(frozen=True)
class QueryBounds:
    """How much one query may ask for (limits.graphql_max_aliases, graphql_max_estimated_nodes,
    graphql_list_estimate); the defaults are the settings' defaults."""

    max_aliases: int = 30
    max_nodes: int = 100_000
    list_estimate: int = 20
    # Fields once fragments are expanded: no more than a query written out within
    # limits.graphql_max_query_chars could hold (a field takes at least one character), so
    # fragments reuse a selection but do not multiply the work NEON is sent.
    max_fields: int = 8000


NARROWER = ("Ask for fewer aliases (one root field with a filter, filterProducts or filterSites with the "
            "codes, replaces many aliased ones), select fewer fields or nested lists, or use eco_search_products, "
            "eco_search_sites or eco_get_availability for catalog-wide questions.")


def _too_large(message: str, cost: Any, bounds: QueryBounds, **details: Any) -> EcoError:
    return EcoError("query_too_large", message, hint=NARROWER, details={
        "field": "query", "aliases": cost.aliases, "maxAliases": bounds.max_aliases,
        "estimatedNodes": cost.nodes, "maxEstimatedNodes": bounds.max_nodes,
        "largest": [{"field": k, "estimatedNodes": n} for k, n in cost.roots[:3]], **details})


def _check_cost(ops: list[OperationDefinitionNode], fragments: dict[str, FragmentDefinitionNode], ws: WindowSchema,
                bounds: QueryBounds, variables: dict[str, Any] | None) -> None:
    """Refuse a query that asks for too much before graphql-core validates it: validating
    hundreds of aliased copies of a field is itself slow (overlapping fields are compared pairwise).
    Every figure is counted with each fragment sized once (CostEstimate), never by expanding it."""
    from upstream.graphql_fields import CostEstimate

    estimate = CostEstimate(ws.schema, fragments, list_estimate=bounds.list_estimate, variables=variables)
    for op in ops:
        _within(estimate.cost(op), bounds)


def _within(cost: Any, bounds: QueryBounds) -> None:
    if cost.fields > bounds.max_fields:
        raise _too_large(f"query: {cost.fields:,} fields once its fragments are expanded, at most {bounds.max_fields:,} "
                         "(as many as limits.graphql_max_query_chars characters could spell out); a fragment spread "
                         "in several places is sent as that many copies", cost, bounds, fields=cost.fields,
                         maxFields=bounds.max_fields)
    if cost.aliases > bounds.max_aliases:
        raise _too_large(f"query: {cost.aliases} aliased fields (fragments expanded), at most {bounds.max_aliases} "
                         "(limits.graphql_max_aliases); each alias runs its field again upstream", cost, bounds)
    if cost.nodes > bounds.max_nodes:
        top = ", ".join(f"{k} ~{n:,}" for k, n in cost.roots[:3])
        raise _too_large(f"query: asks for an estimated {cost.nodes:,} values ({top}), at most {bounds.max_nodes:,} "
                         "(limits.graphql_max_estimated_nodes); lists count at their likely length (products 200, "
                         f"sites 81, filters by the codes they name, nested lists {bounds.list_estimate})", cost, bounds)


def check_query(query: str, *, operation_name: str | None, max_chars: int, max_depth: int,
                bounds: QueryBounds | None = None, variables: dict[str, Any] | None = None) -> CheckedQuery:
    """The guard rails on the parsed document, what it asks for, then validation against the
    local schema."""
    from graphql import FragmentDefinitionNode, GraphQLError, OperationDefinitionNode, OperationType, parse
    from graphql.pyutils import suggestion_list

    if len(query) > max_chars:
        raise _bad(f"query is {len(query)} characters, above the limit of {max_chars} "
                   "(limits.graphql_max_query_chars)", length=len(query), limit=max_chars)
    try:
        doc = parse(query)
    except GraphQLError as exc:
        where = exc.locations[0] if exc.locations else None
        at = f" at line {where.line}, column {where.column}" if where else ""
        raise _bad(f"query is not valid GraphQL{at}: {exc.message}") from None
    ops: list[OperationDefinitionNode] = []
    fragments: dict[str, FragmentDefinitionNode] = {}
    for d in doc.definitions:
        if isinstance(d, OperationDefinitionNode):
            ops.append(d)
        elif isinstance(d, FragmentDefinitionNode):
            fragments[d.name.value] = d
        else:
            raise _bad(f"query may hold only operations and fragments, not a {d.kind.replace('_', ' ')}")
    if not ops:
        raise _bad("query holds no operation")
    for op in ops:
        if op.operation is not OperationType.QUERY:
            raise _bad(f"query: {op.operation.value} operations are refused; this window is read-only "
                       "(queries only)", operation=op.operation.value)
    chosen = _pick_operation(ops, operation_name)
    cycle = _fragment_cycle(fragments)
    if cycle:
        raise _bad(f"query: fragment cycle {' -> '.join(cycle)} is refused", fragmentCycle=cycle)
    ws = window_schema()
    used: list[str] = []
    introspection: dict[str, int] = {}
    names_memo: dict[str, dict[str, int]] = {}
    for op in ops:
        for name, times in _root_names(op.selection_set, fragments, names_memo).items():
            if name in INTROSPECTION_FIELDS:
                introspection[name] = introspection.get(name, 0) + times
            elif name != "__typename" and name not in ws.root_fields:
                raise _bad(f"query: root field {name!r} is not allowed; allowed root fields: "
                           f"{', '.join(ws.root_fields)}, plus one __type or __schema", rootField=name,
                           didYouMean=suggestion_list(name, list(ws.root_fields))[:3] or None,
                           allowed=list(ws.root_fields))
            elif name not in used and name != "__typename":
                used.append(name)
    if (n_intro := sum(introspection.values())) > 1:
        listed = [name for name, times in introspection.items() for _ in range(min(times, 5))]
        raise _bad(f"query: {n_intro} introspection fields ({', '.join(listed)}{', ...' if n_intro > len(listed) else ''}); "
                   "at most one __type or __schema per query", introspectionFields=listed)
    memo: dict[str, tuple[int, list[str]]] = {}
    depth, path = 0, []
    for op in ops:
        reached, chain = _depth(op.selection_set, fragments, memo)
        if reached > depth:
            depth, path = reached, chain
    if depth > max_depth:
        raise _bad(f"query: selection depth {depth} exceeds the limit of {max_depth} (limits.graphql_max_depth) "
                   f"at {'/'.join(path)}", depth=depth, limit=max_depth, path=path)
    # Every operation, not only the chosen one: local validation and NEON read them all.
    _check_cost(ops, fragments, ws, bounds or QueryBounds(), variables)
    _validate(doc, ws)
    return CheckedQuery(query=query, operation_name=chosen.name.value if chosen.name else None,
                        root_fields=tuple(used), depth=depth)


# -- local validation ----------------------------------------------------------------------

def _validate(doc: Any, ws: WindowSchema) -> None:
    from graphql import TypeInfo, TypeInfoVisitor, validate, visit

    from upstream.graphql_fields import UndefinedFields

    ti = TypeInfo(ws.schema)
    finder = UndefinedFields(ti)
    visit(doc, TypeInfoVisitor(ti, finder))
    errors = finder.errors
    if not errors:
        errors = [{"message": f"Validation error : {e.message}",
                   "locations": [{"line": loc.line, "column": loc.column} for loc in (e.locations or [])],
                   "extensions": {"classification": "ValidationError"}}
                  for e in validate(ws.schema, doc)[:20]]
    if errors:
        raise EcoError("graphql_error", "the GraphQL query does not fit the schema: "
                       + "; ".join(e["message"] for e in errors[:5]),
                       details={"errors": errors[:20], "didYouMean": finder.suggestions or None,
                                "checkedLocally": True, "schema": SCHEMA_RESOURCE})


# -- the call ------------------------------------------------------------------------------

def schema_hint(root_fields: tuple[str, ...] | list[str]) -> str:
    """The schema resource and the root fields nearest the ones used (same record type)."""
    ws = window_schema()
    kinds = {ws.root_type_name(f) for f in root_fields}
    near = [f for f in ws.root_fields if ws.root_type_name(f) in kinds] or list(ws.root_fields)
    return f"Fields and inputs: {SCHEMA_RESOURCE}. Nearest root fields: {', '.join(near)}."


async def run_query(client: UpstreamClient, checked: CheckedQuery, *, variables: dict[str, Any] | None,
                    max_bytes: int, max_reply_bytes: int) -> GraphQLAnswer:
    """One POST /graphql: no token, no cache, no breaker (a caller's bad query is not an outage).
    The reply is read up to `max_reply_bytes`, then parsed and cut to `max_bytes`."""
    reply = await _ask(client, checked.query, variables, checked.operation_name, max_bytes, max_reply_bytes)
    errors = _errors(reply.errors)
    if errors and reply.data is None:
        raise mapping.graphql_errors(errors)
    return GraphQLAnswer(data=_data(reply.data), errors=_dumped(errors), bytes_total=reply.bytes_total,
                         truncated=bool(reply.truncated_paths), truncated_paths=reply.truncated_paths,
                         schema_hint=schema_hint(checked.root_fields), from_upstream=True)


async def describe_type(client: UpstreamClient, name: str, *, max_bytes: int, max_reply_bytes: int) -> GraphQLAnswer:
    """One type as NEON's __type answers it: from the local schema when it has the type, else
    asked upstream (same rules as run_query); unknown to both is not_found with didYouMean."""
    from graphql import graphql_sync, is_object_type
    from graphql.pyutils import suggestion_list

    ws = window_schema()
    if name in ws.schema.type_map:
        result = graphql_sync(ws.schema, TYPE_QUERY, variable_values={"name": name})
        data: dict[str, Any] = result.data or {}
        shortened, paths, total = shorten(data, None, max_bytes)
        from_upstream = False
    else:
        reply = await _ask(client, TYPE_QUERY, {"name": name}, None, max_bytes, max_reply_bytes)
        errors = _errors(reply.errors)
        if errors:
            raise mapping.graphql_errors(errors)
        shortened, paths, total = _data(reply.data), reply.truncated_paths, reply.bytes_total
        from_upstream = True
    if not shortened.get("__type"):
        known = [t for t in ws.schema.type_map if not t.startswith("__")]
        raise EcoError("not_found", f"introspect_type: no type named {name!r}",
                       details={"field": "introspect_type", "didYouMean": suggestion_list(name, known)[:5] or None})
    roots = [f for f in ws.root_fields if ws.root_type_name(f) == name]
    kind = ws.schema.type_map.get(name)
    notes = [] if roots or not is_object_type(kind) else [
        f"{name} is reached through other types, not directly from a root field."]
    return GraphQLAnswer(data=shortened, errors=None, bytes_total=total, truncated=bool(paths), truncated_paths=paths,
                         schema_hint=schema_hint(roots), from_upstream=from_upstream, notes=notes)


# -- the reply -----------------------------------------------------------------------------

# Replies smaller than this are read on the event loop: faster than handing them to a thread.
READ_IN_THREAD_BYTES = 64 * 1024
# Large replies are read one at a time: the interpreter runs one thread at a time anyway, and each
# more busy thread lengthens the event loop's wait for its turn (every other caller's latency).
READ_THREADS = 1
_read_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


async def _ask(client: UpstreamClient, query: str, variables: dict[str, Any] | None, operation_name: str | None,
               max_bytes: int, max_reply_bytes: int) -> Reply:
    """The reply to one query, read up to `max_reply_bytes`, parsed and cut to `max_bytes` (on a
    worker thread when large), within the call's deadline."""
    try:
        body = await client.graphql_body(query, variables, operation_name=operation_name, max_bytes=max_reply_bytes)
    except EcoError as exc:
        if exc.code != "query_too_large":
            raise
        raise EcoError("query_too_large", f"query: NEON's reply is larger than {max_reply_bytes:,} bytes "
                       "(limits.graphql_reply_read_factor x limits.graphql_hard_max_response_bytes); reading "
                       "stopped there and nothing of it is returned", hint=NARROWER,
                       details={"field": "query", **exc.details}) from None
    try:
        if len(body) < READ_IN_THREAD_BYTES:
            return read_reply(body, max_bytes)
        return await _read_off_loop(body, max_bytes)
    except BadReply as exc:
        raise mapping.unexpected_body("/graphql", exc) from None


async def _read_off_loop(body: bytearray, max_bytes: int) -> Reply:
    loop = asyncio.get_running_loop()
    slots = _read_slots.get(loop)
    if slots is None:
        slots = _read_slots[loop] = asyncio.Semaphore(READ_THREADS)
    cancel = threading.Event()
    acct = context.current()
    left = None if acct is None else acct.remaining()
    try:
        async with asyncio.timeout(None if left is None else max(left, 0.0)), slots:
            return await asyncio.to_thread(read_reply, body, max_bytes, cancel, on_worker=True)
    except (TimeoutError, Cancelled):
        raise deadline_exceeded("/graphql", None) from None
    finally:
        cancel.set()  # a thread still reading (deadline passed, caller gone) stops at its next check


def _errors(raw: list[Any] | None) -> list[upstream_models.GraphQLErrorItem] | None:
    """NEON's errors in the shape the client gives every GraphQL error (mapping.graphql_errors)."""
    if not raw:
        return None
    try:
        return [upstream_models.GraphQLErrorItem.model_validate(e) for e in raw]
    except ValidationError as exc:
        raise mapping.unexpected_body("/graphql", exc) from None


def _dumped(errors: list[upstream_models.GraphQLErrorItem] | None) -> list[dict[str, Any]] | None:
    return [e.model_dump(by_alias=True, mode="json", exclude_none=True) for e in errors] if errors else None


def _data(data: Any) -> dict[str, Any]:
    if isinstance(data, dict):
        return data
    if data is None:
        raise EcoError("upstream_error", "/graphql: reply has neither data nor errors",
                       details={"endpoint": "/graphql", "reason": "unexpected_body"})
    raise EcoError("upstream_error", "/graphql: unexpected upstream reply (data is not an object)",
                   details={"endpoint": "/graphql", "reason": "unexpected_body"})
