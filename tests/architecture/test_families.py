"""One family, one module: every registered tool's input model, output model and read come from
one module of its family under families/ (the family's module, or one of its package's), and the gateway's tool modules only register them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcp_gateway.registry import discover_specs

ROOT = Path(__file__).resolve().parents[2]
TOOL_MODULES = sorted(p for p in (ROOT / "mcp_gateway" / "tools").glob("*.py") if p.name != "__init__.py")
SPECS = discover_specs()


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_a_tools_input_output_and_read_come_from_one_family_module(spec):
    homes = {spec.input_model.__module__, spec.output_model.__module__, spec.read.__module__}
    assert len(homes) == 1, f"{spec.name}: {sorted(homes)}"
    (home,) = homes
    assert home.startswith("families."), f"{spec.name} lives in {home}, not in a family module"


def test_every_family_module_is_registered_by_the_gateway_module_of_the_same_name():
    # families.<family>, or a module of the family's package (families.tables.query): the family.
    family_of = {spec.name: spec.read.__module__.split(".")[1] for spec in SPECS}
    for path in TOOL_MODULES:
        source = path.read_text()
        for name in (n for n, fam in family_of.items() if f'name="{n}"' in source):
            assert family_of[name] == path.stem, f"{name} is registered in {path.name}, read in {family_of[name]}"


@pytest.mark.parametrize("path", TOOL_MODULES, ids=lambda p: p.name)
def test_a_gateway_tool_module_holds_only_registrations(path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the module docstring
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assert all(isinstance(t, ast.Name) and t.id == "TOOLS" for t in targets), (
                f"{path.name}:{node.lineno} assigns something other than TOOLS")
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
            call = node.value.func
            assert isinstance(call.value, ast.Name) and call.value.id == "TOOLS", f"{path.name}:{node.lineno}"
            continue
        raise AssertionError(f"{path.name}:{node.lineno} defines {type(node).__name__}: reads and models belong "
                             "in the family module")


def test_reads_that_never_touch_the_catalog_do_not_live_under_catalog():
    for family in ("samples", "taxonomy", "prototypes", "documents", "graphql_window", "graphql", "files"):
        assert not (ROOT / "catalog" / f"{family}.py").exists(), f"catalog/{family}.py"
