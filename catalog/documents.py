"""Documents (ATBDs, protocols, user guides): metadata from a HEAD-style read, or the text of a
PDF read in memory with pypdf and paged by characters or PDF pages.

A document is addressed by spec number or by a documents URL on the configured REST base; any
other URL is refused before a request, so callers can never point the service at an arbitrary
address. The request itself is always rebuilt from the spec number by the upstream client.
Extracted text is cached per document (`cache.ttl_s.documents`): paging through a long document
downloads it once."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from catalog.index import CatalogIndex
from catalog.resolve import resolve_product
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.wire import Answer, WireModel
from upstream import models as um
from upstream.client import UpstreamClient

PAGES = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
PAGE_BREAK = "\n\n"


class DocumentRecord(WireModel):
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


def spec_from_url(url: str, base_url: str) -> str:
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


def _page_range(pages: str, count: int) -> tuple[int, int]:
    m = PAGES.match(pages)
    if not m:
        raise EcoError("invalid_argument", f"pages: {pages!r} is not a page ('3') or a range ('2-5')",
                       details={"field": "pages"})
    lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    if lo < 1 or hi < lo or hi > count:
        raise EcoError("invalid_argument", f"pages: {pages!r} is outside the document's pages 1-{count}",
                       details={"field": "pages", "pageCount": count})
    return lo, hi


def _is_pdf(doc: um.Document) -> bool:
    return doc.content[:1024].lstrip().startswith(b"%PDF-") or "pdf" in (doc.content_type or "").lower()


def _extract(spec_number: str, content: bytes) -> list[str]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(content))
        return [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise EcoError("upstream_error", f"document {spec_number} is a damaged PDF that cannot be read "
                       f"({type(exc).__name__}); its metadata is available with extract_text=false",
                       details={"specNumber": spec_number}) from None


def pdf_support() -> bool:
    try:
        import pypdf  # noqa: F401
    except ImportError:
        return False
    return True


async def _document_text(client: UpstreamClient, cfg: EcoConfig, spec_number: str) -> dict[str, Any]:
    """{head, pages (None when not a PDF)}: downloaded and extracted once per TTL."""

    async def fetch() -> dict[str, Any]:
        doc = await client.document(spec_number, max_bytes=cfg.limits.max_document_bytes)
        head = um.DocumentHead(**doc.model_dump(exclude={"content"})).model_dump()
        if not _is_pdf(doc):
            return {"head": head, "pages": None}
        return {"head": head, "pages": await asyncio.to_thread(_extract, spec_number, doc.content)}

    key = "v1:{}:public:doctext:{}".format(
        client.namespace, hashlib.sha256(f"{cfg.eco.base_url}|{spec_number}".encode()).hexdigest()[:32])
    return dict(await client.cached(key, cfg.cache.ttl_s.documents, fetch))


async def _owner(client: UpstreamClient, idx: CatalogIndex, product: str, spec_number: str) -> um.Spec:
    code = resolve_product(product, index=idx).code
    rec = await client.product(code)
    for spec in rec.specs:
        if spec.spec_number == spec_number:
            return spec
    raise EcoError("not_found", f"product: document {spec_number} does not belong to {code}",
                   details={"field": "product", "productCode": code,
                            "specNumbers": [s.spec_number for s in rec.specs]})


async def get_document(client: UpstreamClient, cfg: EcoConfig, *, spec_number: str | None, url: str | None,
                       product: str | None, idx: CatalogIndex | None, extract_text: bool, max_chars: int,
                       char_offset: int, pages: str | None) -> Answer[DocumentRecord]:
    if url is not None:
        from_url = spec_from_url(url, cfg.eco.base_url)
        if spec_number is not None and spec_number != from_url:
            raise EcoError("invalid_argument", f"spec_number: {spec_number} disagrees with url ({from_url})",
                           details={"field": "spec_number"})
        spec_number = from_url
    if not spec_number:
        raise EcoError("invalid_argument", "spec_number: give spec_number or url", details={"field": "spec_number"})
    if extract_text and not pdf_support():
        raise EcoError("feature_unavailable", "extract_text: the PDF extra (pypdf) is not installed",
                       hint="Install pypdf, or call with extract_text=false for the metadata.")
    resolved: dict[str, Any] = {"specNumber": spec_number}
    owner = None
    if product is not None:
        assert idx is not None
        owner = await _owner(client, idx, product, spec_number)
        resolved["product"] = resolve_product(product, index=idx).code
    notes: list[str] = []
    text = None
    truncated = False
    next_offset = chars_total = page_count = None
    if extract_text:
        got = await _document_text(client, cfg, spec_number)
        head = um.DocumentHead.model_validate(got["head"])
        texts: list[str] | None = got["pages"]
        if texts is None:
            notes.append(f"Not a PDF ({head.content_type or 'unknown type'}): only its metadata is given.")
        else:
            page_count = len(texts)
            if pages is not None:
                lo, hi = _page_range(pages, page_count)
                texts = texts[lo - 1: hi]
            full = PAGE_BREAK.join(t.strip() for t in texts)
            chars_total = len(full)
            if char_offset > chars_total:
                raise EcoError("invalid_argument", f"char_offset: {char_offset} is past the text's end ({chars_total})",
                               details={"field": "char_offset", "charsTotal": chars_total})
            text = full[char_offset: char_offset + max_chars]
            end = char_offset + len(text)
            truncated = end < chars_total
            next_offset = end if truncated else None
            if not full:
                notes.append("The PDF has no extractable text (scanned images?).")
    else:
        head = await client.document_head(spec_number)
        if pages is not None or char_offset:
            notes.append("pages and char_offset apply only with extract_text=true.")
    record = DocumentRecord(
        spec_number=spec_number, url=head.url, content_type=head.content_type, size=head.size,
        filename=head.filename, spec_description=owner.spec_description if owner else None,
        spec_type=owner.spec_type if owner else None,
        referenced_by_products=[resolved["product"]] if owner else [],
        text=text, text_truncated=truncated, next_char_offset=next_offset, chars_total=chars_total,
        page_count=page_count, pages=pages if text is not None else None,
    )
    return Answer(record=record, resolved=resolved, notes=notes, from_upstream=True)
