"""eco_get_product's record: the compact base from the catalog (no request), and opt-in sections
from the upstream detail record (`GET /products/{code}`, cached per `cache.ttl_s.detail`).

    await product_detail(idx=, client=, product=, release=, include=, ...) -> dict
        keys are eco_get_product's result fields (snake_case); the tool validates them.
"""

from __future__ import annotations

from typing import Any

from catalog import resolve
from catalog.index import CatalogIndex, ProductEntry
from catalog.queries import availability as av
from catalog.queries.text import clip

SECTIONS = ("abstract", "design", "study", "sensor", "remarks", "packages", "specs", "releases", "change_logs",
            "availability", "biorepository")
# Text sections -> the record's fields they reveal (result key, upstream attribute).
TEXT_FIELDS = {
    "abstract": [("product_abstract", "productAbstract")],
    "design": [("product_design_description", "productDesignDescription")],
    "study": [("product_study_description", "productStudyDescription")],
    "sensor": [("product_sensor", "productSensor")],
    "remarks": [("product_remarks", "productRemarks")],
    "packages": [("product_basic_description", "productBasicDescription"),
                 ("product_expanded_description", "productExpandedDescription")],
}
PORTAL = "https://data.neonscience.org/data-products"


def sections_of(include: list[str]) -> set[str]:
    return set(SECTIONS) if "all" in include else set(include)


def _summary(cells: dict[str, av.Cell]) -> dict[str, Any]:
    rows = [r for r in (av.shape_row(c, provisional="include", start=None, end=None, fmt="counts")
                        for c in cells.values()) if r is not None]
    t = av.totals(rows)
    first, last = t["first_month"], t["last_month"]
    return {"site_count": len(rows), "first_month": first, "last_month": last,
            "month_range": f"{first}/{last}" if first else None, "site_months": t["site_months"],
            "by_release": t["by_release"]}


def _base(p: ProductEntry, base_url: str) -> dict[str, Any]:
    releases = [{"release": r["release"], "generation_date": r.get("generationDate"), "doi": r.get("doi"),
                 "doi_generation_date": r.get("doiGenerationDate")} for r in p.releases]
    return {
        "product_code": p.code, "product_code_long": p.code_long, "product_code_presentation": p.code_presentation,
        "product_name": p.name, "product_description": p.description or None, "product_status": p.status,
        "product_category": p.category, "product_science_team": p.team or None,
        "product_science_team_abbr": p.team_abbr or None,
        "product_publication_format_type": p.publication_format_type or None,
        "product_has_expanded": p.has_expanded, "themes": list(p.themes), "keywords": list(p.keywords),
        "latest_release": p.latest_release, "releases": releases,
        "availability": _summary({s: dict(c.ranges) for s, c in p.cells.items()}),
        "specs_count": p.specs_count, "change_log_count": None,
        "urls": {"api": f"{base_url}/products/{p.code}", "portal": f"{PORTAL}/{p.code}",
                 "doi": releases[-1]["doi"] if releases else None},
    }


def _from_record(rec: Any, out: dict[str, Any], tag: str | None) -> None:
    """The detail record is authoritative (and is the only source for a release view)."""
    releases = [{"release": r.release, "generation_date": r.generation_date,
                 "doi": r.product_doi.url if r.product_doi else None,
                 "doi_generation_date": r.product_doi.generation_date if r.product_doi else None}
                for r in sorted(rec.releases, key=lambda r: r.release)]
    out.update({
        "product_name": rec.product_name, "product_description": rec.product_description,
        "product_status": rec.product_status, "product_category": rec.product_category,
        "product_science_team": rec.product_science_team, "product_science_team_abbr": rec.product_science_team_abbr,
        "product_publication_format_type": rec.product_publication_format_type,
        "product_has_expanded": rec.product_has_expanded, "themes": rec.themes, "keywords": rec.keywords,
        "releases": releases, "latest_release": releases[-1]["release"] if releases else None,
        "specs_count": len(rec.specs), "change_log_count": len(rec.change_logs or []),
    })
    out["urls"]["doi"] = releases[-1]["doi"] if releases else None
    if tag:
        out["urls"]["api"] += f"?release={tag}"
        out["availability"] = _summary(_cells(rec, tag))


def _cells(rec: Any, tag: str | None) -> dict[str, av.Cell]:
    return {s.site_code: av.cell_from_upstream(s.available_releases, s.available_months, tag) for s in rec.site_codes}


def _change_logs(rec: Any, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    logs = sorted(rec.change_logs or [], key=lambda c: (c.issue_date or "", c.id), reverse=True)
    return [{"id": c.id, "parent_issue_id": c.parent_issue_id, "issue_date": c.issue_date,
             "resolved_date": c.resolved_date, "date_range_start": c.date_range_start,
             "date_range_end": c.date_range_end, "location_affected": c.location_affected, "issue": c.issue,
             "resolution": c.resolution} for c in logs[offset:offset + limit]], len(logs)


def _availability_rows(idx: CatalogIndex, rec: Any, tag: str | None, limit: int,
                       offset: int) -> tuple[list[dict[str, Any]], int]:
    rows = []
    for site, cell in sorted(_cells(rec, tag).items()):
        data = av.shape_row(cell, provisional="include", start=None, end=None, fmt="ranges")
        if data is None:
            continue
        s = idx.site_by_code.get(site)
        rows.append({"product_code": rec.product_code, "product_name": rec.product_name, "site_code": site,
                     "site_name": s.name if s else None, "month_count": data.month_count,
                     "provisional_month_count": data.provisional_month_count, "first_month": data.first_month,
                     "last_month": data.last_month, "ranges": data.ranges, "months": None,
                     "by_release": data.by_release})
    return rows[offset:offset + limit], len(rows)


def _page(offset: int, limit: int, returned: int, total: int) -> dict[str, Any]:
    more = offset + returned < total
    return {"offset": offset, "limit": limit, "returned": returned, "total": total,
            "next_offset": offset + returned if more else None}


async def product_detail(
    *, idx: CatalogIndex, client: Any, base_url: str, product: str, release: str | None, include: list[str],
    change_logs_limit: int = 25, change_logs_offset: int = 0, availability_limit: int = 100,
    availability_offset: int = 0, text_budget: int = 4000,
) -> dict[str, Any]:
    r = resolve.resolve_product(product, index=idx)
    resolved: dict[str, Any] = {"product": r.echo()}
    tag = None
    if release is not None:
        rr = resolve.resolve_release(release, index=idx)
        tag, resolved["release"] = rr.tag, rr.echo()
    wanted = sections_of(include)
    out = _base(idx.by_code[r.code], base_url)
    out.update({"resolved": resolved, "text_truncated": [], "from_upstream": False, "notes": []})
    for key in ("product_abstract", "product_design_description", "product_study_description", "product_sensor",
                "product_remarks", "product_basic_description", "product_expanded_description", "specs",
                "change_logs", "change_logs_page", "availability_rows", "availability_page",
                "biorepository_collections"):
        out[key] = None
    if not wanted and tag is None:
        return out
    rec = await client.product(r.code, release=tag)
    out["from_upstream"] = True
    _from_record(rec, out, tag)
    if tag:
        out["notes"].append(f"The product as published in {tag}.")
    for section, fields in TEXT_FIELDS.items():
        if section not in wanted:
            continue
        for key, upstream_name in fields:
            text, cut = clip(getattr(rec, key), text_budget)
            out[key] = text
            if cut:
                out["text_truncated"].append(upstream_name)
    if "specs" in wanted:
        out["specs"] = [{"spec_id": s.spec_id, "spec_number": s.spec_number, "spec_type": s.spec_type,
                         "spec_size": s.spec_size, "spec_description": s.spec_description, "spec_url": s.spec_url}
                        for s in rec.specs]
    if "change_logs" in wanted:
        logs, total = _change_logs(rec, change_logs_limit, change_logs_offset)
        out["change_logs"], out["change_logs_page"] = logs, _page(change_logs_offset, change_logs_limit,
                                                                  len(logs), total)
    if "availability" in wanted:
        rows, total = _availability_rows(idx, rec, tag, availability_limit, availability_offset)
        out["availability_rows"] = rows
        out["availability_page"] = _page(availability_offset, availability_limit, len(rows), total)
    if "biorepository" in wanted:
        out["biorepository_collections"] = [
            {"collection_code": c.collection_code, "collection_name": c.collection_name,
             "collection_url": c.collection_url, "collection_content_url": c.collection_content_url,
             "collection_download_url": c.collection_download_url}
            for c in rec.biorepository_collections or []]
    if out["text_truncated"]:
        out["notes"].append(f"Text clipped to {text_budget} characters: {', '.join(out['text_truncated'])}; "
                            "raise text_budget for more.")
    return out

