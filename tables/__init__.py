"""The storage side of stacked tables: NEON's variables files, the stacking engine (CSV to typed
Parquet, as neonUtilities stacks), and dataset folders that are rebuilt only where their sources
changed. Nothing here knows MCP; families/tables.py is the tools' side."""
