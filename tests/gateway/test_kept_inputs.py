"""Valid tool inputs are kept by their arguments: the same arguments give the very
same frozen input a fresh validation would give, refused arguments are refused every time, an
input holding a filled list is made anew, and page sizes are capped per server limits."""

from __future__ import annotations

import pytest

from eco_core.config import load_config
from eco_core.errors import EcoError
from eco_core.memo import memos
from mcp_gateway import calls
from mcp_gateway.arguments import parse_arguments
from mcp_gateway.registry import default_registry
from tests.gateway.fakes import echo_spec


def test_the_same_arguments_give_the_same_input_a_fresh_validation_gives():
    spec = echo_spec()
    memos.drop_all()
    first = parse_arguments(spec, {"productCode": "DP1.00001.001", "limit": 5})
    again = parse_arguments(spec, {"product_code": "DP1.00001.001", "limit": 5})  # other spelling, same input
    assert again is first
    memos.drop_all()
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


def test_kept_inputs_are_forgotten_with_every_other_memo():
    spec = echo_spec()
    first = parse_arguments(spec, {"count": 1})
    assert parse_arguments(spec, {"count": 1}) is first
    memos.drop_all()
    again = parse_arguments(spec, {"count": 1})
    assert again == first and again is not first


def _limits(max_limit: int, default_limit: int | None):
    flags = {"limits.max_limit": max_limit}
    if default_limit is not None:
        flags["limits.default_limit"] = default_limit
    return load_config(flags=flags, env={}, warn=False)


# calls._capped is the one place where bounds and page sizes apply; reached directly so each case
# can vary the server limits without a server of its own.
def test_page_sizes_of_a_kept_input_are_capped_for_each_servers_limits():
    spec = default_registry().get("eco_search_sites")
    args = parse_arguments(spec, {"query": "forest"})  # limit left to the server's default
    small, smaller, default = _limits(100, 25), _limits(10, 25), _limits(100, None)
    assert calls._capped(args, small).limit == 25
    assert calls._capped(args, smaller).limit == 10
    assert calls._capped(args, default).limit == 50  # the declared default
    assert calls._capped(args, small) is calls._capped(args, small)
    sent = parse_arguments(spec, {"query": "forest", "limit": 80})
    with pytest.raises(EcoError):
        calls._capped(sent, _limits(60, 25))
