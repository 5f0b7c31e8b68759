"""Detectors talk through typed engine events and declared roles, not side channels."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from analytics.detector import Context, Detector, Screen
from analytics.engine import Engine
from analytics.events import DetectorEvent, SensorReading
from analytics.health import SensorHealth
from analytics.inspections import InspectionDetector
from analytics.rain import RainDetector, StormEnded
from analytics.timeutil import MS_PER_H, MS_PER_MIN
from tests.analytics.test_rain import gauge_site

Q = 15 * MS_PER_MIN


@dataclass(frozen=True, slots=True)
class Ping(DetectorEvent):
    at: int


@dataclass(frozen=True, slots=True)
class LoudPing(Ping):
    pass


@dataclass(frozen=True, slots=True)
class Other(DetectorEvent):
    at: int


class Publisher(Detector):
    name = "publisher"

    def sensors(self) -> Iterable[str]:
        return ("rain",)

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        ctx.publish(LoudPing(reading.t) if reading.value > 1 else Ping(reading.t))
        ctx.publish(Other(reading.t))


class Listener(Detector):
    handles = (Ping,)

    def __init__(self, name: str, log: list[tuple[str, str, int]]) -> None:
        self.name = name
        self.log = log

    def sensors(self) -> Iterable[str]:
        return ("rain",)

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        self.log.append((self.name, "reading", reading.t))

    def on_event(self, event: DetectorEvent, ctx: Context) -> None:
        self.log.append((self.name, type(event).__name__, event.at))


def delivered(t: int, event: str) -> list[tuple[str, str, int]]:
    """What a and b log for the reading at ``t`` and the event it makes the publisher
    (between them) send: a sees the reading before the publisher; the event reaches a
    then b at once, before b's own reading."""
    return [("a", "reading", t), ("a", event, t), ("b", event, t), ("b", "reading", t)]


def test_events_reach_subscribers_synchronously_in_detector_order() -> None:
    log: list[tuple[str, str, int]] = []
    a, b = Listener("a", log), Listener("b", log)
    engine = Engine(gauge_site(), detectors=[a, Publisher(), b])
    engine.feed([SensorReading("rain", Q, 0.5), SensorReading("rain", 2 * Q, 2.0)])
    engine.finish()
    # Other is handled by nobody; a subclass (LoudPing, for a value over 1) is delivered.
    assert log == [*delivered(Q, "Ping"), *delivered(2 * Q, "LoudPing")]


def test_subscribers_are_derived_not_snapshotted() -> None:
    engine = Engine(gauge_site())
    engine.feed([SensorReading("rain", Q, 0.3), SensorReading("rain", 40 * Q, 0.01)])
    assert engine._subscribers  # a storm ended: the lookup for StormEnded was filled
    restored = Engine.restore(engine.site, engine.snapshot())
    assert restored._subscribers == {}
    duties = restored.detectors["inspection-duties"]
    restored.publish(StormEnded(rain_detector(restored).storms()[0], 40 * Q))
    assert restored._subscribers[StormEnded] == [duties]


def test_the_inspection_duties_subscribe_to_finished_storms() -> None:
    assert StormEnded in InspectionDetector.handles
    assert not any(issubclass(StormEnded, t) for t in RainDetector.handles)


def test_the_health_screen_is_a_declared_role() -> None:
    engine = Engine(gauge_site())
    health = engine.detectors["health"]
    assert isinstance(health, SensorHealth)
    assert health.screen() is health
    screen: object = engine._screen
    assert screen is health
    assert all(det.screen() is None for det in engine.detectors.values() if det is not health)
    restored = Engine.restore(engine.site, engine.snapshot())
    restored_screen: object = restored._screen
    assert restored_screen is restored.detectors["health"]


class TwoScreens(Detector):
    def screen(self) -> Screen:
        return lambda r, ctx: (r,)


def test_two_screens_are_refused() -> None:
    one, two = TwoScreens(), TwoScreens()
    one.name, two.name = "one", "two"
    with pytest.raises(ValueError, match="quality screen"):
        Engine(gauge_site(), detectors=[one, two])


def test_the_engine_gives_the_daily_rain_log() -> None:
    engine = Engine(gauge_site())
    engine.feed([SensorReading("rain", k * Q, 0.02) for k in range(1, 10)])
    engine.feed([SensorReading("rain", 30 * MS_PER_H, -1.0)])
    engine.finish()
    log = engine.rain_log()
    det = rain_detector(engine)
    assert [(d.day, d.depth) for d in log] == det.daily_log("g")
    assert [(d.gauge, d.unit) for d in log] == [("g", "in")] * len(log)
    totals = dict(det.daily_totals("g"))
    assert [(d.readings, d.excluded) for d in log] == [
        (totals[d.day].readings, totals[d.day].excluded) for d in log
    ]
    assert sum(d.excluded for d in log) == 1


def test_a_site_without_gauges_has_an_empty_rain_log() -> None:
    engine = Engine(gauge_site(), detectors=[Listener("a", [])])
    assert engine.rain_log() == []


def rain_detector(engine: Engine) -> RainDetector:
    det = engine.detectors["rain"]
    assert isinstance(det, RainDetector)
    return det
