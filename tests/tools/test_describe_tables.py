"""eco_describe_tables against the simulator: the dictionary of a sensor and an observational
product field for field as their variables files give it, kept in the catalog database (a second
call fetches no file; a file NEON re-publishes is fetched again), filters, paging and steps."""

# ruff: noqa: F811  (pytest fixtures imported from tests.downloads.conftest are parameters here)
from __future__ import annotations

import csv
import io

import pytest

from catalog.access import catalog_read
from catalog.models import VariablesFileRow
from tests.downloads.conftest import call_tool, dl_dir, sim_token  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of

SAAT, LITTER = "DP1.00002.001", "DP1.10033.001"
STORAGE = r"^/storage/"


def _variables(sim, code: str, site: str, month: str) -> tuple[str, list[dict[str, str]]]:
    files = sim.state.files
    release = sim.world.release_for_month(code, site, month, None)
    spec = next(s for s in files.package_files(code, site, month, "basic", release) if s.kind == "variables")
    return spec.name, list(csv.DictReader(io.StringIO(files.content(spec).decode())))


async def _all_fields(call_tool, args):
    fields, offset = [], 0
    while True:
        body = (await call_tool("eco_describe_tables", {**args, "limit": 500, "offset": offset})).ok
        fields += body["fields"]
        if body["page"]["nextOffset"] is None:
            return body, fields
        offset = body["page"]["nextOffset"]


@pytest.mark.parametrize(("code", "site"), [(SAAT, "CPER"), (LITTER, "HARV")])
async def test_the_dictionary_is_the_variables_files_field_for_field(call_tool, fresh_sim, code, site):
    body, fields = await _all_fields(call_tool, {"product": code, "site_code": site, "package": "expanded"})
    name, rows = _variables(fresh_sim, code, site, body["listedMonth"])
    assert body["variablesFile"] == name and body["listedSite"] == site
    got = [(f["table"], f["name"], f["description"], f["dataType"], f["units"] or "NA", f["package"],
            f["pubFormat"], "Y" if f["primaryKey"] else "N", f["categoricalCodeName"] or "") for f in fields]
    want = [(r["table"], r["fieldName"], r["description"], r["dataType"], r["units"], r["downloadPkg"],
             r["pubFormat"], r["primaryKey"], r["categoricalCodeName"]) for r in rows]
    assert got == want
    tables = {t["name"]: t for t in body["tables"]}
    assert list(tables) == list(dict.fromkeys(r["table"] for r in rows))
    assert all(t["fields"] == sum(r["table"] == n for r in rows) for n, t in tables.items())
    types = {f["name"]: f["columnType"] for f in fields if f["table"] == next(iter(tables))}
    if code == SAAT:
        for t in ("SAAT_1min", "SAAT_30min"):
            assert tables[t]["type"] == "sensor" and tables[t]["averagingMinutes"] == int(t[5:].rstrip("min"))
            assert len(tables[t]["positions"]) >= 2 and all(p.startswith("000.0") for p in tables[t]["positions"])
        assert types["startDateTime"] == "timestamp" and types["tempSingleMean"] == "double"
        assert types["finalQF"] == "int64"
    else:
        assert tables["ltr_pertrap"]["type"] == "site-all" and tables["lig_externalSummary"]["type"] == "lab"
        assert tables["ltr_massdata"]["description"].startswith("Dry mass of litter")
        assert tables["ltr_pertrap"]["positions"] is None
    basic = (await call_tool("eco_describe_tables", {"product": code, "site_code": site, "limit": 500})).ok
    assert basic["page"]["total"] == sum(r["downloadPkg"] == "basic" for r in rows)


async def test_the_file_is_kept_in_the_database_and_fetched_again_when_neon_publishes_another(call_tool, fresh_sim):
    args = {"product": LITTER, "site_code": "HARV", "tables": ["ltr_massdata"]}
    # Forget what an earlier test kept (the catalog's own read pool: its writes are committed).
    await catalog_read(lambda: VariablesFileRow.objects.filter(product_code=LITTER).delete())
    first = (await call_tool("eco_describe_tables", args)).ok
    assert fresh_sim.requests.count(STORAGE) >= 1  # the variables file (and the readme) from storage
    fresh_sim.requests.clear()
    again = (await call_tool("eco_describe_tables", args)).ok
    assert fresh_sim.requests.count(STORAGE) == 0 and again["fields"] == first["fields"]
    assert any("catalog database" in n for n in again["notes"])
    files = fresh_sim.state.files
    try:
        files.change(first["variablesFile"])
        fresh_sim.requests.clear()
        changed = await call_tool("eco_describe_tables", {**args, "tables": None, "limit": 1}, cache__enabled=False)
        body = changed.ok
        assert fresh_sim.requests.count(STORAGE) >= 1
        assert body["variablesMd5"] != first["variablesMd5"]
        assert any("new variables file" in n for n in body["notes"])
        assert body["fields"][0]["description"].endswith("(revision 1)")  # the file's first field, re-published
    finally:
        files.revisions.pop(first["variablesFile"], None)
        files._meta.pop(first["variablesFile"], None)  # the simulator's cached size and MD5
        files.bytes_cache.drop(first["variablesFile"])


async def test_tables_and_search_filter_the_fields(call_tool, sim):
    body = (await call_tool("eco_describe_tables", {"product": LITTER, "tables": ["LTR_MASSDATA", "ltr_pertrap"],
                                                    "search": "mass"})).ok
    _, rows = _variables(sim, LITTER, body["listedSite"], body["listedMonth"])
    in_file = [t for t in dict.fromkeys(r["table"] for r in rows) if t in ("ltr_pertrap", "ltr_massdata")]
    assert [t["name"] for t in body["tables"]] == in_file  # the file's order, whatever the order asked
    assert body["fields"] and all(f["table"] in ("ltr_pertrap", "ltr_massdata") for f in body["fields"])
    assert all("mass" in (f["name"] + " " + f["description"]).lower() for f in body["fields"])
    assert {f["name"] for f in body["fields"]} >= {"dryMass", "massSampleID"}


async def test_an_unknown_table_is_not_found_naming_the_tables(call_tool):
    out = await call_tool("eco_describe_tables", {"product": LITTER, "tables": ["ltr_nope"]})
    err = error_of(out, "not_found", "tables")
    assert "ltr_massdata" in err["details"]["didYouMean"]


async def test_without_a_token_it_is_auth_required_before_any_request(call_tool, fresh_sim):
    out = await call_tool("eco_describe_tables", {"product": LITTER}, token=None)
    error_of(out, "auth_required")
    assert fresh_sim.requests.count(r"^/api/v0/data") == 0 and fresh_sim.requests.count(STORAGE) == 0


async def test_pages_continue_at_next_offset_and_the_steps_stack_on_stdio_or_list_files_over_http(call_tool):
    first = (await call_tool("eco_describe_tables", {"product": SAAT, "limit": 5})).ok
    assert first["page"] == {"offset": 0, "limit": 5, "returned": 5, "total": first["page"]["total"],
                             "nextOffset": 5, "truncated": False}
    [more] = [s["arguments"] for s in first["nextSteps"] if s["tool"] == "eco_describe_tables"]
    assert more == {"product": SAAT, "limit": 5, "offset": 5}
    second = (await call_tool("eco_describe_tables", more)).ok
    assert {f["name"] for f in second["fields"]}.isdisjoint({f["name"] for f in first["fields"][:1]})
    coarsest, every = [s["arguments"] for s in first["nextSteps"] if s["tool"] == "eco_stack_tables"]
    assert every == {"product": SAAT, "site_codes": [first["listedSite"]], "start_month": first["listedMonth"]}
    assert coarsest == {**every, "tables": ["SAAT_30min"]}
    http = (await call_tool("eco_describe_tables", {"product": SAAT, "limit": 5}, transport="http")).ok
    assert not [s for s in http["nextSteps"] if s["tool"] == "eco_stack_tables"]
    [files] = [s["arguments"] for s in http["nextSteps"] if s["tool"] == "eco_list_files"]
    assert files["kind"] == "data" and files["site_codes"] == [first["listedSite"]]


async def test_a_product_without_tables_is_not_found(call_tool):
    out = await call_tool("eco_describe_tables", {"product": "DP3.30006.001"})  # airborne imagery: tiles only
    error_of(out, "not_found", "product")
