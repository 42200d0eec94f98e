"""Every client method against the simulator: the right request goes out and the answer comes
back as its typed model."""

from __future__ import annotations

import pytest

from eco_core.errors import EcoError
from upstream import models as m
from upstream.client import graphql_available, graphql_breaker_state

PRODUCT, SITE, RELEASE = "DP1.00001.001", "ABBY", "RELEASE-2025"


async def test_catalog_lists_parse_into_their_models(sim_client):
    client = sim_client()
    products, sites, releases = await client.products(), await client.sites(), await client.releases()
    assert len(sites) == 81 and all(isinstance(s, m.Site) for s in sites)
    assert any(p.product_code == PRODUCT for p in products)
    assert [r.release for r in releases if r.release == RELEASE] == [RELEASE]


async def test_release_pinned_records_only_carry_that_release(sim_client, fresh_sim):
    client = sim_client()
    product = await client.product(PRODUCT, release=RELEASE)
    assert {r.release for r in product.releases} == {RELEASE}
    assert fresh_sim.requests[-1].query == {"release": RELEASE}
    pinned = await client.release_product(RELEASE, PRODUCT)
    assert {a.release for s in pinned.site_codes for a in s.available_releases} == {RELEASE}
    site = await client.release_site(RELEASE, SITE)
    assert site.site_code == SITE and {r.release for r in site.releases} <= {RELEASE}
    release = await client.release(RELEASE)
    assert (await client.release(release.uuid)).release == RELEASE


async def test_location_forms_ask_for_what_they_need(sim_client, fresh_sim):
    client = sim_client()
    tree = await client.location("HARV", hierarchy=True, location_type="TOWER")
    assert fresh_sim.requests[-1].query == {"hierarchy": "true", "locationType": "TOWER"}
    assert tree.location_child_hierarchy and tree.location_parent_hierarchy.location_name == "D01"
    history = await client.location("HARV", history=True)
    assert fresh_sim.requests[-1].query == {"history": "true"}
    assert history.location_history
    assert len(await client.location_sites()) == 81


async def test_taxonomy_pages_follow_neons_next_link(sim_client, fresh_sim):
    client = sim_client()
    first = await client.taxonomy(filters={"taxonTypeCode": "BIRD"}, limit=5)
    assert fresh_sim.requests[-1].query == {"taxonTypeCode": "BIRD", "verbose": "false", "offset": "0", "limit": "5"}
    second = await client.taxonomy(filters={"taxonTypeCode": "BIRD"}, offset=first.next_offset, limit=5)
    assert first.next_offset == 5 and second.data[0].taxon_id != first.data[0].taxon_id
    assert "dwc:scientificName" in second.rows()[0]


async def test_sample_endpoints_parse(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__API_TOKEN=fresh_sim.issue_token())
    assert (await client.supported_sample_classes()).entries
    view = await client.sample_view(barcode="A00000123456")
    tag = view.sample_views[0].sample_tag
    assert (await client.sample_classes(tag)).sample_classes
    family = await client.sample_download(sample_uuid=view.sample_views[0].sample_uuid, degree=2)
    assert fresh_sim.requests[-1].query["degree"] == "2" and family.sample_views


async def test_prototype_endpoints_parse_and_files_carry_signed_urls(sim_client, fresh_sim):
    client = sim_client()
    datasets = await client.prototype_datasets()
    one = await client.prototype_dataset(datasets[0].uuid)
    data = await client.prototype_data(one.uuid)
    assert data.dataset_uuid == one.uuid and all(f.url for f in data.files)


async def test_data_query_posts_neons_body_and_returns_packages_per_release(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__API_TOKEN=fresh_sim.issue_token())
    product = await client.product(PRODUCT)
    site = product.site_codes[0]
    month = site.available_months[0]
    result = await client.data_query(m.DataQueryRequest(product_code=PRODUCT, site_codes=[site.site_code],
                                                        start_date_month=month, end_date_month=month,
                                                        package="basic"))
    rec = fresh_sim.requests[-1]
    assert (rec.method, rec.path) == ("POST", "/api/v0/data/query")
    assert result.product_code == PRODUCT
    assert {p.site_code for r in result.releases for p in r.packages} == {site.site_code}


async def test_document_bytes_come_with_name_type_and_size(sim_client):
    client = sim_client()
    spec = (await client.product(PRODUCT)).specs[0].spec_number
    head = await client.document_head(spec)
    doc = await client.document(spec)
    assert head.content_type == "application/pdf" and head.filename == f"{spec}.pdf"
    assert doc.content.startswith(b"%PDF") and len(doc.content) == head.size


async def test_document_larger_than_max_bytes_gives_result_too_large(sim_client):
    client = sim_client()
    spec = (await client.product(PRODUCT)).specs[0].spec_number
    with pytest.raises(EcoError) as caught:
        await client.document(spec, max_bytes=1000)
    assert caught.value.code == "result_too_large" and caught.value.details["maxBytes"] == 1000


def test_breaker_state_is_readable_without_an_event_loop(eco_cfg):
    assert graphql_breaker_state()["state"] == "closed"
    assert graphql_available() is True
