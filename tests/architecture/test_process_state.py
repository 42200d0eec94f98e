"""What a process remembers between calls is kept in few, known places.

Remembered answers are tables of one registry (eco_core.memo.memos), emptied at once when the
catalog index changes. Besides it the process keeps exactly three caches: the upstream answer
cache, the catalog index holder and the tool registry. Everything else a module holds between
calls is state that is not a cache of answers (secrets to mask, clients per event loop,
background tasks, locks, metric handles, the active configuration) and is listed below with its
reason, so that a new module-level cache cannot slip in unnoticed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("eco_core", "upstream", "catalog", "downloads", "families", "mcp_gateway", "eco_service")
MUTABLE_CALLS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "WeakKeyDictionary",
                 "WeakValueDictionary", "WeakSet", "KeptByIdentity", "KeptByValue"}
# Calls that make a table of the memo registry (KeptSearches registers one).
MEMO_MAKERS = {"by_identity", "by_value", "KeptSearches"}
# Module-level lists that are declarations, not state.
DECLARATIONS = {"__all__", "urlpatterns"}

CACHES = {
    "upstream.cache": "the upstream answer cache: its local key index and store names",
    "catalog.index": "the index holder: indexes held by catalog versions, the current one",
    "catalog.access": "the index holder's front door: when the catalogs were last checked as due",
    "mcp_gateway.registry": "the tool registry of this process",
}
NOT_CACHES = {
    "eco_core.config._active": "the active configuration",
    "eco_core.metrics._tool_children": "Prometheus label handles, made once per tool and outcome",
    "eco_core.redact._configured": "secrets to mask in every log line",
    "eco_core.redact._request_tokens": "callers' tokens to mask in later log lines",
    "upstream.client._clients": "the one upstream client per event loop",
    "upstream.client._closing": "client closings in flight, kept so they are not collected",
    "catalog.services.warm._background": "the background refresh task in flight",
    "catalog.services.warm._failed_at": "when each catalog's refresh-ahead last failed (back-off)",
    "catalog.services.warm._subtrees": "the background subtree walk in flight",
    "catalog.services.warm._first_use": "the first-use build lock per event loop",
    "catalog.services.run_lock._local": "in-process run locks",
    "upstream.graphql_window._read_slots": "one large-reply reader at a time per event loop",
    "mcp_gateway.ports._get_client": "a function imported on first use",
    "mcp_gateway.calls._metrics": "a module imported on first use",
    "mcp_gateway.calls._database_warned_at": "when the last database-outage warning was logged",
    "catalog.services.warm._subtrees_checked_at": "when the subtree walk was last checked as due",
    "catalog.services.warm._subtrees_wanted": "whether this process builds missing subtrees itself",
    "eco_core.redact._configured_view": "the secrets to mask, as one tuple read without a lock",
    "eco_core.redact._log_view": "the secrets to mask in log lines, as one tuple read without a lock",
    "upstream.client._shared": "the upstream cache's namespace generation, shared by every client",
    "upstream.redis_link._links": "whether each Redis answers: one outage record per URL",
}
# functools caches of functions whose answer never goes stale (no catalog, no upstream answer).
PURE_FUNCTION_CACHES = {
    "upstream.http._ssl_context": "the CA bundle, loaded once",
    "upstream.redis_link.redis_errors": "the exception classes of the redis package",
    "upstream.graphql_window.window_schema": "the GraphQL schema file shipped with the code",
    "catalog.availability._month": "month number to YYYY-MM text",
}
CACHE_DECORATORS = {"cache", "lru_cache"}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return None


def _state() -> dict[str, str]:
    """module.name -> why it was flagged: module-level mutable containers not made by the memo
    registry, and every name a function rebinds with `global`."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            module, tree = _module(path), ast.parse(path.read_text())
            for node in tree.body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [t.id for t in targets if isinstance(t, ast.Name)]
                    value = node.value
                    mutable = isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)) \
                        or _call_name(value) in MUTABLE_CALLS
                    for name in names:
                        if mutable and not name.isupper() and name not in DECLARATIONS \
                                and _call_name(value) not in MEMO_MAKERS:
                            found[f"{module}.{name}"] = "module-level mutable container"
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for deco in node.decorator_list:
                        name = _call_name(deco) or (deco.attr if isinstance(deco, ast.Attribute)
                                                    else deco.id if isinstance(deco, ast.Name) else None)
                        if name in CACHE_DECORATORS:
                            found[f"{module}.{node.name}"] = "functools cache"
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                        and _call_name(node.value.func) in CACHE_DECORATORS:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            found[f"{module}.{target.id}"] = "functools cache"
            for node in ast.walk(tree):
                if isinstance(node, ast.Global):
                    for name in node.names:
                        found.setdefault(f"{module}.{name}", "rebound with global")
    return found


def _allowed(name: str) -> bool:
    module = name.rsplit(".", 1)[0]
    return name in NOT_CACHES or name in PURE_FUNCTION_CACHES or module in CACHES


def test_no_module_keeps_state_between_calls_outside_the_memo_registry_and_the_listed_places():
    unexpected = {name: why for name, why in _state().items() if not _allowed(name)}
    assert unexpected == {}, "make it a table of eco_core.memo.memos, or list it here with its reason"


def test_every_listed_place_still_exists():
    found = _state()
    stale = [name for name in NOT_CACHES if name not in found]
    assert stale == []
    assert any(name in found for name in PURE_FUNCTION_CACHES)
