"""Structured content reaches HTTP callers spliced in as the text content's JSON
(mcp_gateway.splice): the reply must be exactly the result, in every framing."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mcp_gateway import splice
from mcp_gateway.http_app import _Reply
from tests.gateway.conftest import make_cfg
from tests.gateway.wire import modern_request, reply


def _call(url: str, name: str, arguments: dict[str, Any], **kw: Any) -> tuple[httpx.Response, dict[str, Any]]:
    body, headers = modern_request("tools/call", {"name": name, "arguments": arguments}, **kw)
    resp = httpx.post(url, json=body, headers=headers, timeout=30)
    return resp, reply(resp)


@pytest.mark.parametrize("json_response", [False, True])
def test_http_tool_results_carry_their_structured_content_whole_in_both_framings(http_server, json_response):
    with http_server(make_cfg(server__json_response=json_response)) as srv:
        ok_resp, ok = _call(srv.url, "eco_ping", {}, rid=7)
        bad_resp, bad = _call(srv.url, "eco_get_product", {"prodüct": "DP1.00041.001"}, rid=8)
    for resp, message in ((ok_resp, ok), (bad_resp, bad)):
        assert resp.status_code == 200
        expected = "application/json" if json_response else "text/event-stream"
        assert resp.headers["content-type"].startswith(expected)
        assert int(resp.headers["content-length"]) == len(resp.content)
        assert splice.KEY not in resp.text
        result = message["result"]
        assert result["structuredContent"] == json.loads(result["content"][0]["text"])
        assert len(result["content"]) == 1 and result["content"][0]["type"] == "text"
        assert result["resultType"] == "complete" and "io.modelcontextprotocol/serverInfo" in result["_meta"]
    assert ok["id"] == 7 and ok["result"]["isError"] is False and ok["result"]["structuredContent"]["source"]["origin"] == "local"
    assert bad["id"] == 8 and bad["result"]["structuredContent"]["error"]["code"] == "invalid_argument"
    assert "prodüct" in bad["result"]["structuredContent"]["error"]["message"]


def test_without_an_open_reply_scope_nothing_is_deferred():
    assert splice.defer('{"a":1}') is None


def _reply_body(text_placeholder: str, object_placeholder: dict[str, str], dumps: Any = json.dumps) -> bytes:
    return dumps({"result": {"content": [{"type": "text", "text": text_placeholder}],
                             "structuredContent": object_placeholder, "isError": False}}).encode()


def test_both_placeholders_are_filled_whatever_separators_the_reply_was_dumped_with():
    text = '{"x":[1,"é","a\\"b"]}'
    for dumps in (json.dumps, lambda o: json.dumps(o, separators=(",", ":"))):
        with splice.scope() as pending:
            placeholders = splice.defer(text)
            assert placeholders is not None
            filled = splice.fill(_reply_body(*placeholders, dumps=dumps), pending)
        assert json.loads(filled) == {"result": {"content": [{"type": "text", "text": text}],
                                                 "structuredContent": json.loads(text), "isError": False}}
        assert pending == {}


def test_a_look_alike_inside_a_string_is_not_filled_and_stays_pending():
    with splice.scope() as pending:
        placeholders = splice.defer('{"x":1}')
        assert placeholders is not None
        forged = json.dumps({"text": json.dumps(placeholders[1]), "other": "x" + placeholders[0]}).encode()
        assert splice.fill(forged, pending) == forged
        assert len(pending) == 2


async def test_a_streamed_sse_frame_is_filled_as_it_goes_and_a_quick_reply_is_reframed():
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with splice.scope() as pending:
        slow = splice.defer('{"rows":[1,2]}')
        quick = splice.defer('{"rows":[3]}')
    assert slow is not None and quick is not None
    frame = b"event: message\r\ndata: " + _reply_body(*slow) + b"\r\n\r\n"
    streamed = _Reply(send, sse=True, pending=pending)
    await streamed({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await streamed({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})
    await streamed({"type": "http.response.body", "body": frame, "more_body": False})
    assert json.loads(sent[2]["body"].split(b"data: ")[1])["result"]["structuredContent"] == {"rows": [1, 2]}

    sent.clear()
    body = _reply_body(*quick)
    framed = _Reply(send, sse=True, pending=pending)
    await framed({"type": "http.response.start", "status": 200,
                  "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await framed({"type": "http.response.body", "body": body[:10], "more_body": True})
    await framed({"type": "http.response.body", "body": body[10:]})
    headers = dict(sent[0]["headers"])
    assert headers[b"content-type"] == b"text/event-stream"
    assert sent[1]["body"].startswith(b"event: message\r\ndata: ")
    result = json.loads(sent[1]["body"].split(b"data: ")[1])["result"]
    assert result["structuredContent"] == {"rows": [3]} and result["content"][0]["text"] == '{"rows":[3]}'
    assert int(headers[b"content-length"]) == len(sent[1]["body"])
    assert pending == {}


@pytest.mark.parametrize("replies", [True, False])
async def test_a_reply_sent_without_its_result_is_logged_as_a_bug_and_a_caller_gone_is_not(replies, caplog):
    from mcp_gateway.http_app import build_app

    app = build_app(django_app=None, cfg=make_cfg(server__transport="http"))

    async def handler_whose_reply_lost_its_placeholder(scope: Any, receive: Any, send: Any) -> None:
        splice.defer('{"a":1}')
        if replies:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":1,"result":{}}'})

    app.manager.handle_request = handler_whose_reply_lost_its_placeholder  # type: ignore[method-assign]
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
    # The whole body first (the app reads it before handing the request on), then the caller goes.
    pending = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [
        (k.lower().encode(), v.encode()) for k, v in {**headers, "Host": "127.0.0.1"}.items()]}
    await app(scope, receive, send)
    logged = [r for r in caplog.records if "not spliced" in r.getMessage()]
    assert len(logged) == (1 if replies else 0)
    assert bool(sent) == replies
