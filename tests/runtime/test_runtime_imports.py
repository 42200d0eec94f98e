"""Every module of the project imports under the runtime environment's interpreter: the packages
(migrations, management commands, Celery tasks, the simulator included) and manage.py, from a
folder outside the checkout, so the installed project is what is found. A module that imports
something only the development lock brings fails here by name, before any user meets it."""

from __future__ import annotations

import json
import subprocess

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
    assert "manage" in report["imported"] and "django.setup()" in report["imported"]
