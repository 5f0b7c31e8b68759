"""Drain events on a real infiltration record: PWD SMP 250-1-1, observation well OW1.

The fixture (tests/fixtures/pwd_smp_250-1-1, MIT, see its PROVENANCE.md) is
2.5 years of 15-minute water levels in a subsurface stone-storage infiltration
practice in Philadelphia. Its dry level drifts between about -0.65 and 0 ft,
so the practice is configured with ``baseline = "pre_event"``: every rise is
measured above the median level of the day before the fill.

For the seven storms of the provenance table the detector must find the
event, its baseline (the level the storm's rise started from) and its highest
level, and the drawdown to 10 % of the rise. Tolerances, stated once:

* baseline and highest level: within 0.06 ft of the table (the table's values
  are read off the raw series; ours are a 24-h median and the raw maximum);
* drawdown to 10 % of the rise: within 0.25 d of the table's "~days", except
  2017-05-25 (see below);
* the recession rate (90 % -> 10 % of the rise) is not in the table: it is
  printed, and checked to lie between the design infiltration rate of the
  stone bed (0.12 in/h: the orifice adds to it, so the level falls faster)
  and 1 in/h.

2017-05-25: the table says ~1.6 d, we find 2.2 d. That storm refilled the
practice twice (05-25 09:00, 17:30, 21:00); the clock (and our 10 % time)
runs from the last peak, at 21:00. The level then sits on a shelf at
-0.035 ft for ten hours on 05-27, at 10.5 % of the rise, so where "10 %" is
crossed depends on a few hundredths of a foot: from the 17:30 peak the 10 %
level of the table's own figures (-0.41 -> 3.25 ft: -0.044 ft) is crossed on
05-27 at about 18:00, 2.0 d later, not 1.6 d. We allow 0.7 d there.
"""

from __future__ import annotations

import csv
import gzip
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from analytics.drain import DrainEvent, DrainTimeDetector
from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.timeutil import MS_PER_H, to_ms
from siltwatch.config import SiteConfig

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "pwd_smp_250-1-1"
    / "smp_250-1-1_OW1_level_rain_2016-02_2018-08.csv.gz"
)
FT = 0.3048
EST = timedelta(hours=-5)

# A site for the PWD practice: subsurface stone storage with infiltration (an
# infiltration trench / bed: Lake George §148-11 I(3) gives it 15 days). The
# well reads in feet with a drifting datum, so "drained" is "back within
# 0.1 ft of the dry level before the storm" (0.1 ft: the well's diurnal wobble
# is up to 0.06 ft).
PWD_SITE = SiteConfig.model_validate(
    {
        "site": {
            "id": "pwd-smp-250-1-1",
            "name": "PWD SMP 250-1-1, Philadelphia",
            "timezone": "America/New_York",
            "rule_packs": ["ny-lake-george"],
        },
        "stations": [
            {
                "id": "smp-250",
                "name": "Subsurface infiltration bed, observation well OW1",
                "sensors": [
                    {"id": "ow1", "kind": "water_level", "unit": "ft", "interval_s": 900},
                ],
            }
        ],
        "infiltration_practices": [
            {
                "id": "smp-250-1-1",
                "type": "infiltration_trench",
                "level_sensor": "ow1",
                "design_level_ft": 0.0,
                "tolerance_ft": 0.1,
                "baseline": "pre_event",
            }
        ],
    }
)


@dataclass(frozen=True)
class Storm:
    """A row of the provenance table (times EST, levels ft, drawdown days)."""

    rain_start: str
    rain_end: str
    baseline_ft: float
    peak_ft: float
    t10_days: float | None
    t10_tolerance_days: float = 0.25


STORMS = [
    Storm("2016-02-23 09:00", "2016-02-25 00:45", -0.27, 3.36, 2.1),
    Storm("2017-05-25 01:30", "2017-05-26 00:00", -0.41, 3.25, 1.6, 0.7),
    Storm("2017-10-29 07:45", "2017-10-30 00:00", -0.36, 2.55, 2.2),
    Storm("2016-07-25 17:45", "2016-07-25 20:30", -0.01, 2.58, None),
    Storm("2018-01-12 05:15", "2018-01-13 00:00", -0.43, 2.42, 2.4),
    Storm("2017-05-05 00:00", "2017-05-06 00:00", -0.41, 1.98, 2.7),
    Storm("2017-05-13 00:00", "2017-05-14 00:00", -0.42, 1.22, 3.5),
]


def est_ms(text: str) -> int:
    return to_ms(datetime.fromisoformat(text).replace(tzinfo=UTC) - EST)


def est_text(ms: int) -> str:
    return (datetime.fromtimestamp(ms / 1000, tz=UTC) + EST).strftime("%m-%d %H:%M")


def load_levels() -> list[SensorReading]:
    out = []
    with gzip.open(FIXTURE, "rt", newline="") as f:
        for row in csv.DictReader(f):
            t = to_ms(datetime.fromisoformat(row["datetime_utc"].replace("Z", "+00:00")))
            out.append(SensorReading("ow1", t, float(row["level_ft"])))
    return out


@pytest.fixture(scope="module")
def pwd() -> tuple[Engine, DrainTimeDetector]:
    engine = Engine(PWD_SITE)
    engine.feed(load_levels())
    engine.finish()
    det = engine.detectors["drain/smp-250-1-1"]
    assert isinstance(det, DrainTimeDetector)
    return engine, det


@dataclass(frozen=True)
class Found:
    event: DrainEvent
    baseline_ft: float
    peak_ft: float
    peak_at: int


def find(storm: Storm, events: list[DrainEvent]) -> Found:
    """The storm's rise(s): climbs that start between 6 h before the rain and its end."""
    lo, hi = est_ms(storm.rain_start) - 6 * MS_PER_H, est_ms(storm.rain_end)
    for ev in events:
        rises = [r for r in ev.rises if lo <= r.start_at <= hi]
        if rises:
            top = max(rises, key=lambda r: r.max_level_m)
            return Found(ev, rises[0].from_level_m / FT, top.max_level_m / FT, top.max_level_at)
    raise AssertionError(f"no fill event for the storm of {storm.rain_start}")


def test_pwd_storms_match_the_provenance_table(pwd: tuple[Engine, DrainTimeDetector]) -> None:
    _, det = pwd
    events = det.events()
    lines = [
        "storm (EST)       baseline ft (table)  highest ft (table)  at (EST)     "
        "t10 d (table)  drained d  rate in/h  mm/h   refills"
    ]
    problems = []
    for storm in STORMS:
        found = find(storm, events)
        ev = found.event
        t10 = ev.t10_h / 24 if ev.t10_h is not None else None
        rate = ev.rate_mm_h
        drained = f"{ev.drain_h / 24:9.2f}" if ev.drain_h is not None else "      gap"
        lines.append(
            f"{storm.rain_start}  {found.baseline_ft:6.2f} ({storm.baseline_ft:5.2f})"
            f"       {found.peak_ft:5.2f} ({storm.peak_ft:4.2f})"
            f"      {est_text(found.peak_at)}  "
            f"{'  -  ' if t10 is None else f'{t10:5.2f}'} "
            f"({'  -' if storm.t10_days is None else f'{storm.t10_days:3.1f}'})"
            f"    {drained}  "
            f"{'   -' if rate is None else f'{rate / 25.4:9.3f}  {rate:5.1f}'}   {ev.refills}"
        )
        if abs(found.baseline_ft - storm.baseline_ft) > 0.06:
            problems.append(f"{storm.rain_start}: baseline {found.baseline_ft:.2f}")
        if abs(found.peak_ft - storm.peak_ft) > 0.06:
            problems.append(f"{storm.rain_start}: highest level {found.peak_ft:.2f}")
        if storm.t10_days is not None:
            if t10 is None or abs(t10 - storm.t10_days) > storm.t10_tolerance_days:
                problems.append(f"{storm.rain_start}: drawdown to 10 % {t10}")
            assert rate is not None
            if not 0.12 <= rate / 25.4 <= 1.0:
                problems.append(f"{storm.rain_start}: recession rate {rate / 25.4:.3f} in/h")
    print("\n" + "\n".join(lines))
    assert problems == []


def test_pwd_record_raises_no_drain_time_alert(pwd: tuple[Engine, DrainTimeDetector]) -> None:
    engine, det = pwd
    # Every storm of the record drains well inside the trench's 15 days: no critical alert.
    assert [a for a in engine.alerts() if a.kind == "drain_time"] == []
    drained = [e for e in det.events() if e.drain_h is not None]
    assert len(drained) >= 30
    assert max(e.drain_h for e in drained if e.drain_h is not None) < 15 * 24
    # Events cut by the record's long gaps (> 24 h) are closed without a verdict.
    interrupted = [e for e in det.events() if e.interrupted_at is not None]
    assert all(e.drained_at is None for e in interrupted)
    warnings = [a for a in engine.alerts() if a.kind == "drain_time_forecast"]
    print(f"\n{len(det.events())} events, {len(interrupted)} cut by gaps; trend {det.trend()}")
    for w in warnings:
        print(f"forecast warning {w.opened_at} -> {w.resolved_at}: {w.message}")
