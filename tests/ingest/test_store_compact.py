"""The compact readings (schema v9): a v7 or v8 store converted in place, and the arrival spans.

A store written by siltwatch before v9 kept its readings in one table of text names,
its arrival order the rowid (``readings.id``); v8 added the per-hour summaries
(``reading_hours``) beside it. Opened by a writer, it is converted in place: every
reading kept with its id, its station, flags and arrival time, every answer the same,
and the summaries (filled from the readings for a v7 store, kept for a v8 one) agree
with the readings. A reader refuses it and names the fix. The arrival order survives
with its meaning: the snapshot marks and what was stored after them
(``earliest_stored_after``), now answered from spans of ids rather than an index on
them, agree with a scan of every stored reading, for every mark.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ingest.store.queries as queries
from analytics.events import SensorReading
from ingest.store.from_url import is_postgres_url, open_store, open_store_read_only
from ingest.store.postgres import postgres_schema
from ingest.store.queries import SqlStore, StoreError
from ingest.store.sqlite import SqliteStore
from ingest.store.summaries import summarise
from tests.ingest.conftest import BACKENDS

both = pytest.mark.parametrize("store_db", BACKENDS, indirect=True)

A, B = "site-a", "site-b"
UNTRUSTED = ("clock_unsynced", "clock_ahead")

# The readings table exactly as siltwatch v7 created it (ingest/store/queries.py then).
OLD_READINGS = """
CREATE TABLE readings (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, station TEXT NOT NULL, sensor TEXT NOT NULL,
    t INTEGER NOT NULL, seq INTEGER, value REAL NOT NULL, flags TEXT NOT NULL DEFAULT '',
    received_at INTEGER NOT NULL,
    UNIQUE (site, sensor, t)
);
CREATE INDEX readings_site_t ON readings (site, t);
"""

Row = tuple[int, str, str, str, int, int | None, float, str, int]  # the v7 columns


def v7_rows() -> list[Row]:
    """Two sites' readings, their ids not in time order and with holes: late data, a
    sensor that moved to another station, untrusted clocks, readings without a seq."""
    rows: list[Row] = []
    ident = 0
    for n in range(36):
        ident += 1 + n % 3  # holes, as ignored duplicates leave in SQLite's ids
        site = A if n % 4 else B
        sensor = ("turb-up", "turb-down", "rain")[n % 3]
        station = {"turb-up": "up-1", "turb-down": "down-1", "rain": "basin"}[sensor]
        if sensor == "turb-up" and n > 20:
            station = "up-2"  # the probe moved: its readings keep their station
        t = 60_000 * n if n % 7 else 60_000 * (n - 30) + 30_000  # every 7th late, dated before
        flags = UNTRUSTED[n % 2] if n % 5 == 0 else ("spike" if n % 11 == 0 else "")
        seq = None if n % 6 == 0 else n
        rows.append((ident, site, station, sensor, t, seq, n + 0.25, flags, 1000 + 7 * n))
    return rows


def make_v7(store_db: str, rows: list[Row], version: int = 7) -> None:
    """Turn the (new, empty) store at ``store_db`` into what v7 left: the readings table
    of text names with these rows, no compact tables, schema version 7; or (``version``
    8) what v8 left: the same, with ``reading_hours`` filled from those readings."""
    store = open_store(store_db)
    postgres = is_postgres_url(store_db)
    try:
        with store.transaction():
            store._execute("DROP VIEW readings")
            for table in ("samples", "arrivals", "series", "stations"):
                store._execute(f"DROP TABLE {table}")
            if postgres:
                store._execute("DROP SEQUENCE reading_ids")
            for statement in OLD_READINGS.split(";"):
                if statement.strip():
                    store._execute(postgres_schema(statement) if postgres else statement)
            for row in rows:
                store._execute(
                    "INSERT INTO readings (id, site, station, sensor, t, seq, value, flags, "
                    "received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
            if version == 8:
                for site, sensor in {(row[1], row[3]) for row in rows}:
                    points = sorted(
                        (row[4], row[6], row[7]) for row in rows if row[1:4:2] == (site, sensor)
                    )
                    store._insert_hours(site, sensor, summarise(points))
            if postgres:
                store._execute(f"UPDATE siltwatch_schema SET version = {version}")
            else:
                store._execute(f"PRAGMA user_version={version}")
    finally:
        store.close()


def reading(row: Row) -> SensorReading:
    _i, _site, _station, sensor, t, seq, value, flags, _at = row
    return SensorReading(
        sensor, t, value, seq, frozenset(flags.split(",")) if flags else frozenset()
    )


def earliest_after(rows: list[Row], site: str, mark: int) -> int | None:
    """What ``earliest_stored_after`` answers, by a scan of every stored reading."""
    times = [
        t
        for i, s, _st, _se, t, _q, _v, flags, _a in rows
        if s == site and i > mark and not any(u in flags for u in UNTRUSTED)
    ]
    return min(times, default=None)


@contextmanager
def small_spans(readings: int, slack_ms: int) -> Iterator[None]:
    """Arrival spans cut short, so that a few readings make several of them."""
    kept = queries.ARRIVAL_SPAN_READINGS, queries.ARRIVAL_SPAN_SLACK_MS, queries.BULK_READINGS
    queries.ARRIVAL_SPAN_READINGS, queries.ARRIVAL_SPAN_SLACK_MS = readings, slack_ms
    queries.BULK_READINGS = 3
    try:
        yield
    finally:
        (
            queries.ARRIVAL_SPAN_READINGS,
            queries.ARRIVAL_SPAN_SLACK_MS,
            queries.BULK_READINGS,
        ) = kept


@both
@pytest.mark.parametrize("version", [7, 8])
def test_a_v7_or_v8_store_is_converted_in_place_keeping_every_reading_and_its_id(
    store_db: str, version: int
) -> None:
    rows = v7_rows()
    make_v7(store_db, rows, version)
    with pytest.raises(StoreError, match=rf"schema v{version}.*siltwatch serve"):
        open_store_read_only(store_db)  # a reader never converts: it names the fix
    with small_spans(5, 60_000):
        store = open_store(store_db)
    try:
        stored = store._execute(
            "SELECT id, site, station, sensor, t, seq, value, flags, received_at "
            "FROM readings ORDER BY id"
        ).fetchall()
        assert [tuple(row) for row in stored] == rows, "every reading, its id and columns"
        for site in (A, B):
            mine = sorted((row for row in rows if row[1] == site), key=lambda x: (x[4], x[3]))
            assert [x for c in store.readings_after(site, None, chunk=4) for x in c] == [
                reading(row) for row in mine
            ]
            assert [
                (station, x) for c in store.readings_between(site, None, None, chunk=3)
                for station, x in c
            ] == [(row[2], reading(row)) for row in mine]  # fmt: skip
            for sensor in ("turb-up", "turb-down", "rain"):
                assert store.readings(site, sensor) == [
                    reading(row) for row in mine if row[3] == sensor
                ]
                points = store.sensor_points(site, sensor, -(2**62), 2**62)
                assert store.stored_hours(site, sensor) == summarise(points), "summaries"
            assert store.reading_count(site) == len(mine)
            for mark in range(rows[-1][0] + 2):
                assert store.earliest_stored_after(site, mark, 0) == earliest_after(
                    rows, site, mark
                ), f"{site}, mark {mark}"
        assert store.marks()[0] == rows[-1][0]
        old = next(row for row in rows if row[1] == A and row[3] == "turb-up")
        moved = SensorReading("turb-up", old[4], 9.0, None, frozenset())
        assert store.add_readings(A, [("up-9", moved)], 5000) == [], "(site, sensor, t) is key"
        later = SensorReading("turb-up", 10**9, 1.0, 1, frozenset())
        assert store.add_readings(A, [("up-2", later)], 5001) == [later]
        (newest,) = store._execute("SELECT max(id) FROM readings").fetchone()
        assert newest > rows[-1][0] and store.marks()[0] == newest, "arrival order goes on"
    finally:
        store.close()
    reader = open_store_read_only(store_db)  # converted once: v9 now
    try:
        assert reader.reading_count(A) + reader.reading_count(B) == len(rows) + 1
    finally:
        reader.close()


Batch = list[tuple[str, str, int, str, int]]  # (site, sensor, minute, flag, arrival) a commit

batches = st.lists(
    st.lists(
        st.tuples(
            st.sampled_from([A, B]),
            st.sampled_from(["a", "b", "c"]),
            st.integers(0, 40),
            st.sampled_from(["", "", "", "clock_ahead", "spike"]),
            st.sampled_from([1, 1, 1, 2, 3]),  # most of a commit arrived at once
        ),
        min_size=1,
        max_size=8,
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=batches, span=st.integers(1, 6), slack_min=st.integers(0, 20))
def test_what_was_stored_after_any_mark_agrees_with_a_scan_of_the_readings(
    batches: list[Batch], span: int, slack_min: int
) -> None:
    """Whatever the order, duplicates, sites, arrival times, span sizes and way of writing
    (messages, or an import's chunk written in bulk): the arrival spans answer as an
    index on the ids would, for every mark, and every reading keeps the arrival time of
    the message that brought it first."""
    arrived: dict[tuple[str, str, int], int] = {}
    with tempfile.TemporaryDirectory() as folder, small_spans(span, slack_min * 60_000):
        store: SqlStore = SqliteStore(Path(folder) / "store.sqlite3")
        try:
            for n, batch in enumerate(batches):
                for site in (A, B):
                    groups: dict[int, list[tuple[str, SensorReading]]] = {}
                    for s, sensor, m, f, at in batch:
                        if s == site:
                            flags = frozenset([f] if f else [])
                            reading = SensorReading(sensor, m * 60_000, 1.0, None, flags)
                            groups.setdefault(100 * n + at, []).append((f"st-{sensor}", reading))
                    for at, group in groups.items():  # the order the store is given them
                        for _station, reading in group:
                            arrived.setdefault((site, reading.sensor, reading.t), at)
                    with store.transaction():
                        if n % 2 and len(groups) == 1:  # an import's chunk: written in bulk
                            ((at, rows),) = groups.items()
                            if store.insert_new_readings(site, rows, at) is not None:
                                continue
                        store.insert_reading_groups(site, list((g, at) for at, g in groups.items()))
            stored = [
                (int(i), str(s), str(st_), str(se), int(t), q, float(v), str(f), int(a))
                for i, s, st_, se, t, q, v, f, a in store._execute(
                    "SELECT id, site, station, sensor, t, seq, value, flags, received_at "
                    "FROM readings ORDER BY id"
                )
            ]
            assert len({row[0] for row in stored}) == len(stored), "one id per reading"
            assert {(row[1], row[3], row[4]): row[8] for row in stored} == arrived
            assert store.marks()[0] == max(row[0] for row in stored)
            for mark in range(max(row[0] for row in stored) + 1):
                for site in (A, B):
                    assert store.earliest_stored_after(site, mark, 0) == earliest_after(
                        stored, site, mark
                    )
        finally:
            store.close()
