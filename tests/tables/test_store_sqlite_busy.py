"""On the embedded SQLite, callers claiming one new dataset at once all get its row and one of them
queues its build: a busy database (another caller's transaction) is waited for, never reported as
an outage. Before transactions began IMMEDIATE, a claim that had read and then needed the write
lock got "database is locked" at once, whatever the timeout (2 of 42 parallel stack calls answered
catalog_unavailable); 20 rounds of 42 threads gave 26 such errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.reliability.conftest import REPO
from tests.reliability.kill9_support import clean_env

RACE = """
import json, sys, threading
import django
django.setup()
from django.core.management import call_command
from django.db import connections
call_command("migrate", verbosity=0)
from tables import store
callers, rounds = int(sys.argv[1]), int(sys.argv[2])
errors, queued = [], []
for r in range(rounds):
    barrier = threading.Barrier(callers)
    dataset_id = f"DP1.10033.001.basic.2023-06.2023-07.race{r}"
    def one():
        try:
            barrier.wait()
            row, first = store.claim(dataset_id, product="DP1.10033.001", selection={}, plan={"items": []},
                                     planned_bytes=0, requested_by="x")
            assert row.dataset_id == dataset_id
            if first:
                queued.append(dataset_id)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connections.close_all()
    threads = [threading.Thread(target=one) for _ in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print(json.dumps({"errors": errors[:5], "errorCount": len(errors), "queued": sorted(queued)}))
"""


def test_parallel_claims_of_one_dataset_on_sqlite_all_succeed_and_queue_one_build(tmp_path: Path):
    env = clean_env(ECO_MCP_DATA_DIR=str(tmp_path / "data"))  # no DATABASE_URL: the embedded SQLite
    out = subprocess.run([sys.executable, "-c", RACE, "42", "20"], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["errorCount"] == 0, result["errors"]
    assert result["queued"] == sorted(f"DP1.10033.001.basic.2023-06.2023-07.race{r}" for r in range(20))
