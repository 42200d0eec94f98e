"""Remembered answers live in one registry (eco_core.memo): each table is bounded, an entry is
known only for the very objects it was made for, and one call forgets them all, as a new catalog
index does."""

from __future__ import annotations

import pytest

from eco_core.memo import KeptByValue, Memos, memos
from eco_core.wire import Envelope, is_returned_again, returned_again


def test_a_marked_answer_is_known_by_identity_and_an_equal_one_is_not():
    marked, equal = returned_again(Envelope()), Envelope()
    assert marked == equal
    assert is_returned_again(marked) and not is_returned_again(equal)
    assert returned_again(marked) is marked and is_returned_again(marked)  # marking twice is harmless


def test_dropping_all_memos_forgets_every_table_at_once():
    registry = Memos()
    by_id = registry.by_identity("t.identity", max_entries=4)
    by_value = registry.by_value("t.value", max_entries=4)
    key = object()
    by_id.put(key, value="a")
    by_value.put(("k", 1), "b")
    assert registry.sizes() == {"t.identity": 1, "t.value": 1}
    registry.drop_all()
    assert by_id.get(key) is None and by_value.get(("k", 1)) is None
    assert registry.sizes() == {"t.identity": 0, "t.value": 0}


def test_a_table_name_is_made_once():
    registry = Memos()
    registry.by_value("t.once", max_entries=1)
    with pytest.raises(ValueError, match=r"t\.once"):
        registry.by_identity("t.once", max_entries=1)


def test_a_value_table_forgets_its_oldest_entry_first():
    table: KeptByValue[int] = KeptByValue(max_entries=2)
    table.put("a", 1)
    table.put("b", 2)
    table.put("a", 3)  # a put moves the key to the newest place
    table.put("c", 4)
    assert (table.get("a"), table.get("b"), table.get("c")) == (3, None, 4)


def test_the_process_registry_holds_the_returned_again_marks():
    marked = returned_again(Envelope())
    memos.drop_all()
    assert not is_returned_again(marked)
