"""The short-lived caches on the hot path answer what a fresh read would, and give way
at once when this process swaps a catalog."""

from __future__ import annotations

from typing import Any

import pytest

from catalog import index
from catalog import status as catalog_status_mod
from catalog.status import status_report
from eco_core.memo import memos


@pytest.fixture
def counted_status(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []

    def fake(cfg: Any) -> dict[str, Any]:
        reads.append(1)
        return {"ready": True, "read": len(reads)}

    monkeypatch.setattr(catalog_status_mod, "catalog_status", fake)
    memos.drop_all()
    return reads


async def test_catalog_status_is_read_once_for_pings_within_a_second(counted_status, eco_cfg):
    first = await status_report(eco_cfg)
    again = await status_report(eco_cfg)
    assert counted_status == [1]
    assert again == first


async def test_a_catalog_swap_in_this_process_shows_in_the_next_status_at_once(counted_status, eco_cfg):
    await status_report(eco_cfg)
    index.mark_dirty()
    after = await status_report(eco_cfg)
    assert len(counted_status) == 2
    assert after["read"] == 2


async def test_catalog_status_is_read_again_once_its_second_is_over(counted_status, eco_cfg, monkeypatch):
    monkeypatch.setattr(catalog_status_mod, "STATUS_TTL_S", -1.0)  # every entry expires as it is made
    await status_report(eco_cfg)
    await status_report(eco_cfg)
    assert counted_status == [1, 1]


async def test_another_configuration_reads_its_own_status(counted_status, eco_cfg):
    await status_report(eco_cfg)
    other = eco_cfg.model_copy(update={"eco": eco_cfg.eco.model_copy(update={"base_url": "http://127.0.0.1:9/api/v0"})})
    await status_report(other)
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


# -- Host/Origin verdicts ---------------------------------------------------------------------------

def test_host_verdicts_are_kept_per_pair_and_stay_what_a_fresh_check_says(eco_cfg):
    from mcp_gateway.origin import HostPolicy

    policy = HostPolicy.from_config(eco_cfg.model_copy(update={"server": eco_cfg.server.model_copy(
        update={"bind_address": "127.0.0.1", "allowed_hosts": ["mcp.example.org"]})}))
    assert policy.enabled
    for _ in range(2):
        assert policy.check("mcp.example.org", None) is None
        assert policy.check("evil.example", None) == (421, "Host 'evil.example' is not allowed")
        assert policy.check("127.0.0.1:8080", "http://evil.example")[0] == 403


def test_host_verdicts_kept_are_bounded_whatever_hosts_callers_invent(eco_cfg):
    from mcp_gateway.origin import VERDICTS_KEPT, HostPolicy

    policy = HostPolicy.from_config(eco_cfg)
    for n in range(VERDICTS_KEPT * 3):
        assert policy.check(f"h{n}.example", None) is not None or not policy.enabled
    assert len(policy._verdicts) <= VERDICTS_KEPT


# -- the due check runs once an interval, due or not ----------------------------------------------

async def test_catalogs_due_for_refresh_are_checked_once_an_interval_not_on_every_call(monkeypatch, eco_cfg):
    import catalog.services as services
    from catalog import access as catalog_access

    checks: list[int] = []
    ensured: list[int] = []

    def due(cfg, *, ahead=0.0, missing_only=False):
        checks.append(1)
        return ["products"]  # inside the refresh-ahead window until a refresh lands

    async def ensure(cfg, *, client=None, need=()):
        ensured.append(1)

    async def inline(fn, /, *args, **kwargs):
        return fn(*args, **kwargs)

    idx = object()
    monkeypatch.setattr(services, "due_catalogs", due)
    monkeypatch.setattr(services, "ensure_catalogs", ensure)
    monkeypatch.setattr(catalog_access, "catalog_read", inline)
    monkeypatch.setattr(catalog_access, "get_index", lambda: idx)
    monkeypatch.setattr(catalog_access, "peek_index", lambda: idx)
    monkeypatch.setattr(catalog_access, "_not_due", (None, 0.0))
    client = object()
    for _ in range(5):
        assert await catalog_access.catalog_index(eco_cfg, client) is idx
    assert (checks, ensured) == ([1], [1])
    monkeypatch.setattr(catalog_access, "_not_due", (eco_cfg, 0.0))  # the interval is over
    await catalog_access.catalog_index(eco_cfg, client)
    assert (checks, ensured) == ([1, 1], [1, 1])
