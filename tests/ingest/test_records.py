"""``siltwatch records``: the records the ordinances ask for, from the live store, as CSV.

A real SQLite store written with the store's own API (as ``serve`` writes it),
then read by the command: the inspection log keeps the record fields, the rain
log is the daily record of the stored gauge readings in the site's local days,
the site log is what was logged, and the date range is in local dates.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from analytics.events import Inspection, SensorReading, SiteLogEntry
from analytics.timeutil import to_ms
from ingest.outputs.records import export_records, parse_day
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "examples" / "lake-george-site.toml"


def t(text: str) -> int:
    return to_ms(datetime.fromisoformat(text))


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def fill(db: Path) -> None:
    site = load_site(SITE)
    sid = site.site.id
    store = SqliteStore(db)
    try:
        rain = [
            # 0.02 + 0.03 in on 06-01 (local), 0.10 in at 23:30 EDT on 06-01 (06-02 UTC),
            # 0.05 in on 06-02: local days, not UTC days, split the record.
            SensorReading("rain-1", t("2026-06-01T10:00-04:00"), 0.02),
            SensorReading("rain-1", t("2026-06-01T10:05-04:00"), 0.03),
            SensorReading("rain-1", t("2026-06-01T23:30-04:00"), 0.10),
            SensorReading("rain-1", t("2026-06-02T08:00-04:00"), 0.05),
            SensorReading("rain-1", t("2026-06-04T08:00-04:00"), 0.0),
        ]
        store.add_readings(sid, [("basin-1", r) for r in rain], received_at=0)
        store.add_inspection(
            sid,
            Inspection(
                t("2026-06-02T09:30-04:00"),
                "Dana Ruiz",
                affiliation="Adirondack SWPPP Services",
                phone="+1 518 555 0199",
                signed=True,
            ),
        )
        store.add_inspection(sid, Inspection(t("2026-06-09T09:30-04:00"), "Dana Ruiz"))
        store.add_site_log(
            sid, SiteLogEntry(t("2026-06-03T10:00-04:00"), "cleared", "north-cut", "Dana Ruiz"), 0
        )
        store.add_site_log(
            sid,
            SiteLogEntry(
                t("2026-06-01T15:00-04:00"), "milestone", None, "Jo", "controls_installed"
            ),
            0,
        )
    finally:
        store.close()


def test_records_of_a_date_range_in_local_days(tmp_path: Path) -> None:
    db = tmp_path / "site.sqlite3"
    fill(db)
    store = SqliteStore(db)
    try:
        written = export_records(
            store,
            load_site(SITE),
            tmp_path / "out",
            parse_day("2026-06-01"),
            parse_day("2026-06-03"),
        )
    finally:
        store.close()
    assert (written.inspections, written.site_log) == (1, 2)
    (ins,) = rows(tmp_path / "out" / "inspections.csv")
    assert ins["time"] == "2026-06-02T09:30:00-04:00"
    assert (ins["affiliation"], ins["phone"], ins["signed"], ins["address"]) == (
        "Adirondack SWPPP Services",
        "+1 518 555 0199",
        "yes",
        "",
    )
    rain = {r["date"]: r for r in rows(tmp_path / "out" / "rain-log.csv")}
    assert set(rain) <= {"2026-06-01", "2026-06-02", "2026-06-03"}
    assert float(rain["2026-06-01"]["depth"]) == 0.15  # 0.02 + 0.03 + 0.10 (23:30 EDT)
    assert float(rain["2026-06-02"]["depth"]) == 0.05
    assert rain["2026-06-01"]["unit"] == "in" and rain["2026-06-01"]["readings"] == "3"
    log = rows(tmp_path / "out" / "site-log.csv")
    assert [(r["event"], r["area"], r["detail"]) for r in log] == [
        ("milestone", "", "controls_installed"),
        ("cleared", "north-cut", ""),
    ]


def test_the_command_writes_the_three_files_and_refuses_a_missing_store(tmp_path: Path) -> None:
    db = tmp_path / "site.sqlite3"
    fill(db)
    command = [sys.executable, "-m", "app.cli", "records", "--site", str(SITE)]
    done = subprocess.run(
        [*command, "--db", str(db), "--out", str(tmp_path / "all")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 2 inspections" in done.stdout and "2 site-log entries" in done.stdout
    assert len(rows(tmp_path / "all" / "inspections.csv")) == 2
    missing = subprocess.run(
        [*command, "--db", str(tmp_path / "nope.sqlite3"), "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert missing.returncode == 1
    assert "nope.sqlite3: no such store" in missing.stderr
    assert not (tmp_path / "nope.sqlite3").exists()  # looking did not create it
