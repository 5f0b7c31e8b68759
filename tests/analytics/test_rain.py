"""Rain accounting: storm segmentation (pure and in the engine), rolling totals, daily log."""

from __future__ import annotations

import random
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.rain import RainDetector, StormSegmenter, segment_storms
from analytics.timeutil import MS_PER_H, MS_PER_MIN, to_ms
from siltwatch.config import SiteConfig

NY = ZoneInfo("America/New_York")
Q = 15 * MS_PER_MIN  # a 15-minute interval
GAP = 6 * MS_PER_H

settings.register_profile("siltwatch-rain", max_examples=40, deadline=None)
PROFILE = settings.get_profile("siltwatch-rain")


def local(text: str) -> int:
    return to_ms(datetime.fromisoformat(text).replace(tzinfo=NY))


def gauge_site(unit: str = "in", packs: list[str] | None = None, **gauge: Any) -> SiteConfig:
    tip = {"tip_in": 0.01} if unit == "in" else {"tip_mm": 0.2}
    return SiteConfig.model_validate(
        {
            "site": {
                "id": "s",
                "timezone": "America/New_York",
                "rule_packs": packs or ["nc-ncg01"],
            },
            "stations": [
                {
                    "id": "st",
                    "sensors": [
                        {"id": "rain", "kind": "rain", "unit": unit, "interval_s": 900, **tip}
                    ],
                }
            ],
            "rain_gauges": [{"id": "g", "sensor": "rain", **gauge}],
        }
    )


def rain_detector(engine: Engine) -> RainDetector:
    det = engine.detectors["rain"]
    assert isinstance(det, RainDetector)
    return det


# --- the pure function ----------------------------------------------------------------------------


def test_dry_period_of_exactly_the_gap_separates_storms() -> None:
    # Wet intervals ending 00:15 and 00:30; the next ends 06:45, so it began 06:30:
    # dry 00:30 -> 06:30 = 6 h = the gap -> a new storm (pwdgsi: stamps >= 6 h 15 min apart).
    spans = segment_storms([(Q, 0.01), (2 * Q, 0.02), (27 * Q, 0.03)], gap_ms=GAP, interval_ms=Q)
    assert [(s.start, s.end, round(s.depth, 6)) for s in spans] == [
        (0, 2 * Q, 0.03),
        (26 * Q, 27 * Q, 0.03),
    ]
    # Ending at 06:30 it began 06:15: dry 5 h 45 min -> the same storm.
    [one] = segment_storms([(Q, 0.01), (2 * Q, 0.02), (26 * Q, 0.03)], gap_ms=GAP, interval_ms=Q)
    assert (one.start, one.end, one.wet_intervals) == (0, 26 * Q, 3)


def test_zero_samples_do_not_extend_or_split_a_storm() -> None:
    samples = [(Q, 0.01)] + [(k * Q, 0.0) for k in range(2, 40)]
    [only] = segment_storms(samples, gap_ms=GAP, interval_ms=Q)
    assert (only.start, only.end) == (0, Q)


def test_min_depth_drops_small_storms_and_duplicates_are_refused() -> None:
    samples = [(Q, 0.05), (2 * Q, 0.05), (100 * Q, 0.09)]
    assert [
        s.depth for s in segment_storms(samples, gap_ms=GAP, interval_ms=Q, min_depth=0.10)
    ] == [pytest.approx(0.10)]
    with pytest.raises(ValueError, match="same time"):
        segment_storms([(Q, 0.1), (Q, 0.2)], gap_ms=GAP)


def test_segmenter_refuses_out_of_order_samples_and_closes_on_time() -> None:
    seg = StormSegmenter(GAP, Q)
    assert seg.add(4 * Q, 0.1) is None
    assert seg.closes_at() == 4 * Q + GAP + Q
    assert seg.close_if_dry(4 * Q + GAP + Q - 1) is None
    closed = seg.close_if_dry(4 * Q + GAP + Q)
    assert closed is not None and closed.end == 4 * Q
    with pytest.raises(ValueError):
        seg.add(3 * Q, 0.1)


wet_series = st.lists(
    st.tuples(st.integers(min_value=0, max_value=2000), st.sampled_from([0.0, 0.01, 0.02, 0.05])),
    min_size=1,
    max_size=120,
    unique_by=lambda x: x[0],
).map(lambda xs: [(k * Q, d) for k, d in xs])


@settings(PROFILE)
@given(wet_series, st.randoms(use_true_random=False))
def test_property_input_order_does_not_change_the_storms(
    samples: list[tuple[int, float]], rnd: random.Random
) -> None:
    shuffled = list(samples)
    rnd.shuffle(shuffled)
    assert segment_storms(shuffled, gap_ms=GAP, interval_ms=Q) == segment_storms(
        sorted(samples), gap_ms=GAP, interval_ms=Q
    )


@settings(PROFILE)
@given(wet_series, st.integers(min_value=0, max_value=2000))
def test_property_splitting_at_a_long_dry_period_and_merging(
    samples: list[tuple[int, float]], cut_k: int
) -> None:
    """Segmenting two halves cut inside a dry period >= the gap equals segmenting the whole."""
    cut = cut_k * Q
    wet_before = sorted(t for t, d in samples if d > 0 and t <= cut)
    wet_after = sorted(t for t, d in samples if d > 0 and t > cut)
    if wet_before and wet_after and (wet_after[0] - Q) - wet_before[-1] < GAP:
        return  # the cut falls inside a storm: splitting there is not a storm boundary
    left = segment_storms([s for s in samples if s[0] <= cut], gap_ms=GAP, interval_ms=Q)
    right = segment_storms([s for s in samples if s[0] > cut], gap_ms=GAP, interval_ms=Q)
    assert left + right == segment_storms(samples, gap_ms=GAP, interval_ms=Q)


@settings(PROFILE)
@given(wet_series, st.randoms(use_true_random=False))
def test_property_engine_storms_equal_the_pure_function_whatever_the_delivery(
    samples: list[tuple[int, float]], rnd: random.Random
) -> None:
    """Chunks, permutation within the allowed lateness, duplicates, and a snapshot/restore."""
    site = gauge_site()
    t0 = local("2026-05-04T00:00")
    readings = [SensorReading("rain", t0 + t, d) for t, d in sorted(samples)]
    reference = Engine(site)
    reference.feed(readings)
    reference.finish()
    # Reorder within 15 min (the engine's default allowed lateness), duplicate some, chunk.
    keyed = sorted(readings, key=lambda r: (r.t + rnd.randrange(0, Q), r.t))
    delivered = keyed + [r for r in keyed if rnd.random() < 0.2]
    engine = Engine(site)
    i = 0
    while i < len(delivered):
        n = rnd.randint(1, 20)
        engine.feed(delivered[i : i + n])
        i += n
        if rnd.random() < 0.2:
            engine = Engine.restore(site, engine.snapshot())
    engine.finish(max(r.t for r in readings))
    ours = rain_detector(engine).storms()
    assert ours == rain_detector(reference).storms()
    assert engine.duties() == reference.duties()
    assert engine.alerts() == reference.alerts()
    pure = segment_storms(
        [(t0 + t, d) for t, d in samples], gap_ms=GAP, interval_ms=Q, min_depth=0.01
    )
    assert [(s.start, s.end) for s in ours] == [(p.start, p.end) for p in pure]


# --- the detector: daily log, rolling total, units, flags -------------------------------------------


def test_daily_log_per_local_day_in_the_gauge_unit() -> None:
    site = gauge_site()
    readings = [
        SensorReading("rain", local("2026-05-04T23:45"), 0.10),
        SensorReading("rain", local("2026-05-05T00:00"), 0.20),  # fell 23:45-00:00: still 05-04
        SensorReading("rain", local("2026-05-05T00:15"), 0.05),
        SensorReading("rain", local("2026-05-05T12:00"), 0.0),
        SensorReading("rain", local("2026-05-07T09:00"), 0.01),  # 05-06: no reading, absent
    ]
    eng = Engine(site)
    eng.feed(readings)
    eng.finish()
    det = rain_detector(eng)
    assert det.daily_log() == [
        (date(2026, 5, 4), 0.30),
        (date(2026, 5, 5), 0.05),
        (date(2026, 5, 7), 0.01),
    ]
    assert det.daily_log(unit="mm") == [
        (date(2026, 5, 4), 7.62),
        (date(2026, 5, 5), 1.27),
        (date(2026, 5, 7), 0.254),
    ]
    assert det.rolling_total() == pytest.approx(0.01)  # the 24 h before the last tip


def test_flagged_and_negative_readings_are_counted_not_used() -> None:
    site = gauge_site()
    t = local("2026-05-04T10:00")
    readings = [
        SensorReading("rain", t, 0.5, flags=frozenset({"spike"})),
        SensorReading("rain", t + Q, -0.01),
        SensorReading("rain", t + 2 * Q, 0.02, flags=frozenset({"backfilled"})),
    ]
    eng = Engine(site)
    eng.feed(readings)
    eng.finish()
    det = rain_detector(eng)
    [(day, total)] = det.daily_totals()
    assert (day, total.readings, total.excluded) == (date(2026, 5, 4), 1, 2)
    assert det.daily_log() == [(date(2026, 5, 4), 0.02)]
    [storm] = det.storms()
    assert storm.depth() == pytest.approx(0.02)


def test_gauge_override_of_the_storm_gap() -> None:
    # Two showers 3 h apart (dry 2 h 45 min): one storm with the 6 h default, two with 2 h.
    t = local("2026-05-04T10:00")
    readings = [SensorReading("rain", t, 0.05), SensorReading("rain", t + 3 * MS_PER_H, 0.05)]
    for site, expected in ((gauge_site(), 1), (gauge_site(storm_gap_h=2), 2)):
        eng = Engine(site)
        eng.feed(readings)
        eng.finish(t + 24 * MS_PER_H)
        assert len(rain_detector(eng).storms()) == expected


def test_storm_qualifies_on_its_own_rain_in_24_h() -> None:
    """0.6 in, 7 h dry, 0.6 in: 1.2 in within 24 h but two rain events of 0.6 in -> no NC duty."""
    site = gauge_site()
    t = local("2026-05-04T10:00")
    readings = [SensorReading("rain", t + k * Q, 0.15) for k in range(4)]
    readings += [SensorReading("rain", t + 3 * Q + 7 * MS_PER_H + k * Q, 0.15) for k in range(1, 5)]
    eng = Engine(site)
    eng.feed(readings)
    eng.finish(t + 48 * MS_PER_H)
    storms = rain_detector(eng).storms()
    assert [round(s.depth(), 2) for s in storms] == [0.6, 0.6]
    assert all(s.qualified_at is None for s in storms)
    assert [d for d in eng.duties() if d.reason == "storm"] == []
