"""``siltwatch import``: a recording into a real store, as the live service stores it.

The Lake George storm recording is imported into SQLite and PostgreSQL and
must give the store the recording's readings and the alerts ``replay`` finds;
an import killed (SIGKILL, mid-chunk) or interrupted (Ctrl-C) and run again
must leave the same readings, once each, and the same alerts as one
uninterrupted import; a reading stored with another value is a stored
rejection, counted; and the Parquet that ``siltwatch export`` writes imports
back to the same readings.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from ingest.recordings.replay import replay_file
from ingest.store.from_url import open_store
from siltwatch.config import load_site

ROOT = Path(__file__).resolve().parents[2]
SITE_FILE = ROOT / "examples" / "lake-george-site.toml"
STORM = ROOT / "examples" / "lake-george-storm.csv"
SITE = load_site(SITE_FILE)
SITE_ID = SITE.site.id
READINGS = 24_365  # the storm recording's


def run_import(recording: Path, db: str, *more: str) -> int:
    return main(["import", str(recording), "--site", str(SITE_FILE), "--db", db, *more])


def alerts_of(db: str) -> list[tuple[Any, ...]]:
    store = open_store(db)
    try:
        return sorted(
            (a.id, a.kind, a.severity, a.opened_at, a.resolved_at) for a in store.alerts(SITE_ID)
        )
    finally:
        store.close()


def readings_of(db: Path) -> list[tuple[Any, ...]]:
    """Every stored reading, read with plain SQL (not through the code under test)."""
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT site, station, sensor, t, value, seq, flags FROM readings ORDER BY t, sensor"
        ).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def replayed() -> list[tuple[Any, ...]]:
    result = replay_file(SITE, STORM)
    return sorted((a.id, a.kind, a.severity, a.opened_at, a.resolved_at) for a in result.alerts)


@pytest.mark.parametrize("store_db", ["sqlite", "postgres"], indirect=True)
def test_an_import_stores_the_readings_and_the_alerts_replay_finds(
    store_db: str, replayed: list[tuple[Any, ...]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_import(STORM, store_db, "--chunk", "5000") == 0
    out = capsys.readouterr().out
    assert f"{READINGS:,} readings, {READINGS:,} new, 0 already stored, 0 rejected" in out
    store = open_store(store_db)
    try:
        assert store.reading_count(SITE_ID) == READINGS
        assert store.snapshots(SITE_ID), "a serve started on the store begins from a snapshot"
    finally:
        store.close()
    assert replayed and alerts_of(store_db) == replayed


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_a_stopped_import_run_again_ends_as_one_uninterrupted_import(
    tmp_path: Path, replayed: list[tuple[Any, ...]], stop: signal.Signals
) -> None:
    whole, resumed = tmp_path / "whole.sqlite3", tmp_path / "resumed.sqlite3"
    assert run_import(STORM, str(whole), "--chunk", "1000") == 0
    argv = [sys.executable, "-m", "app.cli", "import", str(STORM), "--site", str(SITE_FILE)]
    proc = subprocess.Popen(
        [*argv, "--db", str(resumed), "--chunk", "1000"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    try:
        deadline = time.monotonic() + 120
        stored = 0
        while stored < 3_000 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
            if resumed.exists():
                try:
                    stored = len(readings_of(resumed))
                except sqlite3.OperationalError:
                    stored = 0  # the schema is being made
        proc.send_signal(stop)
    finally:
        err = proc.communicate(timeout=60)[1]
    part = len(readings_of(resumed))
    if stop == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL, "killed mid-import, before it could finish"
    else:
        assert proc.returncode == 130, err
        assert f"interrupted: the store is consistent and holds {part:,} readings" in err
    assert 0 < part < READINGS
    assert run_import(STORM, str(resumed), "--chunk", "1000") == 0
    assert readings_of(resumed) == readings_of(whole)  # none lost, none twice
    assert alerts_of(str(resumed)) == alerts_of(str(whole)) == replayed


def test_a_reading_stored_with_another_value_is_rejected_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.sqlite3"
    assert run_import(STORM, str(db)) == 0
    header, first, *rest = STORM.read_text().splitlines()[:50]
    time_text, sensor, value = first.split(",")
    changed = tmp_path / "changed.csv"
    changed.write_text("\n".join([header, f"{time_text},{sensor},{float(value) + 5}", *rest]))
    capsys.readouterr()
    assert run_import(changed, str(db)) == 0
    assert "0 new, 49 already stored, 1 rejected" in capsys.readouterr().out
    store = open_store(str(db))
    try:
        ((where, reason),) = store.rejections()
        assert where == "import changed.csv"
        assert reason.startswith(f"conflicting duplicate: sensor {sensor!r}")
        assert f"stored with value {float(value)!r}" in reason
    finally:
        store.close()
    assert (SITE_ID, sensor, float(value)) in {
        (s, n, v) for s, _st, n, _t, v, _q, _f in readings_of(db)
    }


def test_the_parquet_export_imports_back_to_the_same_readings(tmp_path: Path) -> None:
    first, second = tmp_path / "first.sqlite3", tmp_path / "second.sqlite3"
    assert run_import(STORM, str(first)) == 0
    out = tmp_path / "export"
    argv = ["--site", str(SITE_FILE), "--out", str(out), "--format", "parquet"]
    assert main(["export", "--db", str(first), *argv, "--tables", "readings"]) == 0
    assert run_import(out / "readings.parquet", str(second), "--chunk", "3000") == 0
    assert readings_of(second) == readings_of(first)
    assert alerts_of(str(second)) == alerts_of(str(first))


def test_a_recording_of_another_site_is_refused_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("time,sensor,value\n2026-05-04T04:00:00Z,ph-9,7.0\n")
    assert run_import(bad, str(tmp_path / "store.sqlite3")) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2: column 'sensor': 'ph-9' is not a sensor of the site" in err
