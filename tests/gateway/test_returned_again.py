"""Answers a tool marks as returned again are known by identity while they live, and forgotten
with them (mcp_gateway.models.returned_again): an id reused by a later object is never taken
for the old answer."""

from __future__ import annotations

import gc

from mcp_gateway import models
from mcp_gateway.models import Envelope, is_returned_again, returned_again


def test_a_marked_answer_is_known_until_it_goes_and_an_unmarked_one_never():
    marked, plain = returned_again(Envelope()), Envelope()
    assert is_returned_again(marked) and not is_returned_again(plain)
    key = id(marked)
    del marked
    gc.collect()
    assert key not in models._returned
    assert returned_again(plain) is plain and is_returned_again(plain)
    assert is_returned_again(returned_again(plain))  # marking twice is harmless
