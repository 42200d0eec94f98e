"""What the tables family's tools share: the package choice, the catalogs they resolve names
against, the listing endpoint they name, and how a name is written into the SQL they suggest."""

from __future__ import annotations

from typing import Literal

Package = Literal["basic", "expanded"]
NEED = ("products", "sites", "releases")
LISTING_ENDPOINT = "GET /data/{productCode}/{siteCode}/{yearMonth}"


def ident(name: str) -> str:
    """A column or table name as SQL, always quoted (2DWSD_30min starts with a digit)."""
    return '"' + name.replace('"', '""') + '"'
