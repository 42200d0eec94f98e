"""scripts/test says where the PostgreSQL and Redis tests look for their services in the words of
the README's Tests section and with the defaults the fixtures (tests/conftest.py) really use: it
said they skip without DATABASE_URL / REDIS_URL, while they run against the default URLs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _defaults() -> list[str]:
    source = (REPO / "tests" / "conftest.py").read_text()
    found = re.findall(r'"((?:postgresql|redis)://[^"]+)"', source)
    assert {u.split(":")[0] for u in found} == {"postgresql", "redis"}, found
    return found


def test_scripts_test_names_the_defaults_the_fixtures_use_as_the_readme_does():
    script = (REPO / "scripts" / "test").read_text()
    readme = (REPO / "README.md").read_text()
    for url in _defaults():
        assert url in script and f"`{url}`" in readme, url
    for variable in ("DATABASE_URL", "ECO_TEST_POSTGRES_URL", "REDIS_URL", "CI=true"):
        assert variable in script and variable in readme, variable
    assert "without them they skip" not in script
