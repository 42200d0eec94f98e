"""The MCP protocol: the SDK's low-level `Server` with our handlers for tools, resources, prompts
and server/discover. It knows no transport; the transports import it, never the other way:

    build_server(cfg) -> Server      this module; refuses (ConfigError) a tools/list larger
                                     than limits.tools_list_max_bytes
    stdio.serve_stdio(cfg)           stdio, both protocol eras (stdout carries only framing)
    http_app.serve_http(cfg)         uvicorn + the ASGI router of http_app.build_app
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal, cast

import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import X_MCP_HEADER_KEY
from mcp_types import INVALID_PARAMS, SERVER_INFO_META_KEY
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from eco_core import __version__
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from families.call import CallContext, InputNeeded
from mcp_gateway import prompts as prompt_specs
from mcp_gateway import resources as resource_specs
from mcp_gateway import splice
from mcp_gateway.registry import Registry, default_registry
from mcp_gateway.tokens import TokenChoice, choose_token

log = logging.getLogger("eco.gateway")

SERVER_NAME = "eco-mcp"
INSTRUCTIONS = (
    "Read access to the NEON ecological observatory data API. Start with eco_search_products and "
    "eco_search_sites, check eco_get_availability, list files with eco_list_files (needs a token), "
    "and cite with eco_get_citation. Inputs naming a product, a site or site_codes take codes or "
    "names; a release is RELEASE-YYYY or latest; a month is YYYY-MM, a month range YYYY-MM/YYYY-MM; "
    "byRelease keys are releases and PROVISIONAL (data in no release yet). An input left out takes its "
    "schema's default, or null when it has none. Every result "
    "carries resolved (how input names were resolved), notes, nextSteps (calls worth making next) and "
    "source (where the answer came from: origin local, catalog, upstream, cache or mixed; stale: from "
    "a stale cache because the upstream failed). A result sends every field of its outputSchema, "
    "null when it has no value, except sections its include input leaves out and fields described "
    "as absent or sent only in some cases. Errors carry a stable code and a hint. eco_ping reports "
    "configuration and upstream health."
)
# The meaning of the envelope's fields, the rule that every output field is sent and what inputs
# naming a product, site, release or month take are written here once, not in each tool's schemas
# (mcp_gateway.schemas): every agent loads the tool list. Defaults stay in the schemas (false and 0
# too), so a client that fills them in from the schema sends what omitting them means.
MIN_5 = 5 * 60 * 1000
HOUR = 3600 * 1000
DAY = 24 * HOUR


def served_versions() -> list[str]:
    """Every protocol version this server serves, handshake era included: what server/discover
    lists and every -32022 names (the SDK's own -32022 names only the modern revision)."""
    return list(KNOWN_PROTOCOL_VERSIONS)


def _wire(
    result: types.CallToolResult | types.InputRequiredResult | dict[str, Any],
) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
    """A tool result in its wire form. The SDK dumps a returned model to a dict, then validates
    and dumps that dict again for the negotiated protocol version, then dumps the JSON-RPC reply:
    each pass walks the whole structured content. Ours is plain JSON already (it was dumped in
    JSON mode to measure the byte budget), so the first pass is done here without a walk; the
    SDK's own validation for the protocol version still runs on it. Anything but plain text
    content (never made today) is left to the SDK. A dict is a result calls.execute_for_reply
    already gave in this form, with the same keys."""
    if isinstance(result, dict):
        return result
    if not isinstance(result, types.CallToolResult) or not all(
            type(c) is types.TextContent and c.annotations is None and c.meta is None for c in result.content):
        return result
    texts = [c.text for c in result.content]  # type: ignore[union-attr]
    structured = result.structured_content
    # calls.execute makes the text content the compact JSON of the structured content, so on HTTP
    # the reply takes both from that text (mcp_gateway.splice) instead of the SDK's walks.
    placeholders = splice.defer(texts[0]) if structured is not None and len(texts) == 1 else None
    if placeholders is not None:
        texts, structured = [placeholders[0]], placeholders[1]
    wire: dict[str, Any] = {
        "content": [{"type": "text", "text": t} for t in texts],
        "isError": result.is_error,
        "resultType": result.result_type,
    }
    if structured is not None:
        wire["structuredContent"] = structured
    if result.meta is not None:
        wire["_meta"] = result.meta
    return wire


def _near(name: str, known: list[str]) -> list[str]:
    # rapidfuzz is imported by the first misspelt name, not to answer a stdio server's tools/list.
    from rapidfuzz import process

    return [m[0] for m in process.extract(name, known, limit=3, score_cutoff=50)]


def _asker(ctx: ServerRequestContext[Any]) -> Any:
    """The handshake era's question (families.call.CallContext.ask_back): elicitation/create sent
    to the client within this request, its answer as a 2026-07-28 inputResponses entry."""

    async def ask(question: InputNeeded) -> dict[str, Any]:
        answer = await ctx.session.elicit_form(question.message, question.requested_schema,
                                               related_request_id=ctx.request_id)
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True)

    return ask


def _instructions(cfg: EcoConfig) -> str:
    extra = cfg.server.instructions_extra
    return INSTRUCTIONS + (f"\n\n{extra}" if extra else "")


def build_server(cfg: EcoConfig, registry: Registry | None = None) -> Server[Any]:
    registry = registry or default_registry()
    http = cfg.is_http
    registry.check_tools_list_size(http=http, max_bytes=cfg.limits.tools_list_max_bytes)
    transport: Literal["stdio", "http"] = "http" if http else "stdio"
    listed_names = frozenset(s.name for s in registry.listed(http=http))

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[spec.tool for spec in registry.listed(http=http)])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        # The call machinery (argument checks, budgets, the wire models) loads with the first
        # call: a stdio server's first answer, its tool list, does not wait for it.
        from mcp_gateway.calls import error_result, execute_for_reply

        spec = registry.get(params.name)
        if spec is None:
            # The spec's error table: a tool result with isError, not a protocol error.
            known = [s.name for s in registry.listed(http=http)]
            near = _near(params.name, known)
            return error_result(EcoError("unknown_tool", f"name: this server has no tool {params.name!r}",
                                         details={"name": params.name, "didYouMean": near}), stamp)
        choice = _token_choice(ctx)
        caps = ctx.session.client_capabilities
        elicits = bool(caps and caps.elicitation is not None)
        call = CallContext(
            cfg=cfg,
            transport=transport,
            protocol_version=ctx.protocol_version,
            token_source=choice.source,
            token_header_ignored=choice.header_ignored,
            client_elicitation=elicits,
            request_state=params.request_state,
            input_responses=_responses(params.input_responses),
            listed_tools=listed_names,
            # A no-op unless the client asked for progress (a progressToken, or an in-process callback).
            progress=ctx.session.report_progress,
            ask_back=_asker(ctx) if elicits and ctx.session.can_send_request else None,
        )
        return _wire(await execute_for_reply(spec, params.arguments, call, token=choice.token, extra_meta=stamp))

    token_header = cfg.server.request_token_header.lower()
    token_header_bytes = token_header.encode("latin-1")

    def _token_choice(ctx: ServerRequestContext[Any]) -> TokenChoice:
        request = ctx.request if http else None
        if request is None:
            return choose_token(cfg, None)
        # The one header choose_token reads, as Starlette's Headers would find it (the first
        # of that name; ASGI names are lower-case), without building Headers and scanning the
        # whole list once per spelling choose_token tries.
        sent = dict(reversed(request.scope.get("headers") or ())).get(token_header_bytes)
        return choose_token(cfg, {} if sent is None else {token_header: sent.decode("latin-1")})

    def _read_scope(ctx: ServerRequestContext[Any]) -> resource_specs.ReadScope:
        """A template runs its tool as a tools/call would, with the caller's token choice."""
        choice = _token_choice(ctx)

        def new_call() -> CallContext:
            return CallContext(cfg=cfg, transport=transport, protocol_version=ctx.protocol_version,
                               token_source=choice.source, token_header_ignored=choice.header_ignored,
                               listed_tools=listed_names)

        return resource_specs.ReadScope(cfg=cfg, registry=registry, transport=transport, new_call=new_call,
                                        token=choice.token)

    async def list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[r.resource() for r in resource_specs.listed(registry)])

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[t.template() for t in resource_specs.templates(registry)])

    async def read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        live_resources = resource_specs.listed(registry)
        for r in live_resources:
            if r.uri == uri:
                text = await r.fetch(_read_scope(ctx))
                return _read_result(uri, r.mime_type, text, r.ttl_ms)
        live_templates = resource_specs.templates(registry)
        for t in live_templates:
            found = t.match(uri)
            if found is not None:
                text = await t.read(found, _read_scope(ctx))
                return _read_result(uri, t.mime_type, text, t.ttl_ms)
        known = [r.uri for r in live_resources] + [t.uri_template for t in live_templates]
        raise resource_specs.unknown_uri(uri, known)

    async def list_prompts(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[p.prompt() for p in prompt_specs.PROMPTS])

    async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
        for p in prompt_specs.PROMPTS:
            if p.name == params.name:
                return types.GetPromptResult(
                    description=p.description, messages=p.messages(dict(params.arguments or {}), transport, registry))
        known = [p.name for p in prompt_specs.PROMPTS]
        near = _near(params.name, known) if known else []
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"Unknown prompt: {params.name}",
            data={"code": "not_found", "name": params.name, "didYouMean": near},
        )

    async def complete(ctx: ServerRequestContext[Any], params: types.CompleteRequestParams) -> types.CompleteResult:
        return await resource_specs.complete(params, cfg, registry)

    # The SDK asks for a tool's input schema on every tools/call with arguments, only to check
    # Mcp-Param-* headers against the schema's x-mcp-header annotations, walking the whole schema
    # twice. A schema without any such annotation declares no header, and None ("no schema") gets
    # the same verdict without the walks, so only an annotated schema is handed over. Decided once
    # per tool: a built registry's schemas do not change.
    header_schemas: dict[str, dict[str, Any] | None] = {}

    def tool_input_schema(name: str) -> dict[str, Any] | None:
        if name in header_schemas:
            return header_schemas[name]
        spec = registry.get(name)
        if spec is None:
            return None
        schema = spec.tool.input_schema
        annotated = X_MCP_HEADER_KEY in json.dumps(schema)
        header_schemas[name] = schema if annotated else None
        return header_schemas[name]

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        title="NEON ecological observatory data (eco-mcp)",
        instructions=_instructions(cfg),
        cache_hints={
            "tools/list": CacheHint(cfg.server.tools_list_ttl_ms, "public"),
            "resources/list": CacheHint(HOUR, "public"),
            "resources/templates/list": CacheHint(HOUR, "public"),
            "prompts/list": CacheHint(DAY, "public"),
            "server/discover": CacheHint(MIN_5, "public"),
            "resources/read": CacheHint(HOUR, "public"),
        },
        # Without it the SDK re-runs tools/list on every tools/call that has arguments, to check
        # Mcp-Param-* headers against the tool's schema.
        get_tool_input_schema=tool_input_schema,
        on_list_tools=list_tools,
        # The runner takes a handler's dict as the result's wire form (mcp.server.runner's
        # HandlerResult); the callback's declared type names only the models.
        on_call_tool=cast(Any, call_tool),
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )

    async def discover(ctx: ServerRequestContext[Any], params: types.RequestParams | None) -> types.DiscoverResult:
        # The SDK lists only the modern revision; older clients are served too, so say so.
        return types.DiscoverResult(
            supported_versions=served_versions(),
            capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=server.instructions,
        )

    server.add_request_handler("server/discover", types.RequestParams, discover)
    # Every result's serverInfo stamp, made once: the SDK's own property deep-copies its dump on
    # each access so that no caller can edit a later reply through it. Ours goes only into
    # results' _meta, which the SDK validates and dumps into new objects before sending (as a
    # dict _meta is copied: runner._dump_result, methods.serialize_server_result), and nothing
    # writes into it.
    stamp = {SERVER_INFO_META_KEY: server.server_info_stamp}
    return server


def _responses(raw: Any) -> dict[str, Any] | None:
    if not raw:
        return None
    return {k: (v.model_dump(by_alias=True, mode="json", exclude_none=True) if hasattr(v, "model_dump") else v)
            for k, v in dict(raw).items()}


def _read_result(uri: str, mime: str, text: str, ttl_ms: int) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)],
        ttl_ms=ttl_ms,
        cache_scope="public",
    )
