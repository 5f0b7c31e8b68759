"""The store's queries, written once for SQLite and PostgreSQL.

design.md: "the store is the truth". What the store keeps and why (dedupe keys,
arrival order and snapshot marks, statuses, the site log, snapshots) is told in
ingest/store/sqlite.py; this module holds that schema and every query on it, so the
SQLite file (ingest/store/sqlite.py ``SqliteStore``) and the shared PostgreSQL database
(ingest/store/postgres.py ``PostgresStore``) answer the same questions the same way.

The SQL here is SQLite's spelling (``?`` placeholders, ``INSERT OR IGNORE``);
a store subclass runs it through :meth:`SqlStore._execute`, where PostgreSQL
translates it (ingest/store/postgres.py ``postgres_sql``). Everything else a
backend differs in (opening, migrating, the one-writer claim, transactions) is
the subclass's.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat
from typing import Any, Protocol

from analytics.batch_columns import ReadingColumns
from analytics.engine import UNTRUSTED_TIME
from analytics.events import (
    STATION_HEALTH_FIELDS,
    Inspection,
    SensorReading,
    SiteLogEntry,
    StationReport,
)
from ingest.gaps import LostRange, SensorWatch
from ingest.store.fieldbook import FIELD_SCHEMA, FieldRecords
from ingest.store.summaries import HOUR_MS, HOURS_SCHEMA, HourSummaries
from siltwatch.schema import Alert, Duty

# 2: arrival order (ids) and snapshot marks; 3: station statuses (additive: a v2 file
# gains the statuses table and snapshots.status_mark in place); 4: the site log and the
# inspection record fields (additive: the site_log table, snapshots.site_log_mark and
# the inspections' record columns are added in place); 5: data_gaps, and station_clocks
# kept with the readings (additive: the tables are created, station_clocks filled from the
# readings once, in place); 6: seq_watch, what the gap tracker knows of each sensor
# (additive: the table is created in place); 7: the field desk's records, photos and
# corrective actions and inspections.findings (additive: ingest/store/fieldbook.py's tables
# created, the column added, in place); 8: reading_hours, per-hour summaries kept with the
# readings (additive: the table is created and filled from the readings once, in place;
# ingest/store/summaries.py); 9: the compact readings (``series``, ``stations``,
# ``samples``, ``arrivals`` and the ``readings`` view: the v7 table converted in place by
# :meth:`SqlStore._compact_readings`, every reading kept with its id).
SCHEMA_VERSION = 9

# Rejection reasons that say only that the configuration does not know the message's
# station or sensor (ingest/decode.py): such messages are held, not lost.
HELD_REASONS: tuple[str, ...] = ("unknown station", "unknown sensor")

# The readings as schema v2 to v7 kept them: one row of text names per reading, its
# arrival order the rowid, two indexes (about 130 B a reading in SQLite, 230 B in
# PostgreSQL). What a v1 store is rebuilt into, and what :meth:`SqlStore._compact_readings`
# converts.
V7_READINGS = """
CREATE TABLE IF NOT EXISTS readings (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, station TEXT NOT NULL, sensor TEXT NOT NULL,
    t INTEGER NOT NULL, seq INTEGER, value REAL NOT NULL, flags TEXT NOT NULL DEFAULT '',
    received_at INTEGER NOT NULL,
    UNIQUE (site, sensor, t)
);
CREATE INDEX IF NOT EXISTS readings_site_t ON readings (site, t);
"""

# The readings, compact (schema v9; docs/scaling.md, "A year of one site"):
# - ``series`` names each (site, sensor) once with a small integer, ``stations`` each
#   (site, station): a reading carries two small ids instead of three strings. The
#   dedupe key stays (site, sensor, t), now (series, t).
# - ``samples`` is clustered on that key (SQLite: WITHOUT ROWID, so the key is the
#   table and no second copy of it exists): a sensor's history, a plot's window, a
#   duplicate check are one range of the key; the site's readings in time order are
#   a merge of its few series, read a window of time at a time.
# - flags are NULL when there are none (nearly always): no byte in SQLite, none in
#   PostgreSQL's row either (the null bitmap).
# - ``id`` keeps the arrival order (what ``readings.id`` was: the snapshot marks and
#   the catch-up after them). Instead of an index on it (about 20 B a reading),
#   ``arrivals`` keeps spans of ids per site, each with the times it covers and its
#   earliest trustworthy time (up to ``ARRIVAL_SPAN_READINGS`` readings, within
#   ``ARRIVAL_SPAN_SLACK_MS`` of each other): the newest mark is the last span's end,
#   and what was stored after a mark is whole spans plus one bounded range.
# - a reading's arrival time is NULL when it is its span's ``received_at`` (a bulk load,
#   an import, an outbox flush: thousands of readings that arrived at once), else its own.
# - the ``readings`` view (READINGS_VIEW) shows the v7 columns for people's queries
#   and tools (``sqlite3 -csv``); the store itself reads the tables.
# In PostgreSQL ``INT`` is 4 bytes (ids of series and stations); ids of readings come
# from the ``reading_ids`` sequence (ingest/store/postgres.py).
SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS series (
    id INTEGER PRIMARY KEY, site TEXT NOT NULL, sensor TEXT NOT NULL, UNIQUE (site, sensor)
);
CREATE TABLE IF NOT EXISTS stations (
    id INTEGER PRIMARY KEY, site TEXT NOT NULL, station TEXT NOT NULL, UNIQUE (site, station)
);
CREATE TABLE IF NOT EXISTS samples (
    series INT NOT NULL, station INT NOT NULL, t INTEGER NOT NULL, seq INTEGER,
    value REAL NOT NULL, flags TEXT, id INTEGER NOT NULL, received_at INTEGER,
    PRIMARY KEY (series, t)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS arrivals (
    site TEXT NOT NULL, first_id INTEGER NOT NULL, last_id INTEGER NOT NULL,
    lo_t INTEGER NOT NULL, hi_t INTEGER NOT NULL, trusted_t INTEGER NOT NULL,
    readings INTEGER NOT NULL, received_at INTEGER NOT NULL,
    PRIMARY KEY (site, first_id)
);
CREATE INDEX IF NOT EXISTS arrivals_last ON arrivals (last_id);
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
CREATE TABLE IF NOT EXISTS data_gaps (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, station TEXT NOT NULL, sensor TEXT NOT NULL,
    seq_from INTEGER NOT NULL, seq_to INTEGER NOT NULL, time_from INTEGER, time_to INTEGER,
    reason TEXT NOT NULL, recorded_at INTEGER NOT NULL,
    UNIQUE (site, sensor, seq_from)
);
CREATE TABLE IF NOT EXISTS seq_watch (
    site TEXT NOT NULL, station TEXT NOT NULL, sensor TEXT NOT NULL,
    high_seq INTEGER NOT NULL, high_t INTEGER NOT NULL, first_seq INTEGER NOT NULL,
    received INTEGER NOT NULL, lost INTEGER NOT NULL, open_gaps TEXT NOT NULL,
    PRIMARY KEY (site, station, sensor)
);
CREATE TABLE IF NOT EXISTS station_clocks (
    site TEXT NOT NULL, station TEXT NOT NULL, t INTEGER NOT NULL, received_at INTEGER NOT NULL,
    PRIMARY KEY (site, station)
);
"""
    + FIELD_SCHEMA
    + HOURS_SCHEMA
)

# The v7 readings' columns over the compact tables: created once the v7 table is gone.
READINGS_VIEW = """
CREATE VIEW IF NOT EXISTS readings AS
SELECT s.id AS id, r.site AS site, st.station AS station, r.sensor AS sensor, s.t AS t,
    s.seq AS seq, s.value AS value, coalesce(s.flags, '') AS flags,
    coalesce(s.received_at, (SELECT a.received_at FROM arrivals a WHERE a.site = r.site
        AND a.first_id <= s.id ORDER BY a.first_id DESC LIMIT 1)) AS received_at
FROM samples s JOIN series r ON r.id = s.series JOIN stations st ON st.id = s.station;
"""

# A span of ``arrivals`` grows while the next readings are few enough and near enough in
# time: the one span a mark can fall inside is then a bounded range of a few series.
ARRIVAL_SPAN_READINGS = 10_000
ARRIVAL_SPAN_SLACK_MS = 86_400_000
_NO_TRUSTED_T = 2**62  # a span without a trustworthy time (what min() of none would be)
# Readings of one arrival time that start a span of their own (a bulk load, an outbox flush;
# not a message of a few readings).
BULK_READINGS = 64

# Columns added in place to tables an older siltwatch wrote: (table, column, declaration).
ADDED_COLUMNS = (
    ("snapshots", "status_mark", "INTEGER NOT NULL DEFAULT 0"),  # 3
    ("snapshots", "site_log_mark", "INTEGER NOT NULL DEFAULT 0"),  # 4
    *(("inspections", name, "TEXT") for name in ("affiliation", "address", "phone")),  # 4
    ("inspections", "signed", "INTEGER"),  # 4
    *(("inspections", name, "TEXT") for name in ("deviations", "corrective_actions")),  # 4
    ("inspections", "findings", "TEXT NOT NULL DEFAULT ''"),  # 7: practices needing work
)
_INSPECTION_COLUMNS = (
    "t, inspector, duty, affiliation, address, phone, signed, deviations, corrective_actions, "
    "findings"
)

# Readings whose time cannot be trusted never set a station's progress (analytics/engine.py).
_TRUSTED_TIME_SQL = "flags NOT LIKE '%clock_unsynced%' AND flags NOT LIKE '%clock_ahead%'"
# The same of ``samples``, whose flags are NULL when there are none.
_TRUSTED_SAMPLE_SQL = (
    "(flags IS NULL OR (flags NOT LIKE '%clock_unsynced%' AND flags NOT LIKE '%clock_ahead%'))"
)


def _sensor_watch(row: Sequence[Any]) -> SensorWatch:
    """A ``seq_watch`` row as the gap tracker takes it up (its open gaps are JSON)."""
    station, sensor, high, high_t, first, received, lost, gaps = row
    opened = tuple((g[0], g[1], g[2], g[3], g[4], g[5]) for g in json.loads(gaps))
    return SensorWatch(
        str(station), str(sensor), int(high), int(high_t), int(first), int(received),
        int(lost), opened,
    )  # fmt: skip


SNAPSHOT_SPACING_MS = 6 * 3_600_000  # keep one snapshot per 6 h of event time ...
SNAPSHOTS_KEPT = 40  # ... up to ten days back, plus the newest


class StoreError(Exception):
    """The store cannot be used; the message names the file (or database) and says why."""


class StoreUnreachable(StoreError):
    """The store's connection is gone (the database restarted, the network cut): nothing
    more can be committed. The service stops without acknowledging what it holds (the
    broker keeps it for the next start) and leaves no snapshot; it does not mistake
    the outage for bad data (a rejection) or a bad engine (a rebuild)."""

    STOPPING = (
        "stopping without acknowledging what is in hand: the broker keeps it for the next "
        "start, which rebuilds from the store"
    )


class Fenced(StoreUnreachable):
    """This writer's claim on a site is older than the store's owner token (ingest/store/fence.py):
    another owner took the site over, so this one may write nothing more."""

    STOPPING = "stopping: another owner holds this site; nothing more is written or acknowledged"


# The owner token per site (created on the first claim, so no schema version changes):
# every commit of readings checks it in its own transaction.
_SITE_OWNER = (
    "CREATE TABLE IF NOT EXISTS site_owner "
    "(site TEXT PRIMARY KEY, token BIGINT NOT NULL, owner TEXT NOT NULL)"
)


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


class Cursor(Protocol):
    """What a query returns, in both drivers (sqlite3 and psycopg cursors)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class SqlStore(FieldRecords, HourSummaries, ABC):
    """Every read and write of the store, over a backend's :meth:`_execute`.

    ``insert_*`` methods write inside the caller's :meth:`transaction`;
    ``add_*``/``save_*``/``drop_*`` make their own commit (:meth:`_own_commit`).
    """

    where: str  # the store as messages name it: a file path, or a URL without its password

    @abstractmethod
    def _execute(self, sql: str, args: Sequence[object] = ()) -> Cursor:
        """Run one statement (SQLite spelling) and return its cursor."""

    @abstractmethod
    def _own_commit(self) -> AbstractContextManager[object]:
        """``with`` it: the writes inside are committed together (or not at all)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[object]:
        """``with store.transaction():`` groups writes into one commit (the group commit)."""

    @abstractmethod
    def claim_writer(self, who: str, *, claim: str | None = None) -> None:
        """Make this process the only live writer of ``claim`` (what it serves: a site, a
        partition; by default ``who``), or say who already is."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection and any writer claim."""

    # --- writes -----------------------------------------------------------------

    # Readings per multi-row INSERT: 8 host parameters each, 4,000 a statement, under
    # SQLite's limit (32,766 since 3.32; 999 before, where 124 rows would fit) and
    # PostgreSQL's 65,535. An outbox flush of a few thousand readings is then a handful
    # of statements, not one per reading (one network round trip each on PostgreSQL).
    READINGS_PER_INSERT = 500

    def insert_readings(
        self, site: str, rows: Iterable[tuple[str, SensorReading]], received_at: int
    ) -> list[SensorReading]:
        """Store (station, reading) pairs inside the caller's transaction; return the new ones.

        New means not yet stored under (site, sensor, t), in the order given; a reading
        twice in ``rows`` is stored and returned once, as it first came.
        """
        pending = rows if isinstance(rows, list) else list(rows)
        return self.insert_reading_groups(site, [(pending, received_at)])[0]

    def insert_reading_groups(
        self, site: str, groups: Sequence[tuple[Sequence[tuple[str, SensorReading]], int]]
    ) -> list[list[SensorReading]]:
        """Several messages' (station, reading) pairs, each group with its arrival time, in
        one go inside the caller's transaction; the new readings of each group, in order.

        The same answer as one :meth:`insert_readings` per group in turn (a reading in
        two groups is new in the first), but a group commit of many one-reading
        messages is a few multi-row statements instead of a statement (on PostgreSQL
        a network round trip) per reading: multi-row inserts of
        :attr:`READINGS_PER_INSERT`.
        """
        # The first of each key only: a statement then never meets its own row twice, and
        # each (sensor, t) it returns names exactly one reading of ``groups``.
        first: dict[tuple[str, int], tuple[str, SensorReading, int]] = {}
        for rows, received_at in groups:
            for station, r in rows:
                first.setdefault((r.sensor, r.t), (station, r, received_at))
        unique = list(first.values())
        stored: set[tuple[str, int]] = set()
        step = self.READINGS_PER_INSERT
        for start in range(0, len(unique), step):
            stored.update(self._insert_reading_rows(site, unique[start : start + step]))
        if stored:
            self._advance_clocks(site, [first[key] for key in stored])
            self._advance_summaries(site, [first[key] for key in stored])
        # RETURNING's row order is not promised (SQLite says so): the input sets the order,
        # and a key is new once, in the group that brought it first.
        out: list[list[SensorReading]] = []
        for rows, _ in groups:
            new: list[SensorReading] = []
            for _station, r in rows:
                key = (r.sensor, r.t)
                if key in stored and first[key][1] is r:
                    stored.discard(key)
                    new.append(r)
            out.append(new)
        return out

    # How a reading's arrival id is given: SQLite numbers the rows of each insert after
    # the newest stored id, read once by the statement itself (which holds the write
    # lock, so no other writer can take the same numbers); PostgreSQL's column default
    # takes it from a sequence (None here: the insert leaves the column out).
    _SAMPLE_ID_SQL: str | None = "SELECT coalesce(max(last_id), 0) AS newest FROM arrivals"

    # (table, site, name) -> id of ``series`` and ``stations``: ids never change once given,
    # so each is looked up once per store object (forgotten when a transaction fails, as
    # one created inside it is gone: :meth:`_forget_names`).
    _name_ids: dict[tuple[str, str, str], int]

    def _names(self) -> dict[tuple[str, str, str], int]:
        try:
            return self._name_ids
        except AttributeError:
            self._name_ids = {}
            return self._name_ids

    def _forget_names(self) -> None:
        """Drop the cached ids: a failed transaction may have taken new ones with it."""
        self._name_ids = {}
        self._span_arrivals = {}

    # Site -> the ``received_at`` of the site's newest arrival span as this store object
    # last wrote it: a hint for which arrival times to leave NULL (the span update checks it).
    _span_arrivals: dict[str, int]

    def _span_arrival(self, site: str) -> int | None:
        try:
            return self._span_arrivals.get(site)
        except AttributeError:
            self._span_arrivals = {}
            return None

    def _name_id(self, table: str, site: str, name: str) -> int | None:
        """The id of (site, sensor) in ``series`` or (site, station) in ``stations``; None
        when the store has no reading of it (nothing is created)."""
        key = (table, site, name)
        cache = self._names()
        if key not in cache:
            column = "sensor" if table == "series" else "station"
            row = self._execute(
                f"SELECT id FROM {table} WHERE site = ? AND {column} = ?", (site, name)
            ).fetchone()
            if row is None:
                return None
            cache[key] = int(row[0])
        return cache[key]

    def _name_ids_for(self, table: str, site: str, names: Iterable[str]) -> dict[str, int]:
        """The ids of these sensors (``series``) or stations (``stations``) of ``site``,
        given to the ones new to the store (inside the caller's transaction)."""
        cache = self._names()
        out: dict[str, int] = {}
        for name in dict.fromkeys(names):
            found = self._name_id(table, site, name)
            if found is None:
                column = "sensor" if table == "series" else "station"
                self._execute(
                    f"INSERT OR IGNORE INTO {table} (site, {column}) VALUES (?, ?)", (site, name)
                )
                found = self._name_id(table, site, name)
                assert found is not None, f"{table} ({site}, {name}) was just stored"
            out[name] = found
        cache.update(((table, site, n), i) for n, i in out.items())
        return out

    def _site_series(self, site: str) -> dict[int, str]:
        """Series id -> sensor of every sensor of ``site`` with a stored reading."""
        rows = self._execute("SELECT id, sensor FROM series WHERE site = ?", (site,))
        return {int(i): str(sensor) for i, sensor in rows}

    def _arrival_base(self, site: str, arrivals: set[int], count: int) -> int | None:
        """The arrival time that ``count`` readings arriving at ``arrivals`` leave NULL (the
        span's): the newest span's if some readings share it, else the one time of
        readings that all arrived at once (a new span's). (A few readings of one message
        do not start a span of their own.)"""
        base = self._span_arrival(site)
        if base in arrivals:
            return base
        return next(iter(arrivals)) if len(arrivals) == 1 and count >= BULK_READINGS else None

    def _insert_reading_rows(
        self, site: str, rows: Sequence[tuple[str, SensorReading, int]]
    ) -> list[tuple[str, int]]:
        """One multi-row insert of (station, reading, arrival) of distinct (sensor, t); the
        keys it stored.

        ``ON CONFLICT DO NOTHING`` (no target: the samples' one unique key) and
        ``RETURNING`` are spelled alike in SQLite (3.35 and later) and PostgreSQL, so
        ingest/store/postgres.py ``postgres_sql`` only changes the placeholders. The ids
        stored are added to the site's arrival spans (:meth:`_add_arrival_span`).
        """
        series = self._name_ids_for("series", site, (r.sensor for _, r, _at in rows))
        stations = self._name_ids_for("stations", site, (st for st, _r, _at in rows))
        id_sql = self._SAMPLE_ID_SQL
        base = self._arrival_base(site, {at for _st, _r, at in rows}, len(rows))
        args: list[object] = []
        given: dict[tuple[int, int], SensorReading] = {}
        for n, (station, r, received_at) in enumerate(rows, start=1):
            sid = series[r.sensor]
            given[(sid, r.t)] = r
            flags = _flags_text(r) if r.flags else None
            at = None if received_at == base else received_at
            args += (sid, stations[station], r.t, r.seq, r.value, flags, at)
            if id_sql is not None:
                args.append(n)
        columns = "series, station, t, seq, value, flags, received_at"
        if id_sql is None:
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(rows))
            sql = f"INSERT INTO samples ({columns}) VALUES {values}"
        else:  # VALUES' columns are column1..column8 (``WHERE true``: SQLite's upsert rule)
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows))
            sql = (
                f"INSERT INTO samples ({columns}, id) SELECT v.column1, v.column2, v.column3, "
                "v.column4, v.column5, v.column6, v.column7, b.newest + v.column8 "
                f"FROM ({id_sql}) AS b CROSS JOIN (VALUES {values}) AS v WHERE true"
            )
        cur = self._execute(sql + " ON CONFLICT DO NOTHING RETURNING series, t, id", args)
        returned = cur.fetchall()
        if not returned:
            return []
        new = [given[(int(sid), int(t))] for sid, t, _i in returned]
        keys = [(r.sensor, r.t) for r in new]
        trusted = [r.t for r in new if not UNTRUSTED_TIME & r.flags]
        ids = [int(i) for _s, _t, i in returned]
        times = [r.t for r in new]
        self._add_arrival_span(
            site, min(ids), max(ids), min(times), max(times),
            min(trusted, default=_NO_TRUSTED_T), len(new), base, rows[0][2],
        )  # fmt: skip
        return keys

    def _add_arrival_span(
        self, site: str, first: int, last: int, lo: int, hi: int, trusted: int, count: int,
        base: int | None, at: int,
    ) -> None:  # fmt: skip
        """Count readings just stored (ids ``first``..``last``, times ``lo``..``hi``) into the
        site's newest arrival span when they fit it, else into a new one.

        ``base``: the arrival time the readings left NULL, which the span must have (a new
        span gets it; without one, ``at``).
        """
        slack, room = ARRIVAL_SPAN_SLACK_MS, ARRIVAL_SPAN_READINGS - count
        same = "" if base is None else " AND received_at = ?"
        cur = self._execute(
            "UPDATE arrivals SET "
            "last_id = CASE WHEN last_id > ? THEN last_id ELSE ? END, "
            "lo_t = CASE WHEN lo_t < ? THEN lo_t ELSE ? END, "
            "hi_t = CASE WHEN hi_t > ? THEN hi_t ELSE ? END, "
            "trusted_t = CASE WHEN trusted_t < ? THEN trusted_t ELSE ? END, "
            "readings = readings + ? "
            "WHERE site = ? AND first_id = (SELECT max(first_id) FROM arrivals WHERE site = ?) "
            "AND readings <= ? AND lo_t <= ? AND hi_t >= ?" + same,
            (last, last, lo, lo, hi, hi, trusted, trusted, count, site, site, room,
             lo + slack, hi - slack) + (() if base is None else (base,)),
        )  # fmt: skip
        if not cur.rowcount:
            arrived = at if base is None else base
            self._execute(
                "INSERT INTO arrivals (site, first_id, last_id, lo_t, hi_t, trusted_t, readings, "
                "received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (site, first, last, lo, hi, trusted, count, arrived),
            )
            self._span_arrivals[site] = arrived

    def _holds_readings(self, site: str, lo: int, hi: int) -> bool:
        """Whether the store holds a reading of ``site`` with ``lo <= t <= hi``: a range of
        each of the site's series' key."""
        row = self._execute(
            "SELECT 1 FROM samples WHERE series IN (SELECT id FROM series WHERE site = ?) "
            "AND t >= ? AND t <= ? LIMIT 1",
            (site, lo, hi),
        ).fetchone()
        return row is not None

    def insert_new_readings(
        self, site: str, rows: Sequence[tuple[str, SensorReading]], received_at: int
    ) -> list[SensorReading] | None:
        """:meth:`insert_readings` for a bulk import's chunk: when the store holds no reading
        of ``site`` in the chunk's time span, the first of each (sensor, t) is new and is
        written without asking about each one (:meth:`_write_samples`: one executemany;
        PostgreSQL: COPY); None when the span holds some (take :meth:`insert_readings`,
        which dedupes)."""
        if not rows:
            return []
        lo, hi = min(r.t for _s, r in rows), max(r.t for _s, r in rows)
        if self._holds_readings(site, lo, hi):
            return None
        keys = {(r.sensor, r.t) for _s, r in rows}
        unique: Sequence[tuple[str, SensorReading]] = rows
        if len(keys) < len(rows):  # the chunk holds a reading twice: the first is stored
            first: dict[tuple[str, int], tuple[str, SensorReading]] = {}
            for station, r in rows:
                first.setdefault((r.sensor, r.t), (station, r))
            unique = list(first.values())
        self._store_new_rows(
            site,
            [(st, r.sensor, r.t, r.seq, r.value, _flags_text(r) or None) for st, r in unique],
            received_at,
        )
        stored = [(st, r, received_at) for st, r in unique]
        self._advance_clocks(site, stored)
        self._advance_summaries(site, stored)
        return [r for _s, r in unique]

    def insert_new_reading_columns(
        self, site: str, cols: ReadingColumns, stations: Sequence[str], received_at: int
    ) -> bool:
        """:meth:`insert_new_readings` for a chunk as columns (time order, each (sensor, t)
        once, no flags, ``stations[i]`` the station of ``cols.names[i]``): the rows go to
        the store from the arrays, no object per reading. False (nothing written) when
        the store holds a reading of ``site`` in the chunk's time span."""
        t = cols.t.tolist()
        if self._holds_readings(site, t[0], t[-1]):
            return False
        codes = cols.code.tolist()
        n = len(t)
        self._store_new_rows(
            site,
            list(zip(map(stations.__getitem__, codes), map(cols.names.__getitem__, codes), t,
                     repeat(None, n), cols.value.tolist(), repeat(None, n), strict=True)),
            received_at,
        )  # fmt: skip
        newest = {stations[c]: (cols.names[c], tt) for c, tt in zip(codes, t, strict=True)}
        self._advance_clocks(
            site, [(st, SensorReading(s, tt, 0.0), received_at) for st, (s, tt) in newest.items()]
        )
        # One reading per sensor-hour touched: all that the summaries' update asks of them.
        hours = dict.fromkeys(zip(codes, (tt // HOUR_MS for tt in t), strict=True))
        self._advance_summaries(
            site,
            [("", SensorReading(cols.names[c], h * HOUR_MS, 0.0), received_at) for c, h in hours],
        )
        return True

    def _store_new_rows(
        self,
        site: str,
        rows: Sequence[tuple[str, str, int, int | None, float, str | None]],
        received_at: int,
    ) -> None:
        """Readings known not to be stored, ``(station, sensor, t, seq, value, flags or
        None)``, all arrived at ``received_at``: written by :meth:`_write_samples` with the
        ids of ``series``/``stations`` and the arrival time left NULL as
        :meth:`_insert_reading_rows` does, and counted into the site's arrival spans, at
        most ``ARRIVAL_SPAN_READINGS`` at a time (a span stays a bounded range)."""
        series = self._name_ids_for("series", site, (row[1] for row in rows))
        stations = self._name_ids_for("stations", site, (row[0] for row in rows))
        base = self._arrival_base(site, {received_at}, len(rows))
        at = None if base == received_at else received_at
        step = ARRIVAL_SPAN_READINGS
        for start in range(0, len(rows), step):
            part = rows[start : start + step]
            first, last = self._write_samples(
                [(series[sensor], stations[station], t, seq, value, flags, at)
                 for station, sensor, t, seq, value, flags in part]
            )  # fmt: skip
            times = [row[2] for row in part]
            trusted = [
                row[2] for row in part if not row[5] or not UNTRUSTED_TIME & set(row[5].split(","))
            ]
            self._add_arrival_span(
                site, first, last, min(times), max(times),
                min(trusted, default=_NO_TRUSTED_T), len(part), base, received_at,
            )  # fmt: skip

    @abstractmethod
    def _write_samples(self, rows: Sequence[tuple[object, ...]]) -> tuple[int, int]:
        """Samples known not to be stored ``(series, station, t, seq, value, flags,
        received_at)``, in bulk, each given an arrival id after every stored one; the
        lowest and highest id they may have (SQLite: one executemany; PostgreSQL: COPY)."""

    def _advance_clocks(self, site: str, stored: Iterable[tuple[str, SensorReading, int]]) -> None:
        """Bring ``station_clocks`` up to the readings just stored (same transaction).

        Each station's latest trustworthy event time and the latest arrival among
        those readings: what :meth:`station_clocks` answers, kept as readings are
        stored so that a page or a start never aggregates the whole history. A
        reading whose time cannot be trusted moves neither (as ``_TRUSTED_TIME_SQL``).
        """
        newest: dict[str, tuple[int, int]] = {}
        for station, r, received_at in stored:
            if UNTRUSTED_TIME & r.flags:
                continue
            t, at = newest.get(station, (r.t, received_at))
            newest[station] = (max(t, r.t), max(at, received_at))
        for station, (t, at) in newest.items():
            self._execute(
                "INSERT INTO station_clocks (site, station, t, received_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (site, station) DO UPDATE SET "
                "t = CASE WHEN excluded.t > station_clocks.t "
                "THEN excluded.t ELSE station_clocks.t END, "
                "received_at = CASE WHEN excluded.received_at > station_clocks.received_at "
                "THEN excluded.received_at ELSE station_clocks.received_at END",
                (site, station, t, at),
            )

    def _fill_station_clocks(self) -> None:
        """Fill ``station_clocks`` from the stored readings: once, when a store written
        before it existed (schema v4 or older) is upgraded."""
        self._execute("DELETE FROM station_clocks")
        self._execute(
            "INSERT INTO station_clocks (site, station, t, received_at) "
            "SELECT site, station, max(t), max(received_at) FROM readings WHERE "
            + _TRUSTED_TIME_SQL
            + " GROUP BY site, station"
        )

    def _compact_readings(self) -> None:
        """Schema v9: convert the v7 ``readings`` table into the compact tables, in place.

        Every reading is kept with its id (its arrival order, which the snapshots' marks
        count in) and its arrival time; the samples are written in key order, so their
        pages come out full. The arrival spans are cut from the ids, per site, every
        ``ARRIVAL_SPAN_READINGS``. The caller holds the transaction, then creates the
        ``readings`` view over the new tables (READINGS_VIEW).
        """
        self._execute("ALTER TABLE readings RENAME TO readings_v7")
        for table, column in (("series", "sensor"), ("stations", "station")):
            self._execute(
                f"INSERT INTO {table} (site, {column}) SELECT DISTINCT site, {column} "
                f"FROM readings_v7 ORDER BY site, {column}"
            )
        self._execute(
            "INSERT INTO samples (series, station, t, seq, value, flags, id, received_at) "
            "SELECT r.id, st.id, o.t, o.seq, o.value, nullif(o.flags, ''), o.id, o.received_at "
            "FROM readings_v7 o JOIN series r ON r.site = o.site AND r.sensor = o.sensor "
            "JOIN stations st ON st.site = o.site AND st.station = o.station ORDER BY r.id, o.t"
        )
        self._execute(
            "INSERT INTO arrivals (site, first_id, last_id, lo_t, hi_t, trusted_t, readings, "
            "received_at) SELECT site, min(id), max(id), min(t), max(t), "
            f"coalesce(min(CASE WHEN {_TRUSTED_TIME_SQL} THEN t END), {_NO_TRUSTED_T}), count(*), "
            "min(received_at) FROM (SELECT site, id, t, flags, received_at, "
            f"(row_number() OVER (PARTITION BY site ORDER BY id) - 1) / {ARRIVAL_SPAN_READINGS} "
            "AS span FROM readings_v7) AS numbered GROUP BY site, span"
        )
        self._execute("DROP TABLE readings_v7")
        self._forget_names()

    def add_readings(
        self, site: str, rows: Iterable[tuple[str, SensorReading]], received_at: int
    ) -> list[SensorReading]:
        """Store (station, reading) pairs in their own commit; return the ones that were new."""
        with self._own_commit():
            return self.insert_readings(site, rows, received_at)

    def insert_rejection(
        self, topic: str, reason: str, payload: bytes, received_at: int, site: str | None = None
    ) -> None:
        # A message refused for the configuration alone is kept whole: a later
        # configuration takes it back (ingest/held.py). Others keep their first 10 kB.
        whole = reason.startswith(HELD_REASONS)
        text = (payload if whole else payload[:10_000]).decode("utf-8", errors="replace")
        self._execute(
            "INSERT INTO rejections (received_at, topic, reason, payload, site) "
            "VALUES (?, ?, ?, ?, ?)",
            (received_at, topic, reason, text, site),
        )

    def add_rejection(
        self, topic: str, reason: str, payload: bytes, received_at: int, site: str | None = None
    ) -> None:
        with self._own_commit():
            self.insert_rejection(topic, reason, payload, received_at, site)

    def rejections(self) -> list[tuple[str, str]]:
        return [
            (str(t), str(r))
            for t, r in self._execute("SELECT topic, reason FROM rejections ORDER BY id")
        ]

    def rejection_count(self) -> int:
        return int(self._execute("SELECT count(*) FROM rejections").fetchone()[0])

    def held_rejections(self, site: str) -> list[tuple[int, str, bytes, int]]:
        """(id, topic, payload, received_at) of ``site``'s messages refused for the
        configuration alone (unknown station or sensor), oldest first."""
        rows = self._execute(
            "SELECT id, topic, payload, received_at FROM rejections WHERE site = ? AND "
            "(reason LIKE 'unknown station%' OR reason LIKE 'unknown sensor%') ORDER BY id",
            (site,),
        ).fetchall()
        return [(int(i), str(t), str(p).encode("utf-8"), int(r)) for i, t, p, r in rows]

    def drop_rejections(self, ids: Sequence[int]) -> None:
        """Forget rejections whose messages were taken back (inside the caller's commit)."""
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ", ".join("?" for _ in chunk)
            self._execute(f"DELETE FROM rejections WHERE id IN ({marks})", chunk)

    def stored_values(
        self, site: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], float]:
        """The stored value of each (sensor, t) of ``site`` that is stored (one indexed
        lookup each: duplicates are few, and this is asked only for them)."""
        out: dict[tuple[str, int], float] = {}
        for sensor, t in dict.fromkeys(keys):
            series = self._name_id("series", site, sensor)
            if series is None:
                continue
            row = self._execute(
                "SELECT value FROM samples WHERE series = ? AND t = ?", (series, t)
            ).fetchone()
            if row is not None:
                out[(sensor, t)] = float(row[0])
        return out

    def claim_site(self, site: str, token: int, owner: str) -> None:
        """Record ``token`` as ``site``'s owner token; Fenced when a newer claim is stored."""
        with self._own_commit():
            self._execute(_SITE_OWNER)
            row = self._execute(
                "SELECT token, owner FROM site_owner WHERE site = ?", (site,)
            ).fetchone()
            if row is not None and int(row[0]) > token:
                raise Fenced(
                    f"site {site!r}: this claim's token {token} is older than the store's "
                    f"owner {row[1]} (token {row[0]})"
                )
            if row is None:
                self._execute(
                    "INSERT INTO site_owner (site, token, owner) VALUES (?, ?, ?)",
                    (site, token, owner),
                )
            else:
                self._execute(
                    "UPDATE site_owner SET token = ?, owner = ? WHERE site = ?",
                    (token, owner, site),
                )

    def check_owner(self, site: str, token: int) -> None:
        """Inside a commit: Fenced unless ``token`` is still ``site``'s owner token."""
        row = self._execute(
            "SELECT token, owner FROM site_owner WHERE site = ?", (site,)
        ).fetchone()
        if row is not None and int(row[0]) != token:
            raise Fenced(
                f"site {site!r} is now owned by {row[1]} (token {row[0]}); a write under the "
                f"older token {token} is refused"
            )

    def recent_sensors(self, site: str, since_t: int) -> set[str]:
        """The sensors of ``site`` with a reading dated after ``since_t`` (epoch ms)."""
        rows = self._execute(
            "SELECT sensor FROM series WHERE site = ? AND EXISTS "
            "(SELECT 1 FROM samples WHERE samples.series = series.id AND samples.t > ?)",
            (site, since_t),
        ).fetchall()
        return {str(r[0]) for r in rows}

    def insert_inspection(self, site: str, ins: Inspection, received_at: int = 0) -> bool:
        """Store an inspection inside the caller's transaction; False for a duplicate
        (the same time, inspector and duty)."""
        cur = self._execute(
            f"INSERT OR IGNORE INTO inspections (site, {_INSPECTION_COLUMNS}, received_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                " ".join(ins.findings),
                received_at,
            ),
        )
        return bool(cur.rowcount)

    def add_inspection(self, site: str, ins: Inspection, received_at: int = 0) -> bool:
        with self._own_commit():
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
        last = self._execute(
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
        self._execute(
            "INSERT INTO statuses (site, station, t, received_at, state, health, timed) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (site, report.station, report.t, received_at, report.state, health, int(report.timed)),
        )
        return True

    def add_status(self, site: str, report: StationReport, received_at: int) -> bool:
        """:meth:`insert_status` in its own commit."""
        with self._own_commit():
            return self.insert_status(site, report, received_at)

    def insert_site_log(self, site: str, entry: SiteLogEntry, received_at: int) -> bool:
        """Store a site-log entry inside the caller's transaction; False for a duplicate.

        A duplicate is the same entry exactly (time, event, area, who, detail): a
        QoS 1 message delivered again, a form sent twice. The same event in the
        same area at another time, or by another person, is another entry.
        """
        cur = self._execute(
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
        with self._own_commit():
            return self.insert_site_log(site, entry, received_at)

    def insert_data_gap(self, site: str, gap: LostRange) -> bool:
        """Record readings that will never arrive (ingest/gaps.py), inside the caller's
        transaction; False when that gap is recorded already."""
        cur = self._execute(
            "INSERT OR IGNORE INTO data_gaps (site, station, sensor, seq_from, seq_to, "
            "time_from, time_to, reason, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                site,
                gap.station,
                gap.sensor,
                gap.seq_from,
                gap.seq_to,
                gap.time_from,
                gap.time_to,
                gap.reason,
                gap.recorded_at,
            ),
        )
        return bool(cur.rowcount)

    def add_data_gap(self, site: str, gap: LostRange) -> bool:
        """:meth:`insert_data_gap` in its own commit."""
        with self._own_commit():
            return self.insert_data_gap(site, gap)

    def data_gaps(self, site: str, station: str | None = None) -> list[LostRange]:
        """The site's recorded data gaps, in the order recorded."""
        query = (
            "SELECT station, sensor, seq_from, seq_to, time_from, time_to, reason, recorded_at "
            "FROM data_gaps WHERE site = ?"
        )
        args: tuple[object, ...] = (site,)
        if station is not None:
            query += " AND station = ?"
            args += (station,)
        return [
            LostRange(
                str(st),
                str(se),
                int(lo),
                int(hi),
                None if tf is None else int(tf),
                None if tt is None else int(tt),
                str(why),
                int(at),
            )
            for st, se, lo, hi, tf, tt, why, at in self._execute(query + " ORDER BY id", args)
        ]

    def save_seq_watch(self, site: str, watches: Sequence[SensorWatch]) -> None:
        """What the gap tracker knows of these sensors (ingest/gaps.py), inside the
        caller's transaction: a restart takes up the open gaps from here."""
        for w in watches:
            self._execute(
                "INSERT INTO seq_watch VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (site, station, sensor) DO UPDATE SET high_seq = excluded.high_seq, "
                "high_t = excluded.high_t, first_seq = excluded.first_seq, "
                "received = excluded.received, lost = excluded.lost, "
                "open_gaps = excluded.open_gaps",
                (
                    site,
                    w.station,
                    w.sensor,
                    w.high,
                    w.high_t,
                    w.first,
                    w.received,
                    w.lost,
                    json.dumps([list(g) for g in w.gaps]),
                ),
            )

    def seq_watch(self, site: str) -> list[SensorWatch]:
        """What :meth:`save_seq_watch` kept for the site, per (station, sensor)."""
        query = (
            "SELECT station, sensor, high_seq, high_t, first_seq, received, lost, open_gaps "
            "FROM seq_watch WHERE site = ? ORDER BY station, sensor"
        )
        return [_sensor_watch(row) for row in self._execute(query, (site,))]

    def completeness_totals(self, site: str) -> dict[str, tuple[int, int]]:
        """Per station: (readings received, readings expected by seq) over its sensors,
        counted since the service first saw each (seq_watch)."""
        rows = self._execute(
            "SELECT station, sum(received), sum(high_seq - first_seq + 1) FROM seq_watch "
            "WHERE site = ? GROUP BY station",
            (site,),
        )
        return {str(st): (int(got), int(want)) for st, got, want in rows}

    def data_gap_totals(self, site: str) -> dict[str, tuple[int, int]]:
        """Per station: (gaps recorded, readings lost in them)."""
        rows = self._execute(
            "SELECT station, count(*), sum(seq_to - seq_from + 1) FROM data_gaps "
            "WHERE site = ? GROUP BY station",
            (site,),
        )
        return {str(st): (int(n), int(lost)) for st, n, lost in rows}

    def save_alert(self, site: str, alert: Alert, *, late: bool = False) -> None:
        """Write an episode as it now stands (``late``: it was found only when late data came)."""
        with self._own_commit():
            self._execute(
                "INSERT INTO alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0) "
                "ON CONFLICT (site, id) DO UPDATE SET severity = excluded.severity, "
                "resolved_at = excluded.resolved_at, body = excluded.body, "
                "late = CASE WHEN excluded.late > alerts.late THEN excluded.late ELSE alerts.late END, "
                "withdrawn = 0",
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
        with self._own_commit():
            self._execute(
                "UPDATE alerts SET withdrawn = 1, body = ? WHERE site = ? AND id = ?",
                (alert.model_dump_json(), site, alert.id),
            )

    def save_duty(self, site: str, duty: Duty) -> None:
        with self._own_commit():
            self._execute(
                "INSERT INTO duties VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site, id) DO UPDATE SET "
                "reason = excluded.reason, created_at = excluded.created_at, "
                "due_at = excluded.due_at, completed_at = excluded.completed_at, "
                "body = excluded.body",
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
        rows = self._execute(
            "SELECT body FROM alerts WHERE site = ? AND withdrawn = 0 ORDER BY opened_at, id",
            (site,),
        )
        return [Alert.model_validate(json.loads(body)) for (body,) in rows]

    def stored_alert(self, site: str, alert_id: str) -> StoredAlert | None:
        row = self._execute(
            "SELECT body, late, withdrawn FROM alerts WHERE site = ? AND id = ?", (site, alert_id)
        ).fetchone()
        if row is None:
            return None
        return StoredAlert(Alert.model_validate(json.loads(row[0])), bool(row[1]), bool(row[2]))

    def alerts_opened_after(self, site: str, opened_after_iso: str) -> list[StoredAlert]:
        """Episodes (withdrawn or not) opened strictly after a time, for a rebuild to check."""
        rows = self._execute(
            "SELECT body, late, withdrawn FROM alerts WHERE site = ? AND opened_at > ?",
            (site, opened_after_iso),
        )
        return [
            StoredAlert(Alert.model_validate(json.loads(b)), bool(lt), bool(w)) for b, lt, w in rows
        ]

    def alert_records(self, site: str) -> list[StoredAlert]:
        """Every episode with its late and withdrawn marks, in ALERTS.jsonl order (exports)."""
        rows = self._execute(
            "SELECT body, late, withdrawn FROM alerts WHERE site = ? ORDER BY opened_at, id",
            (site,),
        )
        return [
            StoredAlert(Alert.model_validate(json.loads(b)), bool(lt), bool(w)) for b, lt, w in rows
        ]

    def late_alert_ids(self, site: str) -> set[str]:
        rows = self._execute("SELECT id FROM alerts WHERE site = ? AND late = 1", (site,))
        return {str(r[0]) for r in rows}

    def duties(self, site: str) -> list[Duty]:
        rows = self._execute(
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
        row = self._execute(
            "SELECT body FROM duties WHERE site = ? AND id = ?", (site, duty_id)
        ).fetchone()
        return None if row is None else Duty.model_validate(json.loads(row[0]))

    def reading_count(self, site: str, sensor: str | None = None) -> int:
        if sensor is None:
            row = self._execute(
                "SELECT count(*) FROM samples WHERE series IN "
                "(SELECT id FROM series WHERE site = ?)",
                (site,),
            ).fetchone()
            return int(row[0])
        series = self._name_id("series", site, sensor)
        if series is None:
            return 0
        row = self._execute("SELECT count(*) FROM samples WHERE series = ?", (series,)).fetchone()
        return int(row[0])

    def _series_edge(self, site: str, which: str, after: int | None = None) -> int | None:
        """The site's newest (``which`` "max") or earliest ("min", dated at or after
        ``after``) reading time: one seek on each series' key."""
        found: list[int] = []
        for series in self._site_series(site):
            sql = f"SELECT {which}(t) FROM samples WHERE series = ?"
            args: tuple[object, ...] = (series,)
            if after is not None:
                sql, args = sql + " AND t >= ?", (series, after)
            row = self._execute(sql, args).fetchone()
            if row is not None and row[0] is not None:
                found.append(int(row[0]))
        if not found:
            return None
        return max(found) if which == "max" else min(found)

    def newest_reading_t(self, site: str) -> int | None:
        """The event time of the site's newest stored reading (None: no reading yet)."""
        return self._series_edge(site, "max")

    def _sensor_rows(
        self, site: str, sensor: str, start: int | None = None, end: int | None = None
    ) -> list[SensorReading]:
        """A sensor's readings with ``start <= t <= end`` in time order: one range of the
        samples' (series, t) key."""
        series = self._name_id("series", site, sensor)
        if series is None:
            return []
        rows = self._execute(
            "SELECT t, value, seq, flags FROM samples WHERE series = ? AND t >= ? AND t <= ? "
            "ORDER BY t",
            (series, -(2**62) if start is None else start, 2**62 if end is None else end),
        )
        return [_reading((sensor, *row)) for row in rows]

    def readings(self, site: str, sensor: str) -> list[SensorReading]:
        return self._sensor_rows(site, sensor)

    def readings_between_of(
        self, site: str, sensor: str, start: int, end: int
    ) -> list[SensorReading]:
        """A sensor's readings with ``start <= t <= end`` in time order: :meth:`readings`
        over a bounded span (ingest/rain_lead_in.py), one range on the (site, sensor, t) key."""
        return self._sensor_rows(site, sensor, start, end)

    def sensor_points(
        self, site: str, sensor: str, start: int, end: int
    ) -> list[tuple[int, float, str]]:
        """(t, value, flags) of a sensor's readings with ``start <= t <= end``, in time order.

        What a plot of a window needs, one range query on the (site, sensor, t)
        key: :meth:`readings` returns the whole history, too much for a window
        of a long-running site.
        """
        series = self._name_id("series", site, sensor)
        if series is None:
            return []
        rows = self._execute(
            "SELECT t, value, flags FROM samples WHERE series = ? AND t >= ? AND t <= ? ORDER BY t",
            (series, start, end),
        )
        return [(int(t), float(value), flags or "") for t, value, flags in rows]

    def latest_reading(self, site: str, sensor: str) -> tuple[int, float] | None:
        """(t, value) of the sensor's newest reading (None: none yet); one index seek."""
        series = self._name_id("series", site, sensor)
        if series is None:
            return None
        row = self._execute(
            "SELECT t, value FROM samples WHERE series = ? ORDER BY t DESC LIMIT 1", (series,)
        ).fetchone()
        return None if row is None else (int(row[0]), float(row[1]))

    # The first window of time a site-wide read asks for; each next one is doubled while
    # it brings fewer than half a chunk, halved while it brings more than two.
    _FIRST_WINDOW_MS = 3_600_000

    def _window_rows(
        self, site: str, start: int, stop: int, chunk: int, *, stations: bool
    ) -> Iterator[list[Any]]:
        """Rows ``(station or "", sensor, t, value, seq, flags or "")`` with
        ``start <= t < stop`` in (time, sensor) order, a window of time at a time (each
        window complete: every row before its end has come).

        The samples are clustered by series, so the site's readings in time order are a
        merge of its few series: each query asks for one window of time (a range of each
        series' key, sorted by the database), and is over when it has answered, so a long
        read holds no read transaction open against the live writer's WAL. The window's
        width follows ``chunk``, the rows the caller takes at a time.
        """
        first = self._series_edge(site, "min", start)
        newest = self._series_edge(site, "max")
        if first is None or newest is None:
            return
        lo, stop = max(start, first), min(stop, newest + 1)
        width = self._FIRST_WINDOW_MS
        station_sql = "st.station" if stations else "''"
        join = " JOIN stations st ON st.id = s.station" if stations else ""
        while lo < stop:
            hi = min(stop, lo + width)
            rows = self._execute(
                f"SELECT {station_sql}, r.sensor, s.t, s.value, s.seq, coalesce(s.flags, '') "
                f"FROM samples s JOIN series r ON r.id = s.series{join} "
                "WHERE r.site = ? AND s.t >= ? AND s.t < ? ORDER BY s.t, r.sensor",
                (site, lo, hi),
            ).fetchall()
            if rows:
                yield rows
            if len(rows) < chunk // 2:
                width *= 2
            elif len(rows) > 2 * chunk:
                width = max(1, width // 2)
            lo = hi

    def _site_rows(
        self, site: str, start: int, stop: int, chunk: int, *, stations: bool
    ) -> Iterator[list[Any]]:
        """:meth:`_window_rows` in chunks of exactly ``chunk`` rows (the last one shorter)."""
        buffer: list[Any] = []
        for rows in self._window_rows(site, start, stop, chunk, stations=stations):
            buffer += rows
            while len(buffer) >= chunk:
                yield buffer[:chunk]
                del buffer[:chunk]
        if buffer:
            yield buffer

    def readings_after(
        self, site: str, after: int | None, chunk: int = 20_000
    ) -> Iterator[list[SensorReading]]:
        """Every reading with event time after ``after``, in (time, sensor) order, in chunks."""
        start = -(2**62) if after is None else after + 1
        for rows in self._site_rows(site, start, 2**62, chunk, stations=False):
            yield [_reading(row[1:]) for row in rows]

    def reading_columns_after(
        self, site: str, after: int | None, chunk: int = 100_000
    ) -> Iterator[ReadingColumns | list[SensorReading]]:
        """``readings_after`` as columns (issue 24): a rebuild builds no object per reading.

        The site's readings come by windows of time (:meth:`_window_rows`); a chunk is
        about ``chunk`` of them: the readings of its last instant are left for the next
        chunk, so no instant is split (a chunk of one instant holds all of it), and the
        chunk is put in (time, sensor) order on arrays. A chunk without flags comes as
        :class:`ReadingColumns` (columns carry no sequence numbers: the engine judges
        without them); one with a flagged reading, which the engine takes row by row,
        as readings.
        """
        start = -(2**62) if after is None else after + 1
        buffer: list[Any] = []
        for rows in self._window_rows(site, start, 2**62, chunk, stations=False):
            buffer += rows
            while len(buffer) >= chunk:
                edge = buffer[chunk - 1][2]  # the window's end is later: its instant is whole
                cut = bisect_left(buffer, edge, key=_row_time)
                if not cut:  # a whole chunk at one instant: take all of that instant
                    cut = bisect_right(buffer, edge, key=_row_time)
                yield _chunk_columns(buffer[:cut])
                del buffer[:cut]
        if buffer:
            yield _chunk_columns(buffer)

    def readings_between(
        self, site: str, start: int | None, end: int | None, chunk: int = 20_000
    ) -> Iterator[list[tuple[str, SensorReading]]]:
        """(station, reading) with event time in [start, end), in (time, sensor) order, in chunks.

        Each chunk is its own short query (resuming after the last row), so a long
        export holds no read transaction open against the live writer's WAL.
        """
        for rows in self.reading_rows_between(site, start, end, chunk):
            yield [(str(row[0]), _reading(row[1:])) for row in rows]

    def reading_rows_between(
        self, site: str, start: int | None, end: int | None, chunk: int = 50_000
    ) -> Iterator[list[tuple[str, str, int, float, int | None, str]]]:
        """:meth:`readings_between` as plain rows ``(station, sensor, t, value, seq, flags)``
        (flags as stored: sorted, comma-separated; '' for none), for readers that take
        columns (the export, the import's resume): no object per reading."""
        lo = -(2**62) if start is None else start
        yield from self._site_rows(site, lo, 2**62 if end is None else end, chunk, stations=True)

    def sites(self) -> list[str]:
        """Every site id the store holds anything of (readings, records, alerts, duties).

        Each table's index leads with the site, so the next site after one is a
        seek: a store of millions of readings answers in a few index lookups.
        """
        found: set[str] = set()
        for table in ("series", "inspections", "site_log", "statuses", "alerts", "duties"):
            rows = self._execute(
                f"WITH RECURSIVE s(site) AS (SELECT min(site) FROM {table} UNION ALL "
                f"SELECT (SELECT min(site) FROM {table} WHERE site > s.site) FROM s "
                "WHERE s.site IS NOT NULL) SELECT site FROM s WHERE site IS NOT NULL"
            )
            found.update(str(r[0]) for r in rows)
        return sorted(found)

    def inspections_after(self, site: str, after: int | None) -> list[Inspection]:
        rows = self._execute(
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
        rows = self._execute(
            "SELECT t, event, area, who, detail FROM site_log WHERE site = ? AND t > ? "
            "ORDER BY t, id",
            (site, -(2**62) if after is None else after),
        )
        return [_site_log_entry(row) for row in rows]

    def site_log(self, site: str) -> list[SiteLogEntry]:
        """The site's whole log in event-time order (arrival order at one instant)."""
        return self.site_log_after(site, None)

    def latest_site_log(self, site: str, count: int) -> list[SiteLogEntry]:
        """The site's ``count`` latest log entries, in :meth:`site_log`'s order: what a page
        shows, read with one seek on the (site, t) index, not the whole log."""
        rows = self._execute(
            "SELECT t, event, area, who, detail FROM site_log WHERE site = ? "
            "ORDER BY t DESC, id DESC LIMIT ?",
            (site, count),
        ).fetchall()
        return [_site_log_entry(row) for row in reversed(rows)]

    def statuses_after(self, site: str, after: int | None) -> list[StationReport]:
        """Every status with event time after ``after``, in (time, id) order.

        What a restart or rebuild replays after a snapshot, as
        :meth:`inspections_after`: by event time, not by id — a status stored
        before the snapshot but dated after what it had processed was still
        waiting in the engine's buffer, which a snapshot does not keep. Statuses
        stored after the snapshot but dated before it are caught by the marks
        (:meth:`earliest_stored_after`), which send the service to an older one.
        """
        rows = self._execute(
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
        rows = self._execute(query + " ORDER BY id", args)
        return [(int(i), int(a), _status(rest)) for i, a, *rest in rows]

    def latest_status(self, site: str, station: str) -> StationReport | None:
        """The station's newest stored status by arrival (None: none yet): one seek on the
        (site, station, id) index, not the station's whole history as :meth:`statuses`."""
        row = self._execute(
            "SELECT station, t, state, health, timed FROM statuses "
            "WHERE site = ? AND station = ? ORDER BY id DESC LIMIT 1",
            (site, station),
        ).fetchone()
        return None if row is None else _status(row)

    def marks(self) -> Marks:
        """The newest reading, inspection, status and site-log ids: how far a snapshot has
        read the store."""
        r = int(self._execute("SELECT coalesce(max(last_id), 0) FROM arrivals").fetchone()[0])
        i, s, g = (
            int(self._execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0])
            for table in ("inspections", "statuses", "site_log")
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
        r = self._earliest_reading_after(site, reading_mark)
        i = self._execute(
            "SELECT min(t) FROM inspections WHERE site = ? AND id > ?", (site, inspection_mark)
        ).fetchone()[0]
        s = self._execute(
            "SELECT min(t) FROM statuses WHERE site = ? AND id > ?", (site, status_mark)
        ).fetchone()[0]
        g = self._execute(
            "SELECT min(t) FROM site_log WHERE site = ? AND id > ?", (site, site_log_mark)
        ).fetchone()[0]
        found = [int(v) for v in (r, i, s, g) if v is not None]
        return min(found) if found else None

    def _earliest_reading_after(self, site: str, mark: int) -> int | None:
        """The earliest trustworthy time among the site's readings with an id after ``mark``.

        A span wholly after the mark answers with its ``trusted_t``; the span the mark
        falls inside (at most one per run of the writer) is read: its ids after the mark,
        within its times, on each series' key.
        """
        best: int | None = None
        spans = self._execute(
            "SELECT first_id, last_id, hi_t, trusted_t FROM arrivals "
            "WHERE site = ? AND last_id > ? ORDER BY trusted_t",
            (site, mark),
        ).fetchall()
        for first, last, hi, trusted in spans:
            if int(trusted) == _NO_TRUSTED_T or (best is not None and int(trusted) >= best):
                continue
            if int(first) > mark:
                best = int(trusted)
                continue
            row = self._execute(
                "SELECT min(t) FROM samples WHERE series IN (SELECT id FROM series WHERE site = ?) "
                "AND t >= ? AND t <= ? AND id > ? AND id <= ? AND " + _TRUSTED_SAMPLE_SQL,
                (site, trusted, hi, mark, last),
            ).fetchone()
            if row is not None and row[0] is not None and (best is None or int(row[0]) < best):
                best = int(row[0])
        return best

    def station_clocks(self, site: str) -> list[tuple[str, int, int]]:
        """(station, latest trustworthy event time, latest arrival among its trustworthy
        readings) of every station that has one.

        Read from ``station_clocks``, kept as readings are stored
        (:meth:`_advance_clocks`): a few rows whatever the history's length.
        """
        rows = self._execute(
            "SELECT station, t, received_at FROM station_clocks WHERE site = ? ORDER BY station",
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
        with self._own_commit():
            self._execute(
                "INSERT INTO snapshots (site, processed_to, reading_mark, "
                "inspection_mark, taken_at, blob, status_mark, site_log_mark) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site, processed_to) DO UPDATE SET "
                "reading_mark = excluded.reading_mark, inspection_mark = excluded.inspection_mark, "
                "taken_at = excluded.taken_at, blob = excluded.blob, "
                "status_mark = excluded.status_mark, site_log_mark = excluded.site_log_mark",
                (site, key, marks[0], marks[1], taken_at, blob, status_mark, site_log_mark),
            )
            kept = [
                int(r[0])
                for r in self._execute(
                    "SELECT processed_to FROM snapshots WHERE site = ? ORDER BY processed_to DESC",
                    (site,),
                )
            ]
            keep: list[int] = []
            for t in kept:
                if not keep or (keep[-1] - t >= SNAPSHOT_SPACING_MS and len(keep) < SNAPSHOTS_KEPT):
                    keep.append(t)
            drop = [t for t in kept if t not in set(keep)]
            for t in drop:
                self._execute(
                    "DELETE FROM snapshots WHERE site = ? AND processed_to = ?", (site, t)
                )

    def snapshots(self, site: str) -> list[SnapshotRow]:
        """Every kept snapshot of the site, newest first."""
        rows = self._execute(
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
        with self._own_commit():
            self._execute("DELETE FROM snapshots WHERE site = ? AND processed_to >= ?", (site, t))

    def drop_snapshot(self, site: str, row: SnapshotRow) -> None:
        key = -(2**62) if row.processed_to is None else row.processed_to
        with self._own_commit():
            self._execute("DELETE FROM snapshots WHERE site = ? AND processed_to = ?", (site, key))


def _reading(row: Sequence[object]) -> SensorReading:
    s, t, v, q, f = row
    return SensorReading(
        str(s),
        int(t),  # type: ignore[call-overload]
        float(v),  # type: ignore[arg-type]
        None if q is None else int(q),  # type: ignore[call-overload]
        frozenset(str(f).split(",")) if f else frozenset(),
    )


def _time_sensor(r: SensorReading) -> tuple[int, str]:
    return r.t, r.sensor


def _row_time(row: Sequence[Any]) -> int:
    return int(row[2])


def _chunk_columns(rows: Sequence[Sequence[Any]]) -> ReadingColumns | list[SensorReading]:
    """Rows ``(_, sensor, t, value, _seq, flags)`` in time order as :class:`ReadingColumns`
    in (time, sensor) order, or, when one is flagged, as readings (without seq, as the
    columns carry none) in that order."""
    import numpy as np

    _stations, sensors, times, values, _seqs, flags = zip(*rows, strict=True)
    if any(flags):
        return sorted((_reading((*row[1:4], None, row[5])) for row in rows), key=_time_sensor)
    index = {name: i for i, name in enumerate(dict.fromkeys(sensors))}
    return ReadingColumns(
        tuple(index),
        np.fromiter(map(index.__getitem__, sensors), np.int32, len(sensors)),
        np.array(times, dtype=np.int64),
        np.array(values, dtype=np.float64),
    ).sorted_by_time()


def _flags_text(r: SensorReading) -> str:
    """A reading's quality flags as stored: sorted, comma-separated ('' for none)."""
    return ",".join(sorted(r.flags)) if r.flags else ""


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
    t, who, duty, affiliation, address, phone, signed, deviations, actions, findings = row
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
        findings=tuple(str(findings or "").split()),
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
