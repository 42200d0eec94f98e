"""Cutting a large GraphQL reply to the budget costs time linear in its size (each record is
visited a bounded number of times, however many lists compete), the answer stays valid JSON
within the budget, and reading a reply in steps gives exactly what parsing it whole and cutting
it would."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from upstream.graphql_window import shorten


class Counted(dict):
    """A record that counts how often it is walked or serialised (json's encoder and any walk
    call items() or values() on a dict subclass)."""

    visits = 0

    def items(self):  # type: ignore[override]
        Counted.visits += 1
        return super().items()

    def values(self):  # type: ignore[override]
        Counted.visits += 1
        return super().values()


def aliased_products(aliases: int, products: int = 20) -> dict[str, Any]:
    """What `{a0: products {productCode productName} a1: ...}` answers: many lists alike in size,
    the shape that made each cut re-serialise every list still waiting."""
    return {f"a{i}": [Counted(productCode=f"DP1.{i:05d}.{j:03d}", productName=f"Product {j} " + "x" * 40)
                      for j in range(products)] for i in range(aliases)}


def _compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


@pytest.mark.parametrize("aliases", [50, 200])
def test_cutting_many_lists_visits_each_record_a_bounded_number_of_times(aliases):
    data = aliased_products(aliases)
    records = aliases * 20
    Counted.visits = 0
    cut, paths, total = shorten(data, None, 5000)
    assert total == _compact({"data": aliased_products(aliases), "errors": None}) > 5000
    # A walk to size them, one more for the few kept, and the same again if lists must give
    # their first item too: not one serialisation of every waiting list per cut.
    assert Counted.visits <= 4 * records, (Counted.visits, records)
    assert len(json.dumps({"data": cut, "errors": None}, separators=(",", ":"), ensure_ascii=False)) <= 5000
    assert json.loads(json.dumps(cut)) == cut and len(paths) == aliases


def test_a_list_that_would_not_fit_even_with_one_item_gives_its_first_item_too():
    data = {"a": [{"text": "x" * 3000}], "b": [{"text": "y" * 3000}], "c": [1, 2]}
    cut, paths, _ = shorten(data, None, 3100)
    # Lists of more than one item give first (c keeps its first); then the largest gives it all.
    assert cut == {"a": [], "b": [{"text": "y" * 3000}], "c": [1]} and paths == ["$.c", "$.a"]


def _random_reply(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth > 5 or pick < 0.35:
        return rng.choice([rng.randint(-10**6, 10**6), "x" * rng.randint(0, 30), "\u00e9\"\\\n\u2603", None,
                           True, False, 2.5, "2020-01"])
    if pick < 0.7:
        return [_random_reply(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 3, 12, 30]))]
    return {f"k{i}": _random_reply(rng, depth + 1) for i in range(rng.randint(0, 5))}


@pytest.mark.parametrize("seed", range(40))
def test_reading_a_reply_in_steps_gives_what_parsing_it_whole_and_cutting_gives(seed):
    from upstream.graphql_reply import read_reply

    rng = random.Random(seed)
    data = {"a": _random_reply(rng), "b": _random_reply(rng)}
    errors = [{"message": "partial"}] if seed % 3 == 0 else None
    # Compact, non-ASCII as UTF-8: as NEON sends its replies.
    text = json.dumps({"data": data, "errors": errors}, separators=(",", ":"), ensure_ascii=False)
    size = _compact({"data": data, "errors": errors})
    for budget in {60, size // 3, size // 2, size}:
        whole = shorten(json.loads(text)["data"], errors, max(budget, 60))
        reply = read_reply(text.encode(), max(budget, 60))
        assert (reply.data, reply.truncated_paths, reply.bytes_total) == whole
        assert reply.errors == errors


@pytest.mark.parametrize("seed", range(10))
def test_an_indented_reply_is_cut_within_the_budget_too(seed):
    from upstream.graphql_reply import read_reply

    rng = random.Random(seed)
    data = {"a": _random_reply(rng), "b": _random_reply(rng)}
    text = json.dumps({"data": data, "errors": None}, indent=2)
    size = _compact({"data": data, "errors": None})
    for budget in {60, size // 3, size}:
        budget = max(budget, 60)
        reply = read_reply(text.encode(), budget)
        # Dropped items count the bytes they were sent in, indentation included; what is kept
        # fits as well as a cut of the parsed reply fits (a reply of dicts only may not fit at all).
        assert reply.bytes_total >= size
        exact, _, _ = shorten(json.loads(text)["data"], None, budget)
        assert _compact({"data": reply.data, "errors": None}) <= max(budget, _compact({"data": exact, "errors": None}))
        if size <= budget:
            assert reply.data == data and reply.truncated_paths == [] and reply.bytes_total == size
