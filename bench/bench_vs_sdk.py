"""Speed held against the bare SDK: this service beside a bare `mcp` SDK server, in one run.

    .venv/bin/python bench/bench_vs_sdk.py [--seconds 8] [--rounds 1] [--soak-seconds 120] [--spawns 5]
                                           [--no-pin] [--profile-dir DIR] [--only stdio|soak]
                                           [--soak-calls 100000] [--same-payload]

Setup (loopback only, every loop bounded in time): the simulator; the four catalogs built once
with `eco_catalog_refresh` into a throw-away SQLite data folder; then, one at a time, the bare
server (bench/bare_sdk_server.py: mcp low-level Server, one trivial tool, stateless Streamable
HTTP, the same single-SSE-frame reply, one uvicorn worker) and this service (`manage.py eco_mcp
--transport http`, one uvicorn worker, catalog warmed by a first call of every case). With 2+
CPUs each server is pinned to CPU 0 and the load generator to the others.

Load: wrk (Debian's `wrk`; `apt-get install -y wrk`) with 1 thread and 8 connections, a Lua
script posting tools/call with the 2026-07-28 headers (MCP-Protocol-Version, Mcp-Method,
Mcp-Name) and the `_meta` envelope, rotating through each case's argument sets, and counting
answers that are not a successful tool result (must be 0). Without wrk, bench_mixed_load's
keep-alive client at 8 connections. Each case: 1 s warm-up, then `--seconds` measured. The bare
server stays up through the round and is measured before every case and after the last (both
servers on the pinned core, one loaded at a time): a case's ratio is to the mean of the two bare
windows around it, so the box drifting during a round is not charged to one case.
Printed: calls/s, p50, p99 per case, and the ratios to the bare server measured around it. Then stdio: spawn to the first tools/list answer (median of `--spawns`), both servers,
and spawn to the first eco_search_products answer on the warm database. Then memory: resident
set (VmRSS) of each HTTP worker with the catalog warm, and of this service before, half-way and
after a soak of mixed catalog calls for `--soak-seconds` (the number of calls is printed), or,
with `--soak-calls N`, until N calls (10 s wrk chunks, RSS after each; `--soak-seconds` then
bounds it, default 1800). `--only soak` skips the cases and stdio (a 5 s mixed warm-up instead).
`--same-payload`: per case, a bare server returning this service's own results for that case
(bare_sdk_server's ECO_BARE_PAYLOAD, captured from this service), the SDK's floor for them.

Goals (issue 19): eco_ping >= 70 % of bare calls/s; catalog-served tools >= 60 %; availability
>= 40 %; p99 of catalog tools <= 2x bare; stdio tools/list <= 1.3x bare; first search <= 1.5 s
from spawn; one HTTP worker <= 150 MB with the catalog warm, no growth over the soak.

Closing runs of 2026-11-24, third session (tree 5a7183c, all twenty tools; quiet box, load
average 0.4-1.1, nothing else running; `--seconds 8 --rounds 3 --spawns 5`; the bare server made
1,993-2,403 calls/s):

    case                     calls/s (3 rounds)        ratio (3 rounds)     p99 x bare        goal  met
    eco_ping                 1,904 / 1,879 / 1,835     0.81 / 0.83 / 0.81   0.18/0.18/0.20    0.70  yes, every round
    eco_search_products      1,683 / 1,455 / 1,643     0.73 / 0.65 / 0.70   0.15/0.23/0.23    0.60  yes, every round
    eco_search_sites         1,706 / 1,542 / 1,698     0.75 / 0.69 / 0.73   0.15/0.22/0.19    0.60  yes, every round
    eco_get_product          1,879 / 1,970 / 1,888     0.88 / 0.85 / 0.87   0.15/0.15/0.20    0.60  yes, every round
    eco_get_availability     1,807 / 1,866 / 1,497     0.85 / 0.84 / 0.68   0.14/0.14/0.27    0.40  yes, every round
    stdio first tools/list: bare 0.550 s, eco 0.571 s (x1.04; goal 1.3x: met); first
    eco_search_products from spawn, warm database: 0.83 s (goal 1.5 s: met).
    resident memory, one HTTP worker, catalog warm: 140.7 MB (bare 67.1; goal 150 MB: met).
    `--only soak --soak-calls 100000`: 113,461 calls, all successful, 139.7 -> 140.7 (65,113
    calls) -> 141.1 MB; `--soak-calls 200000`: 208,847 calls, 139.4 -> 141.3 (111,493 calls) ->
    141.7 MB, the second ~100,000 calls adding 0.4 MB and the last five 10 s chunks 141.5, 141.5,
    141.6, 141.6, 141.7 (the bounded kept stores filling, then level).
    Three more rounds, same tree and box, one run later (bare 2,125-2,459 calls/s): ping 0.78 /
    0.77 / 0.81, search_products 0.74 / 0.72 / 0.67, search_sites 0.76 / 0.73 / 0.74, get_product
    0.76 / 0.85 / 0.79, availability 0.81 / 0.82 / 0.82, p99 0.16-0.23x; stdio tools/list x1.03,
    first search 0.78 s; warm RSS 140.4 MB. Every goal met in all six rounds.
    What changed (instructions a call, bench_instructions, 60 calls, against 081f630): ping 2.11M ->
    1.98M, search_products 2.45M -> 2.25M, search_sites 2.39M -> 2.17M, get_product 2.54M -> 1.94M
    (kept catalog-only answers, as availability's; a never-seen input 2.39M -> 2.50M),
    availability 2.06M; see bench_instructions' docstring for each step. The previous session's
    round with every eco case 10-20 % down was not seen again in these three rounds; its cause
    was not found.

Closing runs of 2026-11-24, later session (trees 547b534 and d74be16, all twenty tools; quiet box,
load average 0.9-1.9, nothing else running; 8 s per case; three rounds in two runs; the bare
server made 1,862-2,415 calls/s):

    case                     calls/s (3 rounds)        ratio (3 rounds)     p99 x bare        goal  met
    eco_ping                 1,376 / 1,555 / 1,587     0.67 / 0.73 / 0.72   0.25/0.30/0.25    0.70  2 of 3 rounds
    eco_search_products      1,449 / 1,330 / 1,476     0.70 / 0.61 / 0.69   0.23/0.29/0.18    0.60  yes, every round
    eco_search_sites         1,442 / 1,555 / 1,341     0.67 / 0.68 / 0.64   0.21/0.30/0.26    0.60  yes, every round
    eco_get_product          1,460 / 1,568 / 1,466     0.66 / 0.68 / 0.73   0.22/0.23/0.18    0.60  yes, every round
    eco_get_availability     1,696 / 1,659 / 1,478     0.77 / 0.74 / 0.78   0.19/0.25/0.20    0.40  yes, every round
    stdio first tools/list: bare 0.522 / 0.568 s, eco 0.549 / 0.586 s (x1.05 / x1.03; goal 1.3x:
    met); first eco_search_products from spawn, warm database: 0.79 / 0.85 s (goal 1.5 s: met).
    resident memory, one HTTP worker, catalog warm: 140.9 / 143.1 MB (bare 67.6 / 68.8; goal 150 MB:
    met); `--only soak --soak-calls 100000`: 106,860 calls, all successful, 139.7 -> 140.3 (52,030
    calls) -> 141.0 MB (the tree of the last stop, same run length on this box: 140.6 -> 141.3 ->
    141.4 MB); `--soak-calls 200000` (tree 495bc4c): 209,288 calls, 139.7 -> 140.7 (107,980 calls)
    -> 141.1 MB, the second 100,000 calls adding 0.4 MB.
    Two more full rounds (tree 57b5b78, `--rounds 2 --spawns 5`): ping 0.74 / 0.78, search_products
    0.59 / 0.65, search_sites 0.64 / 0.66, get_product 0.53 / 0.63, availability 0.59 / 0.63 (p99
    0.23-0.33x); stdio tools/list x1.20, first search 0.86 s; warm RSS 140.9 MB. In the first of
    them every eco case fell 10-20 % while the bare windows around them did not (1,825-2,150
    calls/s), leaving search_products and get_product under 0.60 in that round: the goals hold at
    the median of every round, not in every round.
    eco_ping in three more rounds beside eco_search_products (tree 6fe992b; `--cases
    eco_ping,eco_search_products --rounds 3`): 0.79 / 0.73 / 0.74 (search 0.65 / 0.62 / 0.73), so
    0.70 was met in 5 of 6 rounds, median 0.73. Measured alone (`--cases eco_ping`) it reads
    0.61-0.71 with a p99 of 77-87 ms: no catalog case warms the index first, so the background
    prewarm builds it during the measured window; that run is not comparable.
    What changed: tool results reach the SDK as two placeholders and the reply's bytes get the JSON
    made once (mcp_gateway.splice), so the SDK no longer validates, dumps and escapes a result four
    times over; eco_get_availability keeps whole answers per input and index, and the gateway keeps
    the dump and encoded text of answers a tool returns again. Instructions a call (bench_instructions):
    bare 1.66M, ping 2.12M (was 2.38M), search_products 2.49M (2.80M), search_sites 2.41M (2.66M),
    get_product 2.57M (2.90M), availability 2.19M (9.21M; a never-seen input still costs 6.04M).
    eco_ping's wall ratio sits at the goal (0.67-0.73) although its instructions are 0.79 of bare's:
    its answer is 1.3 KB against the bare server's few bytes, and the rest is the SDK's own path.

Closing runs of 2026-11-24 (tree 517ad8c, all twenty tools; quiet box: load average 0.4-1.3,
nothing else running; 8 s per case; three rounds in two runs; each case's ratio is to the bare
server measured right before and after it; this machine's bare server made 1,689-2,237 calls/s):

    case                     calls/s (3 rounds)        ratio (3 rounds)     p99 x bare        goal  met
    eco_ping                 1,505 / 1,555 / 1,410     0.74 / 0.71 / 0.75   0.28/0.23/0.22    0.70  yes, every round
    eco_search_products      1,215 / 1,368 / 1,108     0.64 / 0.62 / 0.60   0.21/0.20/0.26    0.60  yes, every round
    eco_search_sites         1,210 / 1,437 / 1,369     0.65 / 0.65 / 0.67   0.24/0.19/0.20    0.60  yes, every round
    eco_get_product          1,214 / 1,344 / 1,222     0.64 / 0.62 / 0.61   0.25/0.20/0.24    0.60  yes, every round
    eco_get_availability       535 /   484 /   592     0.26 / 0.23 / 0.32   0.52/0.61/0.51    0.40  no
    stdio first tools/list: bare 0.614 / 0.774 s, eco 0.655 / 0.760 s (x1.07 / x0.98; goal 1.3x: met);
    first eco_search_products from spawn, warm database: 0.93 / 1.35 s (goal 1.5 s: met; under load
    7-8 it was 1.71 s).
    resident memory, one HTTP worker, catalog warm: 140.2 / 142.9 MB (bare 67.1 / 67.8; goal 150 MB:
    met); `--only soak --soak-calls 100000`: 103,988 calls, 140.0 -> 140.5 (57,759 calls) -> 140.7 MB.
    What changed since 261d4d4: searches, the catalog-only product record, the default availability
    rows and valid inputs are kept per index (bounded; a repeated call, as this benchmark's rotating
    argument sets are after their first pass, is the best case: a never-seen query costs
    search_products 3.66M, search_sites 3.36M, get_product 3.42M instructions against 2.80M, 2.66M,
    2.90M kept); null and repeated fields left out of ping, product and search answers; availability
    rows list each month once (20 KB mean instead of 34 KB). Instructions a call (bench_instructions,
    60c4986): bare 1.67M, ping 2.38M (floor 2.28M), search_products 2.80M (2.52M), search_sites
    2.66M (2.38M), get_product 2.90M (2.56M); availability (8a340b5) 9.25M against its floor 8.87M:
    the SDK carrying this 20 KB result costs 5.3x its trivial call, so 0.40 asks for a reply that
    does not go through the SDK's validate-and-dump of the structured content (left open).

Earlier closing runs (tree 261d4d4, all twenty tools, a quiet box: load average 1.0-2.4,
nothing else running; 8 s per case; three rounds in two runs; ratios to the bare server of the
same round; the bare server itself made 759, 755 and 1,076 calls/s, so a round's ratios move
with it):

    case                     calls/s (3 rounds)     ratio (3 rounds)     p99 x bare     goal  met
    bare SDK ping            759 / 755 / 1,076
    eco_ping                 443 / 702 / 691        0.58 / 0.93 / 0.64   0.79/0.68/0.53 0.70  one round of 3
    eco_search_products      318 / 461 / 418        0.42 / 0.61 / 0.39   0.78/0.81/0.80 0.60  one round of 3
    eco_search_sites         404 / 516 / 430        0.53 / 0.68 / 0.40   0.66/0.77/0.77 0.60  one round of 3
    eco_get_product          490 / 439 / 408        0.65 / 0.58 / 0.38   0.50/0.80/0.88 0.60  one round of 3
    eco_get_availability     150 / 151 / 124        0.20 / 0.20 / 0.12   2.08/2.63/2.58 0.40  no
    p99 of the catalog-served tools: 0.50-0.88x the bare server's in every round (goal <= 2x: met;
    it was 2.3-5.8x: the index frozen out of the collector's full passes, searches off the pool).
    stdio first tools/list: bare 1.11 / 1.20 s, eco 1.48 / 1.35 s (x1.33 / x1.13; goal 1.3x: one
    run of two); first eco_search_products from spawn, warm database: 2.14 / 2.11 s (goal 1.5 s: no).
    resident memory, one HTTP worker, catalog warm: 145.1 / 141.9 MB (bare 68.5 / 68.0; goal
    150 MB: met); the 100,000-call soak below: 138.7 -> 141.2 -> 141.4 MB (flat).
    Load-independent (bench_instructions, same tree): eco_ping 2.52M instructions a call against
    the bare SDK carrying the same result 2.47M (x0.98 of its floor), search_products 3.73M
    (floor 2.56M), search_sites 3.42M (2.44M), get_product 3.32M (2.67M), availability 16.1M
    (12.9M): the SDK returning our availability result is itself at 0.13 of the bare trivial call,
    below the 0.40 asked of us.

Earlier figures (2-core container, SQLite, no Redis, 20 tools registered, servers pinned to CPU 0,
wrk on CPU 1; 8 s per case, 8 connections; ratios to the bare server in the same run). Load
average 1.7 at the start, 3.5 at the end (other engineers' work on the same 2 cores): the bare
server made 1,014 calls/s here against 1,901 in the previous session's run, so compare ratios
within a run, and for what changed see the instruction counts below, which load cannot move.

    case                     calls/s  p50 ms  p99 ms  ratio  p99 x  goal   met
    bare SDK ping             1013.9    6.79   47.20
    eco_ping                   606.3   11.78   52.87   0.60   1.12  0.70   no (p99 yes)
    eco_search_products        463.0   16.19  275.69   0.46   5.84  0.60   no (p99 no)
    eco_search_sites           427.0   18.14  113.32   0.42   2.40  0.60   no (p99 no)
    eco_get_product            592.1   12.56  110.54   0.58   2.34  0.60   no, near (p99 no)
    eco_get_availability       209.7   32.53  153.98   0.21   3.26  0.40   no
    stdio first tools/list: bare 1.06 s, eco 2.47 s median of 5 (x2.34; goal 1.3x: no)
    stdio first eco_search_products from spawn, warm database: 3.63 s (2.80-4.54; goal 1.5 s: no)
    stdio after the kept tool listing (commit 7c059c5; `--only stdio`, medians of 5, same runs,
    before = the commit ahead of it, project bytecode compiled in both trees; the box was loaded
    4.4-8.9 by other work, so only the ratios mean anything): tools/list x2.17 before, x1.47 and
    x1.62 after (goal 1.3x: no, near); first search 16.4 s before, 12.4 and 8.5 s after (goal
    1.5 s: no). Load-independent: CPU seconds of the process up to its first answer, median of
    5 (load 2.7-5.5): eco tools/list 2.79 -> 1.86 s against bare's 1.23-1.28 s (x2.18 -> x1.51).
    stdio tools/list before the apps and the database (commits fc74953..97dec27: manage.py hands
    a serving eco_mcp_stdio to eco_service.stdio_start.run_command, which answers from the kept listing
    and loads Django's apps and runs prepare_database in a worker thread after the first answers;
    project bytecode compiled by scripts/setup, 5667842): `--only stdio`, three runs, load
    1.0-3.3: bare 1.20/1.28/1.29 s, eco 1.57/1.56/1.51 s: x1.32, x1.22, x1.17 (goal 1.3x: yes in
    two of three, x1.32 in the first); first search 2.18/2.68/2.44 s (goal 1.5 s: no; the first
    eco spawn of each run, 2.6-3.2 s, writes the tool listing into the fresh data folder). Before
    and after in the same runs (a spawn harness: bare, old, new interleaved; CPU of the process at
    its first stdout flush; old = the tree ahead of fc74953, bytecode compiled in both; medians of
    5, load 2.7-3.3): wall x1.57-1.71 -> x1.16-1.21; CPU to the first answer 1.75-1.91 -> 1.30-1.40 s
    against bare's 1.08-1.23 s (x1.56-1.69 -> x1.15-1.21). Bytecode alone (same code, from
    source vs compiled, load 5.6-8.1): 1.54-1.66 -> 1.40-1.57 s CPU.
    resident memory: bare 66.8 MB; eco warm 142.7 MB (goal 150 MB: yes); soak of 44,594 mixed
    calls in 120 s: 142.7 -> 142.9 -> 143.2 MB (no growth; not the 100,000 asked: bounded in time)
    100,000-call soak (`--only soak --soak-calls 100000`, tree of 7b6bf77, load 6-7: 64 calls/s):
    warm 138.7 MB (5 s warm-up) -> 140.1 after the first chunk -> 141.2 at 50,575 calls -> 141.4
    MB after 100,424 calls (1,578 s, not_ok 0). +1.3 MB over the first 50,000, +0.2 MB over the
    second (156 samples, monotone 140.1 -> 141.4): flattening, as bounded memos filling would;
    a per-call leak would add alike in both halves.
    Every call of every case answered a successful tool result (not_ok 0).

The previous session's run (load 1.5-2.5, bare 1,900.8 calls/s): eco_ping 0.47, search_products
0.25, search_sites 0.23, get_product 0.30, availability 0.06; stdio tools/list x2.48 (2.06 s),
first search 2.35 s; warm RSS 191.2 MB. Before the issue's first fixes (load ~6.8): eco_ping 0.34,
search_products 0.35, search_sites 0.27, get_product 0.09 (33 calls/s), availability 0.05. Earlier
sessions' changes (py-spy, --profile-dir): eco_ping reads the catalog status once a second, not
per call (mcp_gateway/health.py); catalog tools skip the thread hops while the index is current
(catalog.index.peek_index); eco_get_product's availability summary is kept per index entry.

Instructions per call (bench/bench_instructions.py: callgrind, in process over the same ASGI app
and SDK, no sockets; before = commit 39e08b2, this session's start; bare = 1,662,349):

    case                      before        after   change   bare's rate x (after)
    eco_ping                3,592,880    2,783,991    -23 %       0.60
    eco_search_products     5,952,057    5,360,917    -10 %       0.31
    eco_search_sites        8,674,497    8,136,927     -6 %       0.20
    eco_get_product         4,233,874    3,732,454    -12 %       0.45
    eco_get_availability   47,979,046   19,104,885    -60 %       0.09
    refused (no tool)       2,632,334    2,310,562    -12 %       0.72
    stdio, whole process to the first answer (callgrind, PYTHONHASHSEED=0): bare 2.85 G; eco
    tools/list 6.75 G -> 6.43 G (-5 %); eco first search 11.30 G -> 11.34 G (+0.4 %: the index
    build's value sharing costs about what graphql-core's import saved).

What changed this session, each with its measure:
- availability: rows are shaped from the month-index intervals the index already holds (the ISO
  texts were parsed again for every row), month texts come from a bounded memo, and each run's
  merged form, count and texts are kept in a bounded memo (4,096 runs): 48.0M -> 19.1M.
- a result is serialized once (the compact JSON measured for the byte budget is the text content
  unless trimming or masking changed the payload; masking can change it only when a secret occurs
  in that text), and the call's arguments are dumped only for a trimmed page's continuation.
- the SDK's Mcp-Param-* check gets a tool's input schema only when it declares an x-mcp-header
  (none of ours does; "no schema" gets the same verdict without two walks of the schema per call).
- eco_ping reuses its last report while everything it reports is unchanged, and such a reused
  result is dumped and encoded once (calls.py).
- memory: the index stores each equal interval, interval run, range text, release tag and site
  set once (442,749 interval references, 5,787 distinct) and Cell has slots: the index holds
  14.2 MB (tracemalloc) instead of 54.5 MB, +18.5 MB of RSS instead of +63.1 MB, and each
  superseded index the LRU keeps +16.3 MB instead of +59.3 MB (bench/bench_memory.py).
- stdio start-up: graphql-core is imported when a GraphQL query is checked, not when the tools are
  listed (~0.2 s of ~1.7 s of imports, -X importtime, minimum of 5 runs).
What is left (measured, not fixed): a catalog call's instructions are still 55-80 % the SDK's
request path and serialization, which scale with the result (the SDK dumps and validates the
structured content several times, then JSON-encodes it with the text copy); eco_search_sites'
own search is 1-3 ms in process (a per-site token scan with a fuzzy fallback in catalog/sites.py)
and every search makes one hop to the catalog-read pool (catalog/access.py),
both outside this session's files; stdio start-up is the SDK (shared with bare), Django's setup
(django-celery-beat's models alone pull in celery, kombu, amqp; since fc74953 after the first
tools/list answer, still ahead of a first tools/call), ~1,300 modules and the 20 tools'
JSON schemas built for the size check, and the first search adds the index build (~0.7 s).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mixed_load import META, MODERN, _env, _free_port, _stop, _wait_http, simulator_with_catalogs

REPO = Path(__file__).resolve().parents[1]
BARE = Path(__file__).resolve().parent / "bare_sdk_server.py"

CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "eco_ping": [("eco_ping", {})],
    "eco_search_products": [
        ("eco_search_products", {"query": "soil temperature", "limit": 10}),
        ("eco_search_products", {"query": "bird counts"}),
        ("eco_search_products", {"query": "precipitation", "limit": 5}),
        ("eco_search_products", {"query": "canopy nitrogen foliar"}),
    ],
    "eco_search_sites": [("eco_search_sites", {"query": "forest"}), ("eco_search_sites", {"query": "Harvard"})],
    "eco_get_product": [("eco_get_product", {"product": "DP1.00041.001"}),
                        ("eco_get_product", {"product": "DP1.10003.001"})],
    "eco_get_availability": [("eco_get_availability", {"product": "DP1.00041.001"}),
                             ("eco_get_availability", {"product": "DP1.10003.001"})],
}
GOALS = {"eco_ping": 0.70, "eco_search_products": 0.60, "eco_search_sites": 0.60, "eco_get_product": 0.60,
         "eco_get_availability": 0.40}
STDIO_TIMEOUT_S = 60.0
SOAK_CHUNK_S = 10
CATALOG_CASES = ("eco_search_products", "eco_search_sites", "eco_get_product")

LUA = r"""
local bodies = {BODIES}
local names = {NAMES}
local i = 0
bad = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function request()
  i = i % #bodies + 1
  return wrk.format("POST", "/mcp", {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "MODERN",
    ["Mcp-Method"] = "tools/call",
    ["Mcp-Name"] = names[i],
  }, bodies[i])
end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"isError":false', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do b = b + (t:get("bad") or 0) end
  io.write(string.format('WRKJSON {"requests":%d,"us":%d,"p50":%d,"p99":%d,"bad":%d,"errors":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), b,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status +
    summary.errors.timeout))
end
"""


def _lua_str(s: str) -> str:
    return "[==[" + s + "]==]"


def _script(calls: list[tuple[str, dict[str, Any]]], path: Path) -> Path:
    bodies = [json.dumps({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
                          "params": {"name": name, "arguments": args, "_meta": META}}, separators=(",", ":"))
              for n, (name, args) in enumerate(calls)]
    text = (LUA.replace("{BODIES}", "{" + ",".join(_lua_str(b) for b in bodies) + "}")
            .replace("{NAMES}", "{" + ",".join(_lua_str(n) for n, _ in calls) + "}").replace("MODERN", MODERN))
    path.write_text(text)
    return path


def _wrk(url: str, calls: list[tuple[str, dict[str, Any]]], seconds: float, workdir: Path,
         connections: int = 8) -> dict[str, Any]:
    script = _script(calls, workdir / "case.lua")
    cmd = ["wrk", "-t", "1", "-c", str(connections), "-d", f"{max(1, round(seconds))}s", "--timeout", "10s",
           "-s", str(script), url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary: {out.stdout[-500:]} {out.stderr[-500:]}")
    raw = json.loads(line.removeprefix("WRKJSON "))
    return {"calls_per_s": round(raw["requests"] / (raw["us"] / 1e6), 1), "p50_ms": round(raw["p50"] / 1000, 2),
            "p99_ms": round(raw["p99"] / 1000, 2), "calls": raw["requests"], "not_ok": raw["bad"] + raw["errors"]}


def _python_load(url: str, calls: list[tuple[str, dict[str, Any]]], seconds: float) -> dict[str, Any]:
    """Fallback without wrk: bench_mixed_load's keep-alive client, 8 connections."""
    import asyncio
    from collections import Counter

    from bench_mixed_load import _client_loop, _pct

    async def run() -> dict[str, Any]:
        times: list[float] = []
        outcomes: Counter = Counter()
        stop = time.perf_counter() + seconds
        await asyncio.gather(*(_client_loop(url, calls, stop, times, outcomes) for _ in range(8)))
        return {"calls_per_s": round(len(times) / seconds, 1), "p50_ms": round(statistics.median(times) * 1000, 2),
                "p99_ms": round(_pct(times, 0.99) * 1000, 2), "calls": len(times),
                "not_ok": sum(v for k, v in outcomes.items() if k != "ok")}

    return asyncio.run(run())


def _load(url: str, calls: list[tuple[str, dict[str, Any]]], seconds: float, workdir: Path) -> dict[str, Any]:
    if shutil.which("wrk"):
        _wrk(url, calls, 1, workdir)  # warm-up
        return _wrk(url, calls, seconds, workdir)
    _python_load(url, calls, 1)
    return _python_load(url, calls, seconds)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _profiled(profile_dir: str | None, name: str, pid: int, seconds: float):
    if not profile_dir:
        return None
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return subprocess.Popen([exe, "record", "-p", str(pid), "-d", str(round(seconds + 2)), "-r", "200", "-f", "raw",
                             "-o", str(Path(profile_dir) / f"{name}.txt")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _start(cmd: list[str], env: dict[str, str], port: int, pin: bool) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_http(f"http://127.0.0.1:{port}/healthz")
    if pin:
        os.sched_setaffinity(proc.pid, {0})
    return proc


def _progress(what: str, value: Any) -> None:
    print(f"{what}: {json.dumps(value)}", file=sys.stderr, flush=True)


def _stdio_first(cmd: list[str], env: dict[str, str], request: dict[str, Any]) -> float:
    line = (json.dumps(request) + "\n").encode()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write(line)
        proc.stdin.flush()
        if not select.select([proc.stdout], [], [], STDIO_TIMEOUT_S)[0]:
            raise RuntimeError(f"no stdio answer within {STDIO_TIMEOUT_S} s: {cmd}")
        reply = proc.stdout.readline()
        took = time.perf_counter() - started
        msg = json.loads(reply)
        if "result" not in msg or msg["result"].get("isError"):
            raise RuntimeError(f"stdio answer was not a result: {reply[:300]!r}")
        return took
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _structured(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One call per argument set, one at a time: the structured content of each answer."""
    import httpx

    payloads = []
    for n, (name, args) in enumerate(calls):
        reply = httpx.post(url, timeout=60, headers={
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call", "Mcp-Name": name,
        }, json={"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
                 "params": {"name": name, "arguments": args, "_meta": META}})
        data = next(ln for ln in reply.text.splitlines() if ln.startswith("data: "))
        payloads.append(json.loads(data.removeprefix("data: "))["result"]["structuredContent"])
    return payloads


def _capture_payloads(url: str, calls: list[tuple[str, dict[str, Any]]], path: Path) -> Path:
    """This service's results for a bare server to return (bare_sdk_server's ECO_BARE_PAYLOAD):
    the SDK's own cost for results of that size."""
    path.write_text(json.dumps(_structured(url, calls), ensure_ascii=False))
    return path


def _soak(url: str, pid: int, calls_goal: int, seconds: float, workdir: Path) -> dict[str, Any]:
    """Mixed catalog calls, RSS half-way and after: for `seconds`, or, given `calls_goal`, in
    chunks of SOAK_CHUNK_S until that many calls (wrk stops on time only), `seconds` bounding it."""
    mixed = [c for case in CASES for c in CASES[case]]
    if not calls_goal:
        half = _wrk(url, mixed, seconds / 2, workdir)
        out: dict[str, Any] = {"rss_half_mb": _rss_mb(pid)}
        _progress("soak half", {**half, **out})
        rest = _wrk(url, mixed, seconds / 2, workdir)
        return {**out, "rss_after_mb": _rss_mb(pid), "soak_calls": half["calls"] + rest["calls"],
                "soak_not_ok": half["not_ok"] + rest["not_ok"], "soak_seconds": seconds}
    out = {"soak_calls": 0, "soak_not_ok": 0, "rss_trace_mb": []}
    started = time.monotonic()
    while out["soak_calls"] < calls_goal and time.monotonic() - started < seconds:
        chunk = _wrk(url, mixed, SOAK_CHUNK_S, workdir)
        out["soak_calls"] += chunk["calls"]
        out["soak_not_ok"] += chunk["not_ok"]
        out["rss_trace_mb"].append(_rss_mb(pid))
        if "rss_half_mb" not in out and out["soak_calls"] >= calls_goal / 2:
            out.update({"rss_half_mb": out["rss_trace_mb"][-1], "calls_at_half": out["soak_calls"]})
            _progress("soak half", out)
    out.update({"rss_after_mb": _rss_mb(pid), "soak_seconds": round(time.monotonic() - started, 1),
                "soak_calls_goal": calls_goal})
    return out


def bench_stdio(env: dict[str, str], spawns: int) -> dict[str, Any]:
    tools_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    search = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "eco_search_products", "arguments": {"query": "soil temperature"}, "_meta": META}}
    eco = [sys.executable, "manage.py", "eco_mcp_stdio"]
    bare = [sys.executable, str(BARE), "--stdio"]
    bare_t, eco_t, search_t = [], [], []
    for _ in range(spawns):  # interleaved, so load on the box falls on both
        bare_t.append(_stdio_first(bare, env, tools_list))
        eco_t.append(_stdio_first(eco, env, tools_list))
        search_t.append(_stdio_first(eco, env, search))
    out: dict[str, Any] = {"bare_tools_list_s": round(statistics.median(bare_t), 3),
           "eco_tools_list_s": round(statistics.median(eco_t), 3),
           "eco_first_search_s": round(statistics.median(search_t), 3), "spawns": spawns,
           "all": {"bare": [round(t, 3) for t in bare_t], "eco": [round(t, 3) for t in eco_t],
                   "search": [round(t, 3) for t in search_t]}}
    out["tools_list_ratio"] = round(out["eco_tools_list_s"] / out["bare_tools_list_s"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--soak-seconds", type=float, help="mixed catalog calls for the memory check (default 120;"
                        " with --soak-calls, the time bound, default 1800)")
    parser.add_argument("--soak-calls", type=int, default=0, help="soak to this many calls (issue 19: 100000)")
    parser.add_argument("--same-payload", action="store_true",
                        help="per case, also a bare server returning this service's own results for that case")
    parser.add_argument("--spawns", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of the cases")
    parser.add_argument("--pin", action=argparse.BooleanOptionalAction, default=(os.cpu_count() or 1) >= 2)
    parser.add_argument("--profile-dir", help="py-spy record this service per case into this folder")
    parser.add_argument("--only", choices=["stdio", "soak"], help="run only this part (after the same setup)")
    opts = parser.parse_args()
    if opts.soak_seconds is None:
        opts.soak_seconds = 1800.0 if opts.soak_calls else 120.0
    if not (0 < opts.seconds <= 120 and 1 <= opts.rounds <= 10 and 0 <= opts.soak_seconds <= 3600
            and 0 <= opts.soak_calls <= 1_000_000 and 0 <= opts.spawns <= 20):
        parser.error("bounded run: seconds 0-120, rounds 1-10, soak 0-3600 s and 0-1,000,000 calls, spawns 0-20")
    cases = [c for c in opts.cases.split(",") if c]
    cpus = set(range(1, os.cpu_count() or 2)) if opts.pin else None
    if cpus:
        os.sched_setaffinity(0, cpus)  # this process and what it spawns stay off the servers' core
    report: dict[str, Any] = {"load_generator": "wrk" if shutil.which("wrk") else "python", "rounds": []}
    sim: subprocess.Popen | None = None
    with tempfile.TemporaryDirectory(prefix="eco-bench-vs-sdk-") as data_dir:
        work = Path(data_dir)
        sim_port = _free_port()
        env = _env(data_dir, sim_port)
        try:
            sim = simulator_with_catalogs(env, sim_port)
            eco_memory: dict[str, Any] = {}
            for _ in range(0 if opts.only == "stdio" else opts.rounds):
                row: dict[str, Any] = {}
                bare_port = _free_port()
                bare = _start([sys.executable, str(BARE), "--http", str(bare_port)], env, bare_port, opts.pin)
                bare_url = f"http://127.0.0.1:{bare_port}/mcp"
                payloads: dict[str, Path] = {}
                eco: subprocess.Popen | None = None
                try:
                    # The bare server stays up beside this service (both on the pinned core, only one
                    # loaded at a time) and is measured right before each case and once after the last:
                    # a case's ratio is to the mean of the two bare windows around it, so the box's drift
                    # over a round (the bare server alone moved 755 -> 1,076 calls/s between rounds)
                    # does not land on one case.
                    bare_windows = [_load(bare_url, [("ping", {})], 2 if opts.only == "soak" else opts.seconds, work)]
                    row["bare"] = {**bare_windows[0], "rss_mb": _rss_mb(bare.pid)}
                    _progress("bare", row["bare"])
                    port = _free_port()
                    eco = _start([sys.executable, "manage.py", "eco_mcp", "--transport", "http", "--bind-address",
                                  "127.0.0.1", "--bind-port", str(port), "--no-prewarm", "--log-level", "warning"],
                                 env, port, opts.pin)
                    url = f"http://127.0.0.1:{port}/mcp"
                    if opts.only == "soak":  # the catalog and the result memos warm, as after the cases
                        _load(url, [c for case in CASES for c in CASES[case]], 5, work)
                    for case in cases:
                        # The first catalog call builds the index (5.6 s under load 6): without
                        # this it fell inside the first catalog case's window (p99 5 s).
                        _structured(url, CASES[case])
                    measured = [] if opts.only == "soak" else cases
                    for n, case in enumerate(measured):
                        if n:
                            bare_windows.append(_load(bare_url, [("ping", {})], opts.seconds, work))
                            _progress("bare", bare_windows[-1])
                        spy = _profiled(opts.profile_dir, case, eco.pid, opts.seconds)
                        res = _load(url, CASES[case], opts.seconds, work)
                        if spy:
                            spy.wait(timeout=opts.seconds + 30)
                        row[case] = res
                        _progress(case, res)
                        if opts.same_payload:
                            payloads[case] = _capture_payloads(url, CASES[case], work / f"payload.{case}.json")
                    if measured:
                        bare_windows.append(_load(bare_url, [("ping", {})], opts.seconds, work))
                        _progress("bare", bare_windows[-1])
                    for n, case in enumerate(measured):
                        around = bare_windows[n:n + 2]
                        res = row[case]
                        res["bare_calls_per_s"] = round(statistics.fmean(b["calls_per_s"] for b in around), 1)
                        res["bare_p99_ms"] = round(statistics.fmean(b["p99_ms"] for b in around), 2)
                        res["ratio_calls_per_s"] = round(res["calls_per_s"] / res["bare_calls_per_s"], 2)
                        res["ratio_p99"] = round(res["p99_ms"] / res["bare_p99_ms"], 2)
                    row["bare_windows_calls_per_s"] = [b["calls_per_s"] for b in bare_windows]
                    eco_memory = {"rss_warm_mb": _rss_mb(eco.pid)}
                    if opts.soak_seconds and shutil.which("wrk"):
                        eco_memory.update(_soak(url, eco.pid, opts.soak_calls, opts.soak_seconds, work))
                finally:
                    if eco is not None:
                        _stop(eco)
                    _stop(bare)
                for case, payload in payloads.items():
                    # After this service stopped, so the two servers never share the pinned core.
                    port = _free_port()
                    bare = _start([sys.executable, str(BARE), "--http", str(port)],
                                  {**env, "ECO_BARE_PAYLOAD": str(payload)}, port, opts.pin)
                    try:
                        same = _load(f"http://127.0.0.1:{port}/mcp", [("ping", {})] * len(CASES[case]),
                                     opts.seconds, work)
                    finally:
                        _stop(bare)
                    row[case]["same_payload_bare"] = same
                    row[case]["ratio_same_payload"] = round(row[case]["calls_per_s"] / same["calls_per_s"], 2)
                    _progress(f"bare returning {case}'s results", same)
                report["rounds"].append(row)
            if report["rounds"]:
                report["memory"] = {"bare_rss_mb": report["rounds"][-1]["bare"]["rss_mb"], **eco_memory}
            if opts.spawns and opts.only != "soak":
                report["stdio"] = bench_stdio(env, opts.spawns)
        finally:
            if sim is not None:
                _stop(sim)
    print(json.dumps(report, indent=2))
    print(_table(report))


def _table(report: dict[str, Any]) -> str:
    lines = [f"{'case':24} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'ratio':>6} {'p99 x':>6} {'goal':>6} not_ok"
             "  [same-payload bare calls/s, ratio]"]
    for n, row in enumerate(report["rounds"]):
        b = row["bare"]
        lines.append(f"round {n + 1} (bare windows, calls/s: {row.get('bare_windows_calls_per_s')})")
        lines.append(f"{'bare SDK ping':24} {b['calls_per_s']:9.1f} {b['p50_ms']:8.2f} {b['p99_ms']:8.2f}"
                     f" {'':>6} {'':>6} {'':>6} {b['not_ok']}")
        for case, goal in GOALS.items():
            if case in row:
                r = row[case]
                lines.append(f"{case:24} {r['calls_per_s']:9.1f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f}"
                             f" {r['ratio_calls_per_s']:6.2f} {r['ratio_p99']:6.2f} {goal:6.2f} {r['not_ok']}"
                             + f"  [bare around it {r['bare_calls_per_s']:.1f}]"
                             + (f"  {r['same_payload_bare']['calls_per_s']:.1f} {r['ratio_same_payload']:.2f}"
                                if "same_payload_bare" in r else ""))
    lines.append(f"memory: {json.dumps(report.get('memory'))}")
    if "stdio" in report:
        s = report["stdio"]
        lines.append(f"stdio first tools/list: bare {s['bare_tools_list_s']} s, eco {s['eco_tools_list_s']} s "
                     f"(x{s['tools_list_ratio']}); first eco_search_products {s['eco_first_search_s']} s")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
