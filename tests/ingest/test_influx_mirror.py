"""The live service's InfluxDB mirror: queued, retried on the next call, never silent.

Unit tests use a scripted writer and a hand-turned clock (no sleeping); the last
test runs the real pipeline — IngestService with the mirror — into a real InfluxDB 1.x.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from analytics.events import AlertEvent, DutyEvent, SensorReading
from ingest.influx.mirror import (
    EventFanOut,
    InfluxMirror,
    InfluxV1Writer,
    InfluxWriteError,
    RetryPolicy,
)
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.schema import reading_topic
from tests.alerts.helpers import alert, duty
from tests.ingest.test_service import SITE, T0, reading
from tests.servers import InfluxDBServer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ScriptedWriter:
    """Fails with the queued errors first, then accepts; records every batch."""

    def __init__(self, *errors: InfluxWriteError) -> None:
        self.errors = list(errors)
        self.calls: list[list[str]] = []
        self.written: list[str] = []
        self.closed = False

    def write_lines(self, lines: Sequence[str]) -> None:
        self.calls.append(list(lines))
        if self.errors:
            raise self.errors.pop(0)
        self.written += lines

    def close(self) -> None:
        self.closed = True


DOWN = InfluxWriteError("InfluxDB write failed: HTTP 503: unavailable", status=503, retryable=True)
BAD = InfluxWriteError("HTTP 400: field type conflict", status=400, retryable=False)


def r(minute: int) -> tuple[str, SensorReading]:
    return ("up-1", SensorReading("turb-up", T0 + minute * 60_000, 5.0 + minute, seq=minute))


def test_readings_become_lines_with_kind_and_unit_from_the_site() -> None:
    w = ScriptedWriter()
    mirror = InfluxMirror(SITE, w)
    mirror("lg-route9n", [r(0)])
    assert w.written == [
        "reading,kind=turbidity,sensor=turb-up,site=lg-route9n,station=up-1,unit=NTU "
        f'value=5.0,seq=0i,flags="" {T0}'
    ]
    assert mirror.stats.written == 1 and mirror.pending == []


def test_a_failed_write_is_kept_and_retried_after_the_backoff_not_before() -> None:
    clock, w = Clock(), ScriptedWriter(DOWN, DOWN)
    mirror = InfluxMirror(SITE, w, clock=clock, first_backoff_s=1.0)
    mirror("lg-route9n", [r(0)])  # fails: backoff 1 s
    assert len(mirror.pending) == 1 and mirror.stats.failures == 1
    mirror("lg-route9n", [r(1)])  # within the backoff: queued, no request
    assert len(w.calls) == 1 and len(mirror.pending) == 2
    clock.now = 1.0
    assert mirror.flush() is False  # second failure: backoff 2 s
    clock.now = 2.5
    assert mirror.flush() is False and len(w.calls) == 2  # still waiting
    clock.now = 3.0
    assert mirror.flush() is True
    assert len(w.written) == 2 and mirror.stats.written == 2 and mirror.stats.pending == 0
    assert "503" in mirror.stats.last_error


def test_lines_refused_as_bad_data_are_counted_and_logged_not_retried_forever(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = ScriptedWriter(BAD)
    mirror = InfluxMirror(SITE, w)
    with caplog.at_level(logging.ERROR, logger="ingest.influx.mirror"):
        mirror("lg-route9n", [r(0)])
    assert mirror.pending == [] and mirror.stats.refused == 1
    assert "field type conflict" in caplog.text
    mirror("lg-route9n", [r(1)])
    assert mirror.stats.written == 1


def test_a_full_queue_drops_the_oldest_loudly(caplog: pytest.LogCaptureFixture) -> None:
    clock, w = Clock(), ScriptedWriter(DOWN)
    mirror = InfluxMirror(SITE, w, clock=clock, max_pending=2)
    with caplog.at_level(logging.ERROR, logger="ingest.influx.mirror"):
        mirror("lg-route9n", [r(0)])
        mirror("lg-route9n", [r(1), r(2)])
    assert mirror.stats.dropped == 1 and len(mirror.pending) == 2
    assert "dropped the 1 oldest points" in caplog.text
    assert f"{T0 + 60_000}" in mirror.pending[0]


def test_close_retries_then_reports_what_is_left(caplog: pytest.LogCaptureFixture) -> None:
    w = ScriptedWriter(DOWN, DOWN, DOWN)
    mirror = InfluxMirror(SITE, w, clock=Clock())
    mirror("lg-route9n", [r(0)])
    waits: list[float] = []
    with caplog.at_level(logging.ERROR, logger="ingest.influx.mirror"):
        mirror.close(attempts=2, sleep=waits.append)
    assert len(w.calls) == 3 and waits == [1.0] and w.closed
    assert "stopped with 1 points unwritten" in caplog.text


def test_alert_and_duty_events_become_points_through_the_fan_out() -> None:
    seen: list[object] = []

    class Other:
        def handle(self, events: object) -> None:
            seen.append(events)

    w = ScriptedWriter()
    mirror = InfluxMirror(SITE, w)
    at = datetime(2026, 5, 4, 13, tzinfo=UTC)
    a = alert()
    d = duty(created_at=at, due_at=at)
    EventFanOut([Other(), mirror]).handle(
        [AlertEvent("opened", T0, a), DutyEvent("overdue", T0, d)]
    )
    assert len(seen) == 1
    assert w.written[0].startswith(
        "alert,kind=turbidity_contrast,site=lg-route9n,subject=outfall-a "
    )
    assert 'state="overdue"' in w.written[1]


@pytest.mark.integration
def test_the_service_mirrors_new_readings_once_into_influxdb(
    influxdb: InfluxDBServer, tmp_path: Path
) -> None:
    influxdb.create_database("mirror")
    mirror = InfluxMirror(
        SITE, InfluxV1Writer(influxdb.url, "mirror", retry=RetryPolicy(attempts=1))
    )
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(SITE, store, EventFanOut([mirror]), mirror=mirror)
    topic = reading_topic("lg-route9n", "up-1", "turb-up")
    service.handle_message(topic, reading("turb-up", "up-1", 0, 8.0), T0)
    service.handle_message(topic, reading("turb-up", "up-1", 0, 8.0), T0)  # a duplicate
    service.handle_message(topic, reading("turb-up", "up-1", 1, 9.5), T0)
    service.handle_message(topic, b"{not json", T0)
    store.close()
    mirror.close()
    result = influxdb.query("mirror", 'SELECT "value", "seq", "station" FROM "reading"')
    [series] = result["results"][0]["series"]
    assert series["values"] == [[T0, 8.0, 0, "up-1"], [T0 + 60_000, 9.5, 1, "up-1"]]
    assert mirror.stats.written == 2 and service.stats.duplicates == 1


def test_without_auto_flush_ingest_only_queues_and_a_failed_batch_keeps_its_place() -> None:
    """serve's setting: the pipeline never waits on InfluxDB; order survives a failure."""
    clock, w = Clock(), ScriptedWriter(DOWN)
    mirror = InfluxMirror(SITE, w, clock=clock, auto_flush=False)
    mirror("lg-route9n", [r(0), r(1)])
    assert w.calls == [] and len(mirror.pending) == 2  # queued, nothing written yet
    assert mirror.flush() is False  # 503: the batch goes back to the front
    mirror("lg-route9n", [r(2)])  # queued while the server is down
    clock.now = 10.0
    assert mirror.flush() is True
    assert [line.split()[-1] for line in w.written] == [str(T0 + m * 60_000) for m in (0, 1, 2)]


def test_the_flusher_thread_writes_what_ingest_queued() -> None:
    import time

    from ingest.influx.mirror import MirrorFlusher

    w = ScriptedWriter()
    mirror = InfluxMirror(SITE, w, auto_flush=False)
    flusher = MirrorFlusher(mirror, interval_s=0.02)
    flusher.start()
    try:
        mirror("lg-route9n", [r(0)])
        deadline = time.monotonic() + 5
        while not w.written and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        flusher.stop()
    assert len(w.written) == 1 and mirror.pending == []
