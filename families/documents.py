"""The documents family: eco_get_document. A NEON document (ATBD, protocol, user guide): its
metadata from a HEAD-style read, or the text of its PDF read in memory with pypdf and paged by
characters or PDF pages.

A document is addressed by spec number or by a documents URL on the configured REST base; any
other URL is refused before a request, so callers can never point the service at an arbitrary
address. The request itself is always rebuilt from the spec number by the upstream client.
Extracted text is cached per document (`cache.ttl_s.documents`): paging through a long document
downloads it once. The catalog names the products whose specs list the document (and its
description and type); a `product` the document should belong to is checked against its record.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
from collections.abc import Awaitable
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from pydantic import Field

from catalog.access import catalog_index
from catalog.index import CatalogIndex
from catalog.outage import DATABASE_DOWN
from catalog.resolve import resolve_product
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Source, ToolInput
from families.call import CallContext
from upstream import models as um
from upstream.client import UpstreamClient

T = TypeVar("T")
PAGES = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
PAGE_BREAK = "\n\n"


class GetDocumentInput(ToolInput):
    spec_number: str | None = Field(None, min_length=1, max_length=100, description="e.g. NEON.DOC.000780vB.")
    url: str | None = Field(None, max_length=500, description="A documents URL on the upstream REST base.")
    product: str | None = Field(None, max_length=300, description="Check the document belongs to this product.")
    extract_text: bool = Field(False, description="Read the PDF's text (in memory).")
    max_chars: int = Field(20000, ge=500, le=100000)
    char_offset: int = Field(0, ge=0)
    pages: str | None = Field(None, max_length=20, description="PDF pages: '3' or '2-5'.")


class GetDocumentOutput(Envelope):
    spec_number: str
    url: str
    content_type: str | None
    size: int | None
    filename: str | None
    spec_description: str | None
    spec_type: str | None
    referenced_by_products: list[str]
    text: str | None
    text_truncated: bool
    next_char_offset: int | None
    chars_total: int | None
    page_count: int | None
    pages: str | None


async def get_document(args: GetDocumentInput, call: CallContext) -> GetDocumentOutput:
    cfg, client = call.cfg, call.client
    spec_number = _spec_number(args, cfg.eco.base_url)
    if args.extract_text and not _pdf_support():
        raise EcoError("feature_unavailable", "extract_text: the PDF extra (pypdf) is not installed",
                       hint="Install pypdf, or call with extract_text=false for the metadata.")
    if args.pages is not None:
        _page_bounds(args.pages)  # a malformed or inverted range is refused before any request
    resolved: dict[str, Any] = {"specNumber": spec_number}
    owner = None
    notes: list[str] = []
    idx: CatalogIndex | None
    if args.product is not None:
        idx = await catalog_index(cfg, client)
        code = resolve_product(args.product, index=idx).code
        owner = await _owner(client, code, spec_number)
        resolved["product"] = code
    else:
        idx = await _catalog_or_none(call, notes)
    known = idx.documents.get(spec_number) if idx else None
    referenced = sorted({*(known.products if known else ()), *([resolved["product"]] if owner else [])})
    text = None
    truncated = False
    next_offset = chars_total = page_count = None
    if args.extract_text:
        got = await _named(spec_number, _document_text(client, cfg, spec_number))
        head = um.DocumentHead.model_validate(got["head"])
        texts: list[str] | None = got["pages"]
        if texts is None:
            notes.append(f"Not a PDF ({head.content_type or 'unknown type'}): only its metadata is given.")
        else:
            page_count = len(texts)
            if args.pages is not None:
                lo, hi = _page_range(args.pages, page_count)
                texts = texts[lo - 1: hi]
            full = PAGE_BREAK.join(t.strip() for t in texts)
            chars_total = len(full)
            if args.char_offset > chars_total:
                raise EcoError("invalid_argument",
                               f"char_offset: {args.char_offset} is past the text's end ({chars_total})",
                               details={"field": "char_offset", "charsTotal": chars_total})
            text = full[args.char_offset: args.char_offset + args.max_chars]
            end = args.char_offset + len(text)
            truncated = end < chars_total
            next_offset = end if truncated else None
            if not full:
                notes.append("The PDF has no extractable text (scanned images?).")
    else:
        head = await _named(spec_number, client.document_head(spec_number))
        if args.pages is not None or args.char_offset:
            notes.append("pages and char_offset apply only with extract_text=true.")
    return GetDocumentOutput(
        spec_number=spec_number, url=head.url, content_type=head.content_type, size=head.size,
        filename=head.filename,
        spec_description=(owner.spec_description if owner else None) or (known.description if known else None),
        spec_type=(owner.spec_type if owner else None) or (known.type if known else None),
        referenced_by_products=referenced,
        text=text, text_truncated=truncated, next_char_offset=next_offset, chars_total=chars_total,
        page_count=page_count, pages=args.pages if text is not None else None,
        resolved=resolved, notes=notes,
        next_steps=_steps(spec_number, head.content_type, next_offset, args),
        source=Source(origin="upstream", endpoints=["/documents/{specNumber}"], api_base_url=cfg.eco.base_url))


async def _catalog_or_none(call: CallContext, notes: list[str]) -> CatalogIndex | None:
    """The catalog, which names the products referencing the document; without it the document
    itself still reads."""
    try:
        return await catalog_index(call.cfg, call.client)
    except EcoError as exc:
        notes.append(f"referencedByProducts is empty: the product catalog is unavailable ({exc.code}).")
    except DATABASE_DOWN:
        notes.append("referencedByProducts is empty: the catalog database is unreachable.")
    return None


def _steps(spec_number: str, content_type: str | None, next_offset: int | None,
           args: GetDocumentInput) -> list[NextStep]:
    base = {"spec_number": spec_number, "extract_text": True}
    if next_offset is not None:
        more = {"pages": args.pages} if args.pages else {}
        return [NextStep(tool="eco_get_document", arguments={**base, **more, "char_offset": next_offset,
                                                             "max_chars": args.max_chars}, why="The next part of the text.")]
    if not args.extract_text and "pdf" in (content_type or ""):
        return [NextStep(tool="eco_get_document", arguments={**base, "pages": "1-2"}, why="Read its first pages.")]
    return []


def _spec_number(args: GetDocumentInput, base_url: str) -> str:
    """The spec number given, or the one a documents URL names (they must agree when both are given)."""
    spec_number = args.spec_number
    if args.url is not None:
        from_url = _spec_from_url(args.url, base_url)
        if spec_number is not None and spec_number != from_url:
            raise EcoError("invalid_argument", f"spec_number: {spec_number} disagrees with url ({from_url})",
                           details={"field": "spec_number"})
        spec_number = from_url
    if not spec_number:
        raise EcoError("invalid_argument", "spec_number: give spec_number or url", details={"field": "spec_number"})
    return spec_number


def _spec_from_url(url: str, base_url: str) -> str:
    """The spec number of a documents URL on the REST base; invalid_argument for anything else."""
    got, base = urlsplit(url.strip()), urlsplit(base_url)
    prefix = base.path.rstrip("/") + "/documents/"
    if (got.scheme.lower(), got.netloc.lower()) != (base.scheme.lower(), base.netloc.lower()):
        raise EcoError("invalid_argument", f"url: only documents URLs on {base.scheme}://{base.netloc} are read",
                       details={"field": "url"})
    rest = got.path[len(prefix):] if got.path.startswith(prefix) else ""
    spec = unquote(rest)
    if not rest or "/" in spec or "\\" in spec or spec in (".", "..") or got.query or got.fragment:
        raise EcoError("invalid_argument", f"url: must be {base_url.rstrip('/')}/documents/<specNumber>",
                       details={"field": "url"})
    return spec


async def _named(spec_number: str, fetch: Awaitable[T]) -> T:
    """The fetch, with NEON's 404 told as the unknown spec number the caller gave."""
    try:
        return await fetch
    except EcoError as exc:
        if exc.code != "not_found":
            raise
        raise EcoError("not_found", f"spec_number: NEON has no document {spec_number}",
                       details={"field": "spec_number", **exc.details},
                       hint="eco_get_product with include [\"specs\"] lists a product's documents and their spec numbers.") from None


def _page_bounds(pages: str) -> tuple[int, int]:
    m = PAGES.match(pages)
    if not m:
        raise EcoError("invalid_argument", f"pages: {pages!r} is not a page ('3') or a range ('2-5')",
                       details={"field": "pages"})
    lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    if lo < 1:
        raise EcoError("invalid_argument", f"pages: {pages!r} starts before page 1", details={"field": "pages"})
    if hi < lo:
        raise EcoError("invalid_argument", f"pages: {pages!r} is inverted (page {lo} comes after page {hi}); "
                       f"give '{hi}-{lo}'", details={"field": "pages"})
    return lo, hi


def _page_range(pages: str, count: int) -> tuple[int, int]:
    lo, hi = _page_bounds(pages)
    if hi > count:
        raise EcoError("invalid_argument", f"pages: {pages!r} is outside the document's pages 1-{count}",
                       details={"field": "pages", "pageCount": count})
    return lo, hi


async def _owner(client: UpstreamClient, code: str, spec_number: str) -> um.Spec:
    rec = await client.product(code)
    for spec in rec.specs:
        if spec.spec_number == spec_number:
            return spec
    raise EcoError("not_found", f"product: document {spec_number} does not belong to {code}",
                   details={"field": "product", "productCode": code,
                            "specNumbers": [s.spec_number for s in rec.specs]})


# -- the PDF's text ----------------------------------------------------------------------------

def _pdf_support() -> bool:
    try:
        import pypdf  # noqa: F401
    except ImportError:
        return False
    return True


def _is_pdf(doc: um.Document) -> bool:
    return doc.content[:1024].lstrip().startswith(b"%PDF-") or "pdf" in (doc.content_type or "").lower()


def extract_pages(spec_number: str, content: bytes) -> list[str]:
    """Each PDF page's text; a PDF pypdf cannot parse is upstream_error (the metadata still reads)."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(content))
        return [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise EcoError("upstream_error", f"document {spec_number} is a damaged PDF that cannot be read "
                       f"({type(exc).__name__}); its metadata is available with extract_text=false",
                       details={"specNumber": spec_number}) from None


async def _document_text(client: UpstreamClient, cfg: EcoConfig, spec_number: str) -> dict[str, Any]:
    """{head, pages (None when not a PDF)}: downloaded and extracted once per TTL."""

    async def fetch() -> dict[str, Any]:
        doc = await client.document(spec_number, max_bytes=cfg.limits.max_document_bytes)
        head = um.DocumentHead(**doc.model_dump(exclude={"content"})).model_dump()
        if not _is_pdf(doc):
            return {"head": head, "pages": None}
        return {"head": head, "pages": await asyncio.to_thread(extract_pages, spec_number, doc.content)}

    key = "v1:{}:public:doctext:{}".format(
        client.namespace, hashlib.sha256(f"{cfg.eco.base_url}|{spec_number}".encode()).hexdigest()[:32])
    return dict(await client.cached(key, cfg.cache.ttl_s.documents, fetch))
