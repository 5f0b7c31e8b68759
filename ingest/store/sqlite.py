"""The SQLite store: the embedded default, one file, WAL mode — and the truth.

design.md: "the store is the truth; engine state is a cache". It keeps every
accepted reading (deduplicated), every rejected payload with the reason
(nothing is lost silently), inspections, the stations' statuses, the site
log, the alert episodes and duties as they stand, and the engine's snapshots. The live
service commits a reading here *before* it acknowledges the MQTT message, so
a reading the broker handed over is either stored or will be delivered again.

Arrival order is kept too (a reading's id, ``inspections.id``,
``statuses.id``, ``site_log.id`` grow with every insert; the readings' ids are
counted in arrival spans, ingest/store/queries.py): a snapshot records how far it had
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

The schema and every query live in ingest/store/queries.py, shared with the
PostgreSQL store (ingest/store/postgres.py); this module is what is SQLite's own:
the file, its migrations, the lock file that names the one writer.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Literal

from ingest.store.queries import (
    ADDED_COLUMNS,
    READINGS_VIEW,
    SCHEMA,
    SCHEMA_VERSION,
    SNAPSHOT_SPACING_MS,
    SNAPSHOTS_KEPT,
    V7_READINGS,
    Marks,
    SnapshotRow,
    SqlStore,
    StoredAlert,
    StoreError,
)

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "SNAPSHOTS_KEPT",
    "SNAPSHOT_SPACING_MS",
    "Marks",
    "SnapshotRow",
    "SqlStore",
    "SqliteStore",
    "StoreError",
    "StoredAlert",
]


def _connect(path: Path) -> sqlite3.Connection:
    try:
        # A reader waits for the live writer's commit instead of failing at once.
        db = sqlite3.connect(path, check_same_thread=False, timeout=30.0)
        db.execute("PRAGMA journal_mode=WAL")
        return db
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: is not a usable siltwatch SQLite store ({exc})") from None


class SqliteStore(SqlStore):
    """One SQLite file shared by the ingest service, the dashboards and reports.

    ``synchronous="FULL"`` (the live service) makes a commit survive a power
    cut, not only a killed process; a group commit makes that cheap.
    """

    def __init__(
        self, path: Path | str, *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    ) -> None:
        self.path = Path(path)
        self.where = str(self.path)
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
        store: SqliteStore = cls.__new__(cls)
        store.path, store.db, store._lock_fd = path, db, None
        store.where = str(path)
        return store

    def _migrate(self) -> None:
        """Create the schema, or bring a store written by an older siltwatch up to date.

        Version 1 tables are rebuilt (they lacked arrival order); from version 2
        on an upgrade only adds (3: the statuses table, ``snapshots.status_mark``;
        4: the site_log table, ``snapshots.site_log_mark``, the inspections'
        record columns; 5: station_clocks, filled once from the readings; 6: seq_watch; 7: the field desk's tables and inspections.findings), so the file is upgraded in place and its rows, ids and
        snapshots stay as they were. 8 adds reading_hours, filled once from the readings
        (ingest/store/summaries.py). 9 converts the readings table into the compact tables
        (ingest/store/queries.py ``SqlStore._compact_readings``), keeping every reading and
        its id, in the same transaction as the steps before it; it runs before 8's fill,
        which then reads the compact tables.
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
                self.db.executescript(V7_READINGS + SCHEMA)
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
            for table, column, declaration in ADDED_COLUMNS:
                cols = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}
                if column not in cols:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            kind = self.db.execute(
                "SELECT type FROM sqlite_master WHERE name = 'readings'"
            ).fetchone()
            if kind is not None and kind[0] == "table":
                # 9 (before 8's fill, which then reads the compact tables: the v7
                # table's text rows are read once, by the conversion)
                self._compact_readings()
            self.db.execute(READINGS_VIEW)
            if version < 5:
                self._fill_station_clocks()
            if version < 8:
                self._fill_summaries()  # 8: reading_hours, kept with the readings from now on
        self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.db.commit()

    def close(self) -> None:
        self.db.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # --- one writer -------------------------------------------------------------

    def claim_writer(self, who: str, *, claim: str | None = None) -> None:
        """Make this process the store's only live writer, or say who already is.

        An advisory lock on ``FILE.lock`` (released by the OS when the process
        dies, even by kill -9), holding a line that names the owner. A SQLite
        file has one writer whatever it serves, so ``claim`` changes nothing here.
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

    # --- transactions and queries ----------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``with store.transaction():`` groups writes into one commit (the group commit)."""
        try:
            with self.db:
                yield self.db
        except BaseException:
            self._forget_names()  # ids given inside it are gone with it
            raise

    def _execute(self, sql: str, args: Sequence[object] = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, args)

    def _write_samples(self, rows: Sequence[tuple[object, ...]]) -> tuple[int, int]:
        """A bulk import's new readings: one ``executemany`` (its loop is in C), the ids
        numbered after the newest stored one as the multi-row insert numbers them
        (``SqlStore._SAMPLE_ID_SQL``; the one writer holds the store)."""
        assert self._SAMPLE_ID_SQL is not None
        newest = int(self.db.execute(self._SAMPLE_ID_SQL).fetchone()[0])
        self.db.executemany(
            "INSERT INTO samples (series, station, t, seq, value, flags, received_at, id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row, newest + n) for n, row in enumerate(rows, start=1)],
        )
        return newest + 1, newest + len(rows)

    def _own_commit(self) -> AbstractContextManager[sqlite3.Connection]:
        """A commit on exit (and, nested inside :meth:`transaction`, of what the outer block
        wrote so far: sqlite3's rule)."""
        return self.transaction()
