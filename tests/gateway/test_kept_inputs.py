"""Valid tool inputs are kept by their arguments (issue 19): the same arguments give the very
same frozen input a fresh validation would give, refused arguments are refused every time, an
input holding a filled list is made anew, and page sizes are capped per server limits."""

from __future__ import annotations

import pytest

from eco_core.errors import EcoError
from mcp_gateway import arguments, calls
from mcp_gateway.arguments import parse_arguments
from mcp_gateway.registry import default_registry
from tests.gateway.fakes import echo_spec


def test_the_same_arguments_give_the_same_input_a_fresh_validation_gives():
    spec = echo_spec()
    arguments._kept_inputs.clear()
    first = parse_arguments(spec, {"productCode": "DP1.00001.001", "limit": 5})
    again = parse_arguments(spec, {"product_code": "DP1.00001.001", "limit": 5})  # other spelling, same input
    assert again is first
    arguments._kept_inputs.clear()
    assert parse_arguments(spec, {"productCode": "DP1.00001.001", "limit": 5}) == first


def test_refused_arguments_are_refused_every_time():
    spec = echo_spec()
    for _ in range(2):
        with pytest.raises(EcoError) as caught:
            parse_arguments(spec, {"limit": 101})
        assert caught.value.code == "invalid_argument" and caught.value.details["field"] == "limit"


def test_an_input_holding_a_filled_list_is_made_anew_each_time():
    spec = default_registry().get("eco_get_product")
    with_list = {"product": "DP1.00001.001", "include": ["abstract"]}
    assert parse_arguments(spec, with_list) is not parse_arguments(spec, with_list)
    plain = {"product": "DP1.00001.001"}
    assert parse_arguments(spec, plain) is parse_arguments(spec, plain)


def test_kept_inputs_are_bounded_oldest_first(monkeypatch):
    monkeypatch.setattr(arguments, "KEPT_INPUTS", 2)
    arguments._kept_inputs.clear()
    spec = echo_spec()
    for n in (1, 2, 3):
        parse_arguments(spec, {"count": n})
    assert [text for _, text in arguments._kept_inputs] == ['{"count": 2}', '{"count": 3}']


def test_page_sizes_of_a_kept_input_are_capped_for_each_servers_limits():
    spec = default_registry().get("eco_search_sites")
    args = parse_arguments(spec, {"query": "forest"})  # limit left to the server's default
    assert calls._capped(args, 100, 25).limit == 25
    assert calls._capped(args, 10, 25).limit == 10
    assert calls._capped(args, 100, None).limit == 50  # the declared default
    assert calls._capped(args, 100, 25) is calls._capped(args, 100, 25)
    sent = parse_arguments(spec, {"query": "forest", "limit": 80})
    with pytest.raises(EcoError):
        calls._capped(sent, 60, 25)
