"""The requestState codec: unsigned base64url JSON, at most 16 KiB, one hour, no secrets."""

from __future__ import annotations

import base64
import json

import pytest

from eco_core import request_state
from eco_core.errors import EcoError


def test_state_round_trips_across_processes_because_it_is_self_contained():
    token = request_state.encode({"sample_tag": "A1"}, ["class.a", "class.b"], now=1000)
    decoded = request_state.decode(token, now=1000 + 3599)
    assert decoded["question"] == {"sample_tag": "A1"}
    assert decoded["candidates"] == ["class.a", "class.b"]


def test_state_is_plain_base64url_json_without_padding():
    token = request_state.encode({"q": 1}, [], now=0)
    assert "=" not in token and "+" not in token and "/" not in token
    body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert set(body) == {"v", "exp", "question", "candidates"}


def test_state_expires_after_one_hour():
    token = request_state.encode({"q": 1}, [], now=0)
    with pytest.raises(EcoError) as exc:
        request_state.decode(token, now=3600)
    assert exc.value.code == "invalid_argument" and "expired" in exc.value.message


def test_state_above_16_kib_cannot_be_minted_nor_accepted():
    with pytest.raises(ValueError):
        request_state.encode({"q": "x" * 17000}, [])
    with pytest.raises(EcoError):
        request_state.decode("A" * (16 * 1024 + 1))


@pytest.mark.parametrize("bad", ["***", base64.urlsafe_b64encode(b"[1,2]").decode(), base64.urlsafe_b64encode(b'{"v":2}').decode()])
def test_malformed_state_gives_invalid_argument(bad):
    with pytest.raises(EcoError) as exc:
        request_state.decode(bad)
    assert exc.value.code == "invalid_argument"
