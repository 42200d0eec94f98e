"""The sites cap of eco_download_files (site_codes' maxItems, the setting
limits.max_sites_per_call) holds for every source: with a prototype_uuid or a spec_number more
site codes than the cap are refused as for a data download, never taken and silently ignored."""

# ruff: noqa: F811  (pytest fixtures imported from tests.downloads.conftest are parameters here)
from __future__ import annotations

import pytest

from tests.downloads.conftest import call_tool, dl_dir, sim_token, snapshot  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of

SITES = [f"S{i:03d}" for i in range(31)]


def _sources(sim) -> list[dict]:
    sim.state.documents.lookup("x")  # builds the simulator's document index
    uuid = next(iter(sim.state.prototypes.datasets))
    return [{"prototype_uuid": uuid}, {"prototype_uuid": "00000000-0000-0000-0000-000000000000"},
            {"spec_number": next(iter(sim.state.documents._index))},
            {"product": "DP1.00041.001", "start_month": "2020-01"}]


@pytest.mark.parametrize("which", range(4), ids=["prototype", "unknown-prototype", "document", "data"])
async def test_more_site_codes_than_the_cap_are_refused_naming_site_codes_whatever_the_source(
        call_tool, fresh_sim, dl_dir, which):
    before = snapshot(dl_dir)
    source = _sources(fresh_sim)[which]
    err = error_of(await call_tool("eco_download_files", {**source, "site_codes": SITES}), "invalid_argument",
                   "site_codes")
    assert (err["details"]["field"], err["details"]["maximum"]) == ("site_codes", 30)
    assert snapshot(dl_dir) == before
    assert not fresh_sim.requests.matching(r"^/(api/v0|storage)/")  # refused before any request


async def test_the_cap_follows_the_configuration(call_tool, fresh_sim, dl_dir):
    source = _sources(fresh_sim)[2]
    err = error_of(await call_tool("eco_download_files", {**source, "site_codes": SITES[:3]},
                                   limits__max_sites_per_call=2), "invalid_argument", "site_codes")
    assert (err["details"]["maximum"], err["details"]["setting"]) == (2, "limits.max_sites_per_call")
