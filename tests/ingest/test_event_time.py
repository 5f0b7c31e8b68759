"""Event time that one bad clock, jitter or a long outage cannot break.

The live service is driven in-process (``IngestService.handle_message`` with
the arrival time a broker would give), with the Lake George storm week; its
stored alerts and duties are compared with a replay of the same readings —
the event-time promise is that they are the same however the data arrived.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from analytics.engine import CLOCK_AHEAD
from analytics.events import SensorReading
from analytics.timeutil import MS_PER_DAY, MS_PER_H, MS_PER_MIN, MS_PER_S, iso
from ingest.recordings.formats import read_csv_readings
from ingest.recordings.replay import replay_site
from ingest.service import LATE_PREFIX, IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from siltwatch.schema import inspections_topic
from tests.ingest.live import EXAMPLES, Outgoing, alert_key, duty_key, reading_messages

SITE = load_site(EXAMPLES / "lake-george-site.toml")
SITE_ID = SITE.site.id
READINGS = sorted(
    read_csv_readings(EXAMPLES / "lake-george-storm.csv", SITE.sensors()),
    key=lambda r: (r.t, r.sensor),
)
START, END = READINGS[0].t, READINGS[-1].t
LATENESS_MS = 15 * MS_PER_MIN


def expected() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    result = replay_site(SITE, READINGS)
    return (
        [alert_key(a.model_dump(mode="json")) for a in result.alerts],
        [duty_key(d.model_dump(mode="json")) for d in result.duties],
    )


def live(store: SqliteStore, arrivals: list[tuple[int, Outgoing]]) -> IngestService:
    """Deliver messages at their arrival times (sorted), as the broker would; then end the run."""
    service = IngestService(SITE, store)
    for received_at, message in sorted(arrivals, key=lambda a: a[0]):
        service.handle_message(message.topic, message.payload, received_at)
    service.finish(END)
    return service


def outputs(store: SqliteStore) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    return (
        [alert_key(a.model_dump(mode="json")) for a in store.alerts(SITE_ID)],
        [duty_key(d.model_dump(mode="json")) for d in store.duties(SITE_ID)],
    )


def on_time(readings: list[SensorReading], delay_ms: int = MS_PER_S) -> list[tuple[int, Outgoing]]:
    return [(m.keys[0][1] + delay_ms, m) for m in reading_messages(SITE, readings)]


def test_one_reading_ten_years_ahead_changes_nothing(tmp_path: Path) -> None:
    """A station whose clock says 2036 sends one reading (flagged unsynced), then the storm.

    It is stored, flagged ``clock_ahead``, never moves event time: no timer fires
    early, and the storm gives exactly the replay's alerts and duties. An
    inspection dated ten years ahead is refused with the reason.
    """
    store = SqliteStore(tmp_path / "s.sqlite3")
    future = SensorReading("turb-down", START + 3650 * MS_PER_DAY, 900.0)
    (bad,) = reading_messages(SITE, [future])
    payload = json.loads(bad.payload)
    payload["quality"] = ["clock_unsynced"]
    bad = Outgoing(bad.topic, json.dumps(payload).encode(), bad.keys)
    inspection = json.dumps(
        {"type": "inspection", "site": SITE_ID, "time": iso(START + 3650 * MS_PER_DAY),
         "inspector": "Jo Whitaker"}
    ).encode()  # fmt: skip
    arrivals = [(START + 500, bad), *on_time(READINGS)]
    service = IngestService(SITE, store)
    service.handle_message(inspections_topic(SITE_ID), inspection, START + 600)
    for received_at, message in sorted(arrivals, key=lambda a: a[0]):
        service.handle_message(message.topic, message.payload, received_at)
    service.finish(END)
    assert outputs(store) == expected()
    (flags,) = store.db.execute("SELECT flags FROM readings WHERE t = ?", (future.t,)).fetchone()
    assert CLOCK_AHEAD in flags and "clock_unsynced" in flags
    assert service.stats.clock_ahead == 1 and service.stats.late_readings == 0
    ((_topic, reason),) = store.rejections()
    assert reason.startswith("clock ahead: inspection time 2036-")


def test_arrival_jitter_within_the_lateness_changes_nothing(tmp_path: Path) -> None:
    """Each reading arrives 0-14 min after it was measured, in arrival order: same alerts."""
    rng = random.Random(20261201)
    arrivals = [
        (m.keys[0][1] + rng.randrange(0, LATENESS_MS - MS_PER_MIN), m)
        for m in reading_messages(SITE, READINGS)
    ]
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = live(store, arrivals)
    assert outputs(store) == expected()
    assert service.stats.late_readings == 0 and service.stats.rebuilds == 0


def test_a_day_long_outage_over_the_plume_still_raises_it_late(tmp_path: Path) -> None:
    """Every station is cut off for 24 h around the plume and catches up afterwards.

    While they are silent the service's clock moves event time on (ticks every
    5 min), so the sensors go offline. When the backlog arrives it is older
    than what the engine has judged: the history is rebuilt from the store,
    the plume alert is raised — marked late — and the offline alerts the
    backlog disproves are withdrawn. What is left equals the replay.
    """
    plume = next(a for a in replay_site(SITE, READINGS).alerts if a.kind == "turbidity_contrast")
    cut_from = int(plume.opened_at.timestamp() * 1000) - 6 * MS_PER_H
    cut_to = cut_from + 24 * MS_PER_H
    arrivals = []
    for received_at, message in on_time(READINGS):
        if cut_from <= message.keys[0][1] < cut_to:
            received_at = cut_to + 5 * MS_PER_MIN  # the outbox flush after the link returns
        arrivals.append((received_at, message))
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(SITE, store)
    ticks = list(range(cut_from, cut_to + 5 * MS_PER_MIN, 5 * MS_PER_MIN))
    events: list[tuple[int, int, Outgoing | None]] = sorted(
        [(t, 0, None) for t in ticks] + [(r, 1, m) for r, m in arrivals], key=lambda e: e[:2]
    )
    offline_seen = False
    for at, _order, item in events:
        if item is None:
            service.tick(at)
            offline_seen = offline_seen or any(
                a.kind == "sensor_offline" for a in store.alerts(SITE_ID)
            )
        else:
            service.handle_message(item.topic, item.payload, at)
    service.finish(END)
    assert offline_seen, "during the outage the silence is noticed"
    assert service.stats.late_readings > 0 and service.stats.rebuilds >= 1
    assert outputs(store) == expected()
    (late,) = [a for a in store.alerts(SITE_ID) if a.kind == "turbidity_contrast"]
    assert late.message.startswith(LATE_PREFIX)
    withdrawn = store.db.execute(
        "SELECT count(*) FROM alerts WHERE site = ? AND withdrawn = 1 AND kind = 'sensor_offline'",
        (SITE_ID,),
    ).fetchone()[0]
    assert withdrawn > 0


def test_a_crash_before_late_data_is_applied_loses_nothing(tmp_path: Path) -> None:
    """Late readings are committed, then the process dies before it rebuilds.

    The newest snapshot was taken after the late readings' window had been
    judged without them; it is inconsistent with the store (they were stored
    after it, dated before what it had processed), so the restart goes back to
    an older snapshot — or the start — and the history comes out as the replay's.
    """
    plume = next(a for a in replay_site(SITE, READINGS).alerts if a.kind == "turbidity_contrast")
    hole_from = int(plume.opened_at.timestamp() * 1000) - 2 * MS_PER_H
    hole_to = hole_from + 4 * MS_PER_H
    held = [r for r in READINGS if hole_from <= r.t < hole_to and r.sensor == "turb-down"]
    held_keys = {(r.sensor, r.t) for r in held}
    first = [a for a in on_time(READINGS) if a[1].keys[0] not in held_keys]
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(SITE, store)
    service.SNAPSHOT_EVERY = 1_000
    for received_at, message in first:
        service.handle_message(message.topic, message.payload, received_at)
    service.snapshot(END + MS_PER_H)
    arrive = END + 2 * MS_PER_H  # all at once: the rebuild would wait a second longer
    for message in reading_messages(SITE, held):
        service.handle_message(message.topic, message.payload, arrive)
    assert service.stats.late_readings == len(held) and service.stats.rebuilds == 0
    del service  # kill -9: no close, no rebuild, no snapshot

    restarted = IngestService(SITE, store, now_ms=arrive + 10)
    restarted.finish(END)
    assert outputs(store) == expected()
