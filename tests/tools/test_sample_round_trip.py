"""The ambiguous-tag round trip of eco_get_sample: a tag in two classes, given without one, asks
an elicitation-capable client which class (input_required + requestState) and finishes on the
retry; other clients get ambiguous_input. Driven in process (every way a requestState can be
bad) and through the SDK's real client over HTTP and over a stdio subprocess."""

from __future__ import annotations

import base64
import json

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from eco_core import request_state
from eco_core.config import load_config
from tests.gateway.checks import assert_error, assert_valid_tool_result
from tests.gateway.conftest import PYTHON, REPO, fake_catalog, http_server, stdio_env  # noqa: F401  (fixtures)
from tests.tools.conftest import Outcome, error_of
from tests.tools.sample_support import bio_cfg, call, run  # noqa: F401  (fixture)
from upstream_sim.biodata import Samples

TAG = Samples.SHARED_TAG
CLASSES = ["sls_soilCoreCollection_in.sampleID", "cfc_fieldData_in.sampleID"]
CHOSEN = "cfc_fieldData_in.sampleID"


def _accept(cls: str) -> dict:
    return {"sample_class": {"action": "accept", "content": {"sample_class": cls}}}


def _body(state: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(state + "=" * (-len(state) % 4)))


def _encode(body: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


async def _ask(cfg, token) -> types.InputRequiredResult:
    first = await call(cfg, "eco_get_sample", {"sample_tag": TAG}, token=token, elicitation=True)
    assert isinstance(first, types.InputRequiredResult), first
    return first


async def test_an_elicitation_client_is_asked_with_the_candidates_and_a_state_holding_only_the_question(bio_cfg, sim):  # noqa: F811
    canary = sim.issue_token()
    first = await _ask(bio_cfg, canary)
    [(key, ask)] = first.input_requests.items()
    assert key == "sample_class"
    assert sorted(ask.params.requested_schema["properties"]["sample_class"]["enum"]) == sorted(CLASSES)
    body = _body(first.request_state)
    assert set(body) == {"v", "exp", "question", "candidates"}
    assert body["question"] == {"tool": "eco_get_sample", "sample_tag": TAG}
    assert sorted(body["candidates"]) == sorted(CLASSES)
    assert canary not in json.dumps(body) and len(first.request_state) <= 16 * 1024


async def test_the_retry_with_the_chosen_class_returns_that_sample_after_a_fresh_lookup(bio_cfg, sim):  # noqa: F811
    token = sim.issue_token()
    first = await _ask(bio_cfg, token)
    out = Outcome(await call(bio_cfg, "eco_get_sample", {"sample_tag": TAG}, token=token, elicitation=True,
                             request_state=first.request_state, input_responses=_accept(CHOSEN)))
    body = out.ok
    assert [i["sampleClass"] for i in body["items"]] == [CHOSEN]
    assert body["identifier"] == {"sampleTag": TAG, "sampleClass": CHOSEN}
    assert body["resolved"]["sampleClass"] == {"from": "input_required", "value": CHOSEN}
    assert out.requests >= 1 and out.meta["requests"] + out.meta["cacheHits"] == 2  # fresh classes + view


async def test_a_client_without_elicitation_gets_ambiguous_input_with_the_candidates(bio_cfg, sim):  # noqa: F811
    out = await run(bio_cfg, "eco_get_sample", {"sample_tag": TAG}, token=sim.issue_token())
    err = error_of(out, "ambiguous_input", "sample_class")
    assert sorted(err["details"]["candidates"]) == sorted(CLASSES)


async def test_a_legacy_era_client_with_no_channel_to_ask_on_gets_ambiguous_input(bio_cfg, sim):  # noqa: F811
    # In process there is no connection to send elicitation/create on (nor over stateless HTTP).
    out = Outcome(await call(bio_cfg, "eco_get_sample", {"sample_tag": TAG}, token=sim.issue_token(),
                             elicitation=True, protocol_version="2025-11-25"))
    error_of(out, "ambiguous_input")


async def test_a_class_not_of_the_tag_is_refused_even_when_the_state_lists_it(bio_cfg, sim):  # noqa: F811
    token = sim.issue_token()
    body = _body((await _ask(bio_cfg, token)).request_state)
    body["candidates"].append("evil_table.sampleID")
    out = Outcome(await call(bio_cfg, "eco_get_sample", {"sample_tag": TAG}, token=token, elicitation=True,
                             request_state=_encode(body), input_responses=_accept("evil_table.sampleID")))
    err = error_of(out, "invalid_argument", "sample_class")
    assert sorted(err["details"]["candidates"]) == sorted(CLASSES)


async def test_a_declined_question_is_ambiguous_input_not_another_question(bio_cfg, sim):  # noqa: F811
    token = sim.issue_token()
    first = await _ask(bio_cfg, token)
    out = Outcome(await call(bio_cfg, "eco_get_sample", {"sample_tag": TAG}, token=token, elicitation=True,
                             request_state=first.request_state,
                             input_responses={"sample_class": {"action": "decline"}}))
    error_of(out, "ambiguous_input")


def _bad_states(good: str) -> dict[str, str]:
    body = _body(good)
    return {
        "not base64 json": "bm90LWpzb24",
        "garbage characters": "!!!***",
        "oversized": "A" * (16 * 1024 + 4),
        "expired": request_state.encode(body["question"], body["candidates"], now=0),
        "unknown version": _encode({**body, "v": 99}),
        "another tag": _encode({**body, "question": {"tool": "eco_get_sample", "sample_tag": "OTHER.TAG"}}),
        "candidates not a list": _encode({**body, "candidates": "x"}),
    }


@pytest.mark.parametrize("kind", ["not base64 json", "garbage characters", "oversized", "expired",
                                  "unknown version", "another tag", "candidates not a list"])
async def test_every_kind_of_bad_request_state_is_invalid_argument_and_grants_nothing(bio_cfg, sim, kind):  # noqa: F811
    token = sim.issue_token()
    bad = _bad_states((await _ask(bio_cfg, token)).request_state)[kind]
    out = Outcome(await call(bio_cfg, "eco_get_sample", {"sample_tag": TAG}, token=token, elicitation=True,
                             request_state=bad, input_responses=_accept(CHOSEN)))
    err = error_of(out, "invalid_argument", "requestState")
    assert err["details"]["field"] == "requestState"
    assert out.meta["requests"] == 0 and out.meta["cacheHits"] == 0


async def test_a_bad_state_fails_a_call_by_uuid_too(bio_cfg, sim):  # noqa: F811
    out = Outcome(await call(bio_cfg, "eco_get_sample", {"sample_uuid": "x"}, token=sim.issue_token(),
                             request_state="bm90LWpzb24"))
    error_of(out, "invalid_argument", "requestState")


async def test_the_round_trip_works_through_the_sdk_client_over_http_on_any_replica(http_server, bio_cfg, sim,  # noqa: F811
                                                                                   active_config):
    token = sim.issue_token()
    # The operator's token, lent to this anonymous HTTP caller (the token is never a flag).
    cfg = load_config(flags={"eco.base_url": sim.base_url, "eco.graphql_url": sim.graphql_url,
                             "server.transport": "http", "server.share_config_token_over_http": True},
                      env={"ECO_TOKEN": token}, warn=False)
    active_config(cfg)
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"sample_class": CHOSEN})

    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28", elicitation_callback=answer) as client:
            tool = next(t for t in (await client.list_tools()).tools if t.name == "eco_get_sample")
            result = await client.call_tool("eco_get_sample", {"sample_tag": TAG})
        body = assert_valid_tool_result(tool, result)
        assert asked and TAG in asked[0]
        assert [i["sampleClass"] for i in body["items"]] == [CHOSEN]
        assert token not in json.dumps(body)

        # Stateless: the question asked by one server is finished by another (a second app).
        async with Client(srv.url, mode="2026-07-28", elicitation_callback=answer) as asker:
            first = await asker.session.call_tool("eco_get_sample", {"sample_tag": TAG}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert token not in first.request_state and token not in json.dumps(_body(first.request_state))
    with http_server(cfg) as other:
        async with Client(other.url, mode="2026-07-28", elicitation_callback=answer) as client:
            done = await client.session.call_tool(
                "eco_get_sample", {"sample_tag": TAG}, request_state=first.request_state, allow_input_required=True,
                input_responses={"sample_class": types.ElicitResult(action="accept", content={"sample_class": CHOSEN})})
        assert not done.is_error and done.structured_content["items"][0]["sampleClass"] == CHOSEN

        async with Client(other.url, mode="2026-07-28") as plain:
            refused = await plain.call_tool("eco_get_sample", {"sample_tag": TAG})
        err = assert_error(refused, "ambiguous_input")
        assert sorted(err["details"]["candidates"]) == sorted(CLASSES)


@pytest.mark.parametrize("elicit", [True, False], ids=["elicitation", "no-elicitation"])
async def test_the_round_trip_works_through_the_sdk_client_over_stdio(stdio_env, sim, elicit):  # noqa: F811
    token = sim.issue_token()
    env = {**stdio_env, "ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url,
           "ECO_TOKEN": token}
    params = StdioServerParameters(command=PYTHON, args=["manage.py", "eco_mcp_stdio"], cwd=str(REPO), env=env)

    async def answer(context, params):
        return types.ElicitResult(action="accept", content={"sample_class": CHOSEN})

    async with Client(params, mode="2026-07-28", elicitation_callback=answer if elicit else None) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("eco_get_sample", {"sample_tag": TAG})
    if elicit:
        assert not result.is_error, result.structured_content
        assert [i["sampleClass"] for i in result.structured_content["items"]] == [CHOSEN]
    else:
        err = assert_error(result, "ambiguous_input")
        assert sorted(err["details"]["candidates"]) == sorted(CLASSES)
    assert token not in json.dumps(result.model_dump(mode="json"))


async def test_a_2025_11_25_client_declaring_elicitation_is_asked_over_stdio_like_a_2026_07_28_one(stdio_env, sim):  # noqa: F811
    """The handshake era has no input_required result: the same question goes to the client as
    elicitation/create during the call, and its answer finishes the call after a fresh lookup."""
    token = sim.issue_token()
    env = {**stdio_env, "ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url,
           "ECO_TOKEN": token}
    params = StdioServerParameters(command=PYTHON, args=["manage.py", "eco_mcp_stdio"], cwd=str(REPO), env=env)
    asked: list[types.ElicitRequestParams] = []

    async def answer(context, params):
        asked.append(params)
        return types.ElicitResult(action="accept", content={"sample_class": CHOSEN})

    async with Client(params, mode="legacy", elicitation_callback=answer) as client:
        assert client.protocol_version == "2025-11-25"
        result = await client.call_tool("eco_get_sample", {"sample_tag": TAG})
    assert not result.is_error, result.structured_content
    [question] = asked
    assert TAG in question.message
    assert sorted(question.requested_schema["properties"]["sample_class"]["enum"]) == sorted(CLASSES)
    body = result.structured_content
    assert [i["sampleClass"] for i in body["items"]] == [CHOSEN]
    assert body["resolved"]["sampleClass"] == {"from": "input_required", "value": CHOSEN}
    declined = []

    async def decline(context, params):
        declined.append(params)
        return types.ElicitResult(action="decline")

    async with Client(params, mode="legacy", elicitation_callback=decline) as client:
        refused = await client.call_tool("eco_get_sample", {"sample_tag": TAG})
    assert len(declined) == 1
    assert sorted(assert_error(refused, "ambiguous_input")["details"]["candidates"]) == sorted(CLASSES)
