"""Answers and errors say what happened, over HTTP through the SDK client: a sample tag whose
classes a query filters out all of is not "in no class"; a FUTURE product is cited as having no
data yet, not as provisional; an inverted page range is called inverted (before any request);
an unknown spec number is an error naming `spec_number`."""

from __future__ import annotations

from typing import Any

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session
from upstream_sim.biodata import Samples

FUTURE = "DP2.30011.002"
SPEC = "NEON.DOC.003771vF"  # DP1.00041.001's first document


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, result.structured_content
    return result.structured_content["error"]


async def test_a_query_that_filters_out_every_class_of_a_tag_says_so_and_not_that_the_tag_has_none(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        tag = Samples.SHARED_TAG
        body = assert_valid_tool_result(tools["eco_list_sample_classes"], await client.call_tool(
            "eco_list_sample_classes", {"sample_tag": tag, "query": "no-such-class-word"}))
        assert body["items"] == [] and body["page"]["total"] == 0
        assert not any("belongs to no class" in n for n in body["notes"]), body["notes"]
        assert any("2 classes" in n and "no-such-class-word" in n for n in body["notes"]), body["notes"]
        unfiltered = assert_valid_tool_result(tools["eco_list_sample_classes"], await client.call_tool(
            "eco_list_sample_classes", {"sample_tag": "NO.SUCH.TAG"}))
        assert any("belongs to no class" in n for n in unfiltered["notes"])


async def test_citing_a_future_product_says_it_has_no_data_yet(http_server, sim_cfg, sim, active_config):  # noqa: F811
    assert sim.world.products[FUTURE]["productStatus"] == "FUTURE"
    async with cold_http_session(http_server, sim, active_config) as (client, _):
        for args in ({"product": FUTURE}, {"product": FUTURE, "provisional": True}):
            err = _error(await client.call_tool("eco_get_citation", args))
            assert err["code"] == "not_found" and err["message"].startswith("product:"), err
            assert "no data yet" in err["message"] and "provisional" not in err["message"], err


async def test_an_inverted_page_range_is_called_inverted_before_any_request(
        http_server, sim_cfg, fresh_sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, fresh_sim, active_config) as (client, _):
        fresh_sim.requests.clear()
        err = _error(await client.call_tool("eco_get_document", {"spec_number": SPEC, "extract_text": True,
                                                                 "pages": "3-2"}))
        assert err["code"] == "invalid_argument" and err["message"].startswith("pages:"), err
        assert "inverted" in err["message"], err
        assert fresh_sim.requests.count(r"/documents/") == 0


async def test_an_unknown_spec_number_is_not_found_naming_the_spec_number_field(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, sim, active_config) as (client, _):
        for extract in (False, True):
            err = _error(await client.call_tool("eco_get_document", {"spec_number": "NEON.DOC.999999vZ",
                                                                     "extract_text": extract}))
            assert err["code"] == "not_found" and err["message"].startswith("spec_number:"), err
            assert "NEON.DOC.999999vZ" in err["message"], err
