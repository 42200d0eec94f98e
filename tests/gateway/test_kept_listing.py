"""The tool listing a stdio server keeps in its data folder: what a start lists from it is what
the discovered registry lists, and a listing that may not match the code is never read."""

from __future__ import annotations

import json
import sys

import pytest

from mcp_gateway import registry as reg
from mcp_gateway.registry import LazyRegistry, Registry, discover_specs, kept_registry


def _dumps(r: Registry, http: bool) -> list[dict]:
    return [s.tool.model_dump(by_alias=True, mode="json", exclude_none=True) for s in r.listed(http=http)]


@pytest.fixture(scope="module")
def discovered() -> Registry:
    return Registry(discover_specs())


def test_a_second_start_lists_from_the_kept_listing_exactly_what_discovery_lists(tmp_path, discovered):
    first = kept_registry(tmp_path)
    second = kept_registry(tmp_path)
    assert not isinstance(first, LazyRegistry)
    assert isinstance(second, LazyRegistry)
    assert len(list(tmp_path.glob("tools-*.json"))) == 1
    for http in (False, True):
        assert _dumps(second, http) == _dumps(discovered, http)
        assert [s.name for s in second.listed(http=http)] == [s.name for s in discovered.listed(http=http)]
        assert second.tools_list_bytes(http=http) == discovered.tools_list_bytes(http=http)
    assert second.names() == discovered.names()


def test_a_kept_listing_hands_out_the_declared_spec_with_its_listed_tool(tmp_path, discovered):
    kept_registry(tmp_path)
    lazy = kept_registry(tmp_path)
    spec = lazy.get("eco_search_products")
    declared = discovered.get("eco_search_products")
    assert spec is not None and declared is not None
    assert spec.read is declared.read and spec.input_model is declared.input_model
    assert spec.tool.model_dump(by_alias=True, exclude_none=True) == declared.tool.model_dump(by_alias=True, exclude_none=True)
    # A listed entry answers what the call path asks of it from the same declaration.
    listed = next(s for s in lazy.listed(http=False) if s.name == "eco_search_products")
    assert listed.read is declared.read
    assert lazy.get("eco_no_such_tool") is None


def test_an_unreadable_listing_is_ignored_and_written_again(tmp_path, discovered):
    kept_registry(tmp_path)
    path = next(tmp_path.glob("tools-*.json"))
    path.write_text("{not json")
    again = kept_registry(tmp_path)
    assert not isinstance(again, LazyRegistry)
    assert _dumps(again, False) == _dumps(discovered, False)
    assert json.loads(path.read_text())["tools"]


def test_any_change_to_a_source_file_names_another_listing(tmp_path, monkeypatch):
    pkg = tmp_path / "src" / "keptpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    module = pkg / "tools.py"
    module.write_text("A = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setattr(reg, "SOURCE_PACKAGES", ("keptpkg",))
    before = reg.listing_fingerprint()
    assert reg.listing_fingerprint() == before
    module.write_text("A = 22\n")
    assert reg.listing_fingerprint() != before
    sys.modules.pop("keptpkg", None)
