"""`python manage.py eco_catalog_refresh [--source graphql|rest] [--catalog NAME ...] [--json]`

Rebuilds the catalogs now and prints what it did; exit status 1 when any catalog failed
(its previous version is kept).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand

from catalog.models import CATALOGS
from upstream.context import call_scope


class Command(BaseCommand):
    help = "Rebuild the product, site, release and location catalogs from NEON now."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--source", choices=["graphql", "rest"], default=None,
                            help="Force one source (default: GraphQL, falling back to REST).")
        parser.add_argument("--catalog", action="append", choices=list(CATALOGS), dest="catalogs",
                            help="Refresh only this catalog (repeatable; default: all).")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead of lines.")

    def handle(self, *args: Any, **options: Any) -> None:
        from catalog.services import RefreshOutcome, refresh_catalogs
        from upstream.client import get_client

        catalogs = tuple(options["catalogs"] or CATALOGS)

        async def run() -> tuple[list[RefreshOutcome], int]:
            with call_scope() as acct:
                outcomes = await refresh_catalogs(catalogs, client=get_client(), source=options["source"],
                                                  trigger="command")
            return outcomes, acct.requests

        t0 = time.perf_counter()
        # async_to_sync (not asyncio.run): the ORM work comes back to this thread and its connection.
        outcomes, requests = async_to_sync(run)()
        seconds = time.perf_counter() - t0
        total_requests = max(requests, sum(o.requests for o in outcomes))
        if options["json"]:
            self.stdout.write(json.dumps({"catalogs": [o.to_dict() for o in outcomes],
                                          "requests": total_requests, "seconds": round(seconds, 3)}))
        else:
            for o in outcomes:
                line = (f"{o.catalog:<10} {'ok' if o.ok else 'FAILED':<7} source={o.source or '-':<8} "
                        f"rows={o.rows:<6} requests={o.requests:<3} seconds={o.seconds:.2f}")
                self.stdout.write(line + (f"  error: {o.error} (previous catalog kept)" if o.error else ""))
            self.stdout.write(f"total: requests={total_requests} seconds={seconds:.2f}")
        if not all(o.ok for o in outcomes):
            sys.exit(1)
