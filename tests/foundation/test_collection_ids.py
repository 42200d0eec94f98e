"""Every collected test has an id of its own (tests/conftest.py refuses a collection with
duplicates), so pytest's count of outcomes equals its count of tests; the ops API's property test
used to collect all its operations under one id."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import duplicate_ids

REPO = Path(__file__).resolve().parents[2]


def test_ids_collected_twice_are_named():
    items = [SimpleNamespace(nodeid=n) for n in ("t.py::a", "t.py::b[x]", "t.py::a", "t.py::b[y]", "t.py::a")]
    assert duplicate_ids(items) == ["t.py::a"]
    assert duplicate_ids(items[1:2] + items[3:4]) == []


def test_the_ops_api_property_test_collects_one_id_per_operation():
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                           "tests/service/test_ops_openapi.py"], cwd=REPO, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert len(ids) > 1 and len(set(ids)) == len(ids)
    assert all(i.endswith("]") for i in ids)  # METHOD path of each operation
