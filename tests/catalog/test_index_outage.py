"""The index through a database outage: the version check that finds the database unreachable
serves the index the process holds (asked again after CHECK_INTERVAL_S, not on every call); with
no index held the error stands, for the caller to answer catalog_unavailable."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from catalog import index
from catalog.index import CHECK_INTERVAL_S, get_index

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def unreachable(monkeypatch):
    """`unreachable()`: from now on the version check fails as a refused connection does; the
    number of checks tried is `unreachable.tries`."""

    class Down:
        tries = 0

        def __call__(self) -> None:
            def read() -> None:
                Down.tries += 1
                raise OperationalError("connection failed: Connection refused")

            monkeypatch.setattr(index, "_read_versions", read)

    return Down()


def test_the_held_index_is_served_while_the_database_is_unreachable(fresh_index, unreachable):
    clock = Clock()
    held = get_index(clock=clock)
    unreachable()
    clock.now += CHECK_INTERVAL_S + 0.1
    assert get_index(clock=clock) is held
    assert unreachable.tries == 1
    # Not asked again within the interval: an outage is not a failed connection per call.
    clock.now += CHECK_INTERVAL_S / 2
    assert get_index(clock=clock) is held
    assert index.peek_index(clock=clock) is held
    assert unreachable.tries == 1
    clock.now += CHECK_INTERVAL_S
    assert get_index(clock=clock) is held
    assert unreachable.tries == 2


def test_with_no_index_held_the_outage_is_raised(fresh_index, unreachable):
    unreachable()
    with pytest.raises(OperationalError):
        get_index()
