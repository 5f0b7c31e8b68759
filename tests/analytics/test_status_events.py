"""Station reports reach the detectors in event-time order and never move event time."""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest

import analytics.engine
from analytics import statecodec
from analytics.engine import SNAPSHOT_VERSION, Engine
from analytics.events import StationReport
from analytics.timeutil import MS_PER_DAY, MS_PER_MIN
from tests.analytics import recorders
from tests.analytics.recorders import Log, Q, Recorder, each_detector, out_of_order, rain, recorded
from tests.analytics.test_rain import gauge_site

LATENESS_MS = 15 * MS_PER_MIN  # the engine's default allowed lateness


def test_statuses_are_ordered_with_readings_by_event_time_and_reach_every_detector() -> None:
    # Fed out of order: a status before the readings it follows, ties at one instant.
    statuses = [
        StationReport("st", 2 * Q, "online", battery_v=12.6),
        StationReport("zz-ghost", Q, "offline", timed=False),  # not in the site
        StationReport("st", Q, "offline", timed=False),
    ]
    engine, log = out_of_order(statuses=statuses)
    # At one instant: readings, then inspections, then statuses (ties by their key,
    # not by the order they were fed in).
    assert recorded(log) == recorders.handed_in_order(
        at_q=[("status offline", "st"), ("status offline", "zz-ghost")],
        at_2q=[("status online", "st")],
    )
    # Every detector gets each report, in detector order.
    reports = [(name, who, t) for name, kind, who, t in log if kind.startswith("status")]
    assert reports == each_detector("ab", [("st", Q), ("zz-ghost", Q), ("st", 2 * Q)])
    assert engine.stats.statuses == 3


def test_equal_reports_at_one_instant_never_compare_their_payloads() -> None:
    log: Log = []
    engine = Engine(gauge_site(), detectors=[Recorder("a", log)])
    same = StationReport("st", Q, "online", backlog=3)
    for report in (same, same, StationReport("st", Q, "online", backlog=None)):
        engine.feed_status(report)
    engine.feed([rain(2 * Q)])
    engine.finish()
    assert [kind for _n, kind, _w, _t in log].count("status online") == 3


def test_a_live_status_never_moves_the_watermark() -> None:
    log: Log = []
    engine = Engine(gauge_site(), detectors=[Recorder("a", log)])
    t0 = 100 * Q
    engine.feed([rain(t0)], received_at=t0 + 1_000)
    assert engine.watermark == t0 - LATENESS_MS
    # A station clock ten years ahead, then a last will placed at its arrival.
    engine.feed_status(
        StationReport("st", t0 + 3650 * MS_PER_DAY, "online"), received_at=t0 + 2_000
    )
    engine.feed_status(StationReport("st", t0 + 3_000, "offline", timed=False), t0 + 3_000)
    assert engine.watermark == t0 - LATENESS_MS
    assert engine.processed_to() == t0 - LATENESS_MS
    assert engine._stations["st"].progress == t0
    assert not [entry for entry in log if entry[1].startswith("status")]
    # Readings move event time on; the statuses come out in order with them.
    engine.feed([rain(t0 + Q), rain(t0 + 2 * Q)], received_at=t0 + 2 * Q + 1_000)
    assert [(kind, t) for _n, kind, _w, t in log if kind.startswith("status")] == [
        ("status offline", t0 + 3_000)
    ]


def test_a_status_never_moves_the_replay_watermark_either() -> None:
    engine = Engine(gauge_site(), detectors=[Recorder("a", [])])
    engine.feed([rain(Q)])
    before = engine.watermark
    engine.feed_status(StationReport("st", Q + 3650 * MS_PER_DAY, "online"))
    assert engine.watermark == before


def test_a_status_dated_before_what_was_processed_is_used_and_noted_late() -> None:
    log: Log = []
    engine = Engine(gauge_site(), detectors=[Recorder("a", log)])
    engine.feed([rain(Q), rain(10 * Q)], received_at=10 * Q)
    processed = engine.processed_to()
    assert processed is not None and processed >= 2 * Q
    assert engine.late_from is None
    engine.feed_status(StationReport("st", 2 * Q, "online"), received_at=10 * Q + 1)
    assert engine.late_from == 2 * Q
    assert ("a", "status online", "st", 2 * Q) in log


def test_catch_up_delivers_stored_statuses_in_order() -> None:
    log: Log = []
    engine = Engine(gauge_site(), detectors=[Recorder("a", log)])
    engine.catch_up(
        [[rain(Q), rain(2 * Q), rain(3 * Q)]],
        [],
        3 * Q,
        [StationReport("st", Q, "online"), StationReport("st", 3 * Q, "offline", timed=False)],
    )
    assert [(kind, t) for _n, kind, _w, t in log] == [
        ("reading", Q),
        ("status online", Q),
        ("reading", 2 * Q),
        ("reading", 3 * Q),
        ("status offline", 3 * Q),
    ]
    assert engine.stats.statuses == 2


@pytest.fixture
def no_detectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Restoring builds the site's detectors: none here, so only the engine's own state counts."""
    monkeypatch.setattr(analytics.engine, "build_detectors", lambda site, ctx: [])


@pytest.mark.usefixtures("no_detectors")
def test_snapshots_are_version_7_and_count_statuses() -> None:
    assert SNAPSHOT_VERSION == 7
    engine = Engine(gauge_site())
    engine.feed([rain(Q)])
    engine.feed_status(StationReport("st", Q, "online", battery_v=12.1, clock_synced=True))
    engine.feed([rain(5 * Q)])
    waiting = StationReport("st", 5 * Q, "offline", timed=False)
    engine.feed_status(waiting)  # after the watermark: still in the buffer
    restored = Engine.restore(engine.site, engine.snapshot())
    assert restored.stats.statuses == 2
    assert restored.processed_to() == engine.processed_to()
    assert [entry[3] for entry in restored._buffer if entry[1] == 2] == [waiting]
    # The live service's snapshot leaves waiting inputs to be re-read from its store.
    processed = Engine.restore(engine.site, engine.snapshot_processed())
    assert processed._buffer == []


def _rewrite(blob: bytes, change: Any) -> bytes:
    doc = json.loads(zlib.decompress(blob))
    change(doc)
    return zlib.compress(json.dumps(doc).encode())


@pytest.mark.usefixtures("no_detectors")
def test_a_version_4_snapshot_is_refused_and_one_without_the_counter_restores() -> None:
    engine = Engine(gauge_site())
    engine.feed([rain(Q), rain(5 * Q)])
    blob = engine.snapshot()

    def older(doc: dict[str, Any]) -> None:
        doc["version"] = 4

    with pytest.raises(statecodec.SnapshotError, match="version 4 is not 7"):
        Engine.restore(engine.site, _rewrite(blob, older))

    def without_statuses(doc: dict[str, Any]) -> None:
        pairs = doc["state"]["$dict"]
        (stats,) = [v for k, v in pairs if k == "stats"]
        assert "statuses" in stats["fields"]
        del stats["fields"]["statuses"]

    restored = Engine.restore(engine.site, _rewrite(blob, without_statuses))
    assert restored.stats.statuses == 0
    restored.feed_status(StationReport("st", 6 * Q, "online"))
    assert restored.stats.statuses == 1
