"""The siltwatch command, run as a user runs it (a subprocess, real files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.foundation.test_config import FIVE_MISTAKES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_version_and_help() -> None:
    out = run("version")
    assert out.returncode == 0 and out.stdout.startswith("siltwatch ")
    flag = run("--version")
    assert flag.returncode == 0 and flag.stdout == out.stdout, flag.stderr
    for args in (
        ["--help"],
        ["replay", "--help"],
        ["config", "check", "--help"],
        ["schema", "--help"],
    ):
        helped = run(*args)
        assert helped.returncode == 0 and "usage: siltwatch" in helped.stdout


def test_usage_errors_exit_2() -> None:
    assert run().returncode == 2
    assert run("replay", "x.csv").returncode == 2  # --site etc. missing
    assert run("frobnicate").returncode == 2


def test_config_check_ok_and_five_mistakes(tmp_path: Path) -> None:
    ok = run(
        "config",
        "check",
        str(EXAMPLES / "lake-george-site.toml"),
        str(EXAMPLES / "lake-lure-site.toml"),
    )
    assert ok.returncode == 0, ok.stderr
    assert "lg-route9n" in ok.stdout and "ll-boulevard" in ok.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(FIVE_MISTAKES, encoding="utf-8")
    out = run("config", "check", str(bad))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 5
    assert all(line.startswith(f"error: {bad}: ") for line in lines)
    assert "Traceback" not in out.stderr


def test_replay_malformed_row_names_line_and_column(tmp_path: Path) -> None:
    rec = tmp_path / "rec.csv"
    rec.write_text(
        "time,sensor,value\n"
        "2026-05-04T13:00:00Z,turb-up,8.2\n"
        "2026-05-04T13:00:00Z,turb-down,nine\n"
        "2026-05-04 13:01:00,turb-down,9.0\n"
        "2026-05-04T13:02:00Z,turb-sideways,9.0\n",
        encoding="utf-8",
    )
    out = run(
        "replay",
        str(rec),
        "--site",
        str(EXAMPLES / "lake-george-site.toml"),
        "--alerts-out",
        str(tmp_path / "a.jsonl"),
        "--duties-out",
        str(tmp_path / "d.jsonl"),
    )
    assert out.returncode == 1
    err = out.stderr
    assert f"{rec}:3: column 'value': 'nine' is not a number" in err
    assert f"{rec}:4: column 'time':" in err and "no UTC offset" in err
    assert f"{rec}:5: column 'sensor': 'turb-sideways' is not a sensor of the site" in err
    assert not (tmp_path / "a.jsonl").exists()


def test_replay_valid_recording_writes_both_files(tmp_path: Path) -> None:
    alerts, duties = tmp_path / "out" / "alerts.jsonl", tmp_path / "out" / "duties.jsonl"
    out = run(
        "replay",
        str(EXAMPLES / "lake-lure-storm.csv"),
        "--site",
        str(EXAMPLES / "lake-lure-site.toml"),
        "--inspections",
        str(EXAMPLES / "lake-lure-inspections.csv"),
        "--alerts-out",
        str(alerts),
        "--duties-out",
        str(duties),
        "--rain-log",
        str(tmp_path / "rain.csv"),
    )
    assert out.returncode == 0, out.stderr
    rain = (tmp_path / "rain.csv").read_text(encoding="utf-8").splitlines()
    assert rain[0] == "date,gauge,depth,unit,readings,excluded_readings"
    # The scripted Lake Lure week: 3 mm on Monday, 30 mm on Friday 2026-05-08 (local days),
    # in 0.2 mm tips (examples/make_recordings.py): 33.0 mm in all.
    days = {line.split(",")[0]: float(line.split(",")[2]) for line in rain[1:]}
    assert days["2026-05-04"] == pytest.approx(3.0, abs=0.41)
    assert days["2026-05-08"] == pytest.approx(30.0, abs=0.41)
    assert sum(days.values()) == pytest.approx(33.0, abs=0.01)
    assert alerts.exists() and duties.exists()
    for path in (alerts, duties):
        for line in path.read_text(encoding="utf-8").splitlines():
            json.loads(line)
    assert "replayed 24,365 readings" in out.stdout


def test_schema_export(tmp_path: Path) -> None:
    out = run("schema", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert "reading.schema.json" in names and "batch.schema.json" in names
    assert "alerts-jsonl-line.schema.json" in names


def test_committed_schemas_match_the_code(tmp_path: Path) -> None:
    """docs/schema/ is what integrators read: it must be what the code validates."""
    run("schema", "--out", str(tmp_path))
    committed = {
        p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "schema").glob("*.json")
    }
    generated = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.json")}
    assert committed == generated, "run: siltwatch schema --out docs/schema"


def test_edge_config_check(tmp_path: Path) -> None:
    ok = run("edge", "--config", str(ROOT / "edge" / "example.toml"), "--check")
    assert ok.returncode == 0, ok.stderr
    assert "configuration is valid" in ok.stderr
    missing = run("edge", "--config", str(tmp_path / "nope.toml"), "--check")
    assert missing.returncode == 1
    assert f"{tmp_path / 'nope.toml'}: file not found" in missing.stderr
