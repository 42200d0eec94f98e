"""A scientist's "how was this measured?" path, through the SDK's real MCP client over HTTP against
the real server, with the simulator behind it: search prototype datasets by theme -> one dataset
with its files -> its related data product's documents -> pages 1-2 of that product's user guide,
each next call built from the previous answer, every answer checked against its outputSchema."""

from __future__ import annotations

import io

from pypdf import PdfReader

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session, next_step, upstream_requests

TOOLS = {"eco_search_prototype_datasets", "eco_get_prototype_dataset", "eco_get_product", "eco_get_document"}


async def test_theme_search_to_dataset_files_to_pages_of_a_user_guide_over_http(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        assert TOOLS <= set(tools)

        # Theme is a case-insensitive prefix of the upstream theme strings.
        found = await client.call_tool("eco_search_prototype_datasets", {"theme": "organisms"})
        search = assert_valid_tool_result(tools["eco_search_prototype_datasets"], found)
        expected = [u for u, ds in sim.state.prototypes.datasets.items()
                    if any(t.lower().startswith("organisms") for t in ds["dataThemes"])]
        assert expected and [i["uuid"] for i in search["items"]] == expected
        assert search["page"]["total"] == len(expected)
        assert set(search["facets"]["themes"]) == {"Organisms, Populations, and Communities"}
        assert upstream_requests(found) == 1  # the whole list, once
        again = await client.call_tool("eco_search_prototype_datasets", {"theme": "ECOHYDRO", "limit": 1})
        assert assert_valid_tool_result(tools["eco_search_prototype_datasets"], again)["items"]
        assert upstream_requests(again) == 0  # every later search is answered from the cached list

        detail_args = {**next_step(search, "eco_get_prototype_dataset"), "include": ["files", "related"]}
        got = await client.call_tool("eco_get_prototype_dataset", detail_args)
        dataset = assert_valid_tool_result(tools["eco_get_prototype_dataset"], got)
        sim_ds = sim.state.prototypes.datasets[detail_args["uuid"]]
        assert dataset["uuid"] == detail_args["uuid"] and dataset["projectTitle"] == sim_ds["projectTitle"]
        assert [f["fileName"] for f in dataset["files"]] == [f["fileName"] for f in sim_ds["_files"]]
        assert all(f["url"] and f["md5"] and f["size"] > 0 for f in dataset["files"])
        assert dataset["filesPage"]["total"] == len(sim_ds["_files"])
        assert dataset["doi"]["url"] == sim_ds["doi"]["url"]
        assert next_step(dataset, "eco_get_citation") == {"prototype_uuid": detail_args["uuid"]}
        # Over HTTP the server writes no files, so no download step is offered.
        assert "eco_download_files" not in {s["tool"] for s in dataset["nextSteps"]}
        related = [p["dataProductCode"] for p in dataset["relatedDataProducts"]]
        assert related == ["DP1.20190.001"]

        product = assert_valid_tool_result(tools["eco_get_product"], await client.call_tool(
            "eco_get_product", {"product": related[0], "include": ["specs"]}))
        guide = next(s for s in product["specs"] if s["specDescription"].startswith("NEON User Guide"))
        sim_spec = next(s for s in sim.world.products[related[0]]["specs"]
                        if s["specNumber"] == guide["specNumber"])
        assert guide["specSize"] == sim_spec["specSize"]

        head = await client.call_tool("eco_get_document", {"spec_number": guide["specNumber"],
                                                           "product": related[0]})
        meta = assert_valid_tool_result(tools["eco_get_document"], head)
        assert meta["referencedByProducts"] == [related[0]] and meta["specDescription"] == guide["specDescription"]
        assert meta["contentType"] == "application/pdf" and meta["size"] == guide["specSize"]
        assert meta["text"] is None

        read_args = next_step(meta, "eco_get_document")
        assert read_args == {"spec_number": guide["specNumber"], "extract_text": True, "pages": "1-2"}
        sim.requests.clear()
        read = await client.call_tool("eco_get_document", read_args)
        doc = assert_valid_tool_result(tools["eco_get_document"], read)
        pdf_pages = [p.extract_text() or "" for p in
                     PdfReader(io.BytesIO(sim.state.documents.pdf(guide["specNumber"]))).pages]
        assert doc["text"] == pdf_pages[0].strip() + "\n\n" + pdf_pages[1].strip()
        assert "page 1 of" in doc["text"] and "page 2 of" in doc["text"] and "page 3 of" not in doc["text"]
        assert doc["pages"] == "1-2" and doc["pageCount"] == len(pdf_pages) >= 3
        assert doc["charsTotal"] == len(doc["text"]) and doc["nextCharOffset"] is None
        assert upstream_requests(read) == 1
        assert [r.method for r in sim.requests.matching("/documents/")] == ["GET"]

        # Reading on (page 3) is answered from the text extracted once.
        more = await client.call_tool("eco_get_document", {**read_args, "pages": "3"})
        assert "page 3 of" in assert_valid_tool_result(tools["eco_get_document"], more)["text"]
        assert upstream_requests(more) == 0
