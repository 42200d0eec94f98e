"""eco_core.kept: values kept by the identity of objects, bounded by entries and by weight."""

from __future__ import annotations

from eco_core.kept import KeptByIdentity


class Thing:
    pass


def test_a_value_is_found_only_for_the_very_same_objects():
    kept: KeptByIdentity[str] = KeptByIdentity(max_entries=4)
    a, b = Thing(), Thing()
    kept.put(a, b, value="ab")
    assert kept.get(a, b) == "ab"
    assert kept.get(b, a) is None and kept.get(a, Thing()) is None and kept.get(a) is None


def test_an_entry_holds_its_objects_so_their_ids_cannot_be_taken_by_others():
    kept: KeptByIdentity[str] = KeptByIdentity(max_entries=4)
    kept.put(Thing(), value="gone")  # the only reference left is the entry's own
    for _ in range(100):
        assert kept.get(Thing()) is None  # a fresh object never finds another's value


def test_the_oldest_entries_go_first_when_entries_or_weight_run_out():
    kept: KeptByIdentity[int] = KeptByIdentity(max_entries=3, max_weight=10)
    objs = [Thing() for _ in range(5)]
    for n, o in enumerate(objs[:3]):
        kept.put(o, value=n, weight=2)
    kept.put(objs[3], value=3, weight=2)  # a fourth entry: the first goes
    assert [kept.get(o) for o in objs[:4]] == [None, 1, 2, 3] and kept.weight == 6
    kept.put(objs[4], value=4, weight=7)  # 6 + 7 > 10: the two oldest go
    assert [kept.get(o) for o in objs] == [None, None, None, 3, 4] and kept.weight == 9


def test_a_value_heavier_than_the_whole_budget_is_not_kept_and_evicts_nothing():
    kept: KeptByIdentity[int] = KeptByIdentity(max_entries=3, max_weight=10)
    small, big = Thing(), Thing()
    kept.put(small, value=1, weight=5)
    kept.put(big, value=2, weight=11)
    assert kept.get(big) is None and kept.get(small) == 1 and len(kept) == 1


def test_putting_the_same_objects_again_replaces_the_value_and_its_weight():
    kept: KeptByIdentity[int] = KeptByIdentity(max_entries=3, max_weight=10)
    o = Thing()
    kept.put(o, value=1, weight=4)
    kept.put(o, value=2, weight=6)
    assert kept.get(o) == 2 and kept.weight == 6 and len(kept) == 1
    kept.clear()
    assert kept.get(o) is None and kept.weight == 0 and kept.held() == []



def test_oldest_is_the_first_held_entry_or_none():
    from eco_core.kept import KeptByIdentity

    kept: KeptByIdentity[int] = KeptByIdentity(max_entries=2)
    assert kept.oldest() is None
    a, b, c = object(), object(), object()
    kept.put(a, value=1)
    kept.put(b, value=2)
    assert kept.oldest() == (a,) == kept.held()[0]
    kept.put(c, value=3)
    assert kept.oldest() == (b,) == kept.held()[0]


def test_put_latest_drops_the_entries_kept_under_an_older_first_object():
    kept: KeptByIdentity[int] = KeptByIdentity(max_entries=8)
    old_index, new_index, a, b = object(), object(), object(), object()
    kept.put_latest(old_index, a, value=1)
    kept.put_latest(old_index, b, value=2)
    assert len(kept) == 2
    kept.put_latest(new_index, a, value=3)
    assert kept.get(old_index, a) is None and kept.get(old_index, b) is None
    assert kept.get(new_index, a) == 3 and len(kept) == 1
