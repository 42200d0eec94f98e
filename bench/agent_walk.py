"""Agent walk: drive the MCP service through the real `mcp` SDK client against the upstream
simulator, a seed call per listed tool, then every `nextSteps` entry breadth-first, checking each
answer the way an agent would rely on it. From the repository: .venv/bin/python bench/agent_walk.py.

    bench/agent_walk.py --transport http|stdio [--max-calls 200] [--max-downloads 2] [--only TOOL,TOOL]

--only seeds the listed tools alone (the walk still follows their steps into any tool);
--max-downloads caps the eco_download_files calls followed (the rest are counted as skipped).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from collections import Counter, deque
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from bench.bench_mixed_load import _env, _free_port, _wait_http, simulator_with_catalogs  # noqa: E402

try:
    import jsonschema
except ImportError:  # the output/input schema checks are then skipped and the summary says so
    jsonschema = None

PRODUCT = "DP1.10003.001"  # breeding landbird point counts: at HARV, with files in 2020-05
SOIL = "DP1.00041.001"
SEEDS: dict[str, dict[str, Any]] = {
    "eco_ping": {"check_api": True},
    "eco_search_products": {"query": "soil temperature"},
    "eco_get_product": {"product": SOIL, "include": ["all"], "change_logs_limit": 2, "availability_limit": 20},
    "eco_get_availability": {"product": PRODUCT, "limit": 20},
    "eco_search_sites": {"domain_code": "D01"},
    "eco_get_site": {"site": "HARV", "products_limit": 20},
    "eco_find_locations": {"root": "HARV"},
    "eco_get_location": {"name": "HARV", "include": ["all"], "children_limit": 10},
    "eco_list_releases": {},
    "eco_get_release": {"release": "latest", "include": ["all"], "products_limit": 20},
    "eco_get_citation": {"product": PRODUCT},
    "eco_search_prototype_datasets": {"limit": 5},
    "eco_get_prototype_dataset": {"uuid": "<first prototype>", "files_limit": 2},
    "eco_get_document": {"spec_number": "NEON.DOC.004771vE", "product": PRODUCT},
    "eco_list_sample_classes": {"limit": 20},
    "eco_get_sample": {"sample_tag": "SHARED.TAG.2019"},
    "eco_search_taxonomy": {"genus": "Quercus", "limit": 5},
    "eco_graphql": {"introspect_type": "Site"},
    "eco_list_files": {"product": PRODUCT, "site_codes": ["HARV"], "start_month": "2020-05", "limit": 3},
    "eco_download_files": {"spec_number": "NEON.DOC.004771vE"},
}
EXTRA_DOWNLOAD = {"product": PRODUCT, "site_codes": ["HARV"], "start_month": "2020-05", "kind": "readme"}
MAX_DOWNLOADS = 2
# The list a page describes, and the argument that moves it, by page key.
PAGE_LIST = {"changeLogsPage": "changeLogs", "availabilityPage": "availabilityRows", "dataProductsPage": "dataProducts",
             "childrenPage": "children", "productsPage": "dataProducts", "filesPage": "files"}
PAGE_ARG = {"page": "offset", "changeLogsPage": "change_logs_offset", "availabilityPage": "availability_offset",
            "dataProductsPage": "products_offset", "childrenPage": "children_offset",
            "productsPage": "products_offset", "filesPage": "files_offset"}


def compact(obj: Any, ascii_: bool = False) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=ascii_)


def call_str(tool: str, args: dict[str, Any]) -> str:
    return f"{tool} {compact(args)}"


class Walk:
    def __init__(self, client: Client, transport: str, max_calls: int, max_downloads: int = MAX_DOWNLOADS,
                 only: set[str] | None = None) -> None:
        self.client, self.transport, self.max_calls = client, transport, max_calls
        self.max_downloads, self.only = max_downloads, only
        self.calls: Counter[str] = Counter()
        self.errors: Counter[tuple[str, str]] = Counter()
        self.text_forms: Counter[str] = Counter()
        self.problems: list[str] = []
        self.chains: dict[tuple[str, str, str], dict[int, dict[str, Any]]] = {}
        self.seen: set[str] = set()
        self.queue: deque[tuple[str, dict[str, Any], str]] = deque()
        self.downloads = self.skipped = self.left = 0
        self.cut: list[str] = []
        self.drift: dict[tuple[str, str, str], str] = {}

    def problem(self, tool: str, args: dict[str, Any], what: str) -> None:
        self.problems.append(f"{call_str(tool, args)}\n      -> {what}")

    def enqueue(self, tool: str, args: dict[str, Any], origin: str) -> None:
        key = tool + json.dumps(args, sort_keys=True)
        if key not in self.seen:
            self.seen.add(key)
            self.queue.append((tool, args, origin))

    async def run(self, seeds: dict[str, dict[str, Any]]) -> None:
        self.tools = {t.name: t for t in (await self.client.list_tools()).tools}
        for name in self.tools:
            if self.only is None or name in self.only:
                self.enqueue(name, seeds.get(name, {}), "seed")
        if "eco_download_files" in self.tools and (self.only is None or "eco_download_files" in self.only):
            self.enqueue("eco_download_files", EXTRA_DOWNLOAD, "seed")
        while self.queue and sum(self.calls.values()) < self.max_calls:
            tool, args, origin = self.queue.popleft()
            if tool == "eco_download_files":
                if self.downloads >= self.max_downloads:
                    self.skipped += 1
                    continue
                self.downloads += 1
            await self.one(tool, args, origin)
        self.left = len(self.queue)

    async def one(self, tool: str, args: dict[str, Any], origin: str) -> None:
        self.calls[tool] += 1
        try:
            result = await self.client.call_tool(tool, args)
        except MCPError as exc:
            data = exc.error.data if isinstance(exc.error.data, dict) else {}
            code = data.get("code", str(exc.error.code))
            self.errors[(tool, f"protocol:{code}")] += 1
            self.problem(tool, args, f"protocol error {exc.error.code} {code}: {exc.error.message} (from {origin})")
            return
        sc = result.structured_content
        texts = [c for c in result.content if c.type == "text"]
        # eco_plot_tables adds its chart as one PNG image block after the text.
        images = [c for c in result.content if c.type == "image" and c.mime_type == "image/png"]
        extra = len(result.content) - len(texts) - (len(images) if tool == "eco_plot_tables" else 0)
        if len(texts) != 1 or extra or len(images) > 1:
            self.problem(tool, args, f"content is {len(result.content)} blocks, not one text block"
                         + (" and at most one PNG" if tool == "eco_plot_tables" else ""))
        elif sc is None:
            self.problem(tool, args, "no structuredContent")
        elif texts[0].text == compact(sc):
            self.text_forms["compact utf-8"] += 1
        elif texts[0].text == compact(sc, True):
            self.text_forms["compact ascii-escaped"] += 1
        else:
            what = "the same JSON, not compact" if json.loads(texts[0].text) == sc else "not structuredContent's JSON"
            self.problem(tool, args, f"text is {what}: {texts[0].text[:160]!r}")
        if sc is None:
            return
        if result.is_error:
            code = (sc.get("error") or {}).get("code", "?")
            self.errors[(tool, code)] += 1
            if code == "internal_error":
                self.problem(tool, args, f"internal_error: {compact(sc['error'])[:300]} (from {origin})")
            details = (sc.get("error") or {}).get("details") or {}
            if code == "ambiguous_input" and details.get("field") and details.get("candidates"):
                # What an agent does with the candidates: retry with the first one.
                self.enqueue(tool, {**args, details["field"]: details["candidates"][0]}, f"retry of {call_str(tool, args)}")
            return
        self.errors[(tool, "ok")] += 1
        if jsonschema is not None:
            errs = sorted(jsonschema.Draft202012Validator(self.tools[tool].output_schema).iter_errors(sc), key=str)
            for e in errs[:3]:
                self.problem(tool, args, f"outputSchema: at /{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}")
        steps = sc.get("nextSteps") or []
        for step in steps:
            name, sargs = step.get("tool"), step.get("arguments") or {}
            if name not in self.tools:
                self.problem(tool, args, f"nextSteps names unlisted tool {call_str(str(name), sargs)}")
                continue
            if jsonschema is not None:
                for e in list(jsonschema.Draft202012Validator(self.tools[name].input_schema).iter_errors(sargs))[:2]:
                    self.problem(tool, args, f"nextStep {call_str(name, sargs)} rejected by inputSchema: {e.message[:200]}")
            self.enqueue(name, sargs, call_str(tool, args))
        self.check_pages(tool, args, sc, steps)

    def check_pages(self, tool: str, args: dict[str, Any], sc: dict[str, Any], steps: list[dict[str, Any]]) -> None:
        for pk, page in sc.items():
            if not (pk == "page" or pk.endswith("Page")) or not isinstance(page, dict):
                continue
            arg = PAGE_ARG.get(pk)
            if arg is None:
                self.problem(tool, args, f"unknown page key {pk}")  # the chain checks need its offset argument
                continue
            lst = sc.get(PAGE_LIST[pk]) if pk in PAGE_LIST else next(
                (sc[k] for k in ("items", "rows", "files", "siteMonths") if isinstance(sc.get(k), list)), None)
            n = len(lst) if isinstance(lst, list) else None
            if n is not None and page.get("returned") is not None and page["returned"] != n:
                self.problem(tool, args, f"{pk}.returned={page['returned']} but {n} items in the list")
            nxt = page.get("nextOffset")
            if nxt is not None:
                mine = [s for s in steps if s.get("tool") == tool and arg in (s.get("arguments") or {})]
                for s in (s for s in mine if s["arguments"][arg] == nxt):
                    sa, props = s["arguments"], self.tools[tool].input_schema.get("properties", {})
                    dflt = {k: props.get(k, {}).get("default") for k in set(args) | set(sa)}
                    diff = {k for k in dflt if not k.endswith("offset") and args.get(k, dflt[k]) != sa.get(k, dflt[k])}
                    if diff:  # informational: the next page is not asked for with the caller's other arguments
                        self.drift.setdefault((tool, pk, compact(sorted(diff))), f"{call_str(tool, args)} -> {compact(sa)}")
                if not any(s["arguments"][arg] == nxt for s in mine):
                    got = [s["arguments"][arg] for s in mine]
                    self.problem(tool, args, f"{pk}.nextOffset={nxt} but no next step with {arg}={nxt}"
                                 + (f" (steps carry {arg}={got})" if got else " (no continuation step)"))
            rest = {k: v for k, v in args.items() if not k.endswith("offset")}  # sibling lists move independently
            chain = self.chains.setdefault((tool, pk, json.dumps(rest, sort_keys=True)), {})
            items = [json.dumps(x, sort_keys=True) for x in lst] if isinstance(lst, list) else []
            chain[int(args.get(arg, 0))] = {"page": page, "items": items}

    def chain_report(self) -> tuple[int, int, int]:
        complete = multi = cut = 0
        for (tool, pk, rest), pages in self.chains.items():
            args, arg = json.loads(rest), PAGE_ARG[pk]
            off, walked, seen = min(pages), list[int](), list[str]()
            while off in pages and len(walked) <= len(pages):
                walked.append(off)
                seen += pages[off]["items"]
                nxt = pages[off]["page"].get("nextOffset")
                if nxt is None:
                    break
                off = nxt
            last = pages[walked[-1]]["page"]
            if last.get("nextOffset") is not None:
                cut += 1
                self.cut.append(f"{call_str(tool, {**args, arg: walked[-1]})} {pk}.nextOffset={last['nextOffset']} not called")
                continue
            complete += 1
            multi += len(walked) > 1
            totals = {pages[o]["page"].get("total") for o in walked}
            got = sum(pages[o]["page"].get("returned") or 0 for o in walked) + walked[0]
            where = f"{call_str(tool, {**args, arg: walked[0]})} chain {pk} offsets {walked}"
            if len(totals) > 1:
                self.problems.append(f"{where}\n      -> total changes along the chain: {sorted(totals, key=str)}")
            total = last.get("total")
            if total is not None and got != total:
                self.problems.append(f"{where}\n      -> start offset + returned sum = {got}, total = {total}")
            if len(set(seen)) != len(seen):
                self.problems.append(f"{where}\n      -> {len(seen) - len(set(seen))} repeated items along the chain")
        return complete, multi, cut

    def summary(self) -> None:
        complete, multi, cut = self.chain_report()
        print(f"\n=== walk over {self.transport}: {sum(self.calls.values())} calls, {len(self.tools)} tools listed, "
              f"{self.left} steps left unfollowed at the cap, {self.skipped} downloads skipped (cap {self.max_downloads}), "
              f"{self.downloads} made")
        print("calls per tool:")
        for tool in sorted(self.calls):
            outs = ", ".join(f"{c}={n}" for (t, c), n in sorted(self.errors.items()) if t == tool)
            print(f"  {tool:32} {self.calls[tool]:4}  ({outs})")
        codes = Counter(c for (_, c), n in self.errors.items() if c != "ok" for _ in range(n))
        print("errors by code:", dict(codes) or "none")
        print(f"text forms: {dict(self.text_forms)}")
        print(f"paged chains: {len(self.chains)} seen, {complete} followed to the end ({multi} multi-page), {cut} cut off")
        print("".join(f"  cut: {c}\n" for c in self.cut), end="")
        print(f"continuations whose other arguments differ from the call's (tool, page, keys): {len(self.drift)}")
        for (tool, pk, keys), example in sorted(self.drift.items()):
            print(f"  drift: {tool} {pk} {keys}\n      e.g. {example}")
        if jsonschema is None:
            print("jsonschema not installed: outputSchema and nextStep inputSchema checks SKIPPED")
        print(f"problems: {len(self.problems)}")
        print("".join(f"  - {p}\n" for p in self.problems), end="")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", choices=["http", "stdio"], required=True)
    ap.add_argument("--max-calls", type=int, default=200)
    ap.add_argument("--max-downloads", type=int, default=MAX_DOWNLOADS)
    ap.add_argument("--only", help="comma-separated tools to seed (default: every listed tool)")
    opts = ap.parse_args()
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="walk-") as data_dir, tempfile.TemporaryDirectory(prefix="walk-dl-") as dl:
        sim_port = _free_port()
        env = _env(data_dir, sim_port)
        try:
            procs.append(simulator_with_catalogs(env, sim_port))
            sim = f"http://127.0.0.1:{sim_port}"
            env["ECO_MCP_ECO__API_TOKEN"] = httpx.get(f"{sim}/_sim/token", timeout=10).json()["token"]
            seeds = dict(SEEDS)
            protos = httpx.get(f"{sim}/api/v0/prototype/datasets", timeout=30).json()["data"]
            seeds["eco_get_prototype_dataset"] = {**seeds["eco_get_prototype_dataset"], "uuid": protos[0]["uuid"]}
            if opts.transport == "http":
                port = _free_port()
                env["ECO_MCP_SERVER__SHARE_CONFIG_TOKEN_OVER_HTTP"] = "true"
                # The stack tools read the simulator's plain-http storage (as the demo allows).
                env["ECO_MCP_DOWNLOADS__ALLOWED_HOSTS"] = "127.0.0.1,localhost"
                procs.append(subprocess.Popen(["bash", "scripts/serve", "--transport", "http", "--bind-port", str(port)],
                                              cwd=REPO, env=env, stdout=subprocess.DEVNULL))
                _wait_http(f"http://127.0.0.1:{port}/healthz", 120)
                target: Any = f"http://127.0.0.1:{port}/mcp"
            else:
                env.update({"ECO_MCP_DOWNLOADS__DIRECTORY": dl, "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost"})
                target = StdioServerParameters(command="bash", args=["scripts/serve"], cwd=str(REPO), env=env)
            async with Client(target) as client:
                print(f"connected: protocol {client.protocol_version}")
                walk = Walk(client, opts.transport, opts.max_calls, opts.max_downloads,
                            set(opts.only.split(",")) if opts.only else None)
                await walk.run(seeds)
            walk.summary()
        finally:
            for p in reversed(procs):
                p.terminate()
                p.wait(timeout=20)


if __name__ == "__main__":
    asyncio.run(main())
