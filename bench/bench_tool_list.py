"""Bytes of the tool list per tool: each tool's entry (compact JSON, as tools/list sends it), its
input schema, its output schema and its description, now and at an earlier commit.

    .venv/bin/python bench/bench_tool_list.py [--before COMMIT] [--json FILE]

"Now" renders the registry of this tree; "before" reads the committed snapshots of COMMIT
(tests/gateway/snapshots/*.json, the same entries, re-dumped compact: the byte count does not
depend on key order). The totals are the stdio list (every tool) and the HTTP list (stdio-only
tools hidden), as Registry.tools_list_bytes counts them (the `{"tools": [...]}` result).

Figures (bytes; before = b093be4, after = the schema compaction of mcp_gateway.schemas: a type
used once written where it is used and a shared one once in $defs, output schemas without
`required` and without a `type` that properties, items or enum values already show, the
envelope's meaning written once in the server instructions instead of in each schema, and
descriptions that restated their schema trimmed; every input and output field and its JSON types
kept, tests/gateway/test_registry.py):

    tool                             before   after  change     input b/a   output b/a  descr b/a
    eco_describe_tables                4428    3365   -24 %     910/  910   2887/ 1824   248/ 248
    eco_download_files                 4790    3856   -19 %    1535/ 1521   2350/ 1430   449/ 449
    eco_find_locations                 4443    3441   -23 %    1183/ 1183   2444/ 1442   406/ 406
    eco_get_availability               5532    4339   -22 %    1452/ 1389   3445/ 2315   212/ 212
    eco_get_citation                   3224    2508   -22 %     874/  874   1501/  919   465/ 331
    eco_get_document                   3225    2547   -21 %     770/  770   1625/ 1003   429/ 373
    eco_get_location                   5842    4223   -28 %     684/  684   4537/ 2918   250/ 250
    eco_get_product                    8009    5979   -25 %     995/  995   6427/ 4397   207/ 207
    eco_get_prototype_dataset          5019    3694   -26 %     675/  675   3646/ 2321   282/ 282
    eco_get_release                    4660    3369   -28 %     748/  748   3188/ 1897   240/ 240
    eco_get_sample                     4605    3345   -27 %    1068/ 1068   2701/ 1557   438/ 322
    eco_get_site                       5484    3900   -29 %     720/  720   4173/ 2589   208/ 208
    eco_graphql                        3465    2754   -21 %     891/  796   1451/  934   765/ 666
    eco_list_files                     6217    4648   -25 %    1491/ 1472   4033/ 2483   246/ 246
    eco_list_releases                  2860    2005   -30 %     271/  271   1980/ 1125   259/ 259
    eco_list_sample_classes            2697    1976   -27 %     456/  456   1604/  883   250/ 250
    eco_ping                           4021    2800   -30 %     206/  206   3303/ 2082   177/ 177
    eco_search_products                4574    3566   -22 %    1481/ 1440   2535/ 1568   186/ 186
    eco_search_prototype_datasets      3890    2985   -23 %     989/  989   2236/ 1331   279/ 279
    eco_search_sites                   4620    3566   -23 %    1181/ 1142   2838/ 1823   216/ 216
    eco_search_taxonomy                3489    2823   -19 %    1311/ 1297   1496/  884   336/ 296
    eco_stack_tables                   4704    3550   -25 %    1016/ 1011   2820/ 1671   475/ 475
    all 22 tools (stdio list)         99831   75272   -25 %
    HTTP list (20 tools)              90335   67864   -25 %

So the output schemas lost 38 % (63.2 to 39.4 KB over the 22 tools), the input schemas 1 % (20.9
to 20.6 KB: their types, bounds and defaults are what a caller needs, and some clients hand them
to a model as function declarations, which want explicit types), the descriptions 6 % (7.0 to 6.6
KB). Left in the output schemas: field names (11.9 KB), their types (about 16 KB) and the envelope
every tool repeats (about 400 bytes a tool). The HTTP list with eco_stack_tables served there too
is 71,415 bytes, 3,585 under the 75,000 the tests hold it to (tests/gateway/test_registry.py, where
each tool also has its share: the shares of the tools HTTP lists add up to 72,890).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SNAPSHOTS = "tests/gateway/snapshots"


def _bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _row(entry: dict[str, Any], http: bool) -> dict[str, Any]:
    return {"total": _bytes(entry), "input": _bytes(entry["inputSchema"]), "output": _bytes(entry["outputSchema"]),
            "description": len(entry["description"].encode()), "http": http}


def now() -> dict[str, dict[str, Any]]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
    import django

    django.setup()
    from mcp_gateway.registry import default_registry

    return {s.name: _row(s.tool.model_dump(by_alias=True, mode="json", exclude_none=True), not s.stdio_only)
            for s in default_registry().listed(http=False)}


def at(commit: str) -> dict[str, dict[str, Any]]:
    names = subprocess.run(["git", "ls-tree", "--name-only", commit, f"{SNAPSHOTS}/"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    rows = {}
    for path in names:
        entry = json.loads(subprocess.run(["git", "show", f"{commit}:{path}"], cwd=REPO, check=True,
                                          capture_output=True, text=True).stdout)
        rows[entry["name"]] = _row(entry, not entry["_meta"]["stdioOnly"])
    return rows


def _list_bytes(rows: dict[str, dict[str, Any]], http: bool) -> int:
    # {"tools":[e1,e2,...]}: the entries, a comma between each two, and 12 bytes around them.
    kept = [r["total"] for r in rows.values() if r["http"] or not http]
    return sum(kept) + max(len(kept) - 1, 0) + 12


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="a commit whose snapshots to compare against")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    after = now()
    before = at(args.before) if args.before else {}
    print(f"{'tool':31} {'before':>7} {'after':>7} {'change':>7}   {'input b/a':>11}  {'output b/a':>11}  "
          f"{'descr b/a':>9}")
    for name, r in after.items():
        b = before.get(name)
        if b is None:
            print(f"{name:31} {'':>7} {r['total']:7} {'':>7}   {r['input']:11}  {r['output']:11}  {r['description']:9}")
            continue
        change = f"{round(100 * (r['total'] - b['total']) / b['total'])} %"
        print(f"{name:31} {b['total']:7} {r['total']:7} {change:>7}   {b['input']:5}/{r['input']:5}  "
              f"{b['output']:5}/{r['output']:5}  {b['description']:4}/{r['description']:4}")
    for label, http in ((f"all {len(after)} tools (stdio list)", False),
                        (f"HTTP list ({sum(r['http'] for r in after.values())} tools)", True)):
        a = _list_bytes(after, http)
        if before:
            b = _list_bytes(before, http)
            print(f"{label:31} {b:7} {a:7} {round(100 * (a - b) / b):5} %")
        else:
            print(f"{label:31} {'':>7} {a:7}")
    if args.json:
        Path(args.json).write_text(json.dumps({"before": before, "after": after}, indent=1) + "\n")


if __name__ == "__main__":
    main()
