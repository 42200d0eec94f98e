"""`python manage.py eco_catalog_refresh [--source graphql|rest] [--catalog NAME ...] [--json]`

Rebuilds the catalogs now and prints what it did; exit status 1 when any catalog failed
(its previous version is kept).

NAME is one of the four catalogs (products, sites, releases, locations) or `subtrees`: every
site's location subtree (catalog.services.location_subtrees; ~85 upstream requests, so only when
named: the default stays the four catalogs, which cost 4-5). Named with `locations`, the subtrees
are walked after it, over the SITE rows just built. `--source` applies to the four catalogs; the
subtrees always come from REST trees and GraphQL records. A subtree refresh skipped because
another one is under way counts as a failure here (nothing was refreshed).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand

from catalog.models import CATALOGS, SUBTREES
from upstream.context import call_scope


class Command(BaseCommand):
    help = "Rebuild the product, site, release and location catalogs (and, when named, the location subtrees) now."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--source", choices=["graphql", "rest"], default=None,
                            help="Force one source for the four catalogs (default: GraphQL, falling back to REST).")
        parser.add_argument("--catalog", action="append", choices=[*CATALOGS, SUBTREES], dest="catalogs",
                            help="Refresh only this catalog (repeatable; default: the four catalogs). "
                                 f"'{SUBTREES}' walks every site's location subtree (~85 requests).")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead of lines.")

    def handle(self, *args: Any, **options: Any) -> None:
        from catalog.services import RefreshOutcome, refresh_catalogs
        from catalog.services.location_subtrees import refresh_location_subtrees
        from upstream.client import get_client

        asked = options["catalogs"] or CATALOGS
        catalogs = tuple(c for c in CATALOGS if c in asked)
        subtrees = SUBTREES in asked

        async def run() -> tuple[list[RefreshOutcome], int]:
            outcomes: list[RefreshOutcome] = []
            with call_scope() as acct:
                if catalogs:
                    outcomes += await refresh_catalogs(catalogs, client=get_client(), source=options["source"],
                                                       trigger="command")
                if subtrees:
                    outcomes.append(await refresh_location_subtrees(client=get_client(), trigger="command"))
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
