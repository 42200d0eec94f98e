"""Months and domain codes take ASCII digits only, as their published inputSchema patterns say
when read the way JSON Schema reads them (ECMA-262, where \\d is [0-9]). Found by the schema fuzzing
(tests/reliability): a month written in another script's digits ("२०२३-०१") passed the server's
own check (pydantic's and Python's \\d match every Unicode digit) and was then read as a year, so a
caller got "no data for 2023-01" or query_too_large instead of invalid_argument."""

from __future__ import annotations

import pytest

from catalog import checks
from eco_core.errors import EcoError
from mcp_gateway.registry import default_registry
from tests.tools.conftest import error_of

DEVANAGARI_MONTH = "\u0968\u0966\u0968\u0969-01"  # २०२३-01
ARABIC_INDIC_DOMAIN = "D\u0660\u0661"  # D٠١


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("eco_get_availability", {"product": "DP1.00041.001", "start_month": DEVANAGARI_MONTH}, "start_month"),
    ("eco_search_products", {"available_from": DEVANAGARI_MONTH}, "available_from"),
    ("eco_list_files", {"product": "DP1.00041.001", "site_codes": ["HARV"], "start_month": DEVANAGARI_MONTH},
     "start_month"),
    ("eco_search_sites", {"domain_code": ARABIC_INDIC_DOMAIN}, "domain_code"),
])
async def test_a_month_or_domain_in_non_ascii_digits_is_invalid_argument_naming_the_field(run_tool, tool, arguments,
                                                                                          field):
    error_of(await run_tool(tool, arguments), "invalid_argument", field)


def test_the_published_patterns_hold_no_unicode_digit_class():
    for spec in default_registry().listed(http=False):
        for name, prop in spec.tool.input_schema["properties"].items():
            assert "\\d" not in str(prop.get("pattern", "")), (spec.name, name)


def test_the_reads_own_month_and_domain_checks_refuse_non_ascii_digits():
    with pytest.raises(EcoError) as month:
        checks.month("start_month", DEVANAGARI_MONTH)
    with pytest.raises(EcoError) as domain:
        checks.domain_code(ARABIC_INDIC_DOMAIN)
    assert (month.value.code, domain.value.code) == ("invalid_argument", "invalid_argument")
    assert checks.month("start_month", "2023-01") == 2023 * 12
