"""The simulator's location tree behaves as the recorded samples' README describes `hierarchy=true`
and `locationType` pruning (the structural contract test checks keys; this checks behaviour the
location tools rely on)."""

from __future__ import annotations

import httpx
import pytest

from .conftest import load_sample


def _get(sim, name: str, **params: str) -> dict:
    resp = httpx.get(f"{sim.base_url}/locations/{name}", params=params, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


@pytest.fixture(scope="module")
def sim_server():
    from upstream_sim.server import SimServer

    with SimServer(seed=1, port=0) as server:
        yield server


def _walk(tree: list[dict], depth: int = 1):
    for node in tree:
        yield depth, node
        yield from _walk(node["locationChildHierarchy"], depth + 1)


def test_hierarchy_drops_site_keys_and_children_lists_and_chains_parents_up_to_realm(sim_server):
    plain = _get(sim_server, "HARV")
    tree = _get(sim_server, "HARV", hierarchy="true")
    for dropped in ("domainCode", "siteCode", "activePeriods"):
        assert dropped in plain and dropped not in tree, dropped
    assert len(tree["locationProperties"]) < len(plain["locationProperties"])
    assert tree["locationChildren"] == [] and tree["locationChildrenUrls"] == []
    chain, p = [], tree["locationParentHierarchy"]
    while p:
        chain.append((p["locationName"], p["locationType"]))
        p = p.get("locationParentHierarchy")
    assert chain == [("D01", "DOMAIN"), ("REALM", "FIELD")]
    names = {n["locationName"] for _, n in _walk(tree["locationChildHierarchy"])}
    assert set(plain["locationChildren"]) <= names


def test_plots_hold_point_children_like_the_recorded_harv_tree(sim_server):
    recorded = load_sample("locations_HARV_hierarchy_true.json")["data"]
    recorded_points = {(d, n["locationType"]) for d, n in _walk(recorded["locationChildHierarchy"])
                       if n["locationType"] == "Point"}
    tree = _get(sim_server, "HARV", hierarchy="true")
    points = [(d, n) for d, n in _walk(tree["locationChildHierarchy"]) if n["locationType"] == "Point"]
    assert recorded_points == {(2, "Point")} and {(d, n["locationType"]) for d, n in points} == recorded_points
    plot = next(n for _, n in _walk(tree["locationChildHierarchy"]) if n["locationType"] == "OS Plot - bet")
    assert [c["locationName"] for c in plot["locationChildHierarchy"]] == [
        f"{plot['locationName']}.{side}" for side in "ENSW"]


def test_location_type_prunes_to_that_types_subtree_without_children_lists(sim_server):
    full = _get(sim_server, "HARV", hierarchy="true")
    towers = _get(sim_server, "HARV", hierarchy="true", locationType="TOWER")
    assert "locationChildren" not in towers and "locationChildrenUrls" not in towers
    assert [n["locationType"] for n in towers["locationChildHierarchy"]] == ["TOWER"]
    tower = next(n for n in full["locationChildHierarchy"] if n["locationType"] == "TOWER")
    assert towers["locationChildHierarchy"] == [tower]  # the type's whole subtree is kept
    configs = _get(sim_server, "HARV", hierarchy="true", locationType="CONFIG")["locationChildHierarchy"]
    every = [n["locationName"] for _, n in _walk(full["locationChildHierarchy"]) if n["locationType"] == "CONFIG"]
    assert sorted(n["locationName"] for n in configs) == sorted(every)
    domains = _get(sim_server, "REALM", hierarchy="true", locationType="DOMAIN")["locationChildHierarchy"]
    assert {n["locationType"] for n in domains} == {"DOMAIN"} and len(domains) == 20


def test_history_lists_the_current_position_first_then_past_ones(sim_server):
    plot = _get(sim_server, "HARV_001.basePlot.all", history="true")
    current, past = plot["locationHistory"]
    assert current["current"] is True and past["current"] is False
    assert past["locationEndDate"] == current["locationStartDate"]
    assert current["locationDecimalLatitude"] == plot["locationDecimalLatitude"]
