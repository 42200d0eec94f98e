"""eco_get_document against the simulator's PDFs (and its damaged, non-PDF, oversized and
redirected documents), through the gateway's pipeline."""

from __future__ import annotations

import io
import sys

import pytest
from pypdf import PdfReader

from tests.tools.conftest import error_of
from upstream_sim import documents as simdocs

TOOL = "eco_get_document"


@pytest.fixture
def doc(sim):
    """A product's first document: (product code, spec record, the PDF's pages as pypdf reads them)."""
    code = "DP1.00041.001"
    spec = sim.world.products[code]["specs"][0]
    body = sim.state.documents.pdf(spec["specNumber"])
    pages = [p.extract_text() or "" for p in PdfReader(io.BytesIO(body)).pages]
    return code, spec, pages


async def test_metadata_comes_from_a_head_request_without_reading_the_body(run_tool, doc, sim):
    _, spec, _ = doc
    sim.requests.clear()
    out = await run_tool(TOOL, {"spec_number": spec["specNumber"]})
    body = out.ok
    assert out.requests == 1
    assert [r.method for r in sim.requests.matching("/documents/")] == ["HEAD"]
    assert body["specNumber"] == spec["specNumber"]
    assert body["url"] == f"{sim.base_url}/documents/{spec['specNumber']}"
    assert body["contentType"] == "application/pdf" and body["size"] == spec["specSize"]
    assert body["filename"] == f"{spec['specNumber']}.pdf"
    assert body["text"] is None and body["pageCount"] is None and body["charsTotal"] is None
    assert body["nextSteps"][0]["arguments"] == {"spec_number": spec["specNumber"], "extract_text": True,
                                                 "pages": "1-2"}


async def test_a_url_on_the_rest_base_is_read_like_its_spec_number(run_tool, doc, sim):
    _, spec, _ = doc
    body = (await run_tool(TOOL, {"url": f"{sim.base_url}/documents/{spec['specNumber']}"})).ok
    assert body["specNumber"] == spec["specNumber"] and body["size"] == spec["specSize"]


@pytest.mark.parametrize("make_url", [
    lambda sim, n: f"{sim.storage_base}/documents/{n}",  # another host (and port)
    lambda sim, n: "file:///etc/passwd",
    lambda sim, n: f"{sim.base_url}/products/DP1.00041.001",  # outside /documents/
    lambda sim, n: f"{sim.base_url}/documents/../products/DP1.00041.001",
    lambda sim, n: f"{sim.base_url}/documents/{n}/../../sites",
    lambda sim, n: f"{sim.base_url}/documents/%2E%2E",
    lambda sim, n: sim.base_url.replace("http://", "https://") + f"/documents/{n}",  # another scheme
    lambda sim, n: sim.base_url.replace("127.0.0.1", "user@127.0.0.1") + f"/documents/{n}",
    lambda sim, n: "http://169.254.169.254/latest/meta-data/",
], ids=["other-host", "file", "other-path", "dotdot", "nested-dotdot", "encoded-dotdot", "https", "userinfo",
        "metadata-ip"])
async def test_any_other_url_is_refused_before_any_request(run_tool, doc, sim, make_url):
    sim.requests.clear()
    out = await run_tool(TOOL, {"url": make_url(sim, doc[1]["specNumber"]), "extract_text": True})
    error_of(out, "invalid_argument", "url")
    assert out.requests == 0 and sim.requests.count("") == 0


async def test_a_redirect_to_another_host_is_not_followed(run_tool, sim):
    sim.requests.clear()
    out = await run_tool(TOOL, {"spec_number": simdocs.ELSEWHERE, "extract_text": True})
    err = error_of(out, "upstream_error")
    assert "another host" in err["message"]
    assert sim.requests.count("^/storage/") == 0


async def test_neither_spec_number_nor_url_is_invalid_argument(run_tool):
    error_of(await run_tool(TOOL, {}), "invalid_argument", "spec_number")


async def test_text_pages_to_the_end_without_gaps_or_overlaps_and_downloads_once(run_tool, doc, sim):
    _, spec, pages = doc
    sim.requests.clear()
    parts, offset, requests = [], 0, 0
    while offset is not None:
        out = await run_tool(TOOL, {"spec_number": spec["specNumber"], "extract_text": True, "max_chars": 500,
                                    "char_offset": offset})
        body = out.ok
        requests += out.requests
        parts.append(body["text"])
        assert body["textTruncated"] is (body["nextCharOffset"] is not None)
        offset = body["nextCharOffset"]
    full = "\n\n".join(p.strip() for p in pages)
    assert "".join(parts) == full and body["charsTotal"] == len(full) and len(parts) > 2
    assert body["pageCount"] == len(pages)
    assert requests == 1 and [r.method for r in sim.requests.matching("/documents/")] == ["GET"]


async def test_pages_select_a_single_page_or_a_range(run_tool, doc):
    _, spec, pages = doc
    one = (await run_tool(TOOL, {"spec_number": spec["specNumber"], "extract_text": True, "pages": "2"})).ok
    assert one["text"] == pages[1].strip() and one["pages"] == "2" and one["pageCount"] == len(pages)
    two = (await run_tool(TOOL, {"spec_number": spec["specNumber"], "extract_text": True, "pages": "2-3"})).ok
    assert two["text"] == pages[1].strip() + "\n\n" + pages[2].strip()
    assert "page 2 of" in two["text"] and "page 3 of" in two["text"] and "page 1 of" not in two["text"]


@pytest.mark.parametrize("pages", ["0", "99", "3-2", "1-99", "two", "1,2"])
async def test_pages_out_of_range_or_malformed_are_invalid_argument(run_tool, doc, pages):
    error_of(await run_tool(TOOL, {"spec_number": doc[1]["specNumber"], "extract_text": True, "pages": pages}),
             "invalid_argument", "pages")


async def test_product_confirms_ownership_or_is_not_found(run_tool, doc, sim):
    code, spec, _ = doc
    body = (await run_tool(TOOL, {"spec_number": spec["specNumber"], "product": code})).ok
    assert body["referencedByProducts"] == [code]
    assert body["specDescription"] == spec["specDescription"] and body["specType"] == spec["specType"]
    other = next(c for c, p in sim.world.products.items()
                 if spec["specNumber"] not in {s["specNumber"] for s in p["specs"]} and p["productStatus"] == "ACTIVE")
    error_of(await run_tool(TOOL, {"spec_number": spec["specNumber"], "product": other}), "not_found", "product")


async def test_a_non_pdf_gives_its_metadata_and_a_note(run_tool):
    body = (await run_tool(TOOL, {"spec_number": simdocs.NOT_PDF, "extract_text": True})).ok
    assert body["contentType"].startswith("text/plain") and body["text"] is None and body["pageCount"] is None
    assert any("Not a PDF" in n for n in body["notes"])


async def test_a_damaged_pdf_is_a_clear_upstream_error_not_an_internal_one(run_tool):
    err = error_of(await run_tool(TOOL, {"spec_number": simdocs.DAMAGED, "extract_text": True}), "upstream_error")
    assert "damaged PDF" in err["message"] and simdocs.DAMAGED in err["message"]


@pytest.mark.parametrize("number", [simdocs.HUGE, simdocs.HUGE_CHUNKED, simdocs.LYING],
                         ids=["declared", "undeclared", "head-lies"])
async def test_a_document_over_the_cap_is_result_too_large(run_tool, number):
    err = error_of(await run_tool(TOOL, {"spec_number": number, "extract_text": True}), "result_too_large")
    assert err["details"]["maxBytes"] == 25 * 1024 * 1024
    # Declared: refused from the header alone, so the size reported is the declared one.
    if number == simdocs.HUGE:
        assert err["details"]["size"] == simdocs.HUGE_BYTES
    else:
        assert 25 * 1024 * 1024 < err["details"]["size"] < simdocs.HUGE_BYTES


async def test_without_pypdf_extract_text_is_feature_unavailable(run_tool, doc, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)
    out = await run_tool(TOOL, {"spec_number": doc[1]["specNumber"], "extract_text": True})
    error_of(out, "feature_unavailable", "extract_text")
    assert out.requests == 0


@pytest.mark.parametrize(("args", "field"), [
    ({"spec_number": "X", "max_chars": 499}, "max_chars"), ({"spec_number": "X", "max_chars": 100001}, "max_chars"),
    ({"spec_number": "X", "char_offset": -1}, "char_offset"), ({"spec_number": ""}, "spec_number"),
])
async def test_bad_inputs_are_invalid_argument_naming_the_field(run_tool, args, field):
    out = await run_tool(TOOL, args)
    error_of(out, "invalid_argument", field)
    assert out.requests == 0


async def test_char_offset_past_the_end_is_invalid_argument(run_tool, doc):
    out = await run_tool(TOOL, {"spec_number": doc[1]["specNumber"], "extract_text": True, "char_offset": 10**7})
    error_of(out, "invalid_argument", "char_offset")


@pytest.mark.parametrize("arguments", [{"spec_number": ".."}, {"spec_number": "."}, {"specNumber": "../products"},
                                       {"spec_number": "NEON.DOC.1\\x"}])
async def test_a_spec_number_that_is_not_one_path_segment_is_invalid_argument_before_any_request(
        run_tool, sim, arguments):
    # '..' went out as a dot segment: the request reached the collapsed route /api/v0.
    sim.requests.clear()
    out = await run_tool(TOOL, arguments)
    err = error_of(out, "invalid_argument", "spec_number")
    assert err["details"]["field"] == "spec_number"
    assert out.requests == 0 and sim.requests.count("") == 0
