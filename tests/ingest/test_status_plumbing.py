"""Station statuses: decoded, stored with the message's commit, fed to the engine, replayed.

The detectors of these tests are one :class:`StatusProbe` that records every
report the engine hands it, so "delivered exactly once" is read off its state,
which a snapshot carries across a restart like any detector's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analytics.engine import Engine
from analytics.events import StationReport
from analytics.timeutil import MS_PER_S, iso
from ingest.recordings.formats import read_capture
from ingest.recordings.replay import replay_site
from ingest.store.queries import SqlStore
from ingest.store.sqlite import SqliteStore
from siltwatch.schema import reading_topic, status_topic
from tests.ingest import probes
from tests.ingest.conftest import BACKENDS
from tests.ingest.probes import SITE, SITE_ID, TEN_YEARS_MS, at, minutes, new_service, reading
from tests.ingest.probes import StatusSeen as Seen


@pytest.fixture(autouse=True)
def only_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every engine of these tests (new, restored, rebuilt) runs the probe alone."""
    probes.run_alone(monkeypatch, probes.StatusProbe)


def probe(engine: Engine) -> list[Seen]:
    return probes.seen_by(engine, probes.StatusProbe)


def status(station: str, state: str, t: int | None = None, **health: Any) -> bytes:
    body: dict[str, Any] = {"type": "status", "site": SITE_ID, "station": station, "state": state}
    if t is not None:
        body["time"] = iso(t)
    if health:
        body["health"] = health
    return json.dumps(body).encode()


UP = status_topic(SITE_ID, "up-1")
DOWN = status_topic(SITE_ID, "down-1")
ONLINE = status("up-1", "online", at(5.5), battery_v=12.4, backlog=0, clock_synced=True)
WILL = status("down-1", "offline")  # a last will: no time of its own
S1: Seen = ("up-1", at(5.5), "online", True)
S2: Seen = ("down-1", at(20.5), "offline", False)  # the will, placed at its arrival
S3: Seen = ("up-1", at(21.25), "online", True)


# --- the store ------------------------------------------------------------------------------


@pytest.mark.parametrize("store_db", BACKENDS, indirect=True)
def test_store_round_trip_and_duplicate_refusal(store: SqlStore) -> None:
    full = StationReport(
        "up-1",
        at(1),
        "online",
        battery_v=12.4,
        cpu_temp_c=51.5,
        disk_free_mb=812.0,
        backlog=3,
        dropped=0,
        quarantined=1,
        clock_synced=False,
        clock_offset_s=-2.5,
    )
    will = StationReport("up-1", at(2), "offline", timed=False)
    assert store.add_status(SITE_ID, full, at(1) + 500)
    assert not store.add_status(SITE_ID, full, at(3)), "the retained status delivered again"
    assert store.add_status(SITE_ID, will, at(2))
    redelivered_will = StationReport("up-1", at(4), "offline", timed=False)
    assert not store.add_status(SITE_ID, redelivered_will, at(4)), "a will's t is its arrival"
    assert store.add_status(SITE_ID, full, at(5)), "the same status after another is a change"
    other = StationReport("down-1", at(1), "online", battery_v=12.4)
    assert store.add_status(SITE_ID, other, at(1))
    later = StationReport("down-1", at(6), "online", battery_v=12.4)
    assert store.add_status(SITE_ID, later, at(6)), "a new time is a new status"
    health = StationReport("down-1", at(6), "online", battery_v=11.9)
    assert store.add_status(SITE_ID, health, at(6)), "new health at the same time is news"

    rows = store.statuses(SITE_ID)
    assert [r for _id, _arrived, r in rows] == [full, will, full, other, later, health]
    assert [arrived for _id, arrived, _r in rows][:2] == [at(1) + 500, at(2)]
    assert [r for *_, r in store.statuses(SITE_ID, "up-1", after_id=rows[0][0])] == [will, full]
    assert store.statuses_after(SITE_ID, at(1)) == [will, later, health]
    assert store.statuses_after(SITE_ID, None)[:3] == [full, full, other]  # (t, id)
    assert store.marks()[2] == rows[-1][0]
    assert store.earliest_stored_after(SITE_ID, *store.marks()[:2], rows[2][0]) == at(1)
    assert store.statuses("another-site") == []
    # The console's station table reads the newest by arrival, one seek per station.
    assert store.latest_status(SITE_ID, "up-1") == full
    assert store.latest_status(SITE_ID, "down-1") == health
    assert store.latest_status(SITE_ID, "basin-1") is None


OLD_SNAPSHOTS = """
CREATE TABLE snapshots (
    site TEXT NOT NULL, processed_to INTEGER NOT NULL, reading_mark INTEGER NOT NULL,
    inspection_mark INTEGER NOT NULL, taken_at INTEGER NOT NULL, blob BLOB NOT NULL,
    PRIMARY KEY (site, processed_to)
);
"""


def test_a_version_2_store_gains_statuses_in_place(sqlite_path: Path) -> None:
    # Make it the file a version 2 siltwatch wrote: no statuses, no status marks.
    version_2 = (
        "DROP TABLE statuses; DROP TABLE snapshots;"
        + OLD_SNAPSHOTS
        + "INSERT INTO snapshots VALUES ('lg-route9n', 5, 8, 0, 7, x'00');"
        + "PRAGMA user_version=2;"
    )
    with probes.an_older_store(sqlite_path, version_2) as store:
        (row,) = store.snapshots(SITE_ID)
        assert (row.processed_to, row.reading_mark, row.status_mark, row.blob) == (5, 8, 0, b"\0")
        assert store.add_status(SITE_ID, StationReport("up-1", at(9), "online"), at(9))
        assert store.marks() == (8, 0, 1, 0)
        assert store.earliest_stored_after(SITE_ID, 8, 0, row.status_mark) == at(9)


# --- the live service -----------------------------------------------------------------------


def test_the_service_stores_a_status_and_feeds_it_in_event_time(store: SqliteStore) -> None:
    service = new_service(store)
    minutes(service, 0, 5)
    service.handle_message(UP, ONLINE, at(5.5) + 200)
    minutes(service, 6, 20)
    service.handle_message(DOWN, WILL, at(20.5))
    minutes(service, 21, 25)
    assert probe(service.engine) == [S1, S2]
    assert (service.stats.statuses, service.stats.status_duplicates) == (2, 0)
    stored = [(r.station, r.t, r.state, r.timed) for *_, r in store.statuses(SITE_ID)]
    assert stored == [S1, S2]
    (_id, _arrived, online), _will = store.statuses(SITE_ID)
    assert online.health() == {"battery_v": 12.4, "backlog": 0, "clock_synced": True}

    # The broker delivers retained statuses again when the service reconnects: not news.
    service.handle_message(UP, ONLINE, at(26))
    service.handle_message(DOWN, WILL, at(26))
    minutes(service, 26, 30)
    assert (service.stats.statuses, service.stats.status_duplicates) == (2, 2)
    assert len(store.statuses(SITE_ID)) == 2
    assert probe(service.engine) == [S1, S2]
    assert store.rejections() == []


def test_a_status_from_a_clock_ten_years_ahead_is_stored_at_its_arrival(
    store: SqliteStore,
) -> None:
    service = new_service(store)
    minutes(service, 0, 10)
    watermark = service.engine.watermark
    arrived = at(10.5)
    service.handle_message(UP, status("up-1", "online", arrived + TEN_YEARS_MS), arrived)
    assert service.engine.watermark == watermark, "one bad clock moved event time"
    ((_id, _a, report),) = store.statuses(SITE_ID)
    assert (report.t, report.timed) == (arrived, False)
    assert service.stats.clock_ahead == 1
    minutes(service, 11, 13)
    assert probe(service.engine) == [("up-1", arrived, "online", False)]
    # Within the skew bound the station's own time is kept.
    service.handle_message(UP, status("up-1", "offline", at(13.5)), at(13.5) - 60 * MS_PER_S)
    assert store.statuses(SITE_ID)[-1][2].timed


# S1 processed, S2 still waiting in the engine at the snapshot, S3 stored after it.
_history = probes.history((UP, ONLINE), (DOWN, WILL), (UP, status("up-1", "online", at(21.25))))


@pytest.mark.parametrize("how", probes.HOW)
def test_a_restarted_service_delivers_each_status_exactly_once(
    store: SqliteStore, how: str
) -> None:
    first, second = probes.restarted(store, how, _history)
    assert probe(second.engine) == [S1, S2, S3]
    assert probe(first.engine) == [S1, S2, S3]


def test_a_rebuild_after_late_data_delivers_each_status_exactly_once(store: SqliteStore) -> None:
    service = new_service(store)
    _history(service)
    late = reading("up-1", "turb-up", 2.5)  # a reading from before what was judged
    service.handle_message(reading_topic(SITE_ID, "up-1", "turb-up"), late, at(24))
    assert service.stats.late_readings == 1
    service.rebuild_now(at(24) + 1)
    assert service.stats.rebuilds == 1
    minutes(service, 24, 30)
    assert probe(service.engine) == [S1, S2, S3]


def test_a_late_status_takes_a_restart_to_an_older_snapshot(store: SqliteStore) -> None:
    """A status stored after a snapshot but dated before it: the status mark finds it."""
    late: Seen = ("down-1", at(10.5), "online", True)
    message = (DOWN, status("down-1", "online", at(10.5)))
    second = probes.restarted_after_a_late_message(store, _history, message, at(10.5))
    assert probe(second.engine)[:3] == [S1, late, S2]
    minutes(second, 24, 30)
    assert probe(second.engine) == [S1, late, S2, S3]


# --- captures --------------------------------------------------------------------------------


def test_a_capture_replays_statuses_in_event_time(tmp_path: Path) -> None:
    lines = probes.upstream_capture(0, 30)
    lines.insert(3, probes.capture_line(UP, ONLINE, at(5.5)))
    lines.insert(9, probes.capture_line(DOWN, WILL, at(20.5)))
    lines.append(
        probes.capture_line(DOWN, WILL)
    )  # a will without an arrival time: nowhere to place it
    ahead = status("up-1", "offline", at(12) + TEN_YEARS_MS)
    lines.append(probes.capture_line(UP, ahead, at(12)))  # placed at its arrival, as serve would
    lines.append(
        probes.capture_line(UP, status("up-1", "online", at(40)))
    )  # after the last reading
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(lines), encoding="utf-8")

    capture = read_capture(path, SITE.sensors())
    assert len(capture.readings) == 31 and len(capture.statuses) == 4
    result = replay_site(
        SITE, capture.readings, capture.inspections, statuses=capture.statuses, keep_engine=True
    )
    assert result.engine is not None
    assert probe(result.engine) == [S1, ("up-1", at(12), "offline", False), S2]
    assert result.stats.statuses == 3
