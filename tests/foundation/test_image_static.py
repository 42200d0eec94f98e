"""The compose image holds every package the project installs and collects the admin's static
files where WhiteNoise serves them; scripts/setup collects them for a checkout."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def test_the_image_copies_every_package_that_pip_installs():
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {name.split(".")[0].rstrip("*") for name in include}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", (ROOT / "Dockerfile").read_text(), flags=re.M))
    # A package left out installs as nothing and the image fails at its first import.
    assert packages <= copied, sorted(packages - copied)


def test_the_image_and_setup_collect_static_files_outside_the_data_folder():
    assert "python manage.py collectstatic --noinput" in (ROOT / "Dockerfile").read_text()
    assert "manage.py collectstatic --noinput" in (ROOT / "scripts" / "setup").read_text()
    # A volume on the data folder (or a demo's own data folder) must not hide the collected files.
    assert not Path(settings.STATIC_ROOT).is_relative_to(settings.DATA_DIR)
    assert "eco_service.static.StaticFilesMiddleware" in settings.MIDDLEWARE
