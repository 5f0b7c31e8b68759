"""The store contract: the SQLite file and a PostgreSQL database give the same answers.

Every test runs on both backends (``store_db`` parametrized): dedupe, order,
transactions, snapshots, the one-writer claim, read-only opening, chunked reads.
The last tests run the ingest service over PostgreSQL: the storm gives the
alerts it gives over SQLite, and a service started again elsewhere (a new
store object on the same database) restores the snapshot and carries on.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from analytics.batch_columns import ReadingColumns
from analytics.events import Inspection, SensorReading
from ingest.recordings.formats import read_csv_readings
from ingest.service import IngestService
from ingest.store.from_url import is_postgres_url, open_store, open_store_read_only
from ingest.store.postgres import PostgresStore
from ingest.store.queries import SNAPSHOT_SPACING_MS, SqlStore, StoreError, StoreUnreachable
from siltwatch.config import load_site
from siltwatch.schema import Alert, Duty
from tests.ingest.conftest import BACKENDS
from tests.ingest.live import EXAMPLES, alert_key, duty_key, reading_messages

both = pytest.mark.parametrize("store_db", BACKENDS, indirect=True)
only_postgres = pytest.mark.parametrize("store_db", ["postgres"], indirect=True)

A, B = "site-a", "site-b"
H = 3_600_000


def r(
    sensor: str, t: int, value: float = 1.0, seq: int | None = None, *flags: str
) -> SensorReading:
    return SensorReading(sensor, t, value, seq, frozenset(flags))


def alert(ident: str, opened_h: int, *, resolved_h: int | None = None) -> Alert:
    def when(h: int) -> str:
        return datetime.fromtimestamp(h * 3600, tz=UTC).isoformat()

    return Alert.model_validate(
        {
            "id": ident, "kind": "turbidity", "subject": "down-1", "severity": "warning",
            "escalations": [], "opened_at": when(opened_h),
            "resolved_at": None if resolved_h is None else when(resolved_h),
            "rule": "6 NYCRR 703.2", "message": f"plume {ident}", "evidence": {"ntu": 80.0},
        }
    )  # fmt: skip


def duty(ident: str, due_h: int, *, done_h: int | None = None) -> Duty:
    def when(h: int) -> str:
        return datetime.fromtimestamp(h * 3600, tz=UTC).isoformat()

    return Duty.model_validate(
        {
            "id": ident, "kind": "inspection", "reason": "storm", "subject": "site",
            "created_at": when(0), "due_at": when(due_h),
            "completed_at": None if done_h is None else when(done_h), "rule": "GP-0-25-001",
        }
    )  # fmt: skip


@pytest.fixture
def second(store_db: str) -> Iterator[list[SqlStore]]:
    """More stores opened on the test's database (another process, another machine)."""
    opened: list[SqlStore] = []
    yield opened
    for s in opened:
        s.close()


# --- readings -------------------------------------------------------------------------------


@both
def test_a_reading_is_stored_once_per_site_sensor_and_time(store: SqlStore) -> None:
    first = [("up-1", r("turb-up", 1000, 8.0, 1, "clock_unsynced")), ("up-1", r("turb-up", 2000))]
    assert store.add_readings(A, first, 5) == [r for _, r in first]
    again = [("up-1", r("turb-up", 1000, 9.0, 7)), ("up-1", r("turb-up", 3000, 2.5, 1))]
    assert store.add_readings(A, again, 6) == [r("turb-up", 3000, 2.5, 1)], "seq is no key"
    assert store.add_readings(B, [("up-1", r("turb-up", 1000))], 7), "another site's is new"
    assert store.reading_count(A) == 3 and store.reading_count(A, "turb-up") == 3
    assert store.reading_count(A, "turb-down") == 0
    assert store.readings(A, "turb-up") == [
        r("turb-up", 1000, 8.0, 1, "clock_unsynced"),
        r("turb-up", 2000),
        r("turb-up", 3000, 2.5, 1),
    ]


@both
def test_a_batch_stores_a_reading_given_twice_once_as_it_first_came(store: SqlStore) -> None:
    batch = [
        ("up-1", r("turb-up", 2000, 8.0, 1)),
        ("down-1", r("turb-down", 2000, 3.0, 1)),
        ("up-1", r("turb-up", 2000, 9.5, 2, "sensor_fault")),  # the same key: not new
        ("up-1", r("turb-up", 1000, 7.0, 0)),
        ("down-1", r("turb-down", 2000, 3.0, 1)),  # the same reading again
    ]
    assert store.add_readings(A, batch, 5) == [batch[0][1], batch[1][1], batch[3][1]]
    assert store.readings(A, "turb-up") == [r("turb-up", 1000, 7.0, 0), r("turb-up", 2000, 8.0, 1)]
    assert store.reading_count(A) == 3


@both
def test_a_batch_overlapping_stored_readings_returns_the_new_ones_in_its_order(
    store: SqlStore,
) -> None:
    store.add_readings(A, [("up-1", r("turb-up", t)) for t in (1000, 3000)], 5)
    store.add_readings(B, [("up-1", r("turb-up", 2000))], 5)  # another site's: no conflict
    # Neither time nor sensor order, stored ones in between: the answer keeps this order.
    batch = [
        ("up-1", r("turb-up", 4000, 4.0)),
        ("up-1", r("turb-up", 3000, 99.0)),  # stored: the stored value stays
        ("down-1", r("turb-down", 3000)),
        ("up-1", r("turb-up", 2000, 2.0)),
        ("up-1", r("turb-up", 1000, 99.0)),  # stored
        ("down-1", r("turb-down", 500)),
    ]
    assert store.add_readings(A, iter(batch), 6) == [batch[i][1] for i in (0, 2, 3, 5)]
    assert [x.value for x in store.readings(A, "turb-up")] == [1.0, 2.0, 1.0, 4.0]
    assert store.add_readings(A, batch, 7) == [], "all stored now"
    assert store.reading_count(A) == 6 and store.reading_count(B) == 1


@both
def test_a_batch_larger_than_one_statement_is_stored_whole_in_its_order(
    store: SqlStore,
) -> None:
    per = store.READINGS_PER_INSERT
    stored = [("up-1", r("turb-up", t)) for t in range(per - 5, per + 5)]
    store.add_readings(A, stored, 1)
    # 2.5 statements' worth, newest first, two sensors interleaved, every 7th given twice.
    times = range(5 * per // 2, 0, -1)
    batch = [
        ("up-1" if t % 2 else "down-1", r("turb-up" if t % 2 else "turb-down", t)) for t in times
    ]
    batch += [batch[k] for k in range(0, len(batch), 7)]
    got = store.add_readings(A, batch, 2)
    seen = {(x.sensor, x.t) for _, x in stored}
    want = []
    for _, x in batch:
        if (x.sensor, x.t) not in seen:
            seen.add((x.sensor, x.t))
            want.append(x)
    assert got == want and len(want) > per, "new ones, each once, in the batch's order"
    assert store.reading_count(A) == len(want) + len(stored)
    with store.transaction():  # inside the caller's transaction, nothing new is new twice
        assert store.insert_readings(A, batch, 3) == []


@both
def test_a_group_commit_stores_each_messages_readings_as_one_insert_each_in_turn_would(
    store: SqlStore,
) -> None:
    """``insert_reading_groups`` (the service's group commit of many messages): a reading
    is new in the first message that brings it, each message's answer keeps its order,
    and every reading is stored with its own message's arrival time."""
    store.add_readings(A, [("up-1", r("turb-up", 1))], 5)
    groups: list[tuple[list[tuple[str, SensorReading]], int]] = [
        ([("up-1", r("turb-up", 1)), ("up-1", r("turb-up", 3)), ("up-1", r("turb-up", 2))], 10),
        ([("down-1", r("turb-down", 2)), ("up-1", r("turb-up", 3, 9.0))], 20),
        ([], 30),
        ([("down-1", r("turb-down", 2))], 40),
        ([("down-1", r("turb-down", 7))], 50),
    ]
    with store.transaction():
        got = store.insert_reading_groups(A, groups)
    assert got == [
        [r("turb-up", 3), r("turb-up", 2)],
        [r("turb-down", 2)],
        [],
        [],
        [r("turb-down", 7)],
    ]
    assert [x.value for x in store.readings(A, "turb-up")] == [1.0, 1.0, 1.0], "first one kept"
    assert sorted(store.station_clocks(A)) == [("down-1", 7, 50), ("up-1", 3, 10)]
    with store.transaction():  # one reading in all: the one-row statement, same answers
        assert store.insert_reading_groups(A, [([], 1), ([("up-1", r("turb-up", 4))], 60)]) == [
            [],
            [r("turb-up", 4)],
        ]
        assert store.insert_reading_groups(A, [([("up-1", r("turb-up", 4))], 61)]) == [[]]


@both
def test_a_chunk_of_columns_with_a_flagged_reading_comes_as_readings(store: SqlStore) -> None:
    rows = [("st", r(s, t, float(t), 4)) for t in (1000, 2000, 3000) for s in ("b", "a")]
    rows[3] = ("st", r("a", 2000, 2000.0, 4, "backfilled", "clock_unsynced"))
    store.add_readings(A, rows, 1)
    got = list(store.reading_columns_after(A, None, chunk=3))
    assert [type(c) for c in got] == [ReadingColumns, list, ReadingColumns]
    flagged = r("a", 2000, 2000.0, None, "backfilled", "clock_unsynced")
    assert [x for c in got for x in c] == [
        r("a", 1000, 1000.0), r("b", 1000, 1000.0),
        flagged, r("b", 2000, 2000.0),
        r("a", 3000, 3000.0), r("b", 3000, 3000.0),
    ], "in (time, sensor) order, flags kept, no sequence numbers (the engine judges without)"  # fmt: skip


@both
def test_readings_come_in_time_then_sensor_code_point_order_in_chunks(store: SqlStore) -> None:
    # "B" sorts before "a" by code point (SQLite's order); a linguistic collation disagrees.
    sensors = ["a-up", "B-down", "ä-mid", "b-rain"]
    rows = [(f"st-{s}", r(s, t, float(t))) for t in (3000, 1000, 2000) for s in sensors]
    store.add_readings(A, rows, 1)
    want = sorted((rd for _, rd in rows), key=lambda x: (x.t, x.sensor))
    chunks = list(store.readings_after(A, None, chunk=5))
    assert [len(c) for c in chunks] == [5, 5, 2]
    assert [x for c in chunks for x in c] == want
    assert [x for c in store.readings_after(A, 1000, chunk=3) for x in c] == want[4:]

    columns = list(store.reading_columns_after(A, None, chunk=5))
    assert [len(c) for c in columns] == [4, 4, 4], "an instant is never split between chunks"
    assert all(isinstance(c, ReadingColumns) for c in columns)
    assert [x for c in columns for x in c] == want
    assert [x for c in store.reading_columns_after(A, 1000, chunk=3) for x in c] == want[4:]
    assert [len(c) for c in store.reading_columns_after(A, None, chunk=2)] == [4, 4, 4], (
        "a chunk smaller than one instant's readings takes the whole instant"
    )

    between = [x for c in store.readings_between(A, 1000, 3000, chunk=3) for x in c]
    assert [rd for _, rd in between] == want[:8], "[start, end): the end is left out"
    assert [st for st, _ in between][:4] == [f"st-{x.sensor}" for x in want[:4]]
    assert list(store.readings_between(B, None, None)) == []


@both
def test_sites_are_every_site_the_store_holds_anything_of(store: SqlStore) -> None:
    assert store.sites() == []
    store.add_readings("site-c", [("up-1", r("turb-up", 1))], 1)
    store.add_inspection(A, Inspection(5, "Jo Whitaker", None), 5)
    store.save_duty(B, duty("d-1", 10))
    assert store.sites() == ["site-a", "site-b", "site-c"]


@both
def test_marks_and_station_clocks_ignore_untrusted_times(store: SqlStore) -> None:
    store.add_readings(A, [("up-1", r("turb-up", 5 * H)), ("down-1", r("turb-down", 4 * H))], 7)
    marks = store.marks()
    assert marks[0] >= 2 and marks[1:] == (0, 0, 0)
    ahead = r("turb-up", 90 * H, 1.0, None, "clock_ahead")
    store.add_readings(A, [("up-1", ahead), ("up-1", r("turb-up", 2 * H))], 8)
    assert store.earliest_stored_after(A, *marks) == 2 * H
    assert store.earliest_stored_after(B, *marks) is None
    assert sorted(store.station_clocks(A)) == [("down-1", 4 * H, 7), ("up-1", 5 * H, 8)]


def _clocks_from_history(store: SqlStore, site: str) -> list[tuple[str, int, int]]:
    """station_clocks' answer computed the old way: a GROUP BY over every stored reading."""
    rows = store._execute(
        "SELECT station, max(t), max(received_at) FROM readings WHERE site = ? AND "
        "flags NOT LIKE '%clock_unsynced%' AND flags NOT LIKE '%clock_ahead%' "
        "GROUP BY station ORDER BY station",
        (site,),
    )
    return [(str(s), int(t), int(a)) for s, t, a in rows]


@both
def test_station_clocks_are_kept_with_the_readings_not_recomputed(store: SqlStore) -> None:
    # Out of order, duplicates, untrusted times, a group commit that fails, two sites.
    store.add_readings(A, [("up-1", r("turb-up", 5 * H)), ("down-1", r("turb-down", 4 * H))], 7)
    with store.transaction():
        store.insert_reading_groups(
            A,
            [
                ([("up-1", r("turb-up", 3 * H)), ("up-1", r("turb-up", 5 * H))], 9),
                ([("down-1", r("turb-down", 6 * H, 1.0, None, "clock_unsynced"))], 11),
                ([("basin-1", r("rain-1", 2 * H)), ("basin-1", r("lvl", 1 * H))], 12),
            ],
        )
    with pytest.raises(RuntimeError), store.transaction():
        store.insert_readings(A, [("up-1", r("turb-up", 80 * H))], 99)
        raise RuntimeError("the process dies mid-batch")
    store.add_readings(A, [("down-1", r("turb-down", 5 * H, 2.0, None, "spike"))], 13)
    store.add_readings(B, [("up-1", r("turb-up", 50 * H))], 14)
    assert store.station_clocks(A) == [
        ("basin-1", 2 * H, 12),
        ("down-1", 5 * H, 13),
        ("up-1", 5 * H, 9),
    ]
    assert store.station_clocks(A) == _clocks_from_history(store, A)
    assert store.station_clocks(B) == [("up-1", 50 * H, 14)] == _clocks_from_history(store, B)


@both
def test_a_store_from_before_station_clocks_fills_them_on_open(store_db: str) -> None:
    store = open_store(store_db)
    store.add_readings(A, [("up-1", r("turb-up", 5 * H)), ("down-1", r("turb-down", 4 * H))], 7)
    store.add_readings(A, [("up-1", r("turb-up", 9 * H, 1.0, None, "clock_ahead"))], 8)
    # What siltwatch before schema v5 wrote: no station_clocks table.
    with store.transaction():
        store._execute("DROP TABLE station_clocks")
        if is_postgres_url(store_db):
            store._execute("UPDATE siltwatch_schema SET version = 4")
        else:
            store._execute("PRAGMA user_version=4")
    store.close()
    with pytest.raises(StoreError, match="schema v4"):
        open_store_read_only(store_db)  # a reader never migrates: it names the fix
    store = open_store(store_db)
    try:
        assert store.station_clocks(A) == [("down-1", 4 * H, 7), ("up-1", 5 * H, 7)]
        store.add_readings(A, [("up-1", r("turb-up", 6 * H))], 10)
        assert store.station_clocks(A) == [("down-1", 4 * H, 7), ("up-1", 6 * H, 10)]
    finally:
        store.close()


# --- records --------------------------------------------------------------------------------


@both
def test_rejections_keep_every_payload_even_unprintable_bytes(store: SqlStore) -> None:
    store.add_rejection("siltwatch/v1/a/up-1/turb-up/reading", "not JSON", b"\x00\xff{", 1, A)
    with store.transaction():
        store.insert_rejection("t/2", "too deep: nested 1000000", b"[" * 20_000, 2)
    assert store.rejections() == [
        ("siltwatch/v1/a/up-1/turb-up/reading", "not JSON"),
        ("t/2", "too deep: nested 1000000"),
    ]
    assert store.rejection_count() == 2


@both
def test_an_inspection_is_stored_once_and_read_in_time_order(store: SqlStore) -> None:
    late = Inspection(9 * H, "Jo Whitaker", "du-1", signed=True)
    early = Inspection(2 * H, "Dana Ruiz", None)
    assert store.add_inspection(A, late, 10)
    assert not store.add_inspection(A, late, 11), "the same inspection delivered again"
    assert store.add_inspection(A, early, 12)
    assert store.inspections_after(A, None) == [early, late]
    assert store.inspections_after(A, 2 * H) == [late]
    assert store.inspections_after(B, None) == []


@both
def test_alerts_are_upserted_withdrawn_and_keep_their_late_mark(store: SqlStore) -> None:
    store.save_alert(A, alert("al-2", 5))
    store.save_alert(A, alert("al-1", 3), late=True)
    store.save_alert(A, alert("al-1", 3, resolved_h=4))  # not late this time: the mark stays
    assert store.alerts(A) == [alert("al-1", 3, resolved_h=4), alert("al-2", 5)]
    assert store.open_alerts(A) == [alert("al-2", 5)]
    assert store.late_alert_ids(A) == {"al-1"}
    found = store.stored_alert(A, "al-1")
    assert found is not None and found.late and not found.withdrawn
    assert store.stored_alert(A, "al-9") is None and store.stored_alert(B, "al-1") is None

    store.withdraw_alert(A, alert("al-2", 5, resolved_h=6))
    assert store.alerts(A) == [alert("al-1", 3, resolved_h=4)]
    records = store.alert_records(A)
    assert [(x.alert.id, x.late, x.withdrawn) for x in records] == [
        ("al-1", True, False),
        ("al-2", False, True),
    ]
    since = alert("x", 3).opened_at.isoformat()
    assert [x.alert.id for x in store.alerts_opened_after(A, since)] == ["al-2"]
    store.save_alert(A, alert("al-2", 5))
    assert [a.id for a in store.alerts(A)] == ["al-1", "al-2"], "saved again: not withdrawn"


@both
def test_duties_are_upserted_and_come_due_soonest_first(store: SqlStore) -> None:
    store.save_duty(A, duty("d-late", 48))
    store.save_duty(A, duty("d-soon", 24))
    store.save_duty(A, duty("d-done", 12))
    store.save_duty(A, duty("d-done", 12, done_h=11))
    assert store.stored_duty(A, "d-done") == duty("d-done", 12, done_h=11)
    assert store.stored_duty(A, "nothing") is None
    assert [d.id for d in store.duties(A)] == ["d-done", "d-late", "d-soon"]
    until = datetime.fromtimestamp(30 * 3600, tz=UTC)
    assert store.duties_due(A, until) == [duty("d-soon", 24)]


# --- transactions ---------------------------------------------------------------------------


@both
def test_a_transaction_commits_together_or_not_at_all(store: SqlStore, store_db: str) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.insert_readings(A, [("up-1", r("turb-up", 1))], 1)
        store.insert_inspection(A, Inspection(1, "Jo Whitaker", None), 1)
        raise RuntimeError("the process dies mid-batch")
    assert store.reading_count(A) == 0 and store.inspections_after(A, None) == []

    with store.transaction():
        assert store.insert_readings(A, [("up-1", r("turb-up", 1))], 1)
        assert not store.insert_readings(A, [("up-1", r("turb-up", 1))], 1), "seen in its txn"
    reader = open_store_read_only(store_db)
    try:
        assert reader.reading_count(A) == 1, "committed: another connection sees it"
    finally:
        reader.close()


# --- snapshots ------------------------------------------------------------------------------


@both
def test_snapshots_are_kept_thinned_loaded_and_dropped(store: SqlStore) -> None:
    assert store.load_snapshot(A) is None and store.snapshots(A) == []
    store.save_snapshot(A, b"\x00start", 1, processed_to=None)
    for hour in (1, 2, 8, 9):
        store.save_snapshot(A, bytes([hour, 0]), hour, processed_to=hour * H, marks=(hour, 2, 3, 4))
    kept = store.snapshots(A)
    assert [k.processed_to for k in kept] == [9 * H, 2 * H, None], "one per 6 h, plus the newest"
    assert SNAPSHOT_SPACING_MS == 6 * H
    newest = kept[0]
    assert (newest.blob, newest.reading_mark, newest.status_mark, newest.site_log_mark) == (
        bytes([9, 0]), 9, 3, 4,
    )  # fmt: skip
    assert kept[-1].blob == b"\x00start"
    assert store.load_snapshot(A) == bytes([9, 0])
    store.save_snapshot(A, b"again", 10, processed_to=9 * H, marks=(1, 1))
    assert store.snapshots(A)[0].blob == b"again" and store.snapshots(A)[0].status_mark == 0
    assert store.snapshots(B) == []

    store.drop_snapshots_from(A, 2 * H)
    assert [k.processed_to for k in store.snapshots(A)] == [None]
    store.drop_snapshot(A, store.snapshots(A)[0])
    assert store.load_snapshot(A) is None


# --- opening, reopening, one writer ---------------------------------------------------------


@both
def test_a_reopened_store_has_what_was_written(store: SqlStore, store_db: str) -> None:
    store.add_readings(A, [("up-1", r("turb-up", 1, 4.5))], 1)
    store.save_snapshot(A, b"engine", 2, processed_to=1)
    store.close()
    again = open_store(store_db)  # the schema is there: nothing is created twice
    try:
        assert again.readings(A, "turb-up") == [r("turb-up", 1, 4.5)]
        assert again.load_snapshot(A) == b"engine"
    finally:
        again.close()


@both
def test_a_read_only_store_reads_and_cannot_write(store: SqlStore, store_db: str) -> None:
    store.add_readings(A, [("up-1", r("turb-up", 1))], 1)
    reader = open_store_read_only(store_db)
    try:
        assert reader.reading_count(A) == 1 and reader.sites() == [A]
        with pytest.raises((sqlite3.OperationalError, psycopg.Error)):
            reader.add_readings(A, [("up-1", r("turb-up", 2))], 2)
    finally:
        reader.close()
    assert store.reading_count(A) == 1


@both
def test_read_only_opening_refuses_what_is_not_a_store(store_db: str, tmp_path: Path) -> None:
    # A PostgreSQL database the fixture just made: nothing created the schema in it.
    empty = store_db if is_postgres_url(store_db) else str(tmp_path / "missing.sqlite3")
    with pytest.raises(StoreError, match=r"no such store|is not a siltwatch store"):
        open_store_read_only(empty)


@both
def test_a_second_writer_is_refused_until_the_first_closes(
    store: SqlStore, store_db: str, second: list[SqlStore]
) -> None:
    store.claim_writer("siltwatch serve for site 'site-a'")
    other = open_store(store_db)
    second.append(other)
    with pytest.raises(StoreError, match="already served by siltwatch serve for site 'site-a'"):
        other.claim_writer("siltwatch serve for site 'site-a'")
    store.close()
    other.claim_writer("siltwatch serve for site 'site-a'")  # the first one's claim is gone


@only_postgres
def test_a_postgres_claim_ends_with_its_session(
    store: SqlStore, store_db: str, second: list[SqlStore]
) -> None:
    """A worker whose session dies (a crash, a cut network) loses its claim at once, and
    cannot write on unnoticed: its next write fails."""
    claim = "partition 3 of 8"
    assert isinstance(store, PostgresStore)
    store.claim_writer("worker on host-1", claim=claim)
    taker = PostgresStore(store_db)
    second.append(taker)
    with pytest.raises(StoreError, match="already served by worker on host-1"):
        taker.claim_writer("worker on host-2", claim=claim)
    taker.claim_writer("worker on host-2", claim="partition 4 of 8")  # another partition
    with psycopg.connect(store_db, autocommit=True) as admin:
        # With a timeout it returns once the session has ended (not only been signalled).
        ended = admin.execute(
            "SELECT pg_terminate_backend(%s, 5000)", (store.db.info.backend_pid,)
        ).fetchone()
        assert ended == (True,)
    taker.claim_writer("worker on host-2", claim=claim)
    with pytest.raises(StoreUnreachable, match=r"^the store postgresql://.* is unreachable \("):
        store.add_readings(A, [("up-1", r("turb-up", 1))], 1)


# --- the service over the store -------------------------------------------------------------


def _site_without_a_site_log() -> Any:
    """The Lake George example, its routine inspections counted from the first reading:
    the storm comes with no site log, and the pack's routine clock otherwise waits for the
    first disturbance (inspection.routine_by_site_log), so the storm would give no duty."""
    folder = Path(tempfile.mkdtemp(prefix="siltwatch-contract-site-"))
    path = folder / "lake-george-site.toml"
    text = (EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8")
    path.write_text(
        text + '\n[rule_overrides]\n"inspection.routine_by_site_log" = false\n', encoding="utf-8"
    )
    try:
        return load_site(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


SITE = _site_without_a_site_log()
STORM = sorted(
    read_csv_readings(EXAMPLES / "lake-george-storm.csv", SITE.sensors()),
    key=lambda x: (x.t, x.sensor),
)
END = STORM[-1].t


def feed(service: IngestService, readings: list[SensorReading]) -> None:
    for message in reading_messages(SITE, readings):
        service.handle_message(message.topic, message.payload, message.keys[0][1] + 1000)


def outcome(store: SqlStore) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    site = SITE.site.id
    return (
        [alert_key(a.model_dump(mode="json")) for a in store.alerts(site)],
        [duty_key(d.model_dump(mode="json")) for d in store.duties(site)],
    )


@pytest.fixture(scope="module")
def storm_over_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The storm through the service over a SQLite file: what every backend must give."""
    store = open_store(tmp_path_factory.mktemp("reference") / "s.sqlite3")
    service = IngestService(SITE, store)
    feed(service, STORM)
    service.finish(END)
    result = outcome(store)
    store.close()
    return result


@both
def test_the_storm_gives_the_same_alerts_and_duties(
    store: SqlStore, storm_over_sqlite: Any
) -> None:
    service = IngestService(SITE, store)
    feed(service, STORM)
    service.finish(END)
    alerts, duties = outcome(store)
    assert alerts and duties, "the storm raises alerts and duties"
    assert (alerts, duties) == storm_over_sqlite
    assert store.reading_count(SITE.site.id) == len(STORM)


@both
def test_a_service_started_again_restores_the_snapshot_and_carries_on(
    store: SqlStore, store_db: str, storm_over_sqlite: Any
) -> None:
    """Half the storm, a clean stop; then another service on another store object (another
    machine taking over) finishes it: the same alerts, and no rebuild from scratch."""
    half = len(STORM) // 2
    first = IngestService(SITE, store)
    feed(first, STORM[:half])
    first.close(STORM[half - 1].t + 1000)
    assert store.snapshots(SITE.site.id), "the stop leaves a snapshot"
    store.close()

    said: list[str] = []
    taker = open_store(store_db)
    try:
        again = IngestService(SITE, taker, say=said.append)
        assert said == [], "restored from the snapshot, not rebuilt from the store"
        assert again.engine.processed_to() == first.engine.processed_to()
        feed(again, STORM[half:])
        again.finish(END)
        assert outcome(taker) == storm_over_sqlite
    finally:
        taker.close()
