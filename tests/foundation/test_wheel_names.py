"""The wheel installs one private top-level name, so siltwatch's folders collide with no one.

``analytics``, ``ingest``, ``console``, ``edge``, ``hardware``, ... are generic names that
other distributions own on PyPI (``analytics-python`` imports as ``analytics``); two
distributions that write into one top-level folder overwrite each other's files. The wheel
puts siltwatch's folders under ``_siltwatch/`` (setup.py) and the ``siltwatch`` command's boot
puts that directory first on sys.path (boot/_siltwatch/__init__.py). This builds the real
wheel (``pip wheel --no-deps``) from a copy of the checkout and reads what it would install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import in_ci
from tests.foundation.test_layout import contract_roots

pytestmark = pytest.mark.integration  # pip needs an index for the build's setuptools

ROOT = Path(__file__).resolve().parents[2]
# What a build reads: setup.py and pyproject.toml, the boot, and the folders (setup.py FOLDERS).
BUILD_FILES = ("pyproject.toml", "setup.py", "README.md")
OFFLINE = re.compile(
    r"NewConnectionError|Temporary failure in name resolution|Max retries exceeded|"
    r"No matching distribution found|Network is unreachable"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel pip builds from a copy of this checkout (the build writes nothing here)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in (*contract_roots(), "boot"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in BUILD_FILES:
        shutil.copy2(ROOT / name, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(src), "-w", str(tmp)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if built.returncode != 0:
        if OFFLINE.search(built.stderr) and not in_ci():
            pytest.skip(f"pip cannot reach the package index: {built.stderr[-300:]}")
        pytest.fail(f"pip wheel failed:\n{built.stderr}")
    (path,) = tmp.glob("siltwatch-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_puts_one_private_name_at_the_top_of_site_packages(
    wheel: zipfile.ZipFile,
) -> None:
    names = wheel.namelist()
    top = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert top == {"_siltwatch"}
    (top_level,) = (n for n in names if n.endswith(".dist-info/top_level.txt"))
    assert wheel.read(top_level).decode().split() == ["_siltwatch"]


def test_every_folder_of_the_house_is_inside_with_its_data(wheel: zipfile.ZipFile) -> None:
    """The folders .importlinter holds, each with its modules and package data."""
    names = set(wheel.namelist())
    inside = {n.split("/")[1] for n in names if n.startswith("_siltwatch/") and n.count("/") > 1}
    assert inside == set(contract_roots())
    shipped = (".py", ".html", ".css", ".js", ".toml", ".json", ".csv")
    for folder in contract_roots():
        for path in (ROOT / folder).rglob("*"):
            rel = path.relative_to(ROOT).as_posix()
            if path.suffix in shipped and "__pycache__" not in rel:
                assert f"_siltwatch/{rel}" in names, f"{rel} is not in the wheel"


def test_the_siltwatch_command_boots_through_the_private_folder(wheel: zipfile.ZipFile) -> None:
    (entry,) = (n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    lines = wheel.read(entry).decode().split("\n")
    assert "siltwatch = _siltwatch:main" in lines
    assert "_siltwatch/__init__.py" in wheel.namelist()
