"""Schema fuzzing over HTTP: every tool the server lists in tools/list, called through the SDK's
real MCP client with arguments drawn from its own inputSchema (valid, hostile and invalid), against
`manage.py eco_mcp --transport http` in its own process, with the simulator behind it. Every
answer must be a schema-valid success or an error from the spec's table (see oracle.py).

Two samples run each time: a fixed seed, and a rotating one (ECO_FUZZ_SEED, else today's date);
both are printed, so a failure replays with ECO_FUZZ_SEED=<seed>. bench/bench_fuzz.py runs more.
"""

from __future__ import annotations

from mcp import Client

from mcp_gateway.registry import default_registry
from tests.reliability.conftest import fresh_token, serve_http
from tests.reliability.fuzzing import INVALID_KINDS
from tests.reliability.oracle import fuzz_client, rotating_seed, save_report
from tests.reliability.sim_vocabulary import vocabulary

FIXED_SEED = 22_001
CASES_PER_SEED = 400


async def test_every_tool_listed_over_http_answers_fuzzed_arguments_with_a_valid_result_or_a_spec_error(
        sim, sim_data_dir, redis_url, tmp_path):
    seeds = [FIXED_SEED, rotating_seed()]
    print(f"fuzz seeds over HTTP: {seeds} (replay the second with ECO_FUZZ_SEED={seeds[1]})")
    env = {**sim_data_dir.env, "REDIS_URL": redis_url, "ECO_TOKEN": fresh_token(sim),
           # The operator's token is lent to callers, so the token-only tools get past auth_required,
           # and sent on every request, so the calls spend the token's own simulator budget.
           "ECO_MCP_SERVER__SHARE_CONFIG_TOKEN_OVER_HTTP": "true", "ECO_MCP_ECO__TOKEN_FOR_PUBLIC_ENDPOINTS": "true"}
    with serve_http(env, tmp_path / "http.log") as service:
        async with Client(service.url, mode="2026-07-28") as client:
            tally, listed = await fuzz_client(client, [(s, CASES_PER_SEED) for s in seeds], vocabulary(sim),
                                              log_of=service.log.traceback_of)
    print(f"{tally.calls} calls in {tally.seconds:.1f} s; outcomes {dict(tally.by_outcome)}")
    print("mean ms by tool: " + ", ".join(f"{t} {1000 * tally.seconds_by_tool[t] / n:.0f}"
                                          for t, n in tally.by_tool.most_common()))
    save_report(tally, "http")
    assert not tally.failures, tally.report()
    assert tally.calls == 2 * CASES_PER_SEED
    # Every tool the registry declares for HTTP, so a tool registered tomorrow is fuzzed too;
    # eco_download_files is stdio only (fuzzed in test_fuzz_stdio).
    assert listed == {s.name for s in default_registry().listed(http=True)}
    assert "eco_download_files" not in listed
    kinds = {tool: {k for (t, k) in tally.by_tool_kind if t == tool} for tool in listed}
    assert [t for t, k in kinds.items() if "valid" not in k or not k & INVALID_KINDS] == []
