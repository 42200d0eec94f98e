"""NEON's quality flags in a stacked table: which fields are final quality flags (from the variables
file's field names: `finalQF`, or `<variable>FinalQF` where a product flags each variable apart),
which flag covers a measured field, and the filter that keeps only the rows that passed.

    flags(columns) -> [flag fields]              finalQF, windSpeedFinalQF, ...
    flag_for(columns, field) -> flag or None     the flag that covers this field
    passed(columns) -> SQL condition or None     "finalQF" = 0 (every final flag at 0)
    measured(columns, field) -> bool             a value with a unit, not a flag, metric or time

NEON's finalQF is 1 where the data failed its quality assessment (0: passed); finalQFSciRvw, the
science review's detail, is not a final flag here (science_review_flags is its own table).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

FINAL = "finalQF"
SUFFIX = "FinalQF"
# Units that mark a field as a count or a quality metric rather than a measured value.
NOT_MEASURED_UNITS = frozenset({"number", "percent"})


def is_flag(name: str) -> bool:
    return name == FINAL or (name.endswith(SUFFIX) and len(name) > len(SUFFIX))


def flags(columns: Iterable[str]) -> list[str]:
    return [c for c in columns if is_flag(c)]


def flag_for(columns: Iterable[str], field: str) -> str | None:
    """The final flag covering `field`: its variable's own (windSpeedFinalQF for windSpeedMean),
    else the table's finalQF, else none."""
    cols = list(columns)
    own = [c for c in cols if c.endswith(SUFFIX) and c != FINAL and field.startswith(c[: -len(SUFFIX)])]
    if own:
        return max(own, key=len)
    return FINAL if FINAL in cols else None


def passed(columns: Iterable[str]) -> str | None:
    """The SQL condition keeping the rows every final flag passed, or None when the table has none."""
    found = flags(columns)
    return " AND ".join(f"{_quote(f)} = 0" for f in found) or None


def measured(columns: Mapping[str, str | None], field: str) -> bool:
    unit = columns.get(field)
    return bool(unit) and unit not in NOT_MEASURED_UNITS and not is_flag(field) and not field.endswith("QM")


def _quote(name: str) -> str:
    return name if name.isidentifier() else '"' + name.replace('"', '""') + '"'
