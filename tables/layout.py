"""Where a stacked dataset lives and what its id looks like: light enough for the modules every
worker loads (the tool registry, the store, the admin) to import without the stacking engine."""
from __future__ import annotations

from pathlib import Path

DATASET_JSON = "dataset.json"
FOLDER = "datasets"
# What dataset_id() and the store's ids look like: dot-separated names of letters, digits, '_' and
# '-', so an id is never a path ('/', '..', a leading dot).
DATASET_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$"
# The view of a sensor table with each row's position joined: "<table>_positioned".
POSITIONED = "_positioned"
# Keys of the per-site readmes in dataset.json's files: readme_<site> (tables.dataset, tables.side).
READMES = "readme_"


def on_disk(path: Path, size: int | None) -> bool:
    """Whether a downloaded source is there whole: its size is known and the file has it."""
    if size is None:
        return False
    try:
        return path.stat().st_size == size
    except OSError:
        return False


def has_tables(code: str, publication_format_type: str) -> bool:
    """Whether a product publishes tables a stack reads (CSV per site and month with a variables
    file): NEON's level-1 products, not the airborne ones (images, point clouds)."""
    return code.startswith("DP1.") and not any(k in publication_format_type for k in ("AOP", "AER"))
