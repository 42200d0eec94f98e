"""Calls that arrive together while a catalog is missing wait for one first-use build instead of
each starting its own (a burst after start-up used to start one rebuild per caller)."""

from __future__ import annotations

import asyncio

from catalog.services import warm
from catalog.services.refresh import RefreshOutcome
from eco_core.config import load_config


async def test_concurrent_first_use_callers_share_one_build_of_a_missing_catalog(monkeypatch):
    built: set[str] = set()
    builds: list[tuple[str, ...]] = []

    def due_catalogs(cfg=None, *, ahead=0.0, missing_only=False):
        return [c for c in ("products", "sites") if c not in built] if missing_only else []

    async def refresh_catalogs(catalogs, **_):
        builds.append(tuple(catalogs))
        await asyncio.sleep(0.05)  # the others arrive while this build runs
        built.update(catalogs)
        return [RefreshOutcome(c, True, "rest", 1, 1, 0.05, 1) for c in catalogs]

    async def no_subtrees(*_, **__):
        return None

    monkeypatch.setattr(warm, "due_catalogs", due_catalogs)
    monkeypatch.setattr(warm, "refresh_catalogs", refresh_catalogs)
    monkeypatch.setattr(warm, "refresh_subtrees_ahead", no_subtrees)
    monkeypatch.setattr(warm, "_mismatches", lambda cfg, catalogs: {})
    monkeypatch.setattr(warm, "_client", lambda client: object())
    cfg = load_config(env={}, warn=False)
    await asyncio.gather(*(warm.ensure_catalogs(cfg) for _ in range(20)))
    assert builds == [("products", "sites")]
