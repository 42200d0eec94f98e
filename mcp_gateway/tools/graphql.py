"""Registration of the GraphQL family's tool (families/graphql.py)."""

from __future__ import annotations

from families import graphql
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_graphql",
        title="GraphQL query (read-only)",
        description=(
            "Run one read-only query against NEON's GraphQL when no other tool fits, e.g. products and "
            "sites joined in one request. Root fields: products, product, demoProduct, filterProducts, sites, "
            "site, filterSites, location, locationHierarchy, findLocations, prototypeDatasets, prototypeDataset, "
            "plus one __type or __schema. Queries only; the query is checked against the schema "
            "(eco://reference/graphql-schema) before sending, unknown fields are refused with didYouMean. "
            "Never cached, no token sent. A query asking for too much (many aliases, whole catalogs with "
            "nested lists) is query_too_large before sending: name the records (filterProducts, filterSites) "
            "or select less."
        ),
        surface="discovery",
        input_model=graphql.GraphQLInput,
        output_model=graphql.GraphQLOutput,
        read=graphql.graphql,
        endpoints=("POST /graphql",),
        page_lists={},
        fits_own_budget=True,
    ),
]
