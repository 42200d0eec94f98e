"""The GraphQL family: eco_graphql, a read-only window on NEON's GraphQL for questions no other
tool anticipated, with the guard rails checked on the parsed query before any request
(upstream.graphql_window) and the reply cut to the caller's budget."""

from __future__ import annotations

import asyncio
import functools
from typing import Annotated, Any

from pydantic import Field

from eco_core.bounds import Configured
from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Source, ToolInput
from families.call import CallContext
from upstream.graphql_window import GraphQLAnswer, QueryBounds, check_query, describe_type, run_query

NAME_PATTERN = r"^[_A-Za-z][_0-9A-Za-z]*$"


class GraphQLInput(ToolInput):
    # The schema publishes the configured bound (8000 by default); the model's own limit only
    # stops a body that is all query before anything is parsed.
    query: Annotated[str | None, Configured("limits.graphql_max_query_chars", "maxLength")] = Field(
        None, max_length=1_000_000, description="Read-only query.")
    introspect_type: str | None = Field(None, pattern=NAME_PATTERN, max_length=200,
                                        description="Describe this type instead (e.g. Site).")
    variables: dict[str, Any] | None = None
    operation_name: str | None = Field(None, pattern=NAME_PATTERN, max_length=200,
                                       description="Which of several operations to run.")
    max_bytes: Annotated[int, Configured("limits.graphql_hard_max_response_bytes", "maximum")] = Field(
        50000, ge=1000, description="Response budget; largest lists are cut to fit.")


class GraphQLOutput(Envelope):
    data: Any = Field(description="NEON's data (lists may be cut).")
    errors: list[dict[str, Any]] | None = Field(description="NEON's errors, verbatim.")
    bytes_total: int = Field(description="Size before cutting.")
    truncated: bool
    truncated_paths: list[str] = Field(description="Paths of shortened lists.")
    schema_hint: str


# Queries shorter than this are checked on the event loop (a few ms at most); longer ones on a thread.
CHECK_IN_THREAD_CHARS = 2000

# Room left for the envelope (notes, schemaHint, source) under limits.hard_max_result_bytes, so
# a response cut to the caller's budget is never then refused as result_too_large.
ENVELOPE_RESERVE = 4000


def _budget(args: GraphQLInput, call: CallContext) -> int:
    limits = call.cfg.limits
    # The configured maximum was checked at the boundary (eco_core.bounds).
    wanted = args.max_bytes if "max_bytes" in args.model_fields_set else limits.graphql_max_response_bytes
    return max(1000, min(wanted, limits.graphql_hard_max_response_bytes,
                         limits.hard_max_result_bytes - ENVELOPE_RESERVE))


async def graphql(args: GraphQLInput, call: CallContext) -> GraphQLOutput:
    if (args.query is None) == (args.introspect_type is None):
        raise EcoError("invalid_argument", "give exactly one of query and introspect_type",
                       details={"field": "query", "conflicting": ["query", "introspect_type"]})
    max_bytes = _budget(args, call)
    limits = call.cfg.limits
    # The reply read is bounded by the server's largest budget, whatever this caller asked for.
    max_reply_bytes = limits.graphql_reply_read_factor * limits.graphql_hard_max_response_bytes
    client = call.client
    a: GraphQLAnswer
    if args.introspect_type is not None:
        a = await describe_type(client, args.introspect_type, max_bytes=max_bytes, max_reply_bytes=max_reply_bytes)
    else:
        assert args.query is not None
        check = functools.partial(
            check_query, args.query, operation_name=args.operation_name,
            max_chars=limits.graphql_max_query_chars, max_depth=limits.graphql_max_depth,
            bounds=QueryBounds(max_aliases=limits.graphql_max_aliases, max_nodes=limits.graphql_max_estimated_nodes,
                               list_estimate=limits.graphql_list_estimate,
                               max_fields=limits.graphql_max_query_chars),
            variables=args.variables)
        # A long query goes to a worker thread: within the bounds it can still take graphql-core's
        # validation a few hundred ms (same-named fields are compared pairwise), which the event
        # loop, and every other caller on it, must not wait out. A short one (the fragment bomb is
        # 939 characters, sized without expanding its fragments) is checked faster than a hop.
        checked = check() if len(args.query) < CHECK_IN_THREAD_CHARS else await asyncio.to_thread(check)
        a = await run_query(client, checked, variables=args.variables, max_bytes=max_bytes,
                            max_reply_bytes=max_reply_bytes)
    notes = list(a.notes)
    steps: list[NextStep] = []
    if a.truncated:
        notes.append(f"Response of {a.bytes_total} bytes cut to {max_bytes}: select fewer fields or records, "
                     "or raise max_bytes.")
    if a.errors:
        notes.append("NEON answered with errors alongside the data; see errors.")
    return GraphQLOutput(
        data=a.data, errors=a.errors, bytes_total=a.bytes_total, truncated=a.truncated,
        truncated_paths=a.truncated_paths, schema_hint=a.schema_hint, notes=notes, next_steps=steps,
        source=Source(origin="upstream" if a.from_upstream else "local",
                      endpoints=["POST /graphql"] if a.from_upstream else []),
    )
