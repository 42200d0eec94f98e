"""`CatalogUpstream`: the part of the upstream client that builds the catalogs, as a type.

`UpstreamClient` implements it, and so can a test double (tests/catalog/conftest.py MiniClient
speaks the same methods over plain HTTP to the simulator, to count every request). Catalog code
is typed against this Protocol, so mypy checks every call it makes into the client, and a
double that drifts from the client's signatures or return types fails type checking.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from upstream import models as m
from upstream.http import RequestKind

M = TypeVar("M", bound=BaseModel)


class CatalogUpstream(Protocol):
    # Where this client sends: a catalog records them as the upstream it was built from.
    @property
    def base_url(self) -> str: ...

    @property
    def graphql_url(self) -> str: ...

    @property
    def graphql_available(self) -> bool:
        """False while GraphQL is paused (breaker open) or not preferred: callers use REST."""
        ...

    async def products(self, release: str | None = None, *, fresh: bool = False) -> list[m.Product]: ...

    async def sites(self, release: str | None = None, *, fresh: bool = False) -> list[m.Site]: ...

    async def releases(self, *, fresh: bool = False) -> list[m.Release]: ...

    async def location_sites(self, *, fresh: bool = False) -> list[m.Location]: ...

    async def location(self, name: str, *, hierarchy: bool = False, location_type: str | None = None,
                       history: bool = False, fresh: bool = False) -> m.Location: ...

    async def graphql(self, query: str, variables: dict[str, Any] | None = None, *, model: type[M],
                      operation_name: str | None = None, kind: RequestKind = "catalog", use_breaker: bool = True,
                      send_token: bool | None = None) -> M: ...

    async def graphql_lists(self, query: str, *, model: type[M], kind: RequestKind = "catalog"
                            ) -> dict[str, Iterable[Any]]:
        """`graphql` for a query whose root fields are all lists of records, each list read an
        item at a time as it is iterated."""
        ...
