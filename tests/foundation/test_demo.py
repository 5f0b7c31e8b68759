"""``make demo`` runs ``siltwatch demo``: it must keep working end to end (embedded broker,
ingest, SQLite, detections, routing), on the scripted storms shipped in examples/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_the_whole_pipeline(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "siltwatch.cli", "demo", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "alert log (JSONL)" in out.stdout
    assert out.stdout.count("24,365 readings stored, 0 duplicates, 1 rejected") == 2
    lg = [
        json.loads(line)
        for line in (tmp_path / "lake-george-alerts.jsonl").read_text().splitlines()
    ]
    kinds = {(a["kind"], a["severity"]) for a in lg}
    # The scripted week (examples/make_recordings.py): a plume, a trap past 50 %, a slow basin.
    assert ("turbidity_contrast", "critical") in kinds
    assert ("sediment_capacity", "critical") in kinds
    assert ("drain_time", "critical") in kinds
    # ...and the 2-minute debris spike on day 4 is not an alert: one turbidity episode only.
    assert sum(a["kind"] == "turbidity_contrast" for a in lg) == 1
    # The scripted site logs (examples/*-site-log.csv) reach the duties through MQTT: a
    # stabilization duty done in time and one left open, on each site.
    for name in ("lake-george", "lake-lure"):
        duties = [
            json.loads(line)
            for line in (tmp_path / f"{name}-duties.jsonl").read_text().splitlines()
        ]
        covers = [d for d in duties if d["kind"] == "stabilization"]
        assert any(d["completed_at"] and d["completed_at"] <= d["due_at"] for d in covers), name
        assert any(d["completed_at"] is None for d in covers), name
    ll = [
        json.loads(line) for line in (tmp_path / "lake-lure-duties.jsonl").read_text().splitlines()
    ]
    storm = [d for d in ll if d["reason"] == "storm"]
    # 30 mm ending Friday evening (outside business hours): due Monday 08:00 EDT (NCG01 Part III §A).
    assert [d["due_at"] for d in storm] == ["2026-05-11T12:00:00Z"]
    log = (tmp_path / "alert-log.jsonl").read_text().splitlines()
    assert log and all("recipients" in json.loads(line) for line in log)
