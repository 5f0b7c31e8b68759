"""One usable-reading policy (analytics/quality.py): every detector agrees on what counts.

The experiment: a short Lake George replay (two storms that fill the basin,
add sediment to the trap and cloud West Brook) is run once as recorded and
once with extra readings carrying a set of quality flags, on every sensor, at
times between the recorded ones and with values that would matter (2 in of
rain, a full basin, a deep trap, a 3000 NTU reading). Then, per detector:

* if the policy says the reading is not usable *for that detector*, its output
  is identical to the run without the extra readings (it only counts them);
* if it says usable, the detector used it (the rain log counts it, the
  sediment forecast's rain grows, drain and sediment do not count it ignored,
  the turbidity median window holds it as usable).
"""

from __future__ import annotations

import functools
from dataclasses import astuple
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analytics.drain import DrainTimeDetector
from analytics.engine import NOT_JUDGED, Engine
from analytics.events import SensorReading
from analytics.quality import (
    HARD_FLAGS,
    INFORMATIONAL_FLAGS,
    SOFT_FLAGS,
    UNUSABLE,
    usable,
    usable_in_median,
)
from analytics.rain import RainDetector
from analytics.sediment import SedimentCapacityDetector
from analytics.timeutil import MS_PER_H, MS_PER_MIN, MS_PER_S
from analytics.turbidity import TurbidityContrast
from ingest.recordings.replay import ReplayResult, replay_site
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import QualityFlag
from tests.analytics.strategies import PROPERTY_SETTINGS
from tests.analytics.turbidity_helpers import T0

SITE_FILE = Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml"
HOURS = 30
STORMS = ((2, 6), (14, 18))  # hours of rain: 0.05 in per 5 minutes
RAIN_PER_READING_IN = 0.05
EXTRA_RAIN_IN = 2.0  # the redesign issue's 2 in of rain
EXTRA_VALUES = {
    "rain-1": EXTRA_RAIN_IN,
    "lvl-basin-a": 3.0,  # ft: a full basin
    "sed-trap-1": 2.5,  # ft: a trap five sixths full
    "turb-up": 3000.0,
    "turb-down": 3000.0,
}


D = TypeVar("D")


@functools.cache
def site() -> SiteConfig:
    # No site log here: the routine clock counts from the first reading, not the first
    # disturbance the Lake George pack would wait for (inspection.routine_by_site_log).
    loaded = load_site(SITE_FILE)
    overrides = loaded.rule_overrides | {"inspection.routine_by_site_log": False}
    return loaded.model_copy(update={"rule_overrides": overrides})


def _raining(h: float) -> bool:
    return any(a <= h < b for a, b in STORMS)


def _cum_rain_in(t: int) -> float:
    total = 0.0
    for a, b in STORMS:
        lo, hi = T0 + a * MS_PER_H, T0 + b * MS_PER_H
        if t > lo:
            total += (min(t, hi) - lo) / (5 * MS_PER_MIN) * RAIN_PER_READING_IN
    return total


@functools.cache
def recorded() -> tuple[SensorReading, ...]:
    """The recording: rain, a basin that fills and drains, a trap that fills, two plumes."""
    out: list[SensorReading] = []
    for sensor in site().sensors().values():
        step = round(sensor.interval_s * MS_PER_S)
        for k, t in enumerate(range(T0, T0 + HOURS * MS_PER_H + 1, step)):
            h = (t - T0) / MS_PER_H
            wobble = ((k * 7919) % 13 - 6) / 6  # deterministic noise in [-1, 1]
            if sensor.kind == "rain":
                value = RAIN_PER_READING_IN if _raining(h - 1e-9) and t > T0 else 0.0
            elif sensor.kind == "water_level":
                # Rises 0.1 ft per 5 minutes of rain, drains 0.1 ft/h, never below design.
                value = max(0.0, 2.0 * _cum_rain_in(t) - 0.1 * h) + 0.002 * wobble
            elif sensor.kind == "sediment_depth":
                value = 0.5 + 0.1 * _cum_rain_in(t) + 0.005 * wobble
            else:
                plume = 60.0 if sensor.id == "turb-down" and (_raining(h - 1)) else 0.0
                value = 8.0 + plume + 1.5 * wobble
            out.append(SensorReading(sensor.id, t, round(value, 4), k))
    return tuple(out)


def extras(flags: frozenset[str], every: int, offset_s: int) -> list[SensorReading]:
    """Flagged readings ``offset_s`` after every ``every``-th recorded one, per sensor.

    Every sensor also gets one in the last 15 minutes of the run, so the
    turbidity windows still hold it at the end.
    """
    out: list[SensorReading] = []
    end = T0 + HOURS * MS_PER_H
    by_sensor: dict[str, list[SensorReading]] = {}
    for r in recorded():
        by_sensor.setdefault(r.sensor, []).append(r)
    for sensor, rs in by_sensor.items():
        interval_ms = rs[1].t - rs[0].t
        off = offset_s * MS_PER_S % interval_ms or MS_PER_S
        picked = {i for i in range(len(rs) - 1) if i % every == every // 2}
        picked.add(len(rs) - 2)  # the last interval
        for i in sorted(picked):
            t = rs[i].t + off
            if t < end:
                out.append(SensorReading(sensor, t, EXTRA_VALUES[sensor], 10**6 + i, flags))
    return out


def replay(readings: list[SensorReading] | tuple[SensorReading, ...]) -> Engine:
    result: ReplayResult = replay_site(site(), readings, keep_engine=True)
    assert result.engine is not None
    return result.engine


@functools.cache
def baseline() -> Engine:
    return replay(recorded())


def det(engine: Engine, name: str, cls: type[D]) -> D:
    d = engine.detectors[name]
    assert isinstance(d, cls)
    return d


def rain_view(engine: Engine) -> Any:
    rain = det(engine, "rain", RainDetector)
    log = [(d, depth, total.readings) for (d, depth), (_, total) in _log(rain)]
    storms = [astuple(s) for s in rain.storms()]
    return log, storms, [d.model_dump() for d in engine.duties()]


def _log(rain: RainDetector) -> list[Any]:
    return list(zip(rain.daily_log("gauge-1"), rain.daily_totals("gauge-1"), strict=True))


def sediment_view(engine: Engine) -> Any:
    sed = det(engine, "sediment/trap-1", SedimentCapacityDetector)
    return (
        sed.rain_in(),
        sed.envelope_fraction,
        sed.envelope_depth_m,
        sed.forecast(),
        sed.cleanouts(),
        _alerts(engine, "sediment_capacity"),
    )


def drain_view(engine: Engine) -> Any:
    drain = det(engine, "drain/basin-a", DrainTimeDetector)
    return drain.events(), _alerts(engine, "drain_time", "drain_time_forecast")


def turbidity_view(engine: Engine) -> Any:
    return _alerts(engine, "turbidity_contrast")


def _alerts(engine: Engine, *kinds: str) -> list[dict[str, Any]]:
    # The evidence counts the readings a detector ignored: counted, not used.
    out = []
    for a in engine.alerts():
        if a.kind in kinds:
            dump = a.model_dump()
            dump["evidence"].pop("ignored_readings", None)
            out.append(dump)
    return out


def test_the_scenario_exercises_every_detector() -> None:
    # A property that holds because nothing happens proves nothing.
    base = baseline()
    log, storms, duties = rain_view(base)
    assert sum(depth for _, depth, _ in log) > 4.0 and len(storms) == 2 and duties
    assert sediment_view(base)[3] is not None  # a cleanout forecast from accumulation per inch
    assert det(base, "drain/basin-a", DrainTimeDetector).events()
    assert turbidity_view(base)


def test_every_flag_is_classified_exactly_once() -> None:
    classes = (HARD_FLAGS, SOFT_FLAGS, INFORMATIONAL_FLAGS)
    placed = sorted(f for c in classes for f in c)
    assert placed == sorted(f.value for f in QualityFlag)


def check_agreement(flags: frozenset[str], every: int, offset_s: int) -> None:
    added = extras(flags, every, offset_s)
    base, run = baseline(), replay(list(recorded()) + added)
    n = {s: sum(1 for r in added if r.sensor == s) for s in EXTRA_VALUES}
    # A clock_ahead or too_old reading is not placed in time at all: the engine keeps it
    # from every detector (analytics/engine.py NOT_JUDGED), so none even counts it.
    delivered = 0 if not flags.isdisjoint(NOT_JUDGED) else 1

    rain = det(run, "rain", RainDetector)
    base_rain = det(base, "rain", RainDetector)
    rain_excluded = sum(t.excluded for _, t in rain.daily_totals()) - sum(
        t.excluded for _, t in base_rain.daily_totals()
    )
    sed = det(run, "sediment/trap-1", SedimentCapacityDetector)
    sed_ignored = (
        sed.ignored_readings
        - det(base, "sediment/trap-1", SedimentCapacityDetector).ignored_readings
    )
    drain_ignored = (
        det(run, "drain/basin-a", DrainTimeDetector).ignored_readings
        - det(base, "drain/basin-a", DrainTimeDetector).ignored_readings
    )
    turb = det(run, "turbidity.outfall-a", TurbidityContrast)
    last = max(r.t for r in added if r.sensor == "turb-down")
    held = [e[2] for e in turb.down_win.entries if e[0] == last]
    last_grade = held[0] if held else None  # None: never delivered

    if usable(flags):
        # Used by all: the rain log and the sediment forecast count the 2 in alike.
        assert rain_excluded == sed_ignored == drain_ignored == 0
        extra_in = n["rain-1"] * EXTRA_RAIN_IN
        log_in = sum(d for _, d, _ in rain_view(run)[0]) - sum(d for _, d, _ in rain_view(base)[0])
        assert log_in == pytest.approx(extra_in)
        assert sed.rain_in() - sediment_view(base)[0] == pytest.approx(extra_in)
        assert last_grade is not None and last_grade != UNUSABLE
        return
    # Not evidence for rain, drain and sediment: counted, and nothing else changes.
    assert rain_excluded == delivered * n["rain-1"]
    assert sed_ignored == delivered * (n["rain-1"] + n["sed-trap-1"])
    assert drain_ignored == delivered * n["lvl-basin-a"]
    assert rain_view(run) == rain_view(base)
    assert sediment_view(run) == sediment_view(base)
    assert drain_view(run) == drain_view(base)
    if usable_in_median(flags):
        # A soft mark: the turbidity median keeps the reading (and counts it).
        assert last_grade is not None and last_grade != UNUSABLE
    else:
        assert turbidity_view(run) == turbidity_view(base)
        assert last_grade == (UNUSABLE if delivered else None)


@PROPERTY_SETTINGS
@given(
    flags=st.frozensets(st.sampled_from([f.value for f in QualityFlag])),
    every=st.integers(min_value=2, max_value=9),
    offset_s=st.integers(min_value=1, max_value=3599),
)
def test_all_detectors_agree_on_whether_a_flagged_reading_counts(
    flags: frozenset[str], every: int, offset_s: int
) -> None:
    check_agreement(flags, every, offset_s)


@pytest.mark.parametrize("flag", [None, *[f.value for f in QualityFlag]])
def test_each_flag_alone(flag: str | None) -> None:
    check_agreement(frozenset() if flag is None else frozenset({flag}), 3, 7)


def test_uncalibrated_rain_is_one_story_in_rain_log_and_sediment_forecast() -> None:
    # The redesign issue: 2 in of rain flagged uncalibrated counted 2.0 in the rain
    # log and 0.0 in the sediment trap's per-inch accumulation.
    flags = frozenset({QualityFlag.UNCALIBRATED.value})
    t = T0 + MS_PER_H
    engine = replay(
        [
            SensorReading("rain-1", T0, 0.0, 0),
            SensorReading("rain-1", t, EXTRA_RAIN_IN, 1, flags),
            SensorReading("rain-1", t + 5 * MS_PER_MIN, 0.5, 2),
        ]
    )
    rain = det(engine, "rain", RainDetector)
    sed = det(engine, "sediment/trap-1", SedimentCapacityDetector)
    logged = sum(depth for _, depth in rain.daily_log("gauge-1"))
    assert logged == pytest.approx(sed.rain_in())
    assert logged == pytest.approx(0.5 + (EXTRA_RAIN_IN if usable(flags) else 0.0))
    excluded = sum(total.excluded for _, total in rain.daily_totals("gauge-1"))
    assert excluded == sed.ignored_readings == (0 if usable(flags) else 1)
