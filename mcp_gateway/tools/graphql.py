"""Registration of the GraphQL family's tool (families/graphql.py)."""

from __future__ import annotations

from families import graphql
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_graphql",
        title="GraphQL query (read-only)",
        description=(
            "When no other tool fits (e.g. products and sites joined in one request): one read-only query to "
            "NEON's GraphQL. Roots: products, product, demoProduct, filterProducts, sites, site, filterSites, "
            "location, locationHierarchy, findLocations, prototypeDatasets, prototypeDataset, one __type or "
            "__schema. Checked against eco://reference/graphql-schema first: a query too long or nested too deep "
            "is invalid_argument, one asking for too much is query_too_large (name records with filterProducts, "
            "filterSites, or select less). Never cached, no token sent."
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
