"""eco://reference/vocabularies lists every location type the catalog and the stored site
subtrees hold (towers, plots, ... not only REALM, DOMAIN and SITE), each with how many locations
have it; read over HTTP through the SDK client."""

from __future__ import annotations

import json
from collections import Counter

from asgiref.sync import sync_to_async

from catalog.models import LocationNodeRow, LocationRow
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session
from tests.tools.location_support import stored_subtrees  # noqa: F401  (fixture)


def _stored_counts() -> tuple[Counter[str], Counter[str]]:
    return (Counter(LocationNodeRow.objects.values_list("location_type", flat=True)),
            Counter(LocationRow.objects.values_list("location_type", flat=True)))


async def test_vocabularies_count_every_location_type_of_the_stored_subtrees(
        http_server, sim_cfg, sim, active_config, stored_subtrees):  # noqa: F811
    nodes, catalogued = await sync_to_async(_stored_counts)()
    assert {"TOWER", "SITE"} <= set(nodes) and len(nodes) > 3
    async with cold_http_session(http_server, sim, active_config) as (client, _):
        read = await client.read_resource("eco://reference/vocabularies")
    vocab = json.loads(read.contents[0].text)
    listed = {t["locationType"]: t["count"] for t in vocab["locationTypes"]}
    assert set(listed) == set(nodes) | set(catalogued)
    assert [t["locationType"] for t in vocab["locationTypes"]] == sorted(listed)
    assert all(listed[t] == n for t, n in nodes.items() if t != "SITE")
    assert listed["SITE"] == max(nodes["SITE"], catalogued["SITE"]) and listed["DOMAIN"] == catalogued["DOMAIN"]
