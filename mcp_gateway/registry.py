"""The tool registry: each tool is declared once, in a module under `mcp_gateway/tools/`, as a
`ToolSpec` in that module's `TOOLS` list. The gateway finds the modules itself, so adding a tool
family never touches the protocol code.

    TOOLS = [
        ToolSpec(name="eco_ping", title=..., description=..., surface="diagnostics",
                 input_model=PingInput, output_model=PingOutput, handler=ping),
    ]

A handler is `async def handler(args: InputModel, call: CallContext) -> OutputModel`: it parses
nothing and formats nothing, it calls its family's read module (or, for eco_ping, `health.py`)
and returns the typed output.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import mcp_types as types

from eco_core.config import ConfigError
from mcp_gateway.context import CallContext
from mcp_gateway.models import Envelope, ToolInput, input_schema, output_schema

Handler = Callable[[Any, CallContext], Awaitable[Envelope]]

TOOLS_PACKAGE = "mcp_gateway.tools"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    surface: str
    input_model: type[ToolInput]
    output_model: type[Envelope]
    handler: Handler
    requires_token: bool = False
    endpoints: tuple[str, ...] = ()
    stdio_only: bool = False
    read_only: bool = True
    # Which page object describes which list, for the byte budget: trimming a list marks its page.
    page_lists: Mapping[str, str] = field(default_factory=lambda: {"items": "page"})
    # The tool cuts its own result to a caller-given budget (eco_graphql's max_bytes): the
    # generic trimming is skipped, the hard limit still applies.
    fits_own_budget: bool = False

    def __post_init__(self) -> None:
        if not self.name.startswith("eco_"):
            raise ValueError(f"tool names start with eco_: {self.name!r}")
        if not issubclass(self.output_model, Envelope):
            raise TypeError(f"{self.name}: output_model must subclass Envelope")
        if not issubclass(self.input_model, ToolInput):
            raise TypeError(f"{self.name}: input_model must subclass ToolInput")

    @cached_property
    def argument_names(self) -> dict[str, str]:
        """Every accepted spelling (snake_case name and camelCase alias) -> field name."""
        names: dict[str, str] = {}
        for fname, finfo in self.input_model.model_fields.items():
            names[fname] = fname
            if finfo.alias:
                names[finfo.alias] = fname
        return names

    @cached_property
    def tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=input_schema(self.input_model),
            output_schema=output_schema(self.output_model),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=True,
            ),
            _meta={
                "io.eco-mcp/surface": self.surface,
                "requiresToken": self.requires_token,
                "endpoints": list(self.endpoints),
                "stdioOnly": self.stdio_only,
            },
        )


class Registry:
    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"tool {spec.name!r} is declared twice")
            self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def names(self) -> list[str]:
        return sorted(self._specs)

    def listed(self, *, http: bool) -> list[ToolSpec]:
        """What tools/list shows: sorted by name, stdio-only tools hidden over HTTP."""
        return [self._specs[n] for n in self.names() if not (http and self._specs[n].stdio_only)]

    def tools_list_bytes(self, *, http: bool) -> int:
        """The size of the serialized tools/list result for a transport, as compact JSON."""
        tools = [s.tool.model_dump(by_alias=True, mode="json", exclude_none=True) for s in self.listed(http=http)]
        return len(json.dumps({"tools": tools}, separators=(",", ":")).encode())

    def check_tools_list_size(self, *, http: bool, max_bytes: int) -> None:
        """Refuse to serve a tools/list larger than `limits.tools_list_max_bytes`: every agent
        loads the whole list into its context, so the bound is part of the contract."""
        size = self.tools_list_bytes(http=http)
        if size > max_bytes:
            raise ConfigError(
                f"limits.tools_list_max_bytes: the serialized tools/list is {size} bytes, over the bound "
                f"of {max_bytes}; raise the setting or shorten the tool declarations"
            )


def discover_specs(package: str = TOOLS_PACKAGE) -> list[ToolSpec]:
    """Import every module of the tools package and collect their `TOOLS` lists."""
    pkg = importlib.import_module(package)
    specs: list[ToolSpec] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        specs.extend(getattr(module, "TOOLS", ()))
    return specs


_default: Registry | None = None


def default_registry() -> Registry:
    global _default
    if _default is None:
        _default = Registry(discover_specs())
    return _default
