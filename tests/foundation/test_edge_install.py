"""A station's install: ``pip install 'siltwatch[edge]'`` in a fresh venv, without the server.

The Raspberry Pi agent needs pydantic, paho-mqtt and its drivers' libraries; pandas, numpy,
InfluxDB, Grafana and amqtt belong to the ``server`` extra (no 32-bit Raspberry Pi OS wheels
for numpy/pandas). One venv, one non-editable install of a copy of this checkout; pip's cache
is reused. It needs an index (PyPI): locally it skips when offline, under ``CI=true`` it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import in_ci
from tests.foundation.test_layout import installed_folders

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# What setuptools packages (setup.py FOLDERS) but the console, which a station's commands never
# import, and the command's boot.
SOURCES = (*sorted(installed_folders() - {"console"}), "boot")
SERVER_ONLY = (
    "pandas",
    "numpy",
    "influxdb-client",
    "grafana-client",
    "grafana-foundation-sdk",
    "amqtt",
)
EDGE_NEEDS = ("pydantic", "paho-mqtt", "gpiozero", "pymodbus", "smbus2", "pyserial")
OFFLINE = re.compile(
    r"NewConnectionError|Temporary failure in name resolution|Max retries exceeded|"
    r"No matching distribution found|Network is unreachable"
)
SERVER_LINE = (
    "error: 'siltwatch dashboards' needs the server parts (missing module "
    "'grafana_foundation_sdk'): pip install 'siltwatch[server]'"
)


def _unavailable(why: str) -> None:
    """Skip (locally) or fail (under CI=true): CI has the network this test needs."""
    if in_ci():
        pytest.fail(f"{why}; under CI=true integration tests must not skip")
    pytest.skip(why)


def _copy_checkout(dest: Path) -> Path:
    """The sources pip builds from, copied so the build writes no build/ or egg-info here."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


@pytest.mark.integration
def test_edge_extra_installs_without_the_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "venv"
    bin_dir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), capture_output=True, text=True, cwd=tmp_path, env=env, timeout=timeout
        )

    # The interpreter running the tests (>= 3.11), so the venv matches requires-python.
    made = run(sys.executable, "-m", "venv", str(venv))
    if made.returncode != 0:
        _unavailable(f"cannot create a venv (python3-venv missing?): {made.stderr.strip()}")
    src = _copy_checkout(tmp_path / "src")
    installed = run(
        str(bin_dir / "python"), "-m", "pip", "install", "--quiet", f"{src}[edge]", timeout=600
    )
    if installed.returncode != 0:
        if OFFLINE.search(installed.stderr):
            _unavailable(f"pip cannot reach the package index: {installed.stderr[-500:]}")
        pytest.fail(f"pip install '.[edge]' failed:\n{installed.stderr}")

    listed = run(str(bin_dir / "python"), "-m", "pip", "list", "--format=json")
    assert listed.returncode == 0, listed.stderr
    names = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    assert not names & set(SERVER_ONLY), f"server-only packages in an edge install: {names}"
    assert set(EDGE_NEEDS) <= names, f"missing from the edge install: {set(EDGE_NEEDS) - names}"

    siltwatch = str(bin_dir / "siltwatch")
    version = run(siltwatch, "version")
    assert version.returncode == 0 and version.stdout.startswith("siltwatch "), version.stderr
    flag = run(siltwatch, "--version")
    assert flag.returncode == 0 and flag.stdout == version.stdout, flag.stderr

    # --check validates the config (drivers are built lazily, the files are opened at run).
    check = run(siltwatch, "edge", "--config", str(ROOT / "edge" / "example.toml"), "--check")
    assert check.returncode == 0, check.stderr
    assert "configuration is valid" in check.stderr

    site = str(EXAMPLES / "lake-george-site.toml")
    config = run(siltwatch, "config", "check", site)
    assert config.returncode == 0 and ": ok — site 'lg-route9n'" in config.stdout, config.stderr
    schema = run(siltwatch, "schema")
    assert schema.returncode == 0 and "reading" in json.loads(schema.stdout), schema.stderr

    # Replay reads CSV with the csv module: it runs on a station too, pandas or not.
    replay = run(
        siltwatch,
        "replay",
        str(EXAMPLES / "lake-george-storm.csv"),
        "--site",
        site,
        "--inspections",
        str(EXAMPLES / "lake-george-inspections.csv"),
        "--alerts-out",
        str(tmp_path / "alerts.jsonl"),
        "--duties-out",
        str(tmp_path / "duties.jsonl"),
    )
    assert replay.returncode == 0, replay.stderr
    assert (tmp_path / "alerts.jsonl").stat().st_size > 0

    # The dashboards are built with grafana-foundation-sdk: one line names it and the fix.
    dashboards = run(siltwatch, "dashboards", "--site", site)
    assert dashboards.returncode == 1
    assert dashboards.stderr.strip() == SERVER_LINE
    assert "Traceback" not in dashboards.stderr

    du = run("du", "-sm", str(venv))
    assert du.returncode == 0, du.stderr
    with capsys.disabled():
        print(f"\nedge-only venv ({sys.version.split()[0]}): {du.stdout.split()[0]} MB")
