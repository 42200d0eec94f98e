"""The one multi-round exchange: input_required only for clients that declared elicitation, with
the spec's requestState (unsigned base64url JSON holding only question and candidates)."""

from __future__ import annotations

import base64
import json

import mcp_types as types
from mcp import Client

from mcp_gateway.registry import Registry
from mcp_gateway.server import build_server
from tests.gateway.checks import assert_error
from tests.gateway.conftest import make_cfg
from tests.gateway.fakes import choose_spec


def _server():
    return build_server(make_cfg(server__transport="stdio"), Registry([choose_spec()]))


async def test_a_client_that_declared_elicitation_is_asked_and_the_retry_completes():
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"sample_class": "table.b"})

    async with Client(_server(), mode="2026-07-28", elicitation_callback=answer) as client:
        result = await client.call_tool("eco_choose", {"tag": "A1"})
    assert asked == ["Tag A1 belongs to several classes; which one?"]
    assert not result.is_error
    assert result.structured_content["chosen"] == "table.b"


async def test_the_request_state_is_plain_base64url_json_with_only_question_and_candidates():
    async def never(context, params):  # pragma: no cover - the round is driven by hand
        raise AssertionError

    async with Client(_server(), mode="2026-07-28", elicitation_callback=never) as client:
        first = await client.session.call_tool("eco_choose", {"tag": "A1"}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    state = first.request_state
    body = json.loads(base64.urlsafe_b64decode(state + "=" * (-len(state) % 4)))
    assert set(body) == {"v", "exp", "question", "candidates"}
    assert body["question"] == {"sample_tag": "A1"} and body["candidates"] == ["table.a", "table.b"]
    assert len(state) <= 16 * 1024


async def test_a_client_without_elicitation_gets_ambiguous_input_with_candidates():
    async with Client(_server(), mode="2026-07-28") as client:
        result = await client.call_tool("eco_choose", {"tag": "A1"})
    err = assert_error(result, "ambiguous_input")
    assert err["details"]["candidates"] == ["table.a", "table.b"]


async def test_a_tampered_request_state_gives_invalid_argument():
    async def answer(context, params):
        return types.ElicitResult(action="accept", content={"sample_class": "table.b"})

    async with Client(_server(), mode="2026-07-28", elicitation_callback=answer) as client:
        result = await client.session.call_tool(
            "eco_choose", {"tag": "A1"}, request_state="bm90LWpzb24", allow_input_required=True,
            input_responses={"sample_class": types.ElicitResult(action="accept", content={"sample_class": "x"})},
        )
    assert_error(result, "invalid_argument")
