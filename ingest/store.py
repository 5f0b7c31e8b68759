"""The SQLite store: the embedded default, one file, WAL mode.

It keeps every accepted reading (deduplicated), every rejected payload with the
reason (nothing is lost silently), inspections, the alert episodes and duties
as they stand, and the engine's snapshot so a restarted service continues
where it stopped.

Dedupe: a reading is identified by (site, sensor, event time), and also by
(site, sensor, seq) when the station sent a sequence number — the edge agent
resends after a lost PUBACK, and QoS 1 may deliver twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from analytics.events import Inspection, SensorReading
from siltwatch.schema import Alert, Duty

SCHEMA = """
CREATE TABLE IF NOT EXISTS readings (
    site TEXT NOT NULL, station TEXT NOT NULL, sensor TEXT NOT NULL,
    t INTEGER NOT NULL, seq INTEGER, value REAL NOT NULL, flags TEXT NOT NULL DEFAULT '',
    received_at INTEGER NOT NULL,
    PRIMARY KEY (site, sensor, t)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS readings_seq ON readings (site, sensor, seq) WHERE seq IS NOT NULL;
CREATE TABLE IF NOT EXISTS rejections (
    id INTEGER PRIMARY KEY, received_at INTEGER NOT NULL, topic TEXT NOT NULL,
    reason TEXT NOT NULL, payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS inspections (
    site TEXT NOT NULL, t INTEGER NOT NULL, inspector TEXT NOT NULL, duty TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (site, t, inspector, duty)
);
CREATE TABLE IF NOT EXISTS alerts (
    site TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, subject TEXT NOT NULL,
    severity TEXT NOT NULL, opened_at TEXT NOT NULL, resolved_at TEXT, body TEXT NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE TABLE IF NOT EXISTS duties (
    site TEXT NOT NULL, id TEXT NOT NULL, reason TEXT NOT NULL, created_at TEXT NOT NULL,
    due_at TEXT NOT NULL, completed_at TEXT, body TEXT NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE TABLE IF NOT EXISTS snapshots (
    site TEXT PRIMARY KEY, taken_at INTEGER NOT NULL, blob BLOB NOT NULL
);
"""


class SqliteStore:
    """One SQLite file shared by the ingest service, the dashboards and reports."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def add_readings(
        self, site: str, rows: Iterable[tuple[str, SensorReading]], received_at: int
    ) -> list[SensorReading]:
        """Store (station, reading) pairs; return the ones that were new (duplicates are ignored)."""
        new: list[SensorReading] = []
        with self.db:
            for station, r in rows:
                cur = self.db.execute(
                    "INSERT OR IGNORE INTO readings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        site,
                        station,
                        r.sensor,
                        r.t,
                        r.seq,
                        r.value,
                        ",".join(sorted(r.flags)),
                        received_at,
                    ),
                )
                if cur.rowcount:
                    new.append(r)
        return new

    def add_rejection(self, topic: str, reason: str, payload: bytes, received_at: int) -> None:
        text = payload.decode("utf-8", errors="replace")[:10_000]
        with self.db:
            self.db.execute(
                "INSERT INTO rejections (received_at, topic, reason, payload) VALUES (?, ?, ?, ?)",
                (received_at, topic, reason, text),
            )

    def rejections(self) -> list[tuple[str, str]]:
        return [
            (str(t), str(r))
            for t, r in self.db.execute("SELECT topic, reason FROM rejections ORDER BY id")
        ]

    def add_inspection(self, site: str, ins: Inspection) -> bool:
        with self.db:
            cur = self.db.execute(
                "INSERT OR IGNORE INTO inspections VALUES (?, ?, ?, ?)",
                (site, ins.t, ins.inspector, ins.duty or ""),
            )
        return bool(cur.rowcount)

    def save_alert(self, site: str, alert: Alert) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    site,
                    alert.id,
                    alert.kind,
                    alert.subject,
                    alert.severity,
                    alert.opened_at.isoformat(),
                    None if alert.resolved_at is None else alert.resolved_at.isoformat(),
                    alert.model_dump_json(),
                ),
            )

    def save_duty(self, site: str, duty: Duty) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO duties VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    site,
                    duty.id,
                    duty.reason,
                    duty.created_at.isoformat(),
                    duty.due_at.isoformat(),
                    None if duty.completed_at is None else duty.completed_at.isoformat(),
                    duty.model_dump_json(),
                ),
            )

    def alerts(self, site: str) -> list[Alert]:
        rows = self.db.execute(
            "SELECT body FROM alerts WHERE site = ? ORDER BY opened_at, id", (site,)
        )
        return [Alert.model_validate(json.loads(body)) for (body,) in rows]

    def duties(self, site: str) -> list[Duty]:
        rows = self.db.execute(
            "SELECT body FROM duties WHERE site = ? ORDER BY created_at, id", (site,)
        )
        return [Duty.model_validate(json.loads(body)) for (body,) in rows]

    def save_snapshot(self, site: str, blob: bytes, taken_at: int) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?)", (site, taken_at, blob)
            )

    def load_snapshot(self, site: str) -> bytes | None:
        row = self.db.execute("SELECT blob FROM snapshots WHERE site = ?", (site,)).fetchone()
        return None if row is None else bytes(row[0])

    def reading_count(self, site: str, sensor: str | None = None) -> int:
        if sensor is None:
            row = self.db.execute(
                "SELECT count(*) FROM readings WHERE site = ?", (site,)
            ).fetchone()
        else:
            row = self.db.execute(
                "SELECT count(*) FROM readings WHERE site = ? AND sensor = ?", (site, sensor)
            ).fetchone()
        return int(row[0])

    def readings(self, site: str, sensor: str) -> list[SensorReading]:
        rows = self.db.execute(
            "SELECT sensor, t, value, seq, flags FROM readings WHERE site = ? AND sensor = ? ORDER BY t",
            (site, sensor),
        )
        return [
            SensorReading(
                s,
                int(t),
                float(v),
                None if q is None else int(q),
                frozenset(f.split(",")) if f else frozenset(),
            )
            for s, t, v, q, f in rows
        ]
