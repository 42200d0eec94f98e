"""eco_get_product's catalog part (the record's catalog fields, their availability summary) is
made once per product entry of an index and kept: whatever input names the product, the kept
part answers what a fresh one does, and no caller can change it for the next."""

from __future__ import annotations

from eco_core.memo import memos
from families import products
from families.products import GetProductInput
from tests.catalog.conftest import family_call


async def read(cfg, product: str) -> products.GetProductOutput:
    return await products.get_product(GetProductInput(product=product), family_call(cfg))


async def test_the_kept_catalog_part_answers_what_a_fresh_one_does_for_every_product(idx, eco_cfg):
    for p in idx.products:
        memos.drop_all()
        fresh = await read(eco_cfg, p.code)
        # Another spelling is another input (no kept answer), so its record comes from the kept part.
        kept = await read(eco_cfg, p.code.lower())
        assert kept is not fresh and kept.resolved["product"]["input"] == p.code.lower()
        assert kept.model_dump(exclude={"resolved"}) == fresh.model_dump(exclude={"resolved"})
        assert fresh.urls.api == f"{eco_cfg.eco.base_url}/products/{p.code}"


async def test_changing_a_returned_answer_does_not_change_the_next(idx, eco_cfg):
    p = next(p for p in idx.products if p.cells)
    first = await read(eco_cfg, p.code)
    expected = first.model_dump(exclude={"resolved"})
    first.product_name = "changed"
    first.availability = first.availability.model_copy(update={"site_count": -1})
    again = await read(eco_cfg, p.code.lower())
    assert again.model_dump(exclude={"resolved"}) == expected and again.product_name == p.name


def test_a_kept_catalog_part_is_for_one_rest_base_only(idx):
    # A served catalog always has the configured REST base, so no call can show this; the kept
    # part is still keyed by the base its URLs were made with.
    p = idx.products[0]
    assert products._catalog_record(p, "https://a/api/v0").urls.api.startswith("https://a/")
    assert products._catalog_record(p, "https://b/api/v0").urls.api.startswith("https://b/")
