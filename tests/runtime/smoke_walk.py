"""A smoke walk of what ships, run by the runtime environment's interpreter (.venv-runtime: the
runtime lock alone plus the project, as scripts/setup and the image install it). The SDK client it
drives is a runtime dependency, so nothing here needs the development set.

    .venv-runtime/bin/python tests/runtime/smoke_walk.py [--data-dir DIR]    (DIR kept, with service.log)

What a new user does: `manage.py eco_demo` (the simulator and the HTTP service, both under this
interpreter), then the printed configurations. Over stdio and over HTTP it lists the tools and calls
every listed tool once, with real arguments: a few searches and lists first, then what their
answers' nextSteps offer (SEEDS where none does). A stack is followed until it is ready and
queried; a download and a citation are among the calls. Each call is checked as bench/agent_walk.py
checks one (one compact text block equal to the structured content, output schema, nextSteps
against the listed input schemas, no internal_error), and must answer without an error.
Exit status 1, with every problem printed, on any of those, a tool left uncalled, or a traceback,
ImportError or ModuleNotFoundError on the demo's, the HTTP service's or the stdio server's stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from bench.agent_walk import SEEDS, Walk  # noqa: E402

READY_TIMEOUT_S = 240
CALL_TIMEOUT_S = 120
STACK_POLLS = 8
# What a server's stderr must never show: an import that failed, or any exception's traceback.
BROKEN = re.compile(r"Traceback \(most recent call last\)|ModuleNotFoundError|ImportError")
CLAUDE = "Claude Desktop, Cursor or any mcpServers JSON (stdio): "
HTTP_LINE = "MCP over HTTP: "

Args = dict[str, Any]


class _Recording:
    """The client as Walk uses it, keeping the last result: the walk takes later arguments from it."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.last: Any = None

    async def list_tools(self) -> Any:
        return await self.client.list_tools()

    async def call_tool(self, name: str, arguments: Args) -> Any:
        self.last = None
        self.last = await self.client.call_tool(name, arguments)
        return self.last


class Smoke:
    """One transport's walk: each listed tool once, in PLAN's order, arguments from earlier answers."""

    def __init__(self, client: Client, transport: str) -> None:
        self.recording = _Recording(client)
        self.walk = Walk(self.recording, transport, max_calls=10_000)  # type: ignore[arg-type]
        self.transport = transport
        self.answers: dict[str, dict[str, Any]] = {}
        self.seeded: list[str] = []

    def offered(self, tool: str) -> Args | None:
        """The first arguments an earlier answer's nextSteps offered for `tool`."""
        return next((dict(args) for name, args, _ in self.walk.queue if name == tool), None)

    def seed(self, tool: str) -> Args | None:
        if tool not in SEEDS:
            return None
        self.seeded.append(tool)
        return dict(SEEDS[tool])

    async def call(self, tool: str, args: Args, origin: str, retry: bool = True) -> dict[str, Any] | None:
        before = len(self.walk.problems)
        await self.walk.one(tool, args, origin)
        result = self.recording.last
        body = result.structured_content if result is not None else None
        error = (body or {}).get("error") or {}
        details = error.get("details") or {}
        if error.get("code") == "ambiguous_input" and details.get("field") and details.get("candidates") and retry:
            # What an agent does with the candidates (as bench/agent_walk.py): the first one.
            return await self.call(tool, {**args, details["field"]: details["candidates"][0]},
                                   f"the candidates of {tool}", retry=False)
        if result is not None and result.is_error and len(self.walk.problems) == before:
            self.walk.problem(tool, args, f"error {error.get('code')}: {str(error.get('message'))[:300]}")
        outcome = "ok" if result is not None and not result.is_error else error.get("code") or "no result"
        print(f"  [{self.transport}] {tool} {json.dumps(args, separators=(',', ':'))[:160]} -> {outcome}", flush=True)
        if result is None or result.is_error or body is None:
            return None
        if tool == "eco_download_files" and not all(f.get("verified") for f in body.get("files") or [{}]):
            self.walk.problem(tool, args, f"files not all downloaded and verified: {json.dumps(body.get('files'))[:300]}")
        self.answers.setdefault(tool, body)
        return body

    async def run(self) -> None:
        self.walk.tools = {t.name: t for t in (await self.recording.list_tools()).tools}
        for tool, how in PLAN:
            if tool not in self.walk.tools:
                continue
            args = how(self) if callable(how) else dict(how)
            if args is None:
                continue  # left uncalled: reported by problems()
            body = await self.call(tool, args, "plan")
            if tool == "eco_stack_tables" and body is not None:
                await self.until_ready(body)
        # A tool PLAN does not know yet: what the answers so far offered for it, else its seed.
        for tool in sorted(set(self.walk.tools) - set(self.walk.calls)):
            args = self.offered(tool) or self.seed(tool)
            if args is not None:
                await self.call(tool, args, "offered by an earlier answer")

    async def until_ready(self, body: dict[str, Any]) -> None:
        """A building dataset (HTTP: built by the server's store) polled by its own nextStep."""
        for _ in range(STACK_POLLS):
            if body.get("state") != "building":
                break
            poll = next((s["arguments"] for s in body.get("nextSteps") or [] if s.get("tool") == "eco_stack_tables"),
                        {"dataset_id": body["datasetId"], "wait_seconds": 20})
            again = await self.call("eco_stack_tables", poll, "the building dataset's nextStep")
            if again is None:
                return
            body = again
        if body.get("state") not in (None, "ready"):
            self.walk.problem("eco_stack_tables", {"dataset_id": body.get("datasetId")},
                              f"the stack ended {body.get('state')}: {body.get('buildError')}")

    def problems(self) -> list[str]:
        uncalled = sorted(set(self.walk.tools) - set(self.walk.calls))
        return [*self.walk.problems, *(f"{tool}: left uncalled (no answer offered arguments for it and it has no seed: add it to PLAN)" for tool in uncalled)]


def _next_or_seed(tool: str) -> Callable[[Smoke], Args | None]:
    return lambda smoke: smoke.offered(tool) or smoke.seed(tool)


def _describe(smoke: Smoke) -> Args | None:
    """The product the search found, at the site the availability pointed its files at."""
    files = smoke.answers.get("eco_list_files") or {}
    product = files.get("productCode")
    sites = files.get("siteCodes") or []
    return {"product": product, "site_code": sites[0]} if product and sites else smoke.offered("eco_describe_tables")


def _download(smoke: Smoke) -> Args | None:
    """The files eco_list_files listed: the same product, sites and months."""
    files = smoke.answers.get("eco_list_files") or {}
    window = files.get("window") or {}
    if not files.get("productCode") or not window.get("startMonth"):
        return smoke.offered("eco_download_files") or smoke.seed("eco_download_files")
    return {"product": files["productCode"], "site_codes": files["siteCodes"], "start_month": window["startMonth"],
            "end_month": window.get("endMonth") or window["startMonth"]}


def _document(smoke: Smoke) -> Args | None:
    specs = (smoke.answers.get("eco_get_product") or {}).get("specs") or []
    number = next((s.get("specNumber") for s in specs if s.get("specNumber")), None)
    return {"spec_number": number} if number else smoke.offered("eco_get_document") or smoke.seed("eco_get_document")


def _location(smoke: Smoke) -> Args | None:
    return smoke.offered("eco_get_location") or smoke.seed("eco_get_location")


# Each listed tool, in this order: a seed (entry points an agent starts from) or how its arguments
# come from the answers before it.
PLAN: list[tuple[str, Args | Callable[[Smoke], Args | None]]] = [
    ("eco_ping", {}),
    ("eco_search_products", {"query": "litterfall", "limit": 3}),
    ("eco_get_product", lambda s: {**(s.offered("eco_get_product") or {}), "include": ["abstract", "specs"]}
     if s.offered("eco_get_product") else s.seed("eco_get_product")),
    ("eco_get_availability", _next_or_seed("eco_get_availability")),
    ("eco_list_files", _next_or_seed("eco_list_files")),
    ("eco_get_citation", _next_or_seed("eco_get_citation")),
    ("eco_download_files", _download),
    ("eco_get_document", _document),
    ("eco_search_sites", {"query": "forest", "limit": 3}),
    ("eco_get_site", _next_or_seed("eco_get_site")),
    ("eco_find_locations", lambda s: {"root": s.answers.get("eco_get_site", {}).get("siteCode") or "HARV",
                                      "limit": 5}),
    ("eco_get_location", _location),
    ("eco_list_releases", {}),
    ("eco_get_release", _next_or_seed("eco_get_release")),
    ("eco_search_prototype_datasets", {"limit": 3}),
    ("eco_get_prototype_dataset", _next_or_seed("eco_get_prototype_dataset")),
    ("eco_list_sample_classes", {"limit": 5}),
    ("eco_get_sample", _next_or_seed("eco_get_sample")),
    ("eco_search_taxonomy", {"genus": "Quercus", "limit": 3}),
    ("eco_graphql", _next_or_seed("eco_graphql")),
    ("eco_describe_tables", _describe),
    ("eco_stack_tables", _next_or_seed("eco_stack_tables")),
    ("eco_query_tables", _next_or_seed("eco_query_tables")),
    ("eco_plot_tables", _next_or_seed("eco_plot_tables")),
]


def _stderr_problems(name: str, path: Path) -> list[str]:
    text = path.read_text(errors="replace") if path.exists() else ""
    hits = [m.start() for m in BROKEN.finditer(text)]
    return [f"{name} stderr ({path}): {text[max(0, hits[0] - 200):hits[0] + 1500]}"] if hits else []


class Demo:
    """`manage.py eco_demo` under this interpreter, with the lines it prints when ready."""

    def __init__(self, data_dir: Path, err: Path) -> None:
        self.data_dir, self.err = data_dir, err
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with self.err.open("wb") as err:
            self.proc = subprocess.Popen([sys.executable, str(REPO / "manage.py"), "eco_demo", "--data-dir",
                                          str(data_dir)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=err,
                                         text=True, start_new_session=True)

    def ready_lines(self) -> list[str]:
        assert self.proc.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"eco_demo ended before it was ready:\n{''.join(lines)}"
                                   f"{self.err.read_text(errors='replace')[-4000:]}")
            lines.append(line.rstrip("\n"))
            if line.startswith("Ctrl-C"):
                return lines
        raise RuntimeError(f"eco_demo was not ready within {READY_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def _after(lines: list[str], label: str) -> str:
    return next(line[len(label):] for line in lines if line.startswith(label))


async def _walk(client: Client, transport: str) -> Smoke:
    smoke = Smoke(client, transport)
    await smoke.run()
    return smoke


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, help="the demo's data folder, kept (default: a temporary one)")
    opts = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="eco-smoke-"))
    data_dir = (opts.data_dir or scratch / "data").resolve()
    stdio_err = scratch / "stdio.stderr"
    demo = Demo(data_dir, scratch / "demo.stderr")
    problems: list[str] = []
    walks: list[Smoke] = []
    started = time.monotonic()
    try:
        lines = demo.ready_lines()
        print(f"eco_demo ready in {time.monotonic() - started:.1f} s ({sys.executable})", flush=True)
        server = json.loads(_after(lines, CLAUDE))["mcpServers"]["eco-demo"]
        http = _after(lines, HTTP_LINE).split()
        url, token = http[0], http[http.index("X-API-Token:") + 1]
        assert server["command"] == sys.executable, server["command"]

        # stdio: spawned as the printed configuration says, its stderr kept.
        params = StdioServerParameters(command=server["command"], args=server["args"], env=server["env"],
                                       cwd=str(scratch))
        with stdio_err.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S) as client:
                walks.append(await _walk(client, "stdio"))
        # HTTP: the demo's service, with the printed token header.
        transport = streamable_http_client(url, http_client=create_mcp_http_client(headers={"X-API-Token": token}))
        async with Client(transport, mode="2026-07-28", read_timeout_seconds=CALL_TIMEOUT_S) as client:
            walks.append(await _walk(client, "http"))
    except Exception as exc:  # reported with the servers' stderr below, not as a bare traceback
        problems.append(f"the walk stopped: {type(exc).__name__}: {exc}")
    finally:
        demo.stop()
        problems += _stderr_problems("the stdio server", stdio_err)
        problems += _stderr_problems("the HTTP service", data_dir / "service.log")
        problems += _stderr_problems("eco_demo", demo.err)
        shutil.rmtree(scratch, ignore_errors=True)
    for smoke in walks:
        calls = sum(smoke.walk.calls.values())
        print(f"{smoke.transport}: {len(smoke.walk.tools)} tools listed, {len(smoke.walk.calls)} called "
              f"({calls} calls), seeded: {', '.join(sorted(set(smoke.seeded))) or 'none'}")
        problems += [f"[{smoke.transport}] {p}" for p in smoke.problems()]
    if len(walks) != 2:
        problems.append(f"only {len(walks)} of the two transports were walked")
    print(f"smoke walk: {time.monotonic() - started:.1f} s, {len(problems)} problems")
    print("".join(f"  - {p}\n" for p in problems), end="")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
