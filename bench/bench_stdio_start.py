"""A stdio server's start-up, measured so that load on the box does not move the figures much.

    .venv/bin/python bench/bench_stdio_start.py [--spawns 5] [--callgrind] [--data-dir DIR]

Per spawn (bare SDK tools/list, eco tools/list, eco first eco_search_products; interleaved):
wall seconds from spawn to the answer line, and CPU seconds (user+sys, all threads, from
/proc/PID/stat) of the process at the moment its answer was read: CPU cannot be lent to other
work on the box, only its wall time can. Medians are printed.

--callgrind: each of the three once more under valgrind's callgrind (PYTHONHASHSEED=0), the whole
process from exec to its first answer: the harness sends SIGTERM as soon as the answer line is
read, and callgrind writes its counts when the process ends (the tens of thousands of
instructions between the write and the signal are noise against billions).

Setup as bench_vs_sdk: the simulator, a throw-away SQLite data folder with the four catalogs
built (or --data-dir, a folder of the caller's, left in place; its catalogs are refreshed), then
one untimed spawn of each kind, which writes the kept tool listing and index snapshot: the
figures are of a warm data folder, as an agent's second session finds it.

Issue 19, helper-45's session (medians of 5; before = 3bd102b, after = eb1c05b plus others' commits
in between; each tree a copy of its own with compiled bytecode; the box shared, load in brackets):

                            before (load 4-6)              after (load 8-11)
    bare tools/list         1.86 s, 0.72 s CPU, 2.703G     2.19 s, 0.84 s CPU, 2.702G
    eco tools/list          2.24 s, 0.85 s CPU, 3.044G     2.31 s, 0.90 s CPU, 2.941G
      x bare                wall x1.21, CPU x1.18, x1.13   wall x1.06, CPU x1.07, x1.09
    eco first search        3.77 s, 1.40 s CPU, 5.079G     3.41 s, 1.36 s CPU, 4.312G (-15 %)

(CPU seconds grow with the load on a shared box: compare them to bare's in the same run, first
search x1.94 -> x1.62 of bare's tools/list CPU.) What did it: only the catalog's apps loaded when
the data folder's schema record says the database needs nothing (eco_service.schema_record), the
collector off during start-up and what start-up made frozen before serving (stdio_start, stdio).

Issue 40, runtime's session (before = 716169e, after = this branch; instructions from --callgrind,
wall and CPU medians of 5 spawns in .venv, the box shared by six sessions, load in brackets):

                            before (load 2-4)              after, merged with main (load 3-4)
    bare tools/list         0.77 s, 0.60 s CPU, 2.703G     0.77 s, 0.56 s CPU, 2.703G
    eco tools/list          0.76 s, 0.73 s CPU, 3.447G     0.76 s, 0.56 s CPU, 2.830G
      x bare                wall x0.99, CPU x1.22, x1.27   wall x0.98, CPU x1.00, x1.047

(from .venv-runtime, what scripts/setup and the image install, at the same load: wall x0.76, CPU x0.95.)
What did it: the gateway's argument checks imported the upstream client (httpx, httpcore, the
reply models, prometheus_client) for one exception class (now upstream/segments.py); the call
machinery (mcp_gateway.calls, the wire models) loads with the first call and yaml with a --config
file. tests/architecture/test_heavy_engines.py holds the first answer free of all of them. Run
compileall (scripts/setup does) after editing: PYTHONDONTWRITEBYTECODE makes every start compile
an edited module from source, which the instruction counts show.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mixed_load import META, _env, _free_port, simulator_with_catalogs

REPO = Path(__file__).resolve().parents[1]
BARE = Path(__file__).resolve().parent / "bare_sdk_server.py"
TIMEOUT_S = 60.0
CALLGRIND_TIMEOUT_S = 600.0
TICKS = os.sysconf("SC_CLK_TCK")

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
SEARCH = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "eco_search_products", "arguments": {"query": "soil temperature"}, "_meta": META}}
KINDS = {
    "bare_tools_list": ([sys.executable, str(BARE), "--stdio"], TOOLS_LIST),
    "eco_tools_list": ([sys.executable, "manage.py", "eco_mcp_stdio"], TOOLS_LIST),
    "eco_first_search": ([sys.executable, "manage.py", "eco_mcp_stdio"], SEARCH),
}


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15)


def _first_answer(cmd: list[str], env: dict[str, str], request: dict[str, Any], *,
                  timeout: float = TIMEOUT_S, terminate: bool = False) -> tuple[float, float]:
    """(wall s, CPU s) from spawn to the first answer line; the answer must be a result."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.flush()
        if not select.select([proc.stdout], [], [], timeout)[0]:
            raise RuntimeError(f"no stdio answer within {timeout} s: {cmd}")
        reply = proc.stdout.readline()
        wall = time.perf_counter() - started
        cpu = _cpu_s(proc.pid)
        if terminate:
            proc.send_signal(signal.SIGTERM)
        msg = json.loads(reply)
        if "result" not in msg or msg["result"].get("isError"):
            raise RuntimeError(f"stdio answer was not a result: {reply[:300]!r}")
        return wall, cpu
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _instructions(kind: str, env: dict[str, str], out_dir: Path) -> int:
    cmd, request = KINDS[kind]
    out = out_dir / f"callgrind.{kind}.out"
    _first_answer(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
                  {**env, "PYTHONHASHSEED": "0"}, request, timeout=CALLGRIND_TIMEOUT_S, terminate=True)
    summary = re.search(r"^(?:summary|totals):\s*(\d+)", out.read_text(), re.M)
    assert summary, f"no totals in {out}"
    return int(summary.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spawns", type=int, default=5)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--data-dir", type=Path)
    opts = parser.parse_args()
    if not 0 <= opts.spawns <= 30:
        parser.error("bounded run: spawns 0-30")
    tmp = tempfile.TemporaryDirectory(prefix="eco-bench-stdio-start-")
    data_dir = opts.data_dir or Path(tmp.name)
    data_dir.mkdir(parents=True, exist_ok=True)
    sim_port = _free_port()
    env = _env(str(data_dir), sim_port)
    sim = simulator_with_catalogs(env, sim_port)
    report: dict[str, Any] = {"load_before": os.getloadavg()}
    try:
        for kind in ("eco_tools_list", "eco_first_search"):  # writes the listing and the snapshot
            _first_answer(KINDS[kind][0], env, KINDS[kind][1])
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in KINDS}
        for _ in range(opts.spawns):
            for kind, (cmd, request) in KINDS.items():
                runs[kind].append(_first_answer(cmd, env, request))
        for kind, values in runs.items():
            if values:
                report[kind] = {"wall_s": round(statistics.median(w for w, _ in values), 3),
                                "cpu_s": round(statistics.median(c for _, c in values), 3),
                                "all": [(round(w, 3), round(c, 2)) for w, c in values]}
        if runs["bare_tools_list"]:
            for what in ("wall_s", "cpu_s"):
                report[f"tools_list_ratio_{what}"] = round(
                    report["eco_tools_list"][what] / report["bare_tools_list"][what], 2)
        if opts.callgrind:
            report["instructions"] = {kind: _instructions(kind, env, data_dir) for kind in KINDS}
        report["load_after"] = os.getloadavg()
    finally:
        sim.terminate()
        sim.wait(timeout=20)
        tmp.cleanup()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
