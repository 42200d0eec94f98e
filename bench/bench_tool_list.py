"""Bytes of the tool list per tool: each tool's entry (compact JSON, as tools/list sends it), its
input schema, its output schema and its description, now and at an earlier commit.

    .venv/bin/python bench/bench_tool_list.py [--before COMMIT] [--json FILE]

"Now" renders the registry of this tree; "before" reads the committed snapshots of COMMIT
(tests/gateway/snapshots/*.json, the same entries, re-dumped compact: the byte count does not
depend on key order). The totals are the stdio list (every tool) and the HTTP list (stdio-only
tools hidden), as Registry.tools_list_bytes counts them (the `{"tools": [...]}` result).

Figures (bytes; before = b093be4, after = the schema compaction of mcp_gateway.schemas: a type
used once written where it is used and a shared one once in $defs, output schemas without
`required` and without a `type` that properties, items or enum values already show, input schemas
without a flag's false or an integer's 0 default, the envelope's meaning (source.origin's values
included), what inputs naming a product, site, release or month take, month ranges, byRelease's
keys and those defaults written once in the server instructions instead of in each schema, the
title written once (in annotations, MCP's display-name fallback), tool descriptions cut to when
to use the tool and what it returns (not the fields the output schema lists), and field
descriptions that restated their name, pattern, default, the tool's description or the
instructions dropped; every input and output field and its JSON types kept,
tests/gateway/test_registry.py):

    tool                             before   after  change     input b/a   output b/a  descr b/a
    eco_describe_tables                4428    3076   -31 %     910/  781   2887/ 1786   248/ 157
    eco_download_files                 4790    3611   -25 %    1535/ 1505   2350/ 1392   449/ 283
    eco_find_locations                 4443    3061   -31 %    1183/ 1077   2444/ 1384   406/ 221
    eco_get_availability               5532    3713   -33 %    1452/ 1136   3445/ 2065   212/ 126
    eco_get_citation                   3224    2183   -32 %     874/  801   1501/  881   465/ 147
    eco_get_document                   3225    2247   -30 %     770/  718   1625/  965   429/ 211
    eco_get_location                   5842    4072   -30 %     684/  717   4537/ 2880   250/ 136
    eco_get_product                    8009    5663   -29 %     995/  931   6427/ 4233   207/ 149
    eco_get_prototype_dataset          5019    3497   -30 %     675/  708   3646/ 2283   282/ 125
    eco_get_release                    4660    3226   -31 %     748/  745   3188/ 1859   240/ 168
    eco_get_sample                     4605    3105   -33 %    1068/ 1026   2701/ 1519   438/ 194
    eco_get_site                       5484    3584   -35 %     720/  597   4173/ 2456   208/ 176
    eco_graphql                        3465    2308   -33 %     891/  702   1451/  809   765/ 475
    eco_list_files                     6217    4416   -29 %    1491/ 1410   4033/ 2427   246/ 158
    eco_list_releases                  2860    1781   -38 %     271/  216   1980/ 1087   259/ 157
    eco_list_sample_classes            2697    1769   -34 %     456/  420   1604/  845   250/ 142
    eco_ping                           4021    2624   -35 %     206/  180   3303/ 1983   177/ 151
    eco_query_tables                           2237                   514         1193        228
    eco_search_products                4574    3213   -30 %    1481/ 1204   2535/ 1513   186/ 155
    eco_search_prototype_datasets      3890    2734   -30 %     989/  960   2236/ 1274   279/ 150
    eco_search_sites                   4620    3229   -30 %    1181/  991   2838/ 1719   216/ 163
    eco_search_taxonomy                3489    2439   -30 %    1311/ 1086   1496/  791   336/ 242
    eco_stack_tables                   4704    4345    -8 %    1016/ 1290   2820/ 2338   475/ 351
    all 23 tools (stdio list)         99831   72167   -28 %
    HTTP list (22 tools)              90335   68555   -24 %

eco_query_tables did not exist at b093be4; eco_stack_tables was smaller then (its HTTP build
state, dataset_id, wait_seconds and progress came later), hence its -8 %. The 21 other tools
that existed at b093be4 went from 95,094 to 65,551 bytes of entries (-31 %), the 22 with
eco_stack_tables from 99,798 to 69,896 (-30 %); per tool from -25 % (eco_download_files, whose
description keeps its caps) to -38 %, 8 of them at -32 % or better. Over those 21 tools the
output schemas lost 40 % (60.4 to 36.2 KB), the input schemas 10 % (19.9 to 17.9 KB: their
bounds, patterns and enums stay, the fuzz oracle holds the server to accept what they accept),
the descriptions 41 % (6.5 to 3.9 KB). What is left is mostly fixed: field names and their types,
the envelope (about 340 bytes a tool), two $schema declarations (124 bytes a tool), annotations
and _meta (about 280 bytes a tool). The HTTP list of 22 tools is 68,555 bytes, 6,445 under the
75,000 the tests hold it to (tests/gateway/test_registry.py, where each tool also has its share:
the shares of the tools HTTP lists add up to 69,203).
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
