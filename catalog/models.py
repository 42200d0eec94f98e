"""The persistent catalogs: what the catalog-backed tools answer from without calling NEON.

Four catalogs, each replaced as a whole by one refresh (see catalog.services.swap):

    products   ProductRow rows + ProductSiteAvailabilityRow rows (availability comes from the
               same upstream answer, so the two are swapped together)
    sites      SiteRow rows
    releases   ReleaseRow rows
    locations  LocationRow rows of type SITE and DOMAIN

and, refreshed on a schedule of its own (81 upstream requests, so never with the four above;
see catalog.services.location_subtrees):

    subtrees   LocationNodeRow rows: every site's subtree (the site, its towers, huts, soil
               arrays, plots, sensor positions...) with each node's plain record

The ORM classes end in `Row` so that they are never mistaken for the upstream client's record
models (`upstream.models.Product`, `.Site`, ...) that the rows are built from.

`CatalogState` holds one row per catalog with a version number that goes up on every swap;
the in-memory search index (catalog.index) rebuilds when it sees a new version.
`CatalogRefresh` is the refresh log the admin shows.

Rows refer to each other by code, not by foreign key: each catalog is replaced on its own
schedule, and a product row must not vanish because the site catalog is being rebuilt.
"""

from __future__ import annotations

from django.db import models

CATALOGS = ("products", "sites", "releases", "locations")
# Not in CATALOGS: everything that walks CATALOGS (the hot refresh, prewarm, refresh-ahead,
# readiness) must not walk every site's subtree too. It has a state row and a refresh log of its own.
SUBTREES = "subtrees"
STATE_NAMES = (*CATALOGS, SUBTREES)
SOURCES = ("graphql", "rest")


class CatalogState(models.Model):
    catalog = models.CharField(max_length=16, primary_key=True, choices=[(c, c) for c in STATE_NAMES])
    version = models.PositiveBigIntegerField(default=0)
    source = models.CharField(max_length=8, blank=True, default="")
    refreshed_at = models.DateTimeField(null=True, blank=True)
    row_count = models.PositiveIntegerField(default=0)
    # The last attempt, successful or not: a failure here with an intact catalog means "degraded".
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    # The upstream the rows came from. A catalog is served only while the configured upstream is
    # this one (catalog.status.upstream_mismatch): a catalog built against a simulator must never
    # answer as NEON's. Empty (catalogs from before these fields) counts as a mismatch.
    rest_base = models.CharField("REST base", max_length=500, blank=True, default="")
    graphql_url = models.CharField("GraphQL URL", max_length=500, blank=True, default="")
    # Progress of a refresh that walks many sites (subtrees): sites done of sites to walk.
    # `progress_at` is set while a run is under way (each site moves it) and cleared when it ends,
    # so a run that died leaves a timestamp that stops moving.
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    progress_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "catalog state"

    def __str__(self) -> str:
        return f"{self.catalog} v{self.version}"


class ProductRow(models.Model):
    product_code = models.CharField(max_length=32, unique=True)
    product_code_long = models.CharField(max_length=64)
    product_code_presentation = models.CharField(max_length=32)
    product_name = models.CharField(max_length=300, db_index=True)
    product_description = models.TextField(blank=True, default="")
    product_status = models.CharField(max_length=16, db_index=True)
    product_category = models.CharField(max_length=64, blank=True, default="")
    product_science_team = models.CharField(max_length=100, blank=True, default="")
    product_science_team_abbr = models.CharField(max_length=8, blank=True, default="", db_index=True)
    product_publication_format_type = models.CharField(max_length=100, blank=True, default="")
    product_has_expanded = models.BooleanField(default=False)
    level = models.PositiveSmallIntegerField(db_index=True)
    themes = models.JSONField(default=list)
    keywords = models.JSONField(default=list)
    latest_release = models.CharField(max_length=32, blank=True, default="")
    # [{"release", "generationDate", "doi", "doiGenerationDate"}], oldest first.
    releases = models.JSONField(default=list)
    specs_count = models.PositiveIntegerField(default=0)
    # [{"specNumber", "specType", "specDescription"}]: which products reference a document.
    specs = models.JSONField(default=list)
    site_count = models.PositiveIntegerField(default=0)
    first_month = models.CharField(max_length=7, blank=True, default="")
    last_month = models.CharField(max_length=7, blank=True, default="")

    class Meta:
        db_table = "catalog_product"  # the table kept its name when the model became ProductRow
        ordering = ["product_code"]
        verbose_name = "product"

    def __str__(self) -> str:
        return f"{self.product_code} {self.product_name}"


class ProductSiteAvailabilityRow(models.Model):
    """One product at one site. Months are kept as ISO intervals per release, e.g.
    {"RELEASE-2025": ["2016-04/2020-12", "2021-03/2021-03"], "PROVISIONAL": ["2025-07/2026-08"]},
    so a product with ten years at 81 sites is 81 small rows, not 10,000."""

    product_code = models.CharField(max_length=32)
    site_code = models.CharField(max_length=4, db_index=True)
    by_release = models.JSONField(default=dict)
    first_month = models.CharField(max_length=7)
    last_month = models.CharField(max_length=7)
    month_count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product_code", "site_code"], name="uniq_product_site")]
        db_table = "catalog_productsiteavailability"
        verbose_name = "product site availability"
        verbose_name_plural = "product site availability"

    def __str__(self) -> str:
        return f"{self.product_code}@{self.site_code}"


class SiteRow(models.Model):
    site_code = models.CharField(max_length=4, unique=True)
    site_name = models.CharField(max_length=200, db_index=True)
    site_description = models.TextField(blank=True, default="")
    site_type = models.CharField(max_length=16, db_index=True)
    state_code = models.CharField(max_length=2, db_index=True)
    state_name = models.CharField(max_length=64, blank=True, default="")
    domain_code = models.CharField(max_length=3, db_index=True)
    domain_name = models.CharField(max_length=100, blank=True, default="")
    latitude = models.FloatField()
    longitude = models.FloatField()
    elevation = models.FloatField(null=True, blank=True)
    deims_id = models.CharField(max_length=200, blank=True, default="")
    releases = models.JSONField(default=list)
    product_count = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "catalog_site"
        ordering = ["site_code"]
        verbose_name = "site"

    def __str__(self) -> str:
        return f"{self.site_code} {self.site_name}"


class ReleaseRow(models.Model):
    tag = models.CharField(max_length=32, unique=True)
    uuid = models.CharField(max_length=64, blank=True, default="", db_index=True)
    generation_date = models.DateTimeField(null=True, blank=True)
    product_count = models.PositiveIntegerField(default=0)
    # [{"name", "type", "size", "md5"}]: the signed URL is dropped because it expires in 7 days.
    artifacts = models.JSONField(default=list)
    # {productCode: doi url}
    product_dois = models.JSONField(default=dict)
    # {productCode: name}: the record names products that GET /products may no longer list.
    product_names = models.JSONField(default=dict)

    class Meta:
        db_table = "catalog_release"
        ordering = ["tag"]
        verbose_name = "release"

    def __str__(self) -> str:
        return self.tag


class LocationRow(models.Model):
    name = models.CharField(max_length=128, unique=True)
    location_type = models.CharField(max_length=32, db_index=True)
    description = models.CharField(max_length=300, blank=True, default="")
    domain_code = models.CharField(max_length=3, blank=True, default="")
    site_code = models.CharField(max_length=4, blank=True, default="")
    parent = models.CharField(max_length=128, blank=True, default="")
    latitude = models.FloatField(null=True, blank=True)
    longitude = models.FloatField(null=True, blank=True)
    elevation = models.FloatField(null=True, blank=True)
    utm_easting = models.FloatField(null=True, blank=True)
    utm_northing = models.FloatField(null=True, blank=True)
    utm_zone = models.IntegerField(null=True, blank=True)
    utm_hemisphere = models.CharField(max_length=1, blank=True, default="")

    class Meta:
        db_table = "catalog_location"
        ordering = ["location_type", "name"]
        verbose_name = "location"

    def __str__(self) -> str:
        return f"{self.location_type} {self.name}"


class LocationNodeRow(models.Model):
    """One location of a site's stored subtree, the site itself included (depth 0).

    The tree comes from the site's `hierarchy=true` answer (names, types, descriptions, parents,
    in the upstream's order: `seq` is the pre-order position within the site); `record` is the
    node's plain record from a batched GraphQL `findLocations` (coordinates, UTM, orientation,
    offsets, active periods, properties, polygon), null when GraphQL did not know the name.
    History is not stored: see families/locations.py for which fields come from where."""

    name = models.CharField(max_length=200, unique=True)
    site_code = models.CharField(max_length=4)  # indexed by the (site_code, seq) constraint
    seq = models.PositiveIntegerField()
    depth = models.PositiveSmallIntegerField()
    parent = models.CharField(max_length=200, blank=True, default="")
    location_type = models.CharField(max_length=100, blank=True, default="", db_index=True)
    description = models.TextField(blank=True, default="")
    latitude = models.FloatField(null=True, blank=True)
    longitude = models.FloatField(null=True, blank=True)
    elevation = models.FloatField(null=True, blank=True)
    record = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "catalog_location_node"
        ordering = ["site_code", "seq"]
        constraints = [models.UniqueConstraint(fields=["site_code", "seq"], name="uniq_location_node_seq")]
        verbose_name = "location subtree node"

    def __str__(self) -> str:
        return f"{self.site_code} {self.location_type} {self.name}"


class CatalogRefresh(models.Model):
    """One refresh attempt of one catalog."""

    catalog = models.CharField(max_length=16, choices=[(c, c) for c in STATE_NAMES], db_index=True)
    source = models.CharField(max_length=8, blank=True, default="")
    trigger = models.CharField(max_length=16, default="manual")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    rows = models.PositiveIntegerField(default=0)
    upstream_requests = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started_at"]
        get_latest_by = "started_at"
        verbose_name_plural = "catalog refreshes"

    def __str__(self) -> str:
        return f"{self.catalog} {self.started_at:%Y-%m-%d %H:%M:%S} {'ok' if self.ok else 'failed'}"

    @property
    def seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class VariablesFileRow(models.Model):
    """One product's NEON variables file (its field dictionary) in one release, as last fetched:
    eco_describe_tables answers from it while the upstream listing shows the same MD5, and fetches
    the file again when NEON publishes another. Kept per upstream, like the catalogs: a file read
    from a simulator never answers for NEON. `fields` holds the file's rows in its column order
    (tables.variables.COLUMNS); `tables` each table's description from the package readme."""

    upstream = models.CharField(max_length=500)
    product_code = models.CharField(max_length=32)
    release = models.CharField(max_length=32)
    file_name = models.CharField(max_length=300)
    md5 = models.CharField(max_length=32)
    size = models.PositiveIntegerField(default=0)
    fields = models.JSONField(default=list)
    tables = models.JSONField(default=dict)
    fetched_at = models.DateTimeField()

    class Meta:
        db_table = "catalog_variables_file"
        constraints = [models.UniqueConstraint(fields=["upstream", "product_code", "release"],
                                               name="uniq_variables_file")]
        verbose_name = "variables file"

    def __str__(self) -> str:
        return f"{self.product_code} {self.release} {self.file_name}"
