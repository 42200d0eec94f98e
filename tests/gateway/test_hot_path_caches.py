"""The short-lived caches on the hot path (issue 19) answer what a fresh read would, and give way
at once when this process swaps a catalog."""

from __future__ import annotations

from typing import Any

import pytest

from catalog import index
from mcp_gateway import health, ports


@pytest.fixture
def counted_status(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []

    def fake(cfg: Any) -> dict[str, Any]:
        reads.append(1)
        return {"ready": True, "read": len(reads)}

    monkeypatch.setattr(ports, "catalog_status", fake)
    monkeypatch.setattr(health, "_status_cache", ())
    return reads


async def test_catalog_status_is_read_once_for_pings_within_a_second(counted_status, eco_cfg):
    first = await health.catalog_status(eco_cfg)
    again = await health.catalog_status(eco_cfg)
    assert counted_status == [1]
    assert again == first


async def test_a_catalog_swap_in_this_process_shows_in_the_next_status_at_once(counted_status, eco_cfg):
    await health.catalog_status(eco_cfg)
    index.mark_dirty()
    after = await health.catalog_status(eco_cfg)
    assert len(counted_status) == 2
    assert after["read"] == 2


async def test_catalog_status_is_read_again_once_its_second_is_over(counted_status, eco_cfg, monkeypatch):
    monkeypatch.setattr(health, "STATUS_TTL_S", -1.0)  # every entry expires as it is made
    await health.catalog_status(eco_cfg)
    await health.catalog_status(eco_cfg)
    assert counted_status == [1, 1]


async def test_another_configuration_reads_its_own_status(counted_status, eco_cfg):
    await health.catalog_status(eco_cfg)
    other = eco_cfg.model_copy(update={"eco": eco_cfg.eco.model_copy(update={"base_url": "http://127.0.0.1:9/api/v0"})})
    await health.catalog_status(other)
    assert len(counted_status) == 2


def test_peek_index_gives_the_index_only_while_no_version_check_is_due(monkeypatch):
    class Clock:
        now = 5000.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    sentinel = object()
    monkeypatch.setattr(index, "_index", sentinel)
    monkeypatch.setattr(index, "_checked_at", clock.now)
    monkeypatch.setattr(index, "_dirty", False)
    assert index.peek_index(clock=clock) is sentinel
    clock.now += index.CHECK_INTERVAL_S + 0.01
    assert index.peek_index(clock=clock) is None
    clock.now -= index.CHECK_INTERVAL_S
    index.mark_dirty()
    assert index.peek_index(clock=clock) is None
