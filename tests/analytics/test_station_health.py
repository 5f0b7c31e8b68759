"""Station health (analytics/station_health.py): the edge station's own status, as alerts.

Fed through the engine as the service feeds it (statuses ordered with readings
by event time; the turbidity probe of another station keeps event time going),
so the tests see what a person would: one alert per problem and station, opened
when it starts and resolved when it clears, never repeated per status.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.engine import Engine
from analytics.events import AlertEvent, EngineEvent, SensorReading, StationReport
from analytics.station_health import StationHealthDetector
from analytics.timeutil import MS_PER_H, MS_PER_MIN
from siltwatch.config import SiteConfig, load_site
from siltwatch.detections import alert_spec
from siltwatch.detections.station_health import (
    BACKLOG_GROWING,
    BATTERY_LOW,
    CLOCK_UNSYNCED,
    DISK_LOW,
    STATION_OFFLINE,
)
from siltwatch.rulepacks import site_rules

SITE = Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml"
T0 = 1_780_000_000_000 - 1_780_000_000_000 % MS_PER_H
MIN = MS_PER_MIN


@pytest.fixture(scope="module")
def site() -> SiteConfig:
    return load_site(SITE)


def run(
    site: SiteConfig, reports: list[StationReport], minutes: int = 240
) -> tuple[Engine, list[EngineEvent]]:
    """``reports`` among a steady upstream probe (station up-1) for ``minutes``."""
    engine = Engine(site)
    events: list[EngineEvent] = []
    pending = sorted(reports, key=lambda r: r.t)
    for m in range(minutes):
        t = T0 + m * MIN
        while pending and pending[0].t <= t:
            events += engine.feed_status(pending.pop(0))
        events += engine.feed(
            [SensorReading("turb-up", t, 5.0), SensorReading("turb-down", t, 5.0)]
        )
    for report in pending:
        events += engine.feed_status(report)
    events += engine.finish(T0 + minutes * MIN)
    return engine, events


def station_events(events: list[EngineEvent]) -> list[tuple[str, str, str, int]]:
    return [
        (e.type, e.alert.kind, e.alert.subject, (e.at - T0) // MIN)
        for e in events
        if isinstance(e, AlertEvent) and e.alert.kind.startswith("station_")
    ]


def ok(t: int, station: str = "basin-1", **health: Any) -> StationReport:
    fields: dict[str, Any] = {
        "battery_v": 12.6,
        "disk_free_mb": 5000.0,
        "backlog": 0,
        "clock_synced": True,
        "clock_offset_s": 0.01,
    }
    fields.update(health)
    return StationReport(station, t, "online", **fields)


def every_minute(start: int, end: int, **health: Any) -> list[StationReport]:
    return [ok(T0 + m * MIN, **health) for m in range(start, end)]


def test_a_healthy_station_raises_nothing(site: SiteConfig) -> None:
    _engine, events = run(site, every_minute(0, 240))
    assert station_events(events) == []


def test_the_last_will_opens_offline_and_the_next_status_resolves_it(site: SiteConfig) -> None:
    will = StationReport("basin-1", T0 + 30 * MIN, "offline", timed=False)
    reports = [*every_minute(0, 30), will, *every_minute(45, 60)]
    engine, events = run(site, reports, minutes=60)  # statuses to the end: no silence
    assert station_events(events) == [
        ("opened", STATION_OFFLINE.kind, "basin-1", 30),
        ("resolved", STATION_OFFLINE.kind, "basin-1", 45),
    ]
    (alert,) = [a for a in engine.alerts() if a.kind == STATION_OFFLINE.kind]
    assert alert.evidence["why"] == "last will"
    assert "last will" in alert.rule


def test_silence_opens_offline_once_after_the_configured_time(site: SiteConfig) -> None:
    engine, events = run(site, every_minute(0, 20), minutes=120)
    silence_min = site_rules(site).number("station.status_silence_s") / 60
    assert station_events(events) == [("opened", STATION_OFFLINE.kind, "basin-1", 19 + silence_min)]
    (alert,) = [a for a in engine.alerts() if a.kind == STATION_OFFLINE.kind]
    assert alert.evidence["why"] == "silence"
    assert alert.evidence["last_online_at"].endswith("Z")
    assert "station.status_silence_s = 900" in alert.rule


def test_battery_low_opens_once_and_clears_with_hysteresis(site: SiteConfig) -> None:
    volts = [12.4] * 10 + [11.7] * 10 + [11.85] * 10 + [12.1] * 10  # 11.85: not yet clear
    reports = [ok(T0 + m * MIN, battery_v=v) for m, v in enumerate(volts)]
    engine, events = run(site, reports, minutes=40)
    assert station_events(events) == [
        ("opened", BATTERY_LOW.kind, "basin-1", 10),
        ("resolved", BATTERY_LOW.kind, "basin-1", 30),
    ]
    (alert,) = [a for a in engine.alerts() if a.kind == BATTERY_LOW.kind]
    assert "11.70 V, below 11.8 V" in alert.message
    spec = alert_spec(alert.kind)
    assert spec is not None and spec.how_much(alert.evidence, site.site.zone) == (
        "battery 12.1 V (low at 11.8 V)"  # the evidence as of the resolution
    )


def test_disk_nearly_full(site: SiteConfig) -> None:
    reports = [*every_minute(0, 5), *every_minute(5, 30, disk_free_mb=150.0)]
    _engine, events = run(site, reports, minutes=30)
    assert station_events(events) == [("opened", DISK_LOW.kind, "basin-1", 5)]


def test_clock_not_synced_or_too_far_off(site: SiteConfig) -> None:
    reports = [
        *every_minute(0, 5),
        *every_minute(5, 10, clock_synced=False),
        *every_minute(10, 15),
        *every_minute(15, 20, clock_offset_s=-75.0),
        *every_minute(20, 30),
    ]
    _engine, events = run(site, reports, minutes=30)
    assert station_events(events) == [
        ("opened", CLOCK_UNSYNCED.kind, "basin-1", 5),
        ("resolved", CLOCK_UNSYNCED.kind, "basin-1", 10),
        ("opened", CLOCK_UNSYNCED.kind, "basin-1", 15),
        ("resolved", CLOCK_UNSYNCED.kind, "basin-1", 20),
    ]


def test_a_backlog_growing_for_an_hour_and_then_draining(site: SiteConfig) -> None:
    growing = [ok(T0 + m * MIN, backlog=10 * m) for m in range(0, 90)]
    draining = [ok(T0 + m * MIN, backlog=max(0, 900 - 100 * (m - 90))) for m in range(90, 120)]
    engine, events = run(site, growing + draining, minutes=120)
    assert station_events(events) == [
        ("opened", BACKLOG_GROWING.kind, "basin-1", 60),
        ("resolved", BACKLOG_GROWING.kind, "basin-1", 91),
    ]
    (alert,) = [a for a in engine.alerts() if a.kind == BACKLOG_GROWING.kind]
    assert alert.evidence["backlog_before"] == 0


def test_a_backlog_that_rises_and_falls_is_not_growing(site: SiteConfig) -> None:
    saw = [ok(T0 + m * MIN, backlog=(m % 20) * 50) for m in range(0, 200)]
    _engine, events = run(site, saw, minutes=200)
    assert station_events(events) == []


def test_a_report_of_a_station_the_site_does_not_have_is_ignored(site: SiteConfig) -> None:
    reports = [ok(T0 + m * MIN, station="somebody-else", battery_v=3.0) for m in range(10)]
    engine, events = run(site, reports, minutes=30)
    assert station_events(events) == []
    (detector,) = [d for d in engine.detectors.values() if isinstance(d, StationHealthDetector)]
    assert detector.ignored_reports == 10


def test_snapshot_mid_episode_gives_the_same_alerts(site: SiteConfig) -> None:
    volts = [12.4] * 10 + [11.5] * 20 + [12.4] * 10
    reports = [ok(T0 + m * MIN, battery_v=v) for m, v in enumerate(volts)]
    whole, _ = run(site, reports, minutes=40)

    engine = Engine(site)
    for m in range(40):
        t = T0 + m * MIN
        engine.feed_status(reports[m])
        engine.feed([SensorReading("turb-up", t, 5.0)])
        if m == 20:
            engine = Engine.restore(site, engine.snapshot())
    engine.finish(T0 + 40 * MIN)
    assert [a.model_dump() for a in engine.alerts()] == [a.model_dump() for a in whole.alerts()]


health_values = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, width=32))


# Any report a station could send: at any minute of the first ten hours, in either state,
# each health value present or not, timed by the station or not.
any_report = st.builds(
    StationReport,
    st.just("basin-1"),
    st.integers(0, 600).map(lambda minute: T0 + minute * MIN),
    st.sampled_from(["online", "offline"]),
    battery_v=health_values,
    disk_free_mb=health_values,
    backlog=st.one_of(st.none(), st.integers(0, 10**6)),
    clock_synced=st.one_of(st.none(), st.booleans()),
    clock_offset_s=health_values,
    timed=st.booleans(),
)


@settings(max_examples=60)
@given(st.lists(any_report, max_size=40))
def test_any_report_is_taken_without_failing(
    site: SiteConfig, reports: list[StationReport]
) -> None:
    """Whatever a station says (or leaves out), the detector answers and never raises;
    at most one episode per kind and station is open at a time."""
    engine, _events = run(site, reports, minutes=30)
    open_now = [(a.kind, a.subject) for a in engine.alerts() if a.resolved_at is None]
    assert len(open_now) == len(set(open_now))
