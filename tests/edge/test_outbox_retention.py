"""The outbox keeps what the broker acknowledged, for a bounded window, so a reading the
broker then loses can be sent again (edge/outbox.py ``resend``); what it holds is what
the station's status reports."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from edge.outbox import Held, Outbox
from hardware.base import Sample

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DAY = 86_400.0


def fill(box: Outbox, sensor: str, n: int, start: datetime = T0) -> None:
    for i in range(n):
        box.append(sensor, start + timedelta(minutes=i), Sample(value=float(i), unit="NTU"))


def ack_all(box: Outbox) -> None:
    box.ack([r.id for r in box.pending(limit=10_000)])


def test_acknowledged_readings_are_kept_not_pending_and_can_be_sent_again(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite", retain_s=DAY, retain_max=1_000)
    fill(box, "a", 5)
    ack_all(box)
    assert (box.backlog(), box.retained(), box.pending()) == (0, 5, [])
    assert box.held() == [Held("a", 0, "2026-05-01T12:00:00Z", 5)]
    assert box.resend("a", 1, 3) == 3
    again = box.pending()
    assert [(r.sensor, r.seq, r.value) for r in again] == [
        ("a", 1, 1.0),
        ("a", 2, 2.0),
        ("a", 3, 3.0),
    ]
    assert (box.backlog(), box.retained()) == (3, 2)
    assert box.resend("a", 1, 3) == 0  # pending already: nothing twice
    box.ack([r.id for r in again])
    assert (box.backlog(), box.retained(), box.next_seqs()) == (0, 5, {"a": 5})


def test_retention_is_bounded_by_count_and_by_age_oldest_first(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite", retain_s=3_600, retain_max=4)
    fill(box, "a", 6)
    ack_all(box)
    assert (box.retained(), box.expired()) == (4, 2)
    assert box.held() == [Held("a", 2, "2026-05-01T12:02:00Z", 6)]
    assert box.resend("a", 0, 1) == 0  # evicted: cannot be given again
    assert box.expire_retained(T0 + timedelta(hours=1, minutes=3, seconds=30)) == 2
    assert box.held() == [Held("a", 4, "2026-05-01T12:04:00Z", 6)]
    assert box.expire_retained(T0 + timedelta(days=1)) == 2
    assert box.held() == [Held("a", 6, None, 6)] and box.expired() == 6


def test_the_unsent_cap_never_evicts_for_retention_and_retention_never_evicts_unsent(
    tmp_path: Path,
) -> None:
    box = Outbox(tmp_path / "o.sqlite", max_readings=10, retain_s=DAY, retain_max=3)
    fill(box, "a", 5)
    ack_all(box)  # 3 retained
    fill(box, "a", 10, T0 + timedelta(hours=1))  # 10 pending: at the cap, none dropped
    assert (box.backlog(), box.retained(), box.dropped()) == (10, 3, 0)
    fill(box, "a", 1, T0 + timedelta(hours=2))
    assert (box.backlog(), box.retained(), box.dropped()) == (10, 3, 1)
    assert [r.seq for r in box.pending()][:2] == [6, 7]  # the oldest *pending* went


def test_an_outbox_written_before_retention_gains_it_in_place(tmp_path: Path) -> None:
    path = tmp_path / "o.sqlite"
    box = Outbox(path)
    fill(box, "a", 3)
    box.close()
    db = sqlite3.connect(path)  # what an older agent left: no 'acked' column
    db.executescript(
        "CREATE TABLE old AS SELECT id, sensor, seq, time, value, unit, raw, quality FROM outbox;"
        "DROP TABLE outbox; ALTER TABLE old RENAME TO outbox;"
    )
    db.close()
    box = Outbox(path, retain_s=DAY, retain_max=10)
    assert [r.seq for r in box.pending()] == [0, 1, 2]
    ack_all(box)
    assert (box.backlog(), box.retained()) == (0, 3)


def test_without_retention_an_acknowledged_reading_is_deleted_as_before(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.sqlite")
    fill(box, "a", 2)
    ack_all(box)
    assert box.conn.execute("SELECT count(*) FROM outbox").fetchone()[0] == 0
    assert box.held() == [Held("a", 2, None, 2)]
