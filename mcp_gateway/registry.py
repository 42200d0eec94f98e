"""The tool registry: each tool is registered once, in a module under `mcp_gateway/tools/`, as a
`ToolSpec` in that module's `TOOLS` list. The gateway finds the modules itself, so adding a tool
family never touches the protocol code.

    TOOLS = [
        ToolSpec(name="eco_ping", title=..., description=..., surface="diagnostics",
                 input_model=health.PingInput, output_model=health.PingOutput, read=health.ping),
    ]

The input model, output model and read all come from the tool's family module (families/):
`async def read(args: InputModel, call: CallContext) -> OutputModel`. A registration module holds
nothing else.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import pkgutil
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types

from eco_core.config import ConfigError, get_config

if TYPE_CHECKING:
    # What a tool's models are checked against, loaded with the first spec made: a stdio start
    # answers its tools/list from the kept listing without them.
    from eco_core.wire import Envelope, ToolInput
    from families.call import CallContext

Read = Callable[[Any, "CallContext"], Awaitable["Envelope"]]

TOOLS_PACKAGE = "mcp_gateway.tools"

log = logging.getLogger("eco.gateway")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    surface: str
    input_model: type[ToolInput]
    output_model: type[Envelope]
    read: Read
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
        from eco_core.wire import Envelope, ToolInput

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
        from mcp_gateway.schemas import input_schema, output_schema

        # The title is written once, in annotations: MCP's display name falls back to
        # annotations.title when a tool has no top-level title, so every client shows the same.
        return types.Tool(
            name=self.name,
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
    return [spec for _, spec in _discover(package)]


def _discover(package: str) -> list[tuple[str, ToolSpec]]:
    """Each declared tool with the module whose `TOOLS` declares it."""
    pkg = importlib.import_module(package)
    found: list[tuple[str, ToolSpec]] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        name = f"{package}.{info.name}"
        module = importlib.import_module(name)
        found.extend((name, spec) for spec in getattr(module, "TOOLS", ()))
    return found


_default: Registry | None = None


def default_registry() -> Registry:
    global _default
    if _default is None:
        _default = Registry(discover_specs())
    return _default


# -- the listed tools kept on disk, for a quick start ---------------------------------------------
#
# Listing the tools means importing every tool module (and the catalog and download code they
# import) and rendering 20 pairs of JSON schemas: most of a stdio server's own start-up work
# before its first answer. The rendered list is kept in a file named after everything that can
# change it, so a server whose code is unchanged lists its tools from that file and imports a tool's
# module only when the tool is called (or described further than its listing).

# The project packages a tool declaration can depend on; eco_service imports them, never the reverse.
SOURCE_PACKAGES = ("eco_core", "upstream", "catalog", "downloads", "tables", "families", "mcp_gateway")
# What renders the schemas and the Tool objects: a reinstall changes these files' stamps.
RENDERING_PACKAGES = ("mcp", "mcp_types", "pydantic", "pydantic_core")
LISTING_FORMAT = 1


def _package_dirs(names: Iterable[str]) -> list[Path]:
    dirs: list[Path] = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise LookupError(name)
        dirs.extend(Path(d) for d in spec.submodule_search_locations)
    return dirs


def _stamp(h: Any, path: Path, root: Path) -> None:
    st = path.stat()
    h.update(f"{path.relative_to(root)}|{st.st_mtime_ns}|{st.st_size}\n".encode())


def listing_fingerprint(package: str = TOOLS_PACKAGE) -> str:
    """Names the rendered tool list: every source file of the project packages (path, mtime,
    size), the installed SDK and pydantic, the Python version, this file format and the limits
    settings (input bounds that are settings are rendered from them). Stats only, a few ms; any
    change at all is a new name, so a stale listing is never read."""
    limits = get_config().limits.model_dump_json()
    h = hashlib.sha256(f"{LISTING_FORMAT}|{package}|{sys.version}|{limits}".encode())
    for root in _package_dirs(SOURCE_PACKAGES):
        for folder, subdirs, files in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith(".py"):
                    _stamp(h, Path(folder, f), root)
    for root in _package_dirs(RENDERING_PACKAGES):
        _stamp(h, root / "__init__.py", root.parent)
    return h.hexdigest()[:32]


class _Listed:
    """A tool as tools/list shows it, read from the kept listing; anything else asked of it
    (read, models, ...) comes from the real declaration, imported then."""

    __slots__ = ("_registry", "name", "stdio_only", "tool")

    def __init__(self, registry: LazyRegistry, name: str, stdio_only: bool, tool: types.Tool) -> None:
        self._registry, self.name, self.stdio_only, self.tool = registry, name, stdio_only, tool

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._registry.get(self.name), attr)


class LazyRegistry(Registry):
    """The registry of a kept listing: names, listing and its size without importing a tool
    module; `get(name)` imports the module that declares the tool (once) and hands out its real
    ToolSpec, with the listed Tool already rendered."""

    def __init__(self, entries: list[dict[str, Any]], package: str = TOOLS_PACKAGE) -> None:
        super().__init__(())
        self._package = package
        self._entries = {e["name"]: e for e in entries}
        self._dumps = {e["name"]: e["tool"] for e in entries}
        self._listed = {e["name"]: _Listed(self, e["name"], bool(e["stdio_only"]), types.Tool.model_validate(e["tool"]))
                        for e in entries}

    def get(self, name: str) -> ToolSpec | None:
        spec = self._specs.get(name)
        if spec is not None or name not in self._entries:
            return spec
        module = importlib.import_module(self._entries[name]["module"])
        for found in getattr(module, "TOOLS", ()):
            if found.name in self._entries and found.name not in self._specs:
                found.__dict__.setdefault("tool", self._listed[found.name].tool)  # cached_property's slot
                self._specs[found.name] = found
        if name not in self._specs:  # a listing that does not match the code: cannot happen unless edited
            raise LookupError(f"tool {name!r} is not declared in {self._entries[name]['module']}")
        return self._specs[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def listed(self, *, http: bool) -> list[ToolSpec]:
        return [self._listed[n] for n in self.names() if not (http and self._listed[n].stdio_only)]  # type: ignore[misc]

    def tools_list_bytes(self, *, http: bool) -> int:
        tools = [self._dumps[t.name] for t in self.listed(http=http)]
        return len(json.dumps({"tools": tools}, separators=(",", ":")).encode())


def _listing_entries(found: list[tuple[str, ToolSpec]]) -> list[dict[str, Any]]:
    return [{"name": s.name, "module": module, "stdio_only": s.stdio_only,
             "tool": s.tool.model_dump(by_alias=True, mode="json", exclude_none=True)} for module, s in found]


def kept_registry(folder: Path, package: str = TOOLS_PACKAGE) -> Registry:
    """The registry from the listing kept in `folder` when one matches the code; otherwise the
    discovered registry, whose listing is then written there (best effort: a folder that cannot be
    written only costs the next start the discovery)."""
    try:
        fingerprint = listing_fingerprint(package)
    except (LookupError, OSError) as exc:
        log.debug("no kept tool listing: %s", exc)
        return Registry(discover_specs(package))
    path = folder / f"tools-{fingerprint}.json"
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["tools"]
        return LazyRegistry(entries, package)
    except FileNotFoundError:
        log.debug("no tool listing kept for this code yet: discovering the tools")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.info("ignoring the unreadable tool listing %s: %s", path, exc)
    found = _discover(package)
    registry = Registry(spec for _, spec in found)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"tools": _listing_entries(found)}), encoding="utf-8")
        os.replace(tmp, path)
        for old in folder.glob("tools-*.json"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError as exc:
        log.debug("could not keep the tool listing in %s: %s", folder, exc)
    return registry


def use_kept_registry(folder: Path) -> Registry:
    """Make the kept-listing registry this process's default (what eco_ping and the prototype
    tools consult) and return it."""
    global _default
    _default = kept_registry(folder)
    return _default
