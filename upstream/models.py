"""Typed views of every NEON reply the product reads.

Rules (why they are this way):
- Unknown keys are kept (`extra="allow"`): NEON adds fields without notice and that must not
  break us.
- Fields we rely on are required and validated strictly (no str->int coercion): if NEON renames
  or retypes one, parsing fails loudly at the client edge (`upstream_error`) instead of handing
  a silently wrong value to a tool.
- Attributes are snake_case; the upstream camelCase spelling is the alias, so
  `model_dump(by_alias=True)` gives NEON's own keys back.
- Keys the samples show as sometimes absent or null (location coordinates, descriptions) are
  optional with a None/[] default.

- One model per upstream record, whichever API it came from: NEON's GraphQL spells the shared
  fields like REST, so the catalog's GraphQL query parses into `Product` and `Site` too. Fields
  that query does not select (productCodeLong, productCodePresentation, productCategory,
  specId, specUrl, availableMonths beside availableReleases, dataProductTitle) are optional;
  what a consumer relies on among them it checks itself (catalog.services.build).
- GraphQL data is validated with `GRAPHQL_CONTEXT` (`parse_graphql_data`): the one place where
  GraphQL types a field differently (specSize is a String there) is normalised under it, while
  REST keeps the strict int.

Envelopes: REST bodies are `{"data": ...}` (`DataEnvelope`), taxonomy is its own page shape,
errors are `NeonErrorBody`, GraphQL replies are `GraphQLResponse`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from typing import Any, Generic, TypeVar, get_args
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

T = TypeVar("T")

Number = float  # strict float also accepts JSON integers, never strings
PropertyValue = str | int | float | bool | None


class NeonModel(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        strict=True,
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=False,
        # Only keys: pydantic's cache of parsed strings keeps each value string it shares alive
        # until another takes its slot, and those few thousand, made during a catalog build,
        # sit scattered through the memory the build used, so the process could give none back.
        cache_strings="keys",
    )

    def to_upstream(self) -> dict[str, Any]:
        """The record with NEON's own key spelling (extra keys included)."""
        return self.model_dump(by_alias=True, mode="json")


class DataEnvelope(NeonModel, Generic[T]):
    """`{"data": ...}`: the shape of every successful REST body except taxonomy."""

    data: T


# --------------------------------------------------------------------------- products
class AvailableRelease(NeonModel):
    release: str  # a RELEASE-YYYY tag or PROVISIONAL
    available_months: list[str]


class ProductSiteAvailability(NeonModel):
    """One entry of a product's `siteCodes`. The catalog's GraphQL query reads the months per
    release only, so `availableMonths` (all releases together) may be absent."""

    site_code: str
    available_months: list[str] = Field(default_factory=list)
    available_data_urls: list[str] = Field(default_factory=list)
    available_releases: list[AvailableRelease] = Field(default_factory=list)


class ProductDoi(NeonModel):
    url: str
    generation_date: str | None = None


class ProductRelease(NeonModel):
    release: str
    generation_date: str | None = None
    url: str | None = None
    product_doi: ProductDoi | None = None


class NeonChangeLog(NeonModel):
    id: int
    parent_issue_id: int | None = Field(None, alias="parentIssueID")
    issue_date: str | None = None
    resolved_date: str | None = None
    date_range_start: str | None = None
    date_range_end: str | None = None
    location_affected: str | None = None
    issue: str | None = None
    resolution: str | None = None


class Spec(NeonModel):
    spec_id: str | None = None  # not selected by the catalog's GraphQL query
    spec_number: str
    spec_type: str | None = None
    spec_size: int | None = None
    spec_description: str | None = None
    spec_url: str | None = None  # not selected by the catalog's GraphQL query

    @field_validator("spec_size", mode="before")
    @classmethod
    def _graphql_spec_size(cls, value: Any, info: ValidationInfo) -> Any:
        # GraphQL's schema types specSize as a String; REST's int stays strict (no coercion).
        if isinstance(value, str) and value.isdigit() and info.context == GRAPHQL_CONTEXT:
            return int(value)
        return value


class NeonBiorepositoryCollection(NeonModel):
    collection_code: str
    collection_name: str | None = None
    collection_url: str | None = None
    collection_content_url: str | None = None
    collection_download_url: str | None = None


class Product(NeonModel):
    """`GET /products`, `/products/{code}`, `/releases/{tag}/products[/{code}]` records."""

    # Absent from NEON's GraphQL (the catalog derives them the way REST forms them).
    product_code_long: str | None = None
    product_code: str
    product_code_presentation: str | None = None
    product_name: str
    product_description: str | None = None
    product_status: str
    product_category: str | None = None
    product_has_expanded: bool
    product_science_team_abbr: str | None = None
    product_science_team: str | None = None
    product_publication_format_type: str | None = None
    product_abstract: str | None = None
    product_design_description: str | None = None
    product_study_description: str | None = None
    product_basic_description: str | None = None
    product_expanded_description: str | None = None
    product_sensor: str | None = None
    product_remarks: str | None = None
    themes: list[str]
    keywords: list[str]
    change_logs: list[NeonChangeLog] | None = None
    specs: list[Spec]
    biorepository_collections: list[NeonBiorepositoryCollection] | None = None
    releases: list[ProductRelease]
    site_codes: list[ProductSiteAvailability]


# --------------------------------------------------------------------------- sites
class SiteRelease(NeonModel):
    release: str
    generation_date: str | None = None
    url: str | None = None


class NeonSiteProduct(NeonModel):
    """One entry of a site's `dataProducts`."""

    data_product_code: str
    data_product_title: str | None = None  # not selected by the catalog's GraphQL query
    available_months: list[str] = Field(default_factory=list)
    available_data_urls: list[str] = Field(default_factory=list)
    available_releases: list[AvailableRelease] = Field(default_factory=list)


class Site(NeonModel):
    """`GET /sites`, `/sites/{code}`, `/releases/{tag}/sites[/{code}]` records."""

    site_code: str
    site_name: str
    site_description: str | None = None
    site_type: str
    site_latitude: Number | None = None
    site_longitude: Number | None = None
    state_code: str
    state_name: str
    domain_code: str
    domain_name: str
    deims_id: str | None = None
    releases: list[SiteRelease]
    data_products: list[NeonSiteProduct]


# --------------------------------------------------------------------------- releases
class NeonArtifact(NeonModel):
    name: str
    type: str
    url: str
    size: int | None = None
    md5: str | None = None


class ReleaseDataProduct(NeonModel):
    product_code: str
    product_name: str
    product_description: str | None = None
    product_doi: str | None = None


class Release(NeonModel):
    """`GET /releases` items and `/releases/{tag or uuid}`."""

    release: str
    uuid: str
    generation_date: str | None = None
    artifacts: list[NeonArtifact] = Field(default_factory=list)
    data_products: list[ReleaseDataProduct] = Field(default_factory=list)


# --------------------------------------------------------------------------- locations
class NeonActivePeriod(NeonModel):
    activated_date: str | None = None
    deactivated_date: str | None = None


class LocationProperty(NeonModel):
    location_property_name: str
    location_property_value: PropertyValue = None


class PolygonPoint(NeonModel):
    latitude: Number
    longitude: Number
    elevation: Number | None = None


class Polygon(NeonModel):
    coordinates: list[PolygonPoint]


class ParentHierarchy(NeonModel):
    location_name: str
    location_description: str | None = None
    location_type: str | None = None
    location_parent: str | None = None
    location_parent_url: str | None = None
    location_parent_hierarchy: ParentHierarchy | None = None


class ChildHierarchy(NeonModel):
    location_name: str
    location_description: str | None = None
    location_type: str | None = None
    location_child_hierarchy: list[ChildHierarchy] = Field(default_factory=list)


class _Placement(NeonModel):
    """Coordinates and orientation, shared by a location and its history entries."""

    location_decimal_latitude: Number | None = None
    location_decimal_longitude: Number | None = None
    location_elevation: Number | None = None
    location_utm_easting: Number | None = None
    location_utm_northing: Number | None = None
    location_utm_hemisphere: str | None = None
    location_utm_zone: int | None = None
    alpha_orientation: Number | None = None
    beta_orientation: Number | None = None
    gamma_orientation: Number | None = None
    x_offset: Number | None = Field(None, alias="xOffset")
    y_offset: Number | None = Field(None, alias="yOffset")
    z_offset: Number | None = Field(None, alias="zOffset")
    location_polygon: Polygon | None = None
    location_properties: list[LocationProperty] = Field(default_factory=list)


class NeonHistoryEntry(_Placement):
    current: bool | None = None
    location_start_date: str | None = None
    location_end_date: str | None = None


class Location(_Placement):
    """`GET /locations/{name}` (plain, `hierarchy=true`, `history=true`) and `/locations/sites`
    items. Which keys are present depends on the form asked for, so only the name is required."""

    location_name: str
    location_description: str | None = None
    location_type: str | None = None
    domain_code: str | None = None
    site_code: str | None = None
    offset_location: Any = None
    active_periods: list[NeonActivePeriod] = Field(default_factory=list)
    location_parent: str | None = None
    location_parent_url: str | None = None
    location_children: list[str] = Field(default_factory=list)
    location_children_urls: list[str] = Field(default_factory=list)
    location_parent_hierarchy: ParentHierarchy | None = None
    location_child_hierarchy: list[ChildHierarchy] | None = None
    location_history: list[NeonHistoryEntry] | None = None

    @property
    def properties(self) -> dict[str, PropertyValue]:
        """Properties as name -> value, without NEON's 'Value for ' prefix."""
        return {p.location_property_name.removeprefix("Value for "): p.location_property_value
                for p in self.location_properties}


# --------------------------------------------------------------------------- taxonomy
class TaxonRow(NeonModel):
    """One taxon. Darwin Core / GBIF keys stay verbatim (they are kept as extra keys);
    only the identifying ones are checked."""

    model_config = ConfigDict(alias_generator=None)

    taxon_type_code: str = Field(alias="taxonTypeCode")
    taxon_id: str = Field(alias="taxonID")
    accepted_taxon_id: str | None = Field(None, alias="acceptedTaxonID")
    scientific_name: str = Field(alias="dwc:scientificName")


class TaxonomyPage(NeonModel):
    """`GET /taxonomy`: the one REST body that is not `{"data": ...}`."""

    count: int
    total: int
    prev: str | None = None
    next: str | None = None
    data: list[TaxonRow]

    @property
    def next_offset(self) -> int | None:
        """The offset of the next page, read from NEON's absolute `next` link."""
        if not self.next:
            return None
        values = parse_qs(urlsplit(self.next).query).get("offset")
        try:
            return int(values[0]) if values else None
        except ValueError:
            return None

    def rows(self) -> list[dict[str, Any]]:
        """Rows with NEON's keys verbatim."""
        return [r.model_dump(by_alias=True, mode="json") for r in self.data]


# --------------------------------------------------------------------------- samples
class SupportedClassEntry(NeonModel):
    key: str
    value: str | None = None


class SupportedClasses(NeonModel):
    """`GET /samples/supportedClasses` -> data."""

    entries: list[SupportedClassEntry]


class SampleClasses(NeonModel):
    """`GET /samples/classes?sampleTag=` -> data."""

    sample_classes: list[str]


class SmsField(NeonModel):
    sms_key: str
    sms_value: PropertyValue = None


class NeonSampleEvent(NeonModel):
    ingest_table_name: str
    sms_field_entries: list[SmsField] = Field(default_factory=list)


class NeonSampleRef(NeonModel):
    sample_uuid: str
    sample_tag: str | None = None
    sample_class: str | None = None
    barcode: str | None = None
    archive_guid: str | None = None


class NeonSampleView(NeonSampleRef):
    sample_class: str
    sample_events: list[NeonSampleEvent] = Field(default_factory=list)
    parent_sample_identifiers: list[NeonSampleRef] = Field(default_factory=list)
    child_sample_identifiers: list[NeonSampleRef] = Field(default_factory=list)


class SampleViews(NeonModel):
    """`GET /samples/view` and `/samples/download` (token-only) -> data."""

    sample_views: list[NeonSampleView]


# --------------------------------------------------------------------------- prototype
class FileType(NeonModel):
    name: str
    description: str | None = None


class NeonPrototypeFile(NeonModel):
    name: str
    description: str | None = None
    size: int
    file_name: str
    md5: str | None = None
    type: FileType | None = None
    url: str | None = None  # only in /prototype/data (signed, on the storage host)


class DataLocation(NeonModel):
    path: str | None = None
    description: str | None = None
    metadata: bool | None = None


class PrototypeDataRef(NeonModel):
    url: str | None = None
    files: list[NeonPrototypeFile] = Field(default_factory=list)
    data_locations: list[DataLocation] = Field(default_factory=list)


class PrototypeDoi(NeonModel):
    url: str
    generation_date: str | None = None


class PrototypeLocation(NeonModel):
    domain: str | None = None  # "D08" or "03": NEON is not consistent
    state: str | None = None
    site_code: str | None = None
    site_name: str | None = None
    latitude: Number | str | None = None  # swagger says string, samples carry numbers
    longitude: Number | str | None = None


class RelatedVersion(NeonModel):
    dataset_uuid: str
    dataset_project_title: str | None = None
    dataset_version: str | None = None


class RelatedDataProduct(NeonModel):
    data_product_code: str
    data_product_idq: str | None = None
    data_product_name: str | None = None
    data_product_description: str | None = None


class PrototypeDataset(NeonModel):
    """`GET /prototype/datasets` items and `/prototype/datasets/{uuid}`."""

    uuid: str
    project_title: str
    project_description: str | None = None
    design_description: str | None = None
    metadata_description: str | None = None
    study_area_description: str | None = None
    dataset_abstract: str | None = None
    start_year: int | None = None
    end_year: int | None = None
    date_uploaded: str | None = None
    is_published: bool | None = None
    version: str | None = None
    version_description: str | None = None
    doi: PrototypeDoi | None = None
    related_versions: list[RelatedVersion] = Field(default_factory=list)
    data: PrototypeDataRef | None = None
    data_themes: list[str] = Field(default_factory=list)
    file_types: list[FileType] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    locations: list[PrototypeLocation] = Field(default_factory=list)
    publication_citations: list[dict[str, Any]] = Field(default_factory=list)
    related_data_products: list[RelatedDataProduct] = Field(default_factory=list)
    science_teams: list[str] = Field(default_factory=list)


class PrototypeData(NeonModel):
    """`GET /prototype/data/{uuid}`: the files with signed URLs."""

    dataset_uuid: str
    dataset_project_title: str | None = None
    files: list[NeonPrototypeFile]
    data_locations: list[DataLocation] = Field(default_factory=list)


# --------------------------------------------------------------------------- data files
class DataFile(NeonModel):
    name: str
    size: int
    md5: str | None = None
    crc32: str | None = None  # deprecated upstream, usually null
    crc32c: str | None = None
    url: str


class NeonPackageLink(NeonModel):
    type: str
    url: str


class NeonExternalData(NeonModel):
    name: str
    type: str | None = None
    url: str | None = None


class DataListing(NeonModel):
    """`GET /data/{product}/{site}/{YYYY-MM}` (token-only)."""

    product_code: str
    site_code: str
    month: str
    release: str | None = None
    packages: list[NeonPackageLink] = Field(default_factory=list)
    files: list[DataFile]
    external_data: list[NeonExternalData] = Field(default_factory=list)


class DataQueryRequest(NeonModel):
    """The body of `POST /data/query` (swagger DataQueryRequest)."""

    product_code: str
    site_codes: list[str]
    start_date_month: str
    end_date_month: str
    release: str | None = None
    package: str | None = None
    include_provisional: bool | None = None

    def body(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class QueryPackage(NeonModel):
    domain_code: str | None = None
    site_code: str
    month: str
    package_type: str | None = None
    generation_date: str | None = None
    files: list[DataFile]


class QueryRelease(NeonModel):
    release: str
    generation_date: str | None = None  # null for PROVISIONAL
    packages: list[QueryPackage]


class DataQueryResult(NeonModel):
    """`POST /data/query` (token-only) -> data."""

    product_code: str
    site_codes: list[str]
    start_date: str | None = None
    end_date: str | None = None
    package_type: str | None = None
    releases: list[QueryRelease]


# --------------------------------------------------------------------------- documents
class DocumentHead(NeonModel):
    """What `HEAD`/`GET /documents/{specNumber}` tells about a document (from headers)."""

    spec_number: str
    url: str
    content_type: str | None = None
    size: int | None = None
    filename: str | None = None


class Document(DocumentHead):
    content: bytes


# --------------------------------------------------------------------------- errors
class NeonErrorDetail(NeonModel):
    status: int
    detail: str


class NeonErrorBody(NeonModel):
    """NEON's 400/403/404 body; for an unknown release `data` holds `validReleases`."""

    error: NeonErrorDetail
    data: dict[str, Any] | None = None

    @property
    def valid_releases(self) -> list[str] | None:
        values = (self.data or {}).get("validReleases")
        return [v for v in values if isinstance(v, str)] if isinstance(values, list) else None


class RateLimitedBody(NeonModel):
    """The 429 body: `{"message": "API rate limit exceeded"}`."""

    message: str


# --------------------------------------------------------------------------- GraphQL
class GraphQLErrorLocation(NeonModel):
    line: int
    column: int


class GraphQLErrorItem(NeonModel):
    message: str
    locations: list[GraphQLErrorLocation] = Field(default_factory=list)
    path: list[str | int] | None = None
    extensions: dict[str, Any] | None = None


class GraphQLResponse(NeonModel):
    """Every GraphQL reply (HTTP 200 even for errors): `data`, `errors`, or both."""

    data: dict[str, Any] | None = None
    errors: list[GraphQLErrorItem] | None = None


class GraphQLReply(NeonModel):
    """A successful GraphQL reply to a query whose shape only its caller knows (`graphql()`
    without a model). `data` is the one raw part: NEON's JSON object as sent, keys as selected."""

    data: dict[str, Any]
    # Only with graphql(partial=True): errors NEON sent alongside the data.
    errors: list[GraphQLErrorItem] | None = None


# Validation context for GraphQL data (see the module docstring).
GRAPHQL_CONTEXT = {"source": "graphql"}

G = TypeVar("G", bound=BaseModel)


def parse_graphql_data(model: type[G], data: dict[str, Any]) -> G:
    """GraphQL `data` into `model`, with GraphQL's own spellings normalised (specSize)."""
    return model.model_validate(data, context=GRAPHQL_CONTEXT)


class TypedGraphQLResponse(NeonModel, Generic[G]):
    """A GraphQL reply whose `data` has a known model, parsed from the body in one pass: no
    intermediate tree of dicts held beside the models."""

    data: G | None = None
    errors: list[GraphQLErrorItem] | None = None


def parse_typed_graphql(model: type[G], body: bytes) -> TypedGraphQLResponse[G] | None:
    """The reply's body parsed as `TypedGraphQLResponse[model]`, under `GRAPHQL_CONTEXT`; None
    when it is not that shape (the caller then reads it the general way, with its errors)."""
    try:
        return TypedGraphQLResponse[model].model_validate_json(body, context=GRAPHQL_CONTEXT)  # type: ignore[valid-type]
    except ValueError:  # pydantic's ValidationError is one
        return None


class GraphQLItems(Generic[G]):
    """One root list of a GraphQL reply, held as the reply's body and the list's name. Iterating
    reads the body again with ijson and validates one item at a time (under `GRAPHQL_CONTEXT`,
    as the typed parse does), so a caller that turns each into something smaller never holds all
    the records at once. Made, it has iterated once: every item validated, or ValueError."""

    def __init__(self, model: type[G], body: bytes, name: str) -> None:
        self._model, self._body, self._prefix = model, body, f"data.{name}.item"
        self._len = sum(1 for _ in self)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[G]:
        import ijson  # 1.5 MB of RSS that a worker which never builds a catalog does not load

        # use_float: the numbers json.loads gives (float, not Decimal), for what `extra` keeps.
        for item in ijson.items(self._body, self._prefix, use_float=True):
            yield self._model.model_validate(item, context=GRAPHQL_CONTEXT)


def list_items(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The item model of each field of `model`, a model whose fields are all `list[Item]`."""
    return {name: get_args(field.annotation)[0] for name, field in model.model_fields.items()}


# yajl turns an escaped lone surrogate into "?" where the whole parse refuses the reply; an
# escaped surrogate, paired or not, sends the reply the whole parse's way.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def read_graphql_lists(body: bytes, items: dict[str, type[BaseModel]]) -> dict[str, GraphQLItems[Any]] | None:
    """A successful reply whose `data` has a list of `items[name]` records under each name,
    read an item at a time: every item is validated here and let go, so a reply that does not
    parse fails now, as a whole parse would. None for anything else (errors, no data, a missing
    list, an item that does not validate, JSON this reader does not follow): the caller then
    reads the reply the general way, which raises what it should."""
    import ijson  # lazily, as in GraphQLItems

    try:
        if _SURROGATE_ESCAPE.search(body) or not _plain_success(ijson.parse(body, use_float=True), items):
            return None
        return {name: GraphQLItems(model, body, name) for name, model in items.items()}
    except (ijson.JSONError, ValueError):  # pydantic's ValidationError is a ValueError
        return None


_OBJECT = {"start_map", "map_key", "end_map"}


def _plain_success(events: Iterator[tuple[str, str, Any]], names: Collection[str]) -> bool:
    """Whether ijson's parse `events` are those of a JSON object with `errors` absent or null and
    `data` an object with a list under each of `names`, no key repeated (the whole parse would
    take the last) or dotted (ijson joins a prefix's keys with dots) at its top or in `data`."""
    shapes = {"": _OBJECT, "data": _OBJECT, "errors": {"null"},
              **{f"data.{name}": {"start_array", "end_array"} for name in names}}
    keys: dict[str, set[str]] = {"": set(), "data": set()}
    for prefix, event, value in events:
        allowed = shapes.get(prefix)
        if allowed is None:
            continue
        if event not in allowed:
            return False
        if event == "map_key":
            if "." in value or value in keys[prefix]:
                return False
            keys[prefix].add(value)
    return "data" in keys[""] and keys["data"].issuperset(names)


class GqlSiteMonths(NeonModel):
    site_code: str
    available_months: list[str] = Field(default_factory=list)
    available_releases: list[AvailableRelease] = Field(default_factory=list)


class GqlSpec(NeonModel):
    spec_number: str
    spec_description: str | None = None
    spec_type: str | None = None
    spec_size: str | None = None  # a String in GraphQL, an int in REST


class GqlProduct(NeonModel):
    """A `products{...}` / `filterProducts{...}` item of any selection (a caller's own query):
    only the code is sure to be there. The catalog's fixed query parses into `Product`."""

    product_code: str
    product_name: str | None = None
    product_description: str | None = None
    product_status: str | None = None
    product_science_team: str | None = None
    product_publication_format_type: str | None = None
    product_has_expanded: bool | None = None
    themes: list[str] | None = None
    keywords: list[str] | None = None
    releases: list[ProductRelease] | None = None
    site_codes: list[GqlSiteMonths] | None = None
    specs: list[GqlSpec] | None = None


class GqlSiteProduct(NeonModel):
    data_product_code: str
    data_product_title: str | None = None
    available_months: list[str] | None = None


class GqlSite(NeonModel):
    """A `sites{...}` / `filterSites{...}` item of any selection (a caller's own query): only the
    code is sure to be there. The catalog's fixed query parses into `Site`."""

    site_code: str
    site_name: str | None = None
    site_description: str | None = None
    site_type: str | None = None
    site_latitude: Number | None = None
    site_longitude: Number | None = None
    state_code: str | None = None
    state_name: str | None = None
    domain_code: str | None = None
    domain_name: str | None = None
    deims_id: str | None = None
    releases: list[SiteRelease] | None = None
    data_products: list[GqlSiteProduct] | None = None


class GqlLocation(NeonModel):
    location_name: str
    location_type: str | None = None
    location_description: str | None = None
    site_code: str | None = None
    location_decimal_latitude: Number | None = None
    location_decimal_longitude: Number | None = None
    location_elevation: Number | None = None
    location_parent: str | None = None


class GqlProductsData(NeonModel):
    products: list[GqlProduct]


class GqlSitesData(NeonModel):
    sites: list[GqlSite]


class GqlFilterProductsData(NeonModel):
    filter_products: list[GqlProduct]


class GqlFilterSitesData(NeonModel):
    filter_sites: list[GqlSite]


class GqlFindLocationsData(NeonModel):
    find_locations: list[GqlLocation]


class GqlTypeRef(NeonModel):
    name: str | None = None
    kind: str
    of_type: GqlTypeRef | None = None


class GqlField(NeonModel):
    name: str
    description: str | None = None
    type: GqlTypeRef


class GqlType(NeonModel):
    name: str
    kind: str
    description: str | None = None
    fields: list[GqlField] | None = None
    input_fields: list[dict[str, Any]] | None = None
    enum_values: list[dict[str, Any]] | None = None


class GqlIntrospectTypeData(NeonModel):
    type_: GqlType | None = Field(alias="__type")
