"""The tables family: eco_describe_tables, eco_stack_tables, eco_query_tables and eco_plot_tables,
one module each. NEON publishes each table of a product as one CSV per site and month, with the
meaning, type and units of every column in a separate variables file; these tools read that
dictionary (describe), stack the CSVs into tables (stack: built before answering on stdio, in the
server's dataset store over HTTP), ask the stacked tables in SQL (query) and chart a query (plot).

What more than one of them uses is in common; a tool module may import its siblings (plot runs
its queries as query does, stack offers query's first step), never another family's modules.
"""
