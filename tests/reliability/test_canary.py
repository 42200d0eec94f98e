"""The canary token (tests/reliability/canary.py) driven through every tool: an HTTP server with
the canary as its configured token and the canary in the caller's token header, a caller with the
revoked twin (403 upstream), a caller lent the configured token, failing calls of every tool, a
retried 5xx and a foreign redirect; and a stdio server with the canary in its environment that
downloads into a folder of its own. Every answer, response header, stderr line, downloaded file
and database row is checked as it comes; the plugin sweeps the rest at the end of the session.
The positive control proves each sweep finds a planted canary, so a clean sweep means something."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import connection, connections
from django.test import Client as DjangoClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from eco_core.config import load_config
from mcp_gateway.registry import default_registry
from tests.catalog.conftest import catalog_module  # noqa: F401  (fixture)
from tests.gateway.checks import assert_error, assert_valid_tool_result
from tests.gateway.conftest import PYTHON, REPO, fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.gateway.wire import modern_request
from tests.reliability import canary
from tests.reliability.canary import CANARY
from tests.tables.query_support import QUERY_CALL, stack_soil
from tests.tools.conftest import sim_cfg  # noqa: F401  (fixture)
from tests.tools.stack_server_support import record_ready, rows_cleared  # noqa: F401  (fixture)
from upstream_sim.biodata import RECORDED_PROTO_UUID, Samples

PRODUCT = "DP1.10003.001"  # breeding landbird point counts: small files at HARV in 2020-05
OPS_TOKEN = "canary-suite-ops-token-0123456789"
FILES = {"product": PRODUCT, "site_codes": ["HARV"], "start_month": "2020-05"}
# One valid call per registered tool: a tool registered without an entry here fails the test.
VALID: dict[str, dict[str, Any]] = {
    "eco_ping": {"check_api": True},
    "eco_search_products": {"query": "temperature", "limit": 3},
    "eco_get_product": {"product": PRODUCT},
    "eco_search_sites": {"domain_code": "D01", "limit": 3},
    "eco_get_site": {"site": "HARV", "products_limit": 5},
    "eco_get_availability": {"product": PRODUCT, "site": "HARV"},
    "eco_find_locations": {"root": "HARV", "limit": 5},
    "eco_get_location": {"name": "HARV"},
    "eco_list_releases": {},
    "eco_get_release": {"release": "latest", "products_limit": 5},
    "eco_get_citation": {"product": PRODUCT},
    "eco_search_prototype_datasets": {"theme": "organisms", "limit": 2},
    "eco_get_prototype_dataset": {"uuid": RECORDED_PROTO_UUID},
    "eco_get_document": {"spec_number": "NEON.DOC.004771vE", "product": PRODUCT},
    "eco_list_sample_classes": {"query": "bet", "limit": 3},
    "eco_get_sample": {"barcode": "A00000123456"},
    "eco_search_taxonomy": {"taxon_type_code": "TICK", "limit": 5},
    "eco_graphql": {"query": "{ sites { siteCode } }"},
    "eco_list_files": {**FILES, "limit": 3},
    "eco_download_files": FILES,
    "eco_describe_tables": {"product": PRODUCT, "limit": 3},
    # Another month than the download's: the two run at once over stdio and must not share files.
    "eco_stack_tables": {**FILES, "start_month": "2020-07"},
    # A dataset stacked into the HTTP server's download directory before its traffic.
    "eco_query_tables": QUERY_CALL,
    "eco_plot_tables": QUERY_CALL,
}


def clean(where: str, data: Any) -> None:
    text = data if isinstance(data, (str, bytes)) else json.dumps(data, default=str)
    assert not canary.find(text), f"the canary is in {where}: {canary.find(text)}"


async def check_headers(response: Any) -> None:
    clean(f"response headers of {response.request.url}", "\n".join(f"{k}: {v}" for k, v in response.headers.items()))


async def _checked(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    try:
        result = await client.call_tool(name, arguments)
    except Exception as exc:  # a JSON-RPC error: its text must be clean too
        clean(f"the error of {name}", f"{exc!r} {getattr(exc, 'error', '')!r}")
        return exc
    clean(f"the result of {name} {arguments}", result.model_dump_json())
    return result


def http_client(url: str, token: str | None, **kw: Any) -> Client:
    http = create_mcp_http_client(headers={"X-API-Token": token} if token else None)
    http.event_hooks["response"].append(check_headers)
    return Client(streamable_http_client(url, http_client=http), mode="2026-07-28", **kw)


def start_stdio(sim: Any, folder: Path) -> tuple[subprocess.Popen[str], Any, int]:
    """The stdio server with the canary in its environment, its requests already written (it
    starts while the HTTP part runs). It keeps the suite's REDIS_URL (its cache is swept there).
    With PostgreSQL it shares the test database, whose catalog is built; on SQLite it builds one
    in its own data folder, under basetemp, whose bytes the session sweep reads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN"))}
    env.pop("DATABASE_URL", None)
    if connection.vendor == "postgresql":
        s = connection.settings_dict
        env["DATABASE_URL"] = f"postgresql://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    else:  # its first catalog call builds the catalog, which must not eat that call's deadline
        env["ECO_MCP_ECO__CALL_DEADLINE_S"] = "180"
    env.update({"ECO_TOKEN": CANARY.token, "ECO_MCP_DATA_DIR": str(folder / "data"), "PYTHONPATH": str(REPO),
                "ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url,
                "ECO_MCP_DOWNLOADS__DIRECTORY": str(folder / "downloads"),
                "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost"})
    calls = [("eco_ping", VALID["eco_ping"]), ("eco_list_files", VALID["eco_list_files"]),
             ("eco_download_files", VALID["eco_download_files"]),
             ("eco_download_files", {**FILES, "dest_subdir": "../../escape"}),
             ("eco_stack_tables", VALID["eco_stack_tables"]),
             ("eco_get_sample", {"sample_tag": Samples.SHARED_TAG}), ("eco_canary_no_such_tool", {})]
    errfile = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp_stdio", "--log-level", "debug"], cwd=REPO, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errfile, text=True)
    assert proc.stdin is not None
    for rid, (name, arguments) in enumerate(calls, 1):
        proc.stdin.write(json.dumps(modern_request("tools/call", {"name": name, "arguments": arguments}, rid=rid)[0]) + "\n")
    proc.stdin.flush()
    return proc, errfile, len(calls)


def finish_stdio(proc: subprocess.Popen[str], errfile: Any, replies: int) -> dict[int, dict[str, Any]]:
    assert proc.stdin is not None and proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(replies)]
    proc.stdin.close()
    rest = proc.stdout.read()
    proc.wait(timeout=60)
    errfile.seek(0)
    stderr = errfile.read()
    errfile.close()
    clean("the stdio server's stdout", "".join(lines) + rest)
    clean("the stdio server's stderr", stderr)
    assert "serving MCP on stdio" in stderr
    return {m["id"]: m for m in (json.loads(line) for line in lines if line.strip())}


async def test_the_canary_appears_in_no_answer_header_log_file_or_row_of_any_tool_over_http_and_stdio(
        http_server, sim_cfg, fresh_sim, active_config, tmp_path, rows_cleared, django_db_blocker):
    sim = fresh_sim
    assert sim.seed == canary.SIM_SEED and canary.find(CANARY.token)
    registry = default_registry()
    assert set(VALID) == set(registry.names()), "every registered tool needs a valid call in VALID"
    # The product's loggers and the SDK's server at debug, as `--log-level debug` runs them (the
    # client side stays quiet: formatting its debug lines would cost more than the calls).
    loggers = [logging.getLogger(name) for name in ("eco", "mcp.server")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    proc, errfile, replies = start_stdio(sim, tmp_path)
    try:
        cfg = load_config(flags={"eco.base_url": sim.base_url, "eco.graphql_url": sim.graphql_url,
                                 "server.transport": "http", "server.allow_insecure_header_token": True,
                                 "server.share_config_token_over_http": True, "eco.retries.backoff_base_s": 0.01,
                                 # eco_describe_tables reads the variables file from the simulator's storage.
                                 "downloads.allowed_hosts": ["127.0.0.1", "localhost"],
                                 "downloads.directory": str(tmp_path / "http-downloads"),
                                 # eco_query_tables over HTTP reads the server's dataset store.
                                 "tables.store_directory": str(tmp_path / "http-store"),
                                 # The canary on public upstream requests too (a refresh over HTTP stays anonymous).
                                 "eco.token_for_public_endpoints": True},
                          env={"ECO_TOKEN": CANARY.token, "ECO_MCP_SERVER__OPS_TOKEN": OPS_TOKEN}, warn=False)
        active_config(cfg)
        ds_id, record = stack_soil(tmp_path / "http-downloads", into=tmp_path / "http-store")
        record_ready(django_db_blocker, ds_id, record, tmp_path / "http-store" / ds_id)
        await _http_traffic(http_server, cfg, sim, registry)
        answers = finish_stdio(proc, errfile, replies)
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
        if proc.poll() is None:  # the test failed before the server was finished with
            proc.kill()
            proc.wait(timeout=60)
            errfile.close()
    _check_stdio(answers, tmp_path / "downloads")
    _check_upstream_saw_the_canary_only_as_a_header_to_its_host(sim)
    # Rows are checked here too (on a connection outside this test's transaction, as the servers
    # wrote them): the module's catalog fixture wipes its tables before the session sweep.
    assert await sync_to_async(lambda: canary.sweep_database(connections["default"])[0])() == []
    assert canary.sweep_files([tmp_path])[0] == []
    assert canary.RECORDER.leaks == []


async def _http_traffic(http_server: Any, cfg: Any, sim: Any, registry: Any) -> None:
    async def choose(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"sample_class": "cfc_fieldData_in.sampleID"})

    with http_server(cfg) as srv:
        canary.RECORDER.attach()  # uvicorn's loggers were configured again by this server
        async with http_client(srv.url, CANARY.token, elicitation_callback=choose) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {s.name for s in registry.listed(http=True)}
            for name, tool in tools.items():
                assert_valid_tool_result(tool, await _checked(client, name, VALID[name]))
                assert_error(await _checked(client, name, {**VALID[name], "canary_unknown_key": 1}), "invalid_argument")
            # The elicitation round trip: its requestState travels to the caller and back.
            first = await client.session.call_tool("eco_get_sample", {"sample_tag": Samples.SHARED_TAG},
                                                   allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            clean("the requestState", first.request_state)
            assert_valid_tool_result(tools["eco_get_sample"], await _checked(
                client, "eco_get_sample", {"sample_tag": Samples.SHARED_TAG}))
            unknown = await _checked(client, "eco_canary_no_such_tool", {})
            assert unknown.is_error and unknown.structured_content["error"]["code"] == "unknown_tool"
            resources = (await client.list_resources()).resources
            assert resources
            for resource in resources:
                clean(f"resource {resource.uri}", (await client.read_resource(resource.uri)).model_dump_json())
            await _faults(client, sim)
        await _operator_routes(srv.base, sim)
        async with http_client(srv.url, CANARY.revoked) as revoked:
            for spec in registry.listed(http=True):
                if spec.requires_token:
                    assert_error(await _checked(revoked, spec.name, VALID[spec.name]), "forbidden")
            await _checked(revoked, "eco_ping", VALID["eco_ping"])
        async with http_client(srv.url, None) as lent:  # the configured canary, lent to an anonymous caller
            assert_valid_tool_result(tools["eco_list_files"], await _checked(lent, "eco_list_files", FILES))


async def _operator_routes(base: str, sim: Any) -> None:
    """What an operator reads: health, readiness and metrics (asked with the canary header), and
    the ops API (with its bearer token): a refresh it queues fails upstream, so the refresh log,
    the catalog state and the queued refresh's cached state all record an upstream error."""
    async with httpx.AsyncClient(headers={"X-API-Token": CANARY.token}, event_hooks={"response": [check_headers]}) as http:
        for path in ("/healthz", "/readyz", "/metrics"):
            clean(path, (await http.get(base + path)).text)

    def ops_reports() -> list[str]:
        client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {OPS_TOKEN}")
        sim.faults.add("status", route=r"^/api/v0/releases$", status=500)
        queued = client.post("/api/ops/refreshes", {"catalogs": ["releases"], "source": "rest"},
                             content_type="application/json")
        assert queued.status_code == 202, queued.content
        deadline = time.monotonic() + 60  # a bound, not a timing assertion: the refresh must end
        while (state := client.get(f"/api/ops/refreshes/{queued.json()['id']}").json())["state"] in ("queued", "running"):
            assert time.monotonic() < deadline, state
            time.sleep(0.05)
        sim.faults.clear()
        assert state["state"] == "failed", state
        answers = [client.get(p) for p in ("/api/ops/catalogs", "/api/ops/refresh-log", "/api/ops/upstream/cache",
                                            "/api/ops/upstream/rate-limit", "/api/ops/upstream/graphql-breaker")]
        assert all(a.status_code == 200 for a in answers), [a.status_code for a in answers]
        return [json.dumps(state), *(a.content.decode() for a in answers)]

    for i, body in enumerate(await sync_to_async(ops_reports)()):
        clean(f"ops report {i}", body)


async def _faults(client: Client, sim: Any) -> None:
    """A 5xx burst retried (the retry logs name the request), a redirect to a foreign host and a
    document asked for by a URL on a foreign host (the storage port: the upstream's own data host
    is 127.0.0.1, storage answers as localhost)."""
    sim.faults.add("status", route=r"^/api/v0/data", count=2, status=503)
    await _checked(client, "eco_list_files", {**FILES, "start_month": "2020-06"})
    sim.faults.clear()
    foreign = f"http://localhost:{sim.storage_port}/canary-foreign"
    sim.faults.add("redirect", route=r"^/api/v0/samples", count=3, target=foreign)
    await _checked(client, "eco_get_sample", {"barcode": "A00000123457"})
    sim.faults.clear()
    await _checked(client, "eco_get_document", {"url": f"http://localhost:{sim.storage_port}/canary-doc.pdf"})


def _check_stdio(answers: dict[int, dict[str, Any]], downloads: Path) -> None:
    assert set(answers) == {1, 2, 3, 4, 5, 6, 7}
    ok = {i: answers[i]["result"]["structuredContent"] for i in (1, 2, 3, 5)}
    assert ok[1]["tokenSource"] == "config" and ok[2]["files"]
    assert {f["status"] for f in ok[3]["files"]} == {"downloaded"}
    assert ok[5]["tables"] and (downloads / "datasets" / ok[5]["datasetId"] / "dataset.json").is_file()
    assert answers[4]["result"]["isError"] and answers[6]["result"]["isError"]
    assert answers[7]["result"]["isError"]
    assert answers[7]["result"]["structuredContent"]["error"]["code"] == "unknown_tool"
    assert any(downloads.rglob("*")) and not list(downloads.rglob("*.part"))


def _check_upstream_saw_the_canary_only_as_a_header_to_its_host(sim: Any) -> None:
    sent = [r for r in sim.requests if canary.find(json.dumps(r.to_json()))]
    assert sent and all(r.headers.get("x-api-token") in (CANARY.token, CANARY.revoked) for r in sent)
    assert {"/api/v0/taxonomy", "/api/v0/data/DP1.10003.001/HARV/2020-05"} <= {r.path for r in sent}  # public, token-only
    # Never in a query string, never to the storage host (signed URLs, the foreign redirect).
    assert all(not canary.find(json.dumps(r.query)) and r.port == sim.port for r in sent)


def test_the_sweep_finds_a_canary_planted_in_a_file_redis_a_row_a_local_cache_and_a_log_line(
        db, redis_url, tmp_path):
    """The positive control: each place the session sweep searches, given the canary in one of
    its encodings, is reported by name; then everything planted is removed again."""
    import asyncio
    import base64

    import redis

    from eco_core import redact
    from upstream.cache import UpstreamCache, locmem_backend

    token = CANARY.token.encode()
    filler = b"x" * (canary.CHUNK - 10)  # the token straddles two reads
    (tmp_path / "straddle.bin").write_bytes(filler + token)
    (tmp_path / "file.part").write_bytes(b"[" + base64.b64encode(b"ab" + CANARY.revoked.encode()) + b"]")
    (tmp_path / "decoded.json").write_text(json.dumps({"sub": f"{CANARY.mark}@example.org"}))
    store = redis.Redis.from_url(redis_url)
    keys = [f"canary-control:{CANARY.revoked}", "canary-control:hash", "canary-control:zset"]
    store.set(keys[0], b"1")
    store.hset(keys[1], "field", b"v=" + token)
    store.zadd(keys[2], {CANARY.token: 1.0})
    with connection.cursor() as cur:
        cur.execute("CREATE TABLE canary_control (t text, b %s)" % ("bytea" if connection.vendor == "postgresql" else "blob"))
        cur.execute("INSERT INTO canary_control VALUES (%s, %s)", ["clean", token])
    cache = UpstreamCache(load_config(env={}, warn=False).cache, backend=locmem_backend(10, name="eco-canary-control"))
    asyncio.run(cache.put("control-key", 60, {"body": b"{" + token + b"}"}))
    recorder = canary.LogRecorder()
    logger = logging.Logger("canary.control")  # not registered: the session's recorder never sees it
    logger.addHandler(recorder)
    try:
        logger.warning("user %s", CANARY.mark)  # no filter knows the mark
        with redact.call_secret(CANARY.token):
            logger.warning("sent %s", CANARY.token)
        summary = canary.sweep_session(tmp_path, connection, redis_url)
    finally:
        for name in ("straddle.bin", "file.part", "decoded.json"):
            (tmp_path / name).unlink()
        store.delete(*keys)
        store.close()
        asyncio.run(cache.clear())
    found = "\n".join(summary.findings)
    assert "straddle.bin: canary token" in found
    assert "file.part: base64 of the revoked canary token" in found
    assert "decoded.json: canary mark" in found
    assert "Redis key b'canary-control:[canary]': payload of the revoked canary token, revoked canary token" in found
    assert "Redis value (hash) of key b'canary-control:hash'" in found
    assert "Redis value (zset)" in found
    assert "database table canary_control: " in found
    assert "local cache 'eco-canary-control' value of 'control-key'" in found
    assert len(recorder.leaks) == 2 and "masked" not in recorder.leaks[0]
    assert "(the redacting filter would have masked it)" in recorder.leaks[1]
    assert "[canary]" in recorder.leaks[1] and not canary.find(found + "".join(recorder.leaks))
    assert canary.sweep_local_caches()[0] == [] and not canary.sweep_files([tmp_path])[0]
