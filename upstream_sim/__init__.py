"""Simulator of NEON's REST and GraphQL Data API, for tests, demos and benchmarks.

Product code must never import this package, and this package imports nothing from
the product (eco_service, catalog, mcp_gateway, downloads).
"""
