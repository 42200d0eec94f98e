"""The storage side of stacked tables: NEON's variables files, the stacking engine (CSV to typed
Parquet, as neonUtilities stacks), and dataset folders that are rebuilt only where their sources
changed. Nothing here knows MCP; families/tables/ is the tools' side."""

import os

# Arrow allocates from the C library's allocator unless the operator chose another. Arrow reads
# this once, at its first allocation, so it is set before any module here imports pyarrow: its
# default, mimalloc, sets up memory in every thread that allocates (the Parquet writer uses it
# whatever pool it is given), and a stack allocates on a dozen threads for far smaller buffers.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
