"""Product search quality over the full simulated catalog (built once for this module): the
family's search over one index, every match of a search's filters. Bad values are refused at the
tool's schema boundary (tests/tools/test_search_products.py)."""

from __future__ import annotations

import pytest

from catalog.search_common import Found
from eco_core.errors import EcoError
from families.products import ProductHit, SearchProductsInput, find_products


class Result:
    """One page of a search, as the tool pages it."""

    def __init__(self, found: Found[ProductHit], limit: int, offset: int) -> None:
        p = found.page_of(offset, limit)
        self.items, self.total, self.page = p["items"], p["total"], p["page"]
        self.facets, self.did_you_mean, self.resolved = p["facets"], p["did_you_mean"], p["resolved"]


def search_products(*, index, limit: int = 25, offset: int = 0, **filters) -> Result:
    return Result(find_products(index, SearchProductsInput(**filters)), limit, offset)


def codes(result) -> list[str]:
    return [h.code for h in result.items]


def test_multiword_query_needs_every_word_and_ranks_name_hits_first(idx):
    r = search_products(query="air temperature", index=idx)
    assert r.total >= 2
    assert set(codes(r)[:2]) == {"DP1.00002.001", "DP1.00003.001"}
    for h in r.items:
        text = " ".join([h.product.name, *h.product.keywords, *h.product.themes, h.product.description]).lower()
        assert "air" in text and "temperatur" in text
    assert "name" in r.items[0].matched_on and r.items[0].score > 0


def test_small_typo_still_finds_the_product(idx):
    r = search_products(query="barometric presure", index=idx)
    assert codes(r)[0] == "DP1.00004.001"


def test_typo_in_a_single_word_is_tolerated(idx):
    assert codes(search_products(query="landbrd", index=idx)) == ["DP1.10003.001"]
    assert codes(search_products(query="carbon dioxde flux", index=idx))[0] == "DP4.00067.001"


def test_plural_matches_the_singular_in_names(idx):
    r = search_products(query="mammals", index=idx)
    assert "DP1.10072.001" in codes(r) and "name" in r.items[0].matched_on


def test_bare_product_code_matches_exactly_that_product(idx):
    r = search_products(query="DP1.10003.001", index=idx)
    assert codes(r) == ["DP1.10003.001"]
    assert r.items[0].matched_on == ["productCode"]


def test_code_without_revision_and_any_case_matches_the_product(idx):
    assert codes(search_products(query="dp1.10072", index=idx)) == ["DP1.10072.001"]


def test_bare_code_of_a_future_product_is_found_despite_the_default_status_left_out_or_sent(idx):
    assert codes(search_products(query="DP1.20055.001", index=idx)) == ["DP1.20055.001"]
    # ACTIVE sent as the schema's default means what leaving it out means (issue 44 item 1);
    # another status asked for still filters the code's product out.
    assert codes(search_products(query="DP1.20055.001", status="ACTIVE", index=idx)) == ["DP1.20055.001"]
    assert codes(search_products(query="DP1.20055.001", status="RETIRED", index=idx)) == []


def test_status_defaults_to_active(idx):
    r = search_products(index=idx, limit=100)
    assert r.facets["statuses"] == {"ACTIVE": r.total}
    every = search_products(status="ALL", index=idx, limit=100)
    assert every.total > r.total and set(every.facets["statuses"]) >= {"ACTIVE", "FUTURE"}


def test_theme_is_a_case_insensitive_prefix(idx):
    r = search_products(theme="organ", index=idx, limit=100)
    assert r.total > 0
    assert all(any(t.startswith("Organisms") for t in h.product.themes) for h in r.items)
    assert r.facets["themes"]["Organisms, Populations, and Communities"] == r.total


def test_facets_count_the_whole_filtered_set_and_sum_to_the_total(idx):
    r = search_products(query="temperature", index=idx, limit=1)
    assert len(r.items) == 1 and r.total > 1
    for facet in ("teams", "levels", "statuses"):
        assert sum(r.facets[facet].values()) == r.total


def test_nothing_matching_gives_did_you_mean(idx):
    r = search_products(query="barometrc presssure zzqx", index=idx)
    assert r.total == 0 and r.items == []
    assert r.did_you_mean and any("Barometric" in s or "barometric" in s for s in r.did_you_mean)


def test_matches_have_no_did_you_mean(idx):
    assert search_products(query="soil", index=idx).did_you_mean is None


def test_team_level_and_expanded_filters_narrow_the_set(idx):
    r = search_products(science_team="AOP", level=3, index=idx, limit=100)
    assert r.total > 0 and all(h.product.team_abbr == "AOP" and h.product.level == 3 for h in r.items)
    r = search_products(has_expanded=False, science_team="TOS", index=idx, limit=100)
    assert r.total > 0 and all(not h.product.has_expanded for h in r.items)


def test_site_filter_accepts_a_name_and_echoes_the_resolution(idx):
    r = search_products(site="Harvard Forest & Quabbin Watershed", index=idx, limit=100)
    assert r.resolved["site"]["siteCode"] == "HARV"
    assert r.total > 0 and all("HARV" in h.product.sites for h in r.items)


def test_domain_and_window_filters_use_availability(idx):
    r = search_products(domain_code="d01", available_from="2026-01", available_to="2026-03", index=idx, limit=100)
    assert r.total > 0
    d01 = {s.code for s in idx.sites if s.domain_code == "D01"}
    for h in r.items:
        assert h.product.sites & d01
    old = search_products(available_to="2013-06", index=idx, limit=100)
    assert all(h.product.first_month <= "2013-06" for h in old.items)


def test_release_filter_keeps_products_published_in_that_release(idx):
    r = search_products(release="RELEASE-2021", index=idx, limit=100)
    assert r.resolved["release"]["release"] == "RELEASE-2021"
    assert r.total > 0 and all("RELEASE-2021" in h.product.release_tags for h in r.items)


def test_sorting_by_code_and_by_name(idx):
    by_code = codes(search_products(sort="productCode", index=idx, limit=100))
    assert by_code == sorted(by_code)
    names = [h.product.name.lower() for h in search_products(sort="productName", index=idx, limit=100).items]
    assert names == sorted(names)


def test_paging_walks_the_whole_result_without_overlap(idx):
    first = search_products(query="water", index=idx, limit=5)
    second = search_products(query="water", index=idx, limit=5, offset=5)
    assert first.total == second.total > 5
    assert not set(codes(first)) & set(codes(second))


def test_every_hit_reports_site_count_month_range_and_latest_release(idx):
    h = search_products(query="DP1.00001.001", index=idx).items[0]
    assert h.product.site_count > 0
    assert h.product.month_range and "/" in h.product.month_range
    assert h.product.latest_release.startswith("RELEASE-")


def test_provisional_as_release_filter_is_invalid_argument(idx):
    with pytest.raises(EcoError) as exc:
        search_products(release="PROVISIONAL", index=idx)
    assert exc.value.code == "invalid_argument" and exc.value.message.startswith("release")


def test_a_window_ending_before_it_starts_is_invalid_argument_naming_available_from(idx):
    with pytest.raises(EcoError) as exc:
        search_products(available_from="2021-01", available_to="2020-01", index=idx)
    assert exc.value.code == "invalid_argument" and exc.value.message.startswith("available_from")


def test_did_you_mean_names_products_that_hold_a_word_of_the_query(idx):
    r = search_products(query="mosquito pathogen soyl", index=idx)
    assert r.total == 0 and r.did_you_mean
    names = [s for s in r.did_you_mean if s != "mosquito pathogen soil"]  # the spelling fix comes first
    assert names and all(any(w in n.lower() for w in ("mosquito", "pathogen", "soil")) for n in names)
