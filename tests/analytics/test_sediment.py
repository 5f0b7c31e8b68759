"""Sediment-trap capacity on hand-built depth series (hourly readings).

The depth used is the median of the last five readings, so a step in the
sediment depth is seen at the third reading after it (three of five agree):
a step at hour 10 is acted on at hour 12. The fraction lost is a volume
fraction (analytics/trap_geometry.py; the numbers are worked out in
test_trap_geometry.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.sediment import SedimentCapacityDetector
from analytics.timeutil import MS_PER_H, to_ms
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert

T0 = to_ms(datetime(2026, 6, 1, 0, 0, tzinfo=UTC))


def at(hours: float) -> datetime:
    return datetime.fromtimestamp((T0 + round(hours * MS_PER_H)) / 1000, tz=UTC)


def lake_george_site(warn_fraction: float | None = None) -> SiteConfig:
    """The Lake George reference trap: 20 x 10 ft bottom, z = 2, 3 ft deep; rain in inches."""
    trap: dict[str, Any] = {
        "id": "trap-1",
        "depth_sensor": "sed",
        "shape": {
            "bottom_length_ft": 20.0,
            "bottom_width_ft": 10.0,
            "side_slope": 2.0,
            "depth_ft": 3.0,
        },
    }
    if warn_fraction is not None:
        trap["warn_fraction"] = warn_fraction
    return SiteConfig.model_validate(
        {
            "site": {"id": "lg", "name": "Route 9N", "rule_packs": ["ny-lake-george"]},
            "stations": [
                {
                    "id": "basin-1",
                    "sensors": [
                        {"id": "sed", "kind": "sediment_depth", "unit": "ft", "interval_s": 3600},
                        {
                            "id": "rain",
                            "kind": "rain",
                            "unit": "in",
                            "tip_in": 0.01,
                            "interval_s": 3600,
                        },
                    ],
                }
            ],
            "sediment_traps": [trap],
            "rain_gauges": [{"id": "gauge-1", "sensor": "rain"}],
        }
    )


def depths(depth: Callable[[int], float], hours: int) -> list[SensorReading]:
    return [SensorReading("sed", T0 + h * MS_PER_H, depth(h)) for h in range(hours + 1)]


def run(site: SiteConfig, readings: list[SensorReading]) -> Engine:
    engine = Engine(site)
    engine.feed(sorted(readings, key=lambda r: (r.t, r.sensor)))
    engine.finish()
    return engine


def capacity_alerts(engine: Engine) -> list[Alert]:
    return [a for a in engine.alerts() if a.kind == "sediment_capacity"]


def detector(engine: Engine, name: str = "sediment/trap-1") -> SedimentCapacityDetector:
    det = engine.detectors[name]
    assert isinstance(det, SedimentCapacityDetector)
    return det


def test_warning_escalates_to_critical_in_one_episode_and_cleanout_resolves_it() -> None:
    # 1.5 ft (35.3 %) for 10 h, 1.8 ft for 10 h, 2.0 ft for 10 h, then cleaned to 0.2 ft.
    # V(1.8) = 360 + 194.4 + 31.10 = 585.5 ft^3 -> 45.6 % (past the 40 % warning)
    # V(2.0) = 400 + 240 + 42.67 = 682.7 ft^3 -> 53.2 % (past Lake George's 50 %)
    # V(0.2) = 40 + 2.4 + 0.043 = 42.44 ft^3 -> 3.3 %
    def depth(h: int) -> float:
        return 1.5 if h < 10 else 1.8 if h < 20 else 2.0 if h < 30 else 0.2

    engine = run(lake_george_site(), depths(depth, 40))
    [alert] = capacity_alerts(engine)
    assert alert.opened_at == at(12)
    assert [(e.at, e.severity) for e in alert.escalations] == [
        (at(12), "warning"),
        (at(22), "critical"),
    ]
    assert alert.severity == "critical"
    assert alert.rule == "Lake George §148-10 A"
    # The cleanout is dated at the first low reading, hour 30.
    assert alert.resolved_at == at(30)
    assert "cleaned out" in alert.message
    [cleanout] = detector(engine).cleanouts()
    assert cleanout.fraction_before == pytest.approx(682.667 / 1284, abs=1e-5)
    assert cleanout.fraction_after == pytest.approx(42.443 / 1284, abs=1e-5)
    assert alert.evidence["cleanout"]["fraction_before"] == pytest.approx(0.5317, abs=1e-4)


def test_critical_message_says_what_where_how_much_and_what_to_do() -> None:
    engine = run(lake_george_site(), depths(lambda h: 2.0, 6))
    [alert] = capacity_alerts(engine)
    assert alert.severity == "critical"
    assert alert.escalations[0].severity == "critical"  # straight to critical, one entry
    assert "Sediment trap trap-1 at Route 9N has lost 53 %" in alert.message
    assert "683 ft³ of 1,284 ft³" in alert.message
    assert "Lake George §148-10 A" in alert.message
    assert "Clean the trap out now" in alert.message
    assert alert.resolved_at is None


def test_half_the_depth_is_not_half_the_capacity() -> None:
    # 1.5 of 3 ft of sediment is 35 % of the volume: below the 40 % warning, no alert.
    engine = run(lake_george_site(), depths(lambda h: 1.5, 48))
    assert capacity_alerts(engine) == []
    assert detector(engine).envelope_fraction == pytest.approx(453 / 1284)


def test_trap_warn_fraction_overrides_the_pack() -> None:
    engine = run(lake_george_site(warn_fraction=0.3), depths(lambda h: 1.5, 10))
    [alert] = capacity_alerts(engine)
    assert alert.severity == "warning"
    assert "30 % warning (trap warn_fraction)" in alert.message


def test_noise_and_spikes_make_no_alert_and_no_false_cleanout() -> None:
    # 1.2 ft (V = 240 + 86.4 + 12.29 = 338.7 ft^3, 26 %) with +-0.05 ft of noise, two
    # readings in a row at 2.9 ft (floating debris over the sensor) every 13 h and two
    # at 0.0 ft (a fish) every 17 h: the median of five never moves far.
    def depth(h: int) -> float:
        if h % 13 in (5, 6):
            return 2.9
        if h % 17 in (3, 4):
            return 0.0
        return 1.2 + 0.05 * math.sin(h * 2.1)

    engine = run(lake_george_site(), depths(depth, 500))
    assert capacity_alerts(engine) == []
    det = detector(engine)
    assert det.cleanouts() == []
    # The monotone envelope rides at most the noise above the true 26 %.
    assert 338.7 / 1284 <= det.envelope_fraction <= 0.28


def test_forecast_from_accumulation_per_inch_of_rain() -> None:
    # A trap with a linear stage-storage table (volume proportional to depth) so the
    # fraction lost is simply depth / 1 m. Every day half an inch of rain falls at
    # 00:30, and the sediment is 1 cm deeper from 01:00: 1 % per half inch = 2 % per inch.
    site = SiteConfig.model_validate(
        {
            "site": {"id": "ll", "name": "Lake Lure lots", "rule_packs": ["nc-lake-lure"]},
            "stations": [
                {
                    "id": "yard",
                    "sensors": [
                        {"id": "sed", "kind": "sediment_depth", "unit": "m", "interval_s": 3600},
                        {"id": "rain", "kind": "rain", "unit": "mm", "interval_s": 300},
                    ],
                }
            ],
            "sediment_traps": [
                {"id": "basin-s", "depth_sensor": "sed", "stage_storage": [[0, 0], [1.0, 100.0]]}
            ],
            "rain_gauges": [{"id": "g", "sensor": "rain"}],
        }
    )
    days = 14
    readings = [
        SensorReading("rain", T0 + d * 24 * MS_PER_H + MS_PER_H // 2, 12.7) for d in range(days)
    ]
    readings += depths(lambda h: 0.30 + 0.01 * (h // 24), days * 24 - 1)
    engine = run(site, readings)
    det = detector(engine, "sediment/basin-s")
    forecast = det.forecast()
    assert forecast is not None
    # The median lags the daily step by two readings, which bends the fit a little.
    assert forecast.per_inch == pytest.approx(0.02, rel=0.05)
    # After 13 steps the trap is at 43 %: (50 - 43) / 2 = 3.5 more inches.
    assert det.envelope_fraction == pytest.approx(0.43)
    assert forecast.inches_to_cleanout == pytest.approx(3.5, rel=0.06)
    [alert] = capacity_alerts(engine)
    assert alert.severity == "warning"
    # No NC pack sets the cleanout fraction: siltwatch's default, named as one, not as law.
    assert alert.rule == "siltwatch default"
    assert "siltwatch's default (no rule pack of this site sets a cleanout level)" in alert.message
    match = re.search(
        r"At the current rate of ([0-9.]+) % per inch, 50 % after about ([0-9.]+) more "
        r"inches of rain",
        alert.message,
    )
    assert match is not None, alert.message
    assert float(match.group(1)) == pytest.approx(2.0, abs=0.1)
    assert float(match.group(2)) == pytest.approx(3.5, abs=0.25)


def test_snapshot_restore_gives_identical_alerts() -> None:
    def depth(h: int) -> float:
        return 1.5 if h < 10 else 1.8 if h < 20 else 2.0 if h < 30 else 0.2

    rain = [SensorReading("rain", T0 + h * MS_PER_H + 1, 0.05) for h in range(0, 40, 3)]
    readings = sorted(depths(depth, 40) + rain, key=lambda r: (r.t, r.sensor))
    expected = [a.model_dump() for a in run(lake_george_site(), readings).alerts()]
    first = Engine(lake_george_site())
    first.feed(readings[:20])
    restored = Engine.restore(lake_george_site(), first.snapshot())
    for i in range(20, len(readings), 3):
        restored.feed(readings[i : i + 3])
    restored.finish()
    assert [a.model_dump() for a in restored.alerts()] == expected
