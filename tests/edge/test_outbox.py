"""The outbox's promises: seq survives restarts, seq and reading commit together,
a bounded size with counted eviction, and refused readings kept in quarantine."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge.outbox import Outbox
from hardware.base import Sample
from siltwatch.schema import QualityFlag

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def sample(value: float = 1.0) -> Sample:
    return Sample(value=value, unit="NTU", raw=value * 2)


def test_seq_is_per_sensor_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "o.sqlite"
    box = Outbox(path)
    assert [box.append("a", T0, sample()) for _ in range(3)] == [0, 1, 2]
    assert box.append("b", T0, sample()) == 0
    box.close()
    box = Outbox(path)  # a reboot
    assert box.append("a", T0, sample()) == 3
    assert box.next_seqs() == {"a": 4, "b": 1}
    assert box.backlog() == 5


def test_acked_readings_do_not_give_their_seq_back(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite")
    box.append("a", T0, sample())
    box.ack([r.id for r in box.pending()])
    assert box.backlog() == 0
    assert box.append("a", T0, sample()) == 1


def test_rows_keep_time_flags_and_order(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite")
    box.append(
        "a",
        T0,
        Sample(2.5, "NTU", 1.0, frozenset({QualityFlag.SIMULATED})),
        (QualityFlag.CLOCK_UNSYNCED,),
    )
    box.append("b", T0 + timedelta(seconds=1), sample(3.0))
    rows = box.pending()
    assert [(r.sensor, r.seq, r.value) for r in rows] == [("a", 0, 2.5), ("b", 0, 3.0)]
    assert rows[0].time == "2026-05-01T12:00:00Z"
    assert rows[0].quality == ["clock_unsynced", "simulated"]
    assert box.pending(after_id=rows[0].id) == rows[1:]


def test_a_failing_driver_commit_rolls_back_the_reading_and_its_seq(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite")

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE no_such_table SET x = 1")

    with pytest.raises(sqlite3.OperationalError):
        box.append("a", T0, Sample(1.0, "mm", commit=broken))
    assert box.backlog() == 0 and box.pending() == []
    assert box.append("a", T0, sample()) == 0  # the seq was not consumed


def test_cap_evicts_oldest_and_counts_the_loss(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite", max_readings=10)
    for i in range(25):
        box.append("a", T0, sample(float(i)))
    assert box.backlog() == 10
    assert box.dropped() == 15
    assert [r.seq for r in box.pending()] == list(range(15, 25))


def test_no_eviction_below_the_cap(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite", max_readings=10)
    for _ in range(10):
        box.append("a", T0, sample())
    assert box.dropped() == 0 and box.backlog() == 10


def test_quarantine_keeps_refused_readings_and_counts_them(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite")
    for _ in range(3):
        box.append("a", T0, sample())
    ids = [r.id for r in box.pending()][:2]
    assert box.quarantine(ids, "siltwatch/v1/x/y/a/reading", "135 Not authorized", T0) == 2
    assert box.backlog() == 1 and box.quarantined() == 2
    rows = box.conn.execute("SELECT seq, topic, reason FROM quarantine ORDER BY seq").fetchall()
    assert rows == [
        (0, "siltwatch/v1/x/y/a/reading", "135 Not authorized"),
        (1, "siltwatch/v1/x/y/a/reading", "135 Not authorized"),
    ]


def test_ack_of_already_gone_rows_is_harmless(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite")
    box.append("a", T0, sample())
    ids = [r.id for r in box.pending()]
    assert box.ack(ids) == 1
    assert box.ack(ids) == 0  # a late PUBACK after eviction or a resend
    assert box.backlog() == 0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["append_a", "append_b", "ack_oldest", "reopen"]), max_size=40))
def test_backlog_counter_matches_rows_and_seqs_never_repeat(
    tmp_path_factory: pytest.TempPathFactory, ops: list[str]
) -> None:
    path = tmp_path_factory.mktemp("prop") / "o.sqlite"
    box = Outbox(path, max_readings=8)
    issued: dict[str, list[int]] = {"a": [], "b": []}
    for op in ops:
        if op.startswith("append"):
            sensor = op[-1]
            issued[sensor].append(box.append(sensor, T0, sample()))
        elif op == "ack_oldest":
            box.ack([r.id for r in box.pending(limit=3)])
        else:
            box.close()
            box = Outbox(path, max_readings=8)
    rows = box.conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
    assert box.backlog() == rows <= 8
    for seqs in issued.values():
        assert seqs == list(range(len(seqs)))
    box.close()
