"""The SQLite store: the embedded default, one file, WAL mode — and the truth.

design.md: "the store is the truth; engine state is a cache". It keeps every
accepted reading (deduplicated), every rejected payload with the reason
(nothing is lost silently), inspections, the stations' statuses, the site
log, the alert episodes and duties as they stand, and the engine's snapshots. The live
service commits a reading here *before* it acknowledges the MQTT message, so
a reading the broker handed over is either stored or will be delivered again.

Arrival order is kept too (``readings.id``, ``inspections.id``,
``statuses.id``, ``site_log.id`` grow with every insert): a snapshot records how far it had
read each (its *marks*), so a restart restores the snapshot and replays, in
event-time order, everything dated after what it had processed; and anything
stored after a snapshot but dated before what it had processed is found
through the marks and the history rebuilt in order from an older snapshot.

Dedupe: a reading is identified by (site, sensor, event time). The sequence
number is kept as a record, not as a key: an edge station whose outbox was
reset reuses sequence numbers, and those new readings must not be dropped as
duplicates (the same reading resent still has the same time).

Station statuses: a station's retained status is delivered again whenever
the service reconnects, so a status equal to the latest stored one of its
station is the same message, not news (:meth:`SqliteStore.insert_status`).

Site log: an entry is what a person recorded; the same entry again (same time,
event, area, person and detail: a QoS 1 message delivered twice, a form sent
twice) is a duplicate (:meth:`SqliteStore.insert_site_log`).

Snapshots: several per site, spaced in event time, so a late reading rolls
the engine back to the newest snapshot before it rather than to the start.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from analytics.events import (
    STATION_HEALTH_FIELDS,
    Inspection,
    SensorReading,
    SiteLogEntry,
    StationReport,
)
from siltwatch.schema import Alert, Duty

# 2: arrival order (ids) and snapshot marks; 3: station statuses (additive: a v2 file
# gains the statuses table and snapshots.status_mark in place); 4: the site log and the
# inspection record fields (additive: the site_log table, snapshots.site_log_mark and
# the inspections' record columns are added in place).
SCHEMA_VERSION = 4

SCHEMA = """
CREATE TABLE IF NOT EXISTS readings (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, station TEXT NOT NULL, sensor TEXT NOT NULL,
    t INTEGER NOT NULL, seq INTEGER, value REAL NOT NULL, flags TEXT NOT NULL DEFAULT '',
    received_at INTEGER NOT NULL,
    UNIQUE (site, sensor, t)
);
CREATE INDEX IF NOT EXISTS readings_site_t ON readings (site, t);
CREATE TABLE IF NOT EXISTS rejections (
    id INTEGER PRIMARY KEY, received_at INTEGER NOT NULL, topic TEXT NOT NULL,
    reason TEXT NOT NULL, payload TEXT NOT NULL, site TEXT
);
CREATE TABLE IF NOT EXISTS inspections (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, t INTEGER NOT NULL, inspector TEXT NOT NULL, duty TEXT NOT NULL DEFAULT '',
    received_at INTEGER NOT NULL DEFAULT 0,
    UNIQUE (site, t, inspector, duty)
);
CREATE TABLE IF NOT EXISTS alerts (
    site TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, subject TEXT NOT NULL,
    severity TEXT NOT NULL, opened_at TEXT NOT NULL, resolved_at TEXT, body TEXT NOT NULL,
    late INTEGER NOT NULL DEFAULT 0, withdrawn INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (site, id)
);
CREATE TABLE IF NOT EXISTS duties (
    site TEXT NOT NULL, id TEXT NOT NULL, reason TEXT NOT NULL, created_at TEXT NOT NULL,
    due_at TEXT NOT NULL, completed_at TEXT, body TEXT NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE TABLE IF NOT EXISTS snapshots (
    site TEXT NOT NULL, processed_to INTEGER NOT NULL, reading_mark INTEGER NOT NULL,
    inspection_mark INTEGER NOT NULL, taken_at INTEGER NOT NULL, blob BLOB NOT NULL,
    status_mark INTEGER NOT NULL DEFAULT 0, site_log_mark INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (site, processed_to)
);
CREATE TABLE IF NOT EXISTS statuses (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, station TEXT NOT NULL, t INTEGER NOT NULL,
    received_at INTEGER NOT NULL, state TEXT NOT NULL, health TEXT NOT NULL DEFAULT '{}',
    timed INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS statuses_site_t ON statuses (site, t);
CREATE INDEX IF NOT EXISTS statuses_site_station ON statuses (site, station, id);
CREATE TABLE IF NOT EXISTS site_log (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, t INTEGER NOT NULL, event TEXT NOT NULL, area TEXT NOT NULL DEFAULT '',
    who TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '', received_at INTEGER NOT NULL,
    UNIQUE (site, t, event, area, who, detail)
);
CREATE INDEX IF NOT EXISTS site_log_site_t ON site_log (site, t);
"""

# Columns added in place to tables an older siltwatch wrote: (table, column, declaration).
_ADDED_COLUMNS = (
    ("snapshots", "status_mark", "INTEGER NOT NULL DEFAULT 0"),  # 3
    ("snapshots", "site_log_mark", "INTEGER NOT NULL DEFAULT 0"),  # 4
    *(("inspections", name, "TEXT") for name in ("affiliation", "address", "phone")),  # 4
    ("inspections", "signed", "INTEGER"),  # 4
    *(("inspections", name, "TEXT") for name in ("deviations", "corrective_actions")),  # 4
)
_INSPECTION_COLUMNS = (
    "t, inspector, duty, affiliation, address, phone, signed, deviations, corrective_actions"
)

# Readings whose time cannot be trusted never set a station's progress (analytics/engine.py).
_TRUSTED_TIME_SQL = "flags NOT LIKE '%clock_unsynced%' AND flags NOT LIKE '%clock_ahead%'"

SNAPSHOT_SPACING_MS = 6 * 3_600_000  # keep one snapshot per 6 h of event time ...
SNAPSHOTS_KEPT = 40  # ... up to ten days back, plus the newest


class StoreError(Exception):
    """The store cannot be used; the message names the file and says why."""


@dataclass(frozen=True)
class SnapshotRow:
    """One stored engine snapshot and how far it had read the store (the ids of its marks)."""

    processed_to: int | None
    reading_mark: int
    inspection_mark: int
    taken_at: int
    blob: bytes
    status_mark: int = 0
    site_log_mark: int = 0


Marks = tuple[int, int, int, int]
"""The newest reading, inspection, status and site-log ids: how far a snapshot had read
the store."""


@dataclass(frozen=True)
class StoredAlert:
    """What the store knows of an alert episode, to tell a change from a repeat."""

    alert: Alert
    late: bool
    withdrawn: bool


def _connect(path: Path) -> sqlite3.Connection:
    try:
        # A reader waits for the live writer's commit instead of failing at once.
        db = sqlite3.connect(path, check_same_thread=False, timeout=30.0)
        db.execute("PRAGMA journal_mode=WAL")
        return db
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: is not a usable siltwatch SQLite store ({exc})") from None


class SqliteStore:
    """One SQLite file shared by the ingest service, the dashboards and reports.

    ``synchronous="FULL"`` (the live service) makes a commit survive a power
    cut, not only a killed process; a group commit makes that cheap.
    """

    def __init__(
        self, path: Path | str, *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = _connect(self.path)
        self._lock_fd: int | None = None
        try:
            self.db.execute(f"PRAGMA synchronous={synchronous}")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise StoreError(
                f"{self.path}: is not a usable siltwatch SQLite store ({exc})"
            ) from None

    @classmethod
    def open_read_only(cls, path: Path | str) -> SqliteStore:
        """The store as a reader that cannot write (exports next to a running ``serve``).

        Opened ``mode=ro``: it never creates the file or its folder, never
        migrates, never sets the journal mode, so the live writer sees nothing.
        A store of another schema version is refused rather than read wrongly;
        ``serve`` (or any writer) upgrades it in place.
        """
        path = Path(path)
        if not path.is_file():
            raise StoreError(f"{path}: no such store (the --db of siltwatch serve)")
        try:
            db = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro",
                uri=True,
                check_same_thread=False,
                timeout=30.0,
            )
            (version,) = db.execute("PRAGMA user_version").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: is not a usable siltwatch SQLite store ({exc})") from None
        if version != SCHEMA_VERSION:
            db.close()
            found = "is not a siltwatch store" if version == 0 else f"has store schema v{version}"
            raise StoreError(
                f"{path}: {found}; this siltwatch reads schema v{SCHEMA_VERSION} "
                "(run 'siltwatch serve' on an older store once to upgrade it)"
            )
        store = cls.__new__(cls)
        store.path, store.db, store._lock_fd = path, db, None
        return store

    def _migrate(self) -> None:
        """Create the schema, or bring a store written by an older siltwatch up to date.

        Version 1 tables are rebuilt (they lacked arrival order); from version 2
        on an upgrade only adds (3: the statuses table, ``snapshots.status_mark``;
        4: the site_log table, ``snapshots.site_log_mark``, the inspections'
        record columns), so the file is upgraded in place and its rows, ids and
        snapshots stay as they were.
        """
        (version,) = self.db.execute("PRAGMA user_version").fetchone()
        if version == SCHEMA_VERSION:
            return  # readers (dashboards, reports, tests) never write
        tables = {
            r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if version < 2 and "readings" in tables:
            with self.db:
                for table in ("readings", "inspections", "snapshots"):
                    self.db.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
                self.db.execute("DROP INDEX IF EXISTS readings_seq")
                self.db.executescript(SCHEMA)
                self.db.execute(
                    "INSERT INTO readings (site, station, sensor, t, seq, value, flags, received_at) "
                    "SELECT site, station, sensor, t, seq, value, flags, received_at "
                    "FROM old_readings ORDER BY received_at, t"
                )
                self.db.execute(
                    "INSERT INTO inspections (site, t, inspector, duty) "
                    "SELECT site, t, inspector, duty FROM old_inspections ORDER BY t"
                )
                for column in ("late", "withdrawn"):
                    cols = {r[1] for r in self.db.execute("PRAGMA table_info(alerts)")}
                    if column not in cols:
                        self.db.execute(
                            f"ALTER TABLE alerts ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0"
                        )
                cols = {r[1] for r in self.db.execute("PRAGMA table_info(rejections)")}
                if "site" not in cols:
                    self.db.execute("ALTER TABLE rejections ADD COLUMN site TEXT")
                for table in ("readings", "inspections", "snapshots"):
                    # Old snapshots were pickles: never loaded, so simply dropped.
                    self.db.execute(f"DROP TABLE old_{table}")
        else:
            self.db.executescript(SCHEMA)  # a new file; for an older one, the new tables
        with self.db:
            for table, column, declaration in _ADDED_COLUMNS:
                cols = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}
                if column not in cols:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.db.commit()

    def close(self) -> None:
        self.db.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # --- one writer -------------------------------------------------------------

    def claim_writer(self, who: str) -> None:
        """Make this process the store's only live writer, or say who already is.

        An advisory lock on ``FILE.lock`` (released by the OS when the process
        dies, even by kill -9), holding a line that names the owner.
        """
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 500).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StoreError(f"{self.path}: already served by {holder}") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{who} (pid {os.getpid()} on {socket.gethostname()})\n".encode())
        self._lock_fd = fd

    # --- writes -----------------------------------------------------------------

    def transaction(self) -> sqlite3.Connection:
        """``with store.transaction():`` groups writes into one commit (the group commit)."""
        return self.db

    def insert_readings(
        self, site: str, rows: Iterable[tuple[str, SensorReading]], received_at: int
    ) -> list[SensorReading]:
        """Store (station, reading) pairs inside the caller's transaction; return the new ones."""
        new: list[SensorReading] = []
        execute = self.db.execute
        for station, r in rows:
            cur = execute(
                "INSERT OR IGNORE INTO readings "
                "(site, station, sensor, t, seq, value, flags, received_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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

    def add_readings(
        self, site: str, rows: Iterable[tuple[str, SensorReading]], received_at: int
    ) -> list[SensorReading]:
        """Store (station, reading) pairs in their own commit; return the ones that were new."""
        with self.db:
            return self.insert_readings(site, rows, received_at)

    def insert_rejection(
        self, topic: str, reason: str, payload: bytes, received_at: int, site: str | None = None
    ) -> None:
        text = payload[:10_000].decode("utf-8", errors="replace")
        self.db.execute(
            "INSERT INTO rejections (received_at, topic, reason, payload, site) "
            "VALUES (?, ?, ?, ?, ?)",
            (received_at, topic, reason, text, site),
        )

    def add_rejection(
        self, topic: str, reason: str, payload: bytes, received_at: int, site: str | None = None
    ) -> None:
        with self.db:
            self.insert_rejection(topic, reason, payload, received_at, site)

    def rejections(self) -> list[tuple[str, str]]:
        return [
            (str(t), str(r))
            for t, r in self.db.execute("SELECT topic, reason FROM rejections ORDER BY id")
        ]

    def rejection_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM rejections").fetchone()[0])

    def insert_inspection(self, site: str, ins: Inspection, received_at: int = 0) -> bool:
        """Store an inspection inside the caller's transaction; False for a duplicate
        (the same time, inspector and duty)."""
        cur = self.db.execute(
            f"INSERT OR IGNORE INTO inspections (site, {_INSPECTION_COLUMNS}, received_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                site,
                ins.t,
                ins.inspector,
                ins.duty or "",
                ins.affiliation,
                ins.address,
                ins.phone,
                None if ins.signed is None else int(ins.signed),
                ins.deviations,
                ins.corrective_actions,
                received_at,
            ),
        )
        return bool(cur.rowcount)

    def add_inspection(self, site: str, ins: Inspection, received_at: int = 0) -> bool:
        with self.db:
            return self.insert_inspection(site, ins, received_at)

    def insert_status(self, site: str, report: StationReport, received_at: int) -> bool:
        """Store a station's status inside the caller's transaction; False for a duplicate.

        A retained status is delivered again on every reconnect (and a QoS 1
        message after a crash): the same message, not news. So a status equal to
        the latest stored status of its station is a duplicate — equal in
        (t, state, health) when the station gave the time; in (state, health)
        when it did not (a last will's ``t`` is its arrival, which differs with
        every redelivery). The same report again after a different one is a
        change of state, and stored.
        """
        health = _health_text(report)
        last = self.db.execute(
            "SELECT t, state, health, timed FROM statuses WHERE site = ? AND station = ? "
            "ORDER BY id DESC LIMIT 1",
            (site, report.station),
        ).fetchone()
        if last is not None:
            t, state, stored_health, timed = last
            if (
                state == report.state
                and stored_health == health
                and bool(timed) == report.timed
                and (not report.timed or int(t) == report.t)
            ):
                return False
        self.db.execute(
            "INSERT INTO statuses (site, station, t, received_at, state, health, timed) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (site, report.station, report.t, received_at, report.state, health, int(report.timed)),
        )
        return True

    def add_status(self, site: str, report: StationReport, received_at: int) -> bool:
        """:meth:`insert_status` in its own commit."""
        with self.db:
            return self.insert_status(site, report, received_at)

    def insert_site_log(self, site: str, entry: SiteLogEntry, received_at: int) -> bool:
        """Store a site-log entry inside the caller's transaction; False for a duplicate.

        A duplicate is the same entry exactly (time, event, area, who, detail): a
        QoS 1 message delivered again, a form sent twice. The same event in the
        same area at another time, or by another person, is another entry.
        """
        cur = self.db.execute(
            "INSERT OR IGNORE INTO site_log (site, t, event, area, who, detail, received_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                site,
                entry.t,
                entry.event,
                entry.area or "",
                entry.by,
                entry.detail,
                received_at,
            ),
        )
        return bool(cur.rowcount)

    def add_site_log(self, site: str, entry: SiteLogEntry, received_at: int) -> bool:
        """:meth:`insert_site_log` in its own commit."""
        with self.db:
            return self.insert_site_log(site, entry, received_at)

    def save_alert(self, site: str, alert: Alert, *, late: bool = False) -> None:
        """Write an episode as it now stands (``late``: it was found only when late data came)."""
        with self.db:
            self.db.execute(
                "INSERT INTO alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0) "
                "ON CONFLICT (site, id) DO UPDATE SET severity = excluded.severity, "
                "resolved_at = excluded.resolved_at, body = excluded.body, "
                "late = max(alerts.late, excluded.late), withdrawn = 0",
                (
                    site,
                    alert.id,
                    alert.kind,
                    alert.subject,
                    alert.severity,
                    alert.opened_at.isoformat(),
                    None if alert.resolved_at is None else alert.resolved_at.isoformat(),
                    alert.model_dump_json(),
                    int(late),
                ),
            )

    def withdraw_alert(self, site: str, alert: Alert) -> None:
        """Mark an episode that late data disproved (kept, for the record of what was sent)."""
        with self.db:
            self.db.execute(
                "UPDATE alerts SET withdrawn = 1, body = ? WHERE site = ? AND id = ?",
                (alert.model_dump_json(), site, alert.id),
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

    # --- reads ------------------------------------------------------------------

    def alerts(self, site: str) -> list[Alert]:
        """The site's alert episodes (without withdrawn ones), in ALERTS.jsonl order."""
        rows = self.db.execute(
            "SELECT body FROM alerts WHERE site = ? AND withdrawn = 0 ORDER BY opened_at, id",
            (site,),
        )
        return [Alert.model_validate(json.loads(body)) for (body,) in rows]

    def stored_alert(self, site: str, alert_id: str) -> StoredAlert | None:
        row = self.db.execute(
            "SELECT body, late, withdrawn FROM alerts WHERE site = ? AND id = ?", (site, alert_id)
        ).fetchone()
        if row is None:
            return None
        return StoredAlert(Alert.model_validate(json.loads(row[0])), bool(row[1]), bool(row[2]))

    def alerts_opened_after(self, site: str, opened_after_iso: str) -> list[StoredAlert]:
        """Episodes (withdrawn or not) opened strictly after a time, for a rebuild to check."""
        rows = self.db.execute(
            "SELECT body, late, withdrawn FROM alerts WHERE site = ? AND opened_at > ?",
            (site, opened_after_iso),
        )
        return [
            StoredAlert(Alert.model_validate(json.loads(b)), bool(lt), bool(w)) for b, lt, w in rows
        ]

    def alert_records(self, site: str) -> list[StoredAlert]:
        """Every episode with its late and withdrawn marks, in ALERTS.jsonl order (exports)."""
        rows = self.db.execute(
            "SELECT body, late, withdrawn FROM alerts WHERE site = ? ORDER BY opened_at, id",
            (site,),
        )
        return [
            StoredAlert(Alert.model_validate(json.loads(b)), bool(lt), bool(w)) for b, lt, w in rows
        ]

    def late_alert_ids(self, site: str) -> set[str]:
        rows = self.db.execute("SELECT id FROM alerts WHERE site = ? AND late = 1", (site,))
        return {str(r[0]) for r in rows}

    def duties(self, site: str) -> list[Duty]:
        rows = self.db.execute(
            "SELECT body FROM duties WHERE site = ? ORDER BY created_at, id", (site,)
        )
        return [Duty.model_validate(json.loads(body)) for (body,) in rows]

    def open_alerts(self, site: str) -> list[Alert]:
        """Episodes not yet resolved (the daily digest, the console's overview)."""
        return [a for a in self.alerts(site) if a.resolved_at is None]

    def duties_due(self, site: str, until: datetime) -> list[Duty]:
        """Open duties due before ``until``, overdue ones included, soonest first."""
        due = [d for d in self.duties(site) if d.completed_at is None and d.due_at < until]
        return sorted(due, key=lambda d: d.due_at)

    def stored_duty(self, site: str, duty_id: str) -> Duty | None:
        row = self.db.execute(
            "SELECT body FROM duties WHERE site = ? AND id = ?", (site, duty_id)
        ).fetchone()
        return None if row is None else Duty.model_validate(json.loads(row[0]))

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
            "SELECT sensor, t, value, seq, flags FROM readings WHERE site = ? AND sensor = ? "
            "ORDER BY t",
            (site, sensor),
        )
        return [_reading(row) for row in rows]

    def readings_after(
        self, site: str, after: int | None, chunk: int = 20_000
    ) -> Iterator[list[SensorReading]]:
        """Every reading with event time after ``after``, in (time, sensor) order, in chunks."""
        last_t = -(2**62) if after is None else after
        last_sensor = "\uffff"
        while True:
            rows = self.db.execute(
                "SELECT sensor, t, value, seq, flags FROM readings WHERE site = ? "
                "AND (t > ? OR (t = ? AND sensor > ?)) ORDER BY t, sensor LIMIT ?",
                (site, last_t, last_t, last_sensor, chunk),
            ).fetchall()
            if not rows:
                return
            out = [_reading(row) for row in rows]
            yield out
            last_t, last_sensor = out[-1].t, out[-1].sensor

    def readings_between(
        self, site: str, start: int | None, end: int | None, chunk: int = 20_000
    ) -> Iterator[list[tuple[str, SensorReading]]]:
        """(station, reading) with event time in [start, end), in (time, sensor) order, in chunks.

        Each chunk is its own short query (resuming after the last row), so a long
        export holds no read transaction open against the live writer's WAL.
        """
        last_t = -(2**62) if start is None else start
        stop = 2**62 if end is None else end
        last_sensor = ""  # no sensor id sorts before it: the first query takes t == start
        while True:
            rows = self.db.execute(
                "SELECT station, sensor, t, value, seq, flags FROM readings WHERE site = ? "
                "AND t >= ? AND t < ? AND (t > ? OR sensor > ?) ORDER BY t, sensor LIMIT ?",
                (site, last_t, stop, last_t, last_sensor, chunk),
            ).fetchall()
            if not rows:
                return
            out = [(str(row[0]), _reading(row[1:])) for row in rows]
            yield out
            last_t, last_sensor = out[-1][1].t, out[-1][1].sensor

    def sites(self) -> list[str]:
        """Every site id the store holds anything of (readings, records, alerts, duties).

        Each table's index leads with the site, so the next site after one is a
        seek: a store of millions of readings answers in a few index lookups.
        """
        found: set[str] = set()
        for table in ("readings", "inspections", "site_log", "statuses", "alerts", "duties"):
            rows = self.db.execute(
                f"WITH RECURSIVE s(site) AS (SELECT min(site) FROM {table} UNION ALL "
                f"SELECT (SELECT min(site) FROM {table} WHERE site > s.site) FROM s "
                "WHERE s.site IS NOT NULL) SELECT site FROM s WHERE site IS NOT NULL"
            )
            found.update(str(r[0]) for r in rows)
        return sorted(found)

    def inspections_after(self, site: str, after: int | None) -> list[Inspection]:
        rows = self.db.execute(
            f"SELECT {_INSPECTION_COLUMNS} FROM inspections WHERE site = ? AND t > ? "
            "ORDER BY t, id",
            (site, -(2**62) if after is None else after),
        )
        return [_inspection(row) for row in rows]

    def site_log_after(self, site: str, after: int | None) -> list[SiteLogEntry]:
        """Every site-log entry with event time after ``after``, in (time, id) order.

        What a restart or rebuild replays after a snapshot, as
        :meth:`statuses_after`; entries stored after the snapshot but dated
        before it are caught by the marks (:meth:`earliest_stored_after`).
        """
        rows = self.db.execute(
            "SELECT t, event, area, who, detail FROM site_log WHERE site = ? AND t > ? "
            "ORDER BY t, id",
            (site, -(2**62) if after is None else after),
        )
        return [_site_log_entry(row) for row in rows]

    def site_log(self, site: str) -> list[SiteLogEntry]:
        """The site's whole log in event-time order (arrival order at one instant)."""
        return self.site_log_after(site, None)

    def statuses_after(self, site: str, after: int | None) -> list[StationReport]:
        """Every status with event time after ``after``, in (time, id) order.

        What a restart or rebuild replays after a snapshot, as
        :meth:`inspections_after`: by event time, not by id — a status stored
        before the snapshot but dated after what it had processed was still
        waiting in the engine's buffer, which a snapshot does not keep. Statuses
        stored after the snapshot but dated before it are caught by the marks
        (:meth:`earliest_stored_after`), which send the service to an older one.
        """
        rows = self.db.execute(
            "SELECT station, t, state, health, timed FROM statuses WHERE site = ? AND t > ? "
            "ORDER BY t, id",
            (site, -(2**62) if after is None else after),
        )
        return [_status(row) for row in rows]

    def statuses(
        self, site: str, station: str | None = None, after_id: int = 0
    ) -> list[tuple[int, int, StationReport]]:
        """(id, received_at, status) of the site's stored statuses in arrival (id) order."""
        query = (
            "SELECT id, received_at, station, t, state, health, timed FROM statuses "
            "WHERE site = ? AND id > ?"
        )
        args: tuple[object, ...] = (site, after_id)
        if station is not None:
            query += " AND station = ?"
            args += (station,)
        rows = self.db.execute(query + " ORDER BY id", args)
        return [(int(i), int(a), _status(rest)) for i, a, *rest in rows]

    def marks(self) -> Marks:
        """The newest reading, inspection, status and site-log ids: how far a snapshot has
        read the store."""
        r, i, s, g = (
            int(self.db.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0])
            for table in ("readings", "inspections", "statuses", "site_log")
        )
        return r, i, s, g

    def earliest_stored_after(
        self,
        site: str,
        reading_mark: int,
        inspection_mark: int,
        status_mark: int = 0,
        site_log_mark: int = 0,
    ) -> int | None:
        """The earliest event time among what was stored after the given marks."""
        r = self.db.execute(
            "SELECT min(t) FROM readings WHERE site = ? AND id > ? AND " + _TRUSTED_TIME_SQL,
            (site, reading_mark),
        ).fetchone()[0]
        i = self.db.execute(
            "SELECT min(t) FROM inspections WHERE site = ? AND id > ?", (site, inspection_mark)
        ).fetchone()[0]
        s = self.db.execute(
            "SELECT min(t) FROM statuses WHERE site = ? AND id > ?", (site, status_mark)
        ).fetchone()[0]
        g = self.db.execute(
            "SELECT min(t) FROM site_log WHERE site = ? AND id > ?", (site, site_log_mark)
        ).fetchone()[0]
        found = [int(v) for v in (r, i, s, g) if v is not None]
        return min(found) if found else None

    def station_clocks(self, site: str) -> list[tuple[str, int, int]]:
        """(station, latest trustworthy event time, latest arrival) of every station."""
        rows = self.db.execute(
            "SELECT station, max(t), max(received_at) FROM readings WHERE site = ? AND "
            + _TRUSTED_TIME_SQL
            + " GROUP BY station",
            (site,),
        )
        return [(str(s), int(t), int(a)) for s, t, a in rows]

    # --- snapshots --------------------------------------------------------------

    def save_snapshot(
        self,
        site: str,
        blob: bytes,
        taken_at: int,
        *,
        processed_to: int | None = None,
        marks: Marks | tuple[int, int, int] | tuple[int, int] = (0, 0, 0, 0),
    ) -> None:
        """Keep a snapshot; older ones are thinned to one per ``SNAPSHOT_SPACING_MS``.

        ``marks`` is :meth:`marks` as the snapshot was taken; a shorter tuple (what
        callers before statuses or the site log passed) counts none of those read.
        """
        key = -(2**62) if processed_to is None else processed_to
        status_mark = marks[2] if len(marks) > 2 else 0
        site_log_mark = marks[3] if len(marks) > 3 else 0
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO snapshots (site, processed_to, reading_mark, "
                "inspection_mark, taken_at, blob, status_mark, site_log_mark) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (site, key, marks[0], marks[1], taken_at, blob, status_mark, site_log_mark),
            )
            kept = [
                int(r[0])
                for r in self.db.execute(
                    "SELECT processed_to FROM snapshots WHERE site = ? ORDER BY processed_to DESC",
                    (site,),
                )
            ]
            keep: list[int] = []
            for t in kept:
                if not keep or (keep[-1] - t >= SNAPSHOT_SPACING_MS and len(keep) < SNAPSHOTS_KEPT):
                    keep.append(t)
            drop = [t for t in kept if t not in set(keep)]
            self.db.executemany(
                "DELETE FROM snapshots WHERE site = ? AND processed_to = ?",
                [(site, t) for t in drop],
            )

    def snapshots(self, site: str) -> list[SnapshotRow]:
        """Every kept snapshot of the site, newest first."""
        rows = self.db.execute(
            "SELECT processed_to, reading_mark, inspection_mark, taken_at, blob, status_mark, "
            "site_log_mark FROM snapshots WHERE site = ? ORDER BY processed_to DESC",
            (site,),
        )
        return [
            SnapshotRow(
                None if p == -(2**62) else int(p),
                int(rm),
                int(im),
                int(ta),
                bytes(b),
                int(sm),
                int(gm),
            )
            for p, rm, im, ta, b, sm, gm in rows
        ]

    def load_snapshot(self, site: str) -> bytes | None:
        """The newest snapshot's bytes (None without one)."""
        rows = self.snapshots(site)
        return rows[0].blob if rows else None

    def drop_snapshots_from(self, site: str, t: int) -> None:
        """Forget snapshots that processed past ``t``: late data made them wrong."""
        with self.db:
            self.db.execute("DELETE FROM snapshots WHERE site = ? AND processed_to >= ?", (site, t))

    def drop_snapshot(self, site: str, row: SnapshotRow) -> None:
        key = -(2**62) if row.processed_to is None else row.processed_to
        with self.db:
            self.db.execute(
                "DELETE FROM snapshots WHERE site = ? AND processed_to = ?", (site, key)
            )


def _reading(row: Sequence[object]) -> SensorReading:
    s, t, v, q, f = row
    return SensorReading(
        str(s),
        int(t),  # type: ignore[call-overload]
        float(v),  # type: ignore[arg-type]
        None if q is None else int(q),  # type: ignore[call-overload]
        frozenset(str(f).split(",")) if f else frozenset(),
    )


def _health_text(report: StationReport) -> str:
    """The reported health fields as canonical JSON (the same report gives the same text)."""
    return json.dumps(report.health(), sort_keys=True, separators=(",", ":"))


def _status(row: Sequence[object]) -> StationReport:
    station, t, state, health, timed = row
    fields = json.loads(str(health)) if health else {}
    if not isinstance(fields, dict):
        fields = {}
    return StationReport(
        str(station),
        int(t),  # type: ignore[call-overload]
        "online" if state == "online" else "offline",
        timed=bool(timed),
        **{k: v for k, v in fields.items() if k in STATION_HEALTH_FIELDS},
    )


def _inspection(row: Sequence[object]) -> Inspection:
    t, who, duty, affiliation, address, phone, signed, deviations, actions = row
    return Inspection(
        int(t),  # type: ignore[call-overload]
        str(who),
        str(duty) or None,
        affiliation=_text(affiliation),
        address=_text(address),
        phone=_text(phone),
        signed=None if signed is None else bool(signed),
        deviations=_text(deviations),
        corrective_actions=_text(actions),
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _site_log_entry(row: Sequence[object]) -> SiteLogEntry:
    t, event, area, who, detail = row
    return SiteLogEntry(
        int(t),  # type: ignore[call-overload]
        str(event),
        str(area) or None,
        str(who),
        str(detail),
    )
