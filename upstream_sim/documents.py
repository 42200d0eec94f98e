"""Product documents (/documents/{specNumber}) as real multi-page PDFs with extractable text.

The catalog announces each document's specSize before any PDF exists, so the generated
PDF is padded to exactly that size with comment lines and a repeated trailer, which PDF
readers accept (they read the last startxref/%%EOF).
"""

from __future__ import annotations

import io

from fpdf import FPDF

from .datafiles import ByteCache
from .world import World

# Documents no product lists, served for the document tool's failure paths (see rest.document).
DAMAGED = "NEON.DOC.SIM-DAMAGED"  # application/pdf whose body is not a readable PDF
NOT_PDF = "NEON.DOC.SIM-NOTPDF"  # a plain-text document
HUGE = "NEON.DOC.SIM-HUGE"  # 30 MiB, Content-Length declared
HUGE_CHUNKED = "NEON.DOC.SIM-HUGE-CHUNKED"  # 30 MiB, no Content-Length (chunked)
LYING = "NEON.DOC.SIM-LYING"  # HEAD declares 4 KB; GET streams 30 MiB without a length
ELSEWHERE = "NEON.DOC.SIM-ELSEWHERE"  # 302 to the storage host (another host)
HUGE_BYTES = 30 * 1024 * 1024
CHUNK = 256 * 1024


def damaged_pdf() -> bytes:
    return b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nthis is not an object table\n" + b"\x00\xff" * 512


def not_pdf() -> bytes:
    return b"NEON data use notes\n" + b"This document is plain text, not a PDF.\n" * 40


async def huge_stream(total: int = HUGE_BYTES):
    """Generated as it is sent: a 30 MiB body never sits in the simulator's memory."""
    block = b"%" + b"0" * (CHUNK - 2) + b"\n"
    sent = 0
    while sent < total:
        piece = block[: total - sent]
        sent += len(piece)
        yield piece


class Documents:
    def __init__(self, world: World, cache: ByteCache):
        self.world = world
        self.cache = cache
        self._index: dict[str, tuple[str, dict]] | None = None

    def lookup(self, number: str) -> tuple[str, dict] | None:
        if self._index is None:
            idx: dict[str, tuple[str, dict]] = {}
            for code, p in self.world.products.items():
                for spec in p["specs"]:
                    idx.setdefault(spec["specNumber"], (code, spec))
            self._index = idx
        return self._index.get(number)

    def pdf(self, number: str) -> bytes | None:
        hit = self.lookup(number)
        if hit is None:
            return None
        key = "doc|" + number
        got = self.cache.get(key)
        if got is None:
            got = self._render(number, *hit)
            self.cache.put(key, got)
        return got

    def _render(self, number: str, code: str, spec: dict) -> bytes:
        p = self.world.products[code]
        r = self.world.rng("document", number)
        doc = FPDF()
        doc.set_title(f"{number} {spec['specDescription']}")
        doc.set_font("helvetica", size=11)
        pages = r.randint(3, 6)
        for page in range(1, pages + 1):
            doc.add_page()
            doc.multi_cell(0, 6, new_x="LMARGIN", new_y="NEXT", text=f"{number}  page {page} of {pages}")
            doc.multi_cell(0, 6, new_x="LMARGIN", new_y="NEXT", text=_ascii(spec["specDescription"]))
            doc.multi_cell(0, 6, new_x="LMARGIN", new_y="NEXT", text=f"Data product {code}: {_ascii(p['productName'])}")
            doc.multi_cell(0, 6, new_x="LMARGIN", new_y="NEXT", text=_ascii(p["productDescription"])[:900])
            doc.multi_cell(0, 6, new_x="LMARGIN", new_y="NEXT", text=f"Section {page}. Measurement principle and processing steps.")
        raw = bytes(doc.output())
        return _pad(raw, spec["specSize"])


def _ascii(text: str) -> str:
    return text.replace("\u2013", "-").replace("\u2014", "-").encode("latin-1", "replace").decode("latin-1")


def _pad(raw: bytes, size: int) -> bytes:
    tail_at = raw.rfind(b"startxref")
    trailer = raw[tail_at:].rstrip() + b"\n"
    if len(raw) + len(trailer) + 4 > size:
        return raw  # cannot shrink a PDF; the catalog size is only a hint then
    filler = size - len(raw) - len(trailer)
    buf = io.BytesIO()
    buf.write(raw if raw.endswith(b"\n") else raw + b"\n")
    filler -= 0 if raw.endswith(b"\n") else 1
    line = b"%" + b"0" * 78 + b"\n"
    while filler > len(line):
        buf.write(line)
        filler -= len(line)
    buf.write(b"%" + b"0" * (filler - 2) + b"\n" if filler >= 2 else b"\n" * filler)
    buf.write(trailer)
    return buf.getvalue()
