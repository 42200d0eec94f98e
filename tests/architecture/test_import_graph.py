"""The layers point one way.

Bottom to top (a package may import only packages below it, and itself):

    eco_core       foundation: typed configuration, the error tree, redaction, version
    upstream       the NEON client (one sender, rate limits, cache, breaker, typed replies)
    catalog        the persistent catalogs, the in-memory index and the one way to reach it
    downloads      the storage side of files: plan and caps, path confinement, transfer, manifest
    tables         the storage side of stacked tables: variables files, the stacking engine, datasets
    families       one module per tool family: its tools' inputs, outputs and reads
    mcp_gateway    MCP protocol, transports, registry (tool registrations only), envelope, budgets
    eco_service    composition root: settings, URLs, ASGI, CLI, Celery app, management commands

`upstream_sim` (the NEON simulator) stands apart: it imports nothing of the product.
Every import counts, function-level ones included; only imports under `if TYPE_CHECKING:` are
left out, because they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["eco_core", "upstream", "catalog", "downloads", "tables", "families", "mcp_gateway", "eco_service"]
APART = ["upstream_sim"]
PACKAGES = LAYERS + APART


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            found.add(prefix)
            # `from pkg import module` imports a module too
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    modules: dict[str, tuple[Path, bool]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            modules[_module_name(path)] = (path, path.name == "__init__.py")
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        raw = _imports(ast.parse(path.read_text(), str(path)), name, is_package)
        graph[name] = {m for m in raw if m in modules and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _package(module: str) -> str:
    return module.split(".")[0]


GRAPH = _graph()


def test_the_graph_sees_every_product_package():
    assert {_package(m) for m in GRAPH} == set(PACKAGES)
    # a sanity check that imports are found at all: the gateway uses the foundation
    assert any(_package(t) == "eco_core" for m, ts in GRAPH.items() if _package(m) == "mcp_gateway" for t in ts)


def test_no_module_imports_itself_through_a_cycle():
    assert _cycles(GRAPH) == []


def test_packages_collapsed_to_one_node_form_no_cycle():
    packages: dict[str, set[str]] = {p: set() for p in PACKAGES}
    for module, targets in GRAPH.items():
        packages[_package(module)].update(_package(t) for t in targets if _package(t) != _package(module))
    assert _cycles(packages) == []


@pytest.mark.parametrize("package", LAYERS)
def test_a_layer_imports_only_the_layers_below_it(package):
    rank = LAYERS.index(package)
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items() if _package(module) == package
        for target in targets
        if _package(target) != package and (_package(target) in APART or LAYERS.index(_package(target)) > rank)
    )
    assert wrong == []


def test_the_simulator_imports_nothing_of_the_product():
    wrong = sorted(f"{m} -> {t}" for m, ts in GRAPH.items() if _package(m) == "upstream_sim"
                   for t in ts if _package(t) != "upstream_sim")
    assert wrong == []


def test_the_cycle_finder_finds_a_planted_cycle():
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(planted) == [["a", "b", "c"]]


# What every family may import of families/: what a read knows of its call, and the package itself.
SHARED_BY_FAMILIES = ("families", "families.call")


def _family(module: str) -> str | None:
    """The family a module of families/ belongs to: families.sites is the sites family, and every
    module of a family's package (families.tables.query) is of that family; None: shared by all."""
    return None if module in SHARED_BY_FAMILIES else module.split(".")[1]


def _imports_across_families(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, ts in graph.items() if _package(m) == "families"
                  for t in ts if _package(t) == "families" and _family(t) is not None and _family(t) != _family(m))


def test_no_family_module_imports_another_family_module():
    # Families share code through the layers below them; only families.call, what a read knows of
    # its call, is common to all of them. The modules of one family's package (families/tables/)
    # may import each other.
    assert _imports_across_families(GRAPH) == []


def test_the_family_rule_allows_a_familys_own_modules_and_catches_any_other():
    planted = {
        "families.sites": {"families.products", "families.call", "families"},
        "families.tables.plot": {"families.tables.query", "families.tables.common", "families.call"},
        "families.tables": {"families.tables.describe"},
        "families.tables.stack": {"families.sites"},
        "families.call": {"families.tables.query"},
    }
    assert _imports_across_families(planted) == [
        "families.call -> families.tables.query", "families.sites -> families.products",
        "families.tables.stack -> families.sites"]
