"""Infiltration drain time on hand-built level series: every expected time is worked out here.

Readings come every 5 minutes. Every decision uses the centred median of
three readings (a reading and its two neighbours, dated at the middle one):
a plateau that starts at 01:00 makes the peak, and starts the clock, at 01:00;
a single reading cannot move it. Each test spells out its arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from analytics.drain import DrainTimeDetector
from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.timeutil import MS_PER_H, MS_PER_MIN, to_ms
from siltwatch.applicability import applicability
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert

T0 = to_ms(datetime(2026, 5, 4, 12, 0, tzinfo=UTC))
STEP = 5 * MS_PER_MIN
FT = 0.3048


def make_site(
    *,
    practice_type: str = "infiltration_basin",
    packs: tuple[str, ...] = ("ny-lake-george",),
    unit: str = "ft",
    tolerance: float = 0.05,
    drain_limit_h: float | None = None,
    baseline: str = "design",
) -> SiteConfig:
    practice: dict[str, Any] = {
        "id": "basin-a",
        "type": practice_type,
        "level_sensor": "lvl",
        f"design_level_{unit}": 0.0,
        f"tolerance_{unit}": tolerance,
        "baseline": baseline,
    }
    if drain_limit_h is not None:
        practice["drain_limit_h"] = drain_limit_h
    return SiteConfig.model_validate(
        {
            "site": {"id": "test-site", "name": "Test Site", "rule_packs": list(packs)},
            "stations": [
                {
                    "id": "basin-1",
                    "sensors": [
                        {"id": "lvl", "kind": "water_level", "unit": unit, "interval_s": 300}
                    ],
                }
            ],
            "infiltration_practices": [practice],
        }
    )


def series(level: Callable[[float], float], hours: float, start: int = T0) -> list[SensorReading]:
    """Readings every 5 min for ``hours``; ``level(h)`` gives the value at h hours after start."""
    n = round(hours * 12)
    return [SensorReading("lvl", start + i * STEP, level(i / 12)) for i in range(n + 1)]


def run(site: SiteConfig, readings: list[SensorReading]) -> Engine:
    engine = Engine(site)
    engine.feed(readings)
    engine.finish()
    return engine


def drain_alerts(engine: Engine, kind: str = "drain_time") -> list[Alert]:
    return [a for a in engine.alerts() if a.kind == kind]


def detector(engine: Engine) -> DrainTimeDetector:
    det = engine.detectors["drain/basin-a"]
    assert isinstance(det, DrainTimeDetector)
    return det


def ms(hours: float, minutes: float = 0) -> int:
    return T0 + round(hours * MS_PER_H + minutes * MS_PER_MIN)


def at(hours: float, minutes: float = 0) -> datetime:
    """The event time ``hours:minutes`` after T0, as the Alert model holds it."""
    return datetime.fromtimestamp(ms(hours, minutes) / 1000, tz=UTC)


def test_undrained_basin_alerts_at_exactly_peak_plus_five_days_and_resolves_when_drained() -> None:
    # Dry until 01:00, then 1.0 ft and not falling at all until 131:00, then dry again.
    def level(h: float) -> float:
        return 1.0 if 1.0 <= h < 131.0 else 0.0

    engine = run(make_site(), series(level, 140))
    [alert] = drain_alerts(engine)
    # Peak at 01:00; Lake George §148-11 I(3): basin 5 d = 120 h -> 121:00.
    assert alert.opened_at == at(121)
    assert alert.severity == "critical"
    assert alert.rule == "Lake George §148-11 I(3)"
    assert "Lake George §148-11 I(3)" in alert.message
    assert "120 h (5 d)" in alert.message
    # The level drops at 131:00: drained then, 130 h after the peak; resolved.
    assert alert.resolved_at == at(131)
    assert alert.evidence["event"]["drain_h"] == pytest.approx(130.0)
    assert "clogging_trend" in alert.evidence
    # The early warning: a quarter of the limit (30 h) with no fall at all -> at 31:00,
    # superseded by the drain_time alert at 121:00.
    [warning] = drain_alerts(engine, "drain_time_forecast")
    assert warning.opened_at == at(31)
    assert warning.severity == "warning"
    assert warning.resolved_at == at(121)
    [event] = detector(engine).events()
    assert event.exceeded and event.forecast_warned
    assert event.peak_at == ms(1)


def test_refill_before_drain_down_restarts_the_clock_from_the_new_peak() -> None:
    # Fill to 1.0 ft at 01:00, fall linearly to 0.5 ft by 12:00, refill to 0.9 ft at
    # 12:00, then hold (a clogged basin).
    def level(h: float) -> float:
        if h < 1.0:
            return 0.0
        if h < 2.0:
            return 1.0
        if h < 12.0:
            return 1.0 - 0.05 * (h - 2.0)
        return 0.9

    engine = run(make_site(), series(level, 140))
    [event] = detector(engine).events()
    assert event.refills == 1
    # The refill climbs 0.4 ft above its trough (> max(2 * 0.05, 10 % of 1.0) = 0.1 ft):
    # the new peak is at 12:00, and the clock restarts there. The lowest median is the
    # 11:50 reading, 1.0 - 0.05 * 9.8333 = 0.5 + 0.1/12 ft (at 11:55 the median of
    # 11:50, 11:55 and the 0.9 ft of 12:00 is that same value again).
    assert event.peak_at == ms(12)
    assert len(event.rises) == 2
    assert event.rises[1].start_at == ms(11, 50)
    assert event.rises[1].from_level_m / FT == pytest.approx(0.5 + 0.1 / 12, abs=1e-6)
    [alert] = drain_alerts(engine)
    # Not at 01:00 + 120 h = 121:00 (the old clock), but 12:00 + 120 h = 132:00.
    assert alert.opened_at == at(132)
    assert alert.evidence["refills"] == 1


def test_lake_lure_trench_uses_the_site_drain_limit_of_72_h() -> None:
    # Lake Lure reference practice: trench, metres, tolerance 0.02 m, drain_limit_h = 72.
    site = make_site(
        practice_type="infiltration_trench",
        packs=("nc-ncg01", "nc-lake-lure"),
        unit="m",
        tolerance=0.02,
        drain_limit_h=72,
    )
    engine = run(site, series(lambda h: 0.4 if h >= 1.0 else 0.0, 80))
    [alert] = drain_alerts(engine)
    assert alert.opened_at == at(73)  # 01:00 + 72 h
    # No Lake Lure / NCG01 pack sets a drain-down limit: the rule is the site's own.
    assert alert.rule == "site configuration (test-site, practice basin-a drain_limit_h)"
    assert "72 h (3 d)" in alert.message


def test_site_drain_limit_overrides_the_lake_george_pack_and_says_so() -> None:
    site = make_site(practice_type="infiltration_trench", drain_limit_h=72)
    engine = run(site, series(lambda h: 1.0 if h >= 1.0 else 0.0, 80))
    [alert] = drain_alerts(engine)
    # Pack: trench 15 d = 360 h; the site's 72 h wins.
    assert alert.opened_at == at(73)
    assert alert.rule == "site override of Lake George §148-11 I(3)"
    assert "site override of Lake George §148-11 I(3)" in alert.message


def wobble(i: float) -> float:
    """Deterministic sensor noise, +-3 mm."""
    return 0.01 * math.sin(i * 12 * 1.7)


def recession(k_per_h: float) -> Callable[[float], float]:
    """Dry, then at 01:00 a rise of 1.0 ft decaying as exp(-k t), with a little noise."""

    def level(h: float) -> float:
        if h < 1.0:
            return 0.0
        return math.exp(-k_per_h * (h - 1.0)) + wobble(h)

    return level


def test_forecast_warns_early_on_a_slow_recession() -> None:
    # k = 0.015 /h: the rise reaches the 0.05 ft tolerance after ln(20)/0.015 = 200 h,
    # far past the basin's 120 h: the warning must come long before the limit.
    engine = run(make_site(), series(recession(0.015), 130))
    [warning] = drain_alerts(engine, "drain_time_forecast")
    # Early on a straight line fits the limb as well as the exponential and forecasts
    # 1/0.015 = 67 h, inside the limit: no confidence yet. After a quarter of the limit
    # (30 h of limb, 31:00) the curvature decides for the exponential: warned at once,
    # 90 h before the limit.
    assert at(30) < warning.opened_at <= at(32)
    forecast = warning.evidence["forecast"]
    assert forecast["drain_h"] == pytest.approx(200, rel=0.1)
    assert forecast["drain_h_fast"] >= 120 * 1.1
    # The limit then passes undrained (rise exp(-1.8) = 0.17 ft): critical at 121:00.
    [alert] = drain_alerts(engine)
    assert alert.opened_at == at(121)
    assert warning.resolved_at == alert.opened_at


def test_no_forecast_and_no_alert_on_a_fast_recession() -> None:
    # k = 0.05 /h: drained after about ln(20)/0.05 = 60 h, well inside 120 h.
    engine = run(make_site(), series(recession(0.05), 100))
    assert drain_alerts(engine, "drain_time_forecast") == []
    assert drain_alerts(engine) == []
    [event] = detector(engine).events()
    # ln(20)/0.05 = 59.9 h; the +-0.01 ft noise on a 0.05 ft rise moves the crossing by
    # up to ln(1.2)/0.05 = 3.6 h.
    assert event.drain_h == pytest.approx(60, abs=3.7)
    assert event.k_per_h == pytest.approx(0.05, rel=0.05)


def test_noise_and_single_spikes_make_no_events() -> None:
    # Dry basin: +-0.03 ft of noise around 0 (inside the 0.05 ft tolerance) and a
    # single 2 ft spike every 7 hours.
    def level(h: float) -> float:
        i = round(h * 12)
        return 2.0 if i % 84 == 41 else 0.03 * math.sin(i * 2.3)

    engine = run(make_site(), series(level, 200))
    assert detector(engine).events() == []
    assert [a for a in engine.alerts() if a.kind.startswith("drain")] == []


def test_a_spike_during_the_recession_does_not_restart_the_clock() -> None:
    def level(h: float) -> float:
        if h < 1.0:
            return 0.0
        if round(h * 12) == 30 * 12:  # one reading at 30:00 jumps to 3 ft
            return 3.0
        return 1.0

    engine = run(make_site(), series(level, 125))
    [event] = detector(engine).events()
    assert event.refills == 0
    assert event.peak_at == ms(1)
    [alert] = drain_alerts(engine)
    assert alert.opened_at == at(121)


def test_pre_event_baseline_follows_a_sensor_offset() -> None:
    # A well whose dry reading is -0.5 ft (datum offset): at 30:00 it jumps to 1.0 ft and
    # falls back linearly at 0.1 ft/h. With baseline = "pre_event" the rise is measured
    # above the dry level, and it is drained back within 0.04 ft of it.
    def level(h: float) -> float:
        if h < 30.0:
            return -0.5
        return max(-0.5, 1.0 - 0.1 * (h - 30.0))

    engine = run(make_site(baseline="pre_event", tolerance=0.04), series(level, 60))
    [event] = detector(engine).events()
    assert event.baseline_m / FT == pytest.approx(-0.5)
    # The median clips the corner: the peak is at 30:00 with the 30:05 value 1.0 - 0.1/12.
    assert event.peak_at == ms(30)
    peak_rise = 1.5 - 0.1 / 12
    assert event.peak_rise_m / FT == pytest.approx(peak_rise)
    # Drained at rise <= 0.04 ft, level <= -0.46 ft: 1.0 - 0.1 h' = -0.46 at h' = 14.6 h,
    # the next reading is 44:40.
    assert event.drained_at == ms(44, 40)
    # 10 % of the rise, level -0.5 + 0.149167 = -0.35083 ft, is passed 13.508 h after
    # 30:00: at the 43:35 reading.
    assert event.t10_at == ms(43, 35)
    # Linear fall: the recession rate between 90 % and 10 % is exactly 0.1 ft/h = 30.48 mm/h.
    assert event.rate_mm_h == pytest.approx(30.48, rel=1e-9)


def test_pre_event_event_is_closed_without_verdict_across_a_long_gap() -> None:
    fill = series(lambda h: -0.5 if h < 30 else 1.0, 40)
    # 48 h without readings; the datum has moved when the well reports again.
    after = series(lambda h: -0.1, 200, start=T0 + 88 * MS_PER_H)
    engine = run(make_site(baseline="pre_event"), fill + after)
    events = detector(engine).events()
    assert events[0].interrupted_at == T0 + 40 * MS_PER_H
    assert events[0].drained_at is None
    assert drain_alerts(engine) == []


def test_clogging_trend_compares_the_last_events_with_the_first() -> None:
    # Six storms 48 h apart, each a 1.0 ft rise held for an hour and then falling
    # linearly: three at 0.1 ft/h, then three at 0.05 ft/h (the practice clogs).
    # The rate between 90 % and 10 % of the rise: 30.48 and 15.24 mm/h.
    def level(h: float) -> float:
        storm, into = divmod(h, 48.0)
        rate = 0.1 if storm < 3 else 0.05
        if into < 1.0:
            return 0.0
        return max(0.0, 1.0 - rate * max(0.0, into - 2.0))

    engine = run(make_site(), series(level, 6 * 48))
    det = detector(engine)
    rates = [e.rate_mm_h for e in det.events()]
    assert rates == pytest.approx([30.48] * 3 + [15.24] * 3)
    trend = det.trend()
    assert trend["first_mm_h"] == pytest.approx(30.48)
    assert trend["last_mm_h"] == pytest.approx(15.24)
    assert trend["last_over_first"] == pytest.approx(0.5)
    # Least-squares slope over event numbers 0..5: Sxy = -68.58, Sxx = 17.5.
    assert trend["slope_mm_h_per_event"] == pytest.approx(-68.58 / 17.5, abs=1e-3)


def test_snapshot_restore_and_chunking_give_identical_alerts() -> None:
    readings = series(recession(0.015), 130)
    whole = run(make_site(), readings)
    expected = [a.model_dump() for a in whole.alerts()]
    assert expected

    first = Engine(make_site())
    half = len(readings) // 2
    first.feed(readings[:half])
    restored = Engine.restore(make_site(), first.snapshot())
    for i in range(half, len(readings), 7):
        restored.feed(readings[i : i + 7])
    restored.finish()
    assert [a.model_dump() for a in restored.alerts()] == expected


def test_a_steady_constant_rate_recession_inside_the_limit_raises_no_warning() -> None:
    """The Lake Lure trench case: 0.6 m falling 0.012 m/h drains in 50 h, limit 72 h.

    Rise 0 -> 0.6 m over 6 h, then a straight fall: back within the 0.02 m
    tolerance at 6 + (0.6 - 0.02) / 0.012 = 54.3 h, 48.3 h after the peak.
    """
    site = make_site(
        practice_type="infiltration_trench",
        packs=("nc-ncg01",),
        unit="m",
        tolerance=0.02,
        drain_limit_h=72,
    )

    def level(h: float) -> float:
        return 0.1 * h if h < 6 else max(0.0, 0.6 - 0.012 * (h - 6))

    engine = run(site, series(level, 80))
    assert drain_alerts(engine, "drain_time_forecast") == []
    assert drain_alerts(engine) == []
    det = engine.detectors["drain/basin-a"]
    assert isinstance(det, DrainTimeDetector)
    (event,) = det.events()
    assert event.drained_at is not None
    assert (event.drained_at - event.peak_at) / MS_PER_H == pytest.approx(48.3, abs=0.2)


def _classed(**info: object) -> SiteConfig:
    site = make_site()
    return site.model_copy(update={"site": site.site.model_copy(update=info)})


@pytest.mark.parametrize(
    ("info", "why"),
    [
        ({"project": "minor"}, "a minor project (Lake George §148-11 I(3), E)"),
        (
            {"project": "major", "in_lake_george_park": False},
            "outside the Lake George Park (Lake George §148-6 D; §148-11 A)",
        ),
    ],
    ids=["minor-project", "outside-the-park"],
)
def test_no_drain_time_alert_where_148_11_i3_does_not_reach(
    info: dict[str, object], why: str
) -> None:
    """§148-11 I(3): "the following additional requirements shall apply to major
    projects", and §148-11 holds in the Lake George Park only. The same undrained basin
    that alerts on a major project in the Park at peak + 120 h raises nothing on a minor
    project or outside the Park, and config check's pack line says why."""

    def level(h: float) -> float:
        return 1.0 if 1.0 <= h < 131.0 else 0.0

    site = _classed(**info)
    engine = run(site, series(level, 140))
    assert drain_alerts(engine) == []
    assert drain_alerts(engine, "drain_time_forecast") == []
    (line,) = [x for x in applicability(site) if x.startswith("ny-lake-george")]
    assert f"drain.limit_h.infiltration_basin ({why})" in line
    assert f"drain.limit_h.porous_pavement ({why})" in line
    major = run(_classed(project="major"), series(level, 140))
    assert [a.opened_at for a in drain_alerts(major)] == [at(121)]


def test_a_minor_project_may_still_set_its_own_drain_limit() -> None:
    """A minor project's practice with its own drain_limit_h (a site's choice, not
    §148-11) is checked against it, cited as the site's configuration: 48 h after the
    01:00 peak, 49:00."""

    def level(h: float) -> float:
        return 1.0 if 1.0 <= h < 131.0 else 0.0

    site = make_site(drain_limit_h=48)
    site = site.model_copy(update={"site": site.site.model_copy(update={"project": "minor"})})
    [alert] = drain_alerts(run(site, series(level, 140)))
    assert alert.opened_at == at(49)
    assert alert.rule == "site configuration (test-site, practice basin-a drain_limit_h)"
