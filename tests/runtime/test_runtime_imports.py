"""Every module of the project imports under the runtime environment's interpreter: the packages
(migrations, management commands, Celery tasks, the simulator included), manage.py, and what a
Celery worker and beat load (the broker's transport, beat's scheduler), from a
folder outside the checkout, so the installed project is what is found. A module that imports
something only the development lock brings fails here by name, before any user meets it; an
import inside a function (an engine loaded on first use) is held to the same lock by reading the
sources."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

from tests.runtime.conftest import ROOT, runtime_env

PACKAGES = ("eco_core", "upstream", "catalog", "downloads", "tables", "families", "mcp_gateway", "eco_service",
            "upstream_sim")
PROBE = """
import importlib, importlib.util, json, os, pkgutil, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "eco_service.settings"
imported, failed = [], {}

def attempt(name, load):
    try:
        load()
        imported.append(name)
    except BaseException as exc:  # SystemExit too: a module that exits when imported is broken
        failed[name] = f"{type(exc).__name__}: {exc}"

def manage():
    spec = importlib.util.spec_from_file_location("manage", %(manage)r)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))

import django
attempt("django.setup()", django.setup)
for package in %(packages)r:
    attempt(package, lambda: importlib.import_module(package))
    if package in sys.modules:
        for info in pkgutil.walk_packages(sys.modules[package].__path__, package + ".", onerror=lambda name: None):
            attempt(info.name, lambda: importlib.import_module(info.name))
attempt("manage", manage)
# What a worker and beat load beyond the project's modules: the tasks the app finds, the broker's
# transport (Redis), beat's scheduler (docker-compose.yml, README).
def worker_and_beat():
    from celery.utils.imports import symbol_by_name
    from eco_service.celery import app
    app.loader.import_default_modules()
    symbol_by_name("kombu.transport.redis:Transport")
    symbol_by_name("django_celery_beat.schedulers:DatabaseScheduler")
attempt("celery worker and beat", worker_and_beat)
print(json.dumps({"imported": imported, "failed": failed, "files": {
    m: getattr(sys.modules.get(m), "__file__", None) for m in imported}}))
"""


def _modules_on_disk() -> set[str]:
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_project_module_imports_under_the_runtime_interpreter(runtime_python, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    run = subprocess.run([runtime_python, "-c", PROBE % {"packages": PACKAGES, "manage": str(ROOT / "manage.py")}],
                         cwd=outside, env=runtime_env(tmp_path / "data"), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["failed"] == {}, "\n".join(f"{name}: {why}" for name, why in sorted(report["failed"].items()))
    # Every module file was reached (a folder without __init__.py would be skipped silently), and
    # from this checkout, through the installed project.
    assert _modules_on_disk() - set(report["imported"]) == set()
    assert {m for m, f in report["files"].items() if f and not f.startswith(str(ROOT))} == set()
    assert {"manage", "django.setup()", "celery worker and beat"} <= set(report["imported"])


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside `if TYPE_CHECKING:` (never run), or a `try:` whose handler takes ImportError (an
    optional accelerator with a fallback)."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.If) and child in parent.body and "TYPE_CHECKING" in ast.unparse(parent.test):
            return True
        if isinstance(parent, ast.Try) and child in parent.body and any(
                h.type is not None and re.search(r"\b(ImportError|ModuleNotFoundError)\b", ast.unparse(h.type))
                for h in parent.handlers):
            return True
        child, parent = parent, parents.get(parent)
    return False


def _third_party_names() -> dict[str, str]:
    """Every top-level module the project's code imports anywhere (in functions too, which the
    import check above does not run), with one place that does."""
    names: dict[str, str] = {}
    files = [ROOT / "manage.py", *(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))]
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            if _guarded(node, parents):
                continue
            for top in tops:
                if top not in sys.stdlib_module_names and top not in PACKAGES:
                    names.setdefault(top, f"{path.relative_to(ROOT)}:{node.lineno}")
    return names


def test_every_package_the_code_imports_even_lazily_is_installed_in_the_runtime_environment(runtime_python):
    names = _third_party_names()
    assert {"django", "mcp", "pyarrow", "duckdb", "numpy"} <= set(names)  # the scan sees lazy imports too
    run = subprocess.run([runtime_python, "-c", "import importlib.util, json, sys; "
                          "print(json.dumps([n for n in json.loads(sys.argv[1]) if importlib.util.find_spec(n) is None]))",
                          json.dumps(sorted(names))], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    missing = json.loads(run.stdout)
    assert missing == [], "\n".join(f"{name} (imported at {names[name]}) is not in requirements.lock" for name in missing)
