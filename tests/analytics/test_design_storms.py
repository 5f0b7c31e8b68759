"""Design storms (Lake George §148-11 I(3)(c)[1],[2]; Lake Lure 96.08(A)), computed by hand.

The site (America/New_York, EDT = UTC-4) is under the Lake George pack and
declares two design storms: "10-year 24-hour" 4.6 in and "25-year 24-hour"
7.0 in. Its gauge ``g`` reads every 15 minutes. T0 is Tue 2026-06-02 00:00 EDT
= 04:00 UTC.

Rain: 0.40 in in each of the 16 intervals ending 00:15 ... 04:00 EDT (6.40 in),
then none. The rain of the 24 h is 0.40 n in after n readings: 4.40 in at
02:45, 4.80 in at 03:00 EDT (reading 12) — the 10-year depth is reached at
03:00 EDT = 07:00 UTC; 7.0 in never is. The storm began at 00:00 EDT (the
first wet interval starts there): its id is ``g@2026-06-02T04:00:00Z``; its
rain ended at 04:00 EDT = 08:00 UTC (known 6 h 15 min later, after the dry gap).

Level in basin-a (every 5 min): 1.0 ft from 01:00 EDT (T0 + 1 h) until
T0 + 131 h, 0 otherwise. As in tests/analytics/test_drain.py: the peak and the
clock start at T0 + 1 h; the forecast warning opens a quarter of the 120 h
limit later with no fall at all, at T0 + 31 h (Wed 06-03 07:00 EDT = 11:00
UTC); drain_time opens at T0 + 121 h (Sun 06-07 01:00 EDT = 05:00 UTC) and
resolves when the level drops at T0 + 131 h (15:00 UTC).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from analytics.engine import Engine
from analytics.events import DutyEvent, Inspection, SensorReading
from analytics.timeutil import MS_PER_H, MS_PER_MIN, to_ms
from siltwatch.config import SiteConfig
from siltwatch.detections import alert_spec, duty_spec
from siltwatch.detections.base import Officer
from siltwatch.schema import Alert, Duty
from tests.analytics.site_files import load_problems, rain_gauge_site

NY = ZoneInfo("America/New_York")
T0 = to_ms(datetime.fromisoformat("2026-06-02T00:00:00-04:00"))
Q = 15 * MS_PER_MIN
STEP = 5 * MS_PER_MIN
STORM = "g@2026-06-02T04:00:00Z"
NOTE = "The 10-year 24-hour design storm was exceeded: 4.80 in of rain fell in the 24 h to"
PRACTICE = "(design depth 4.60 in), so the practice met a storm beyond its design."
TRAP = "(design depth 4.60 in), so the trap met a storm beyond its design."


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text)


def site(design: bool = True) -> SiteConfig:
    storms = [
        {"name": "10-year 24-hour", "depth_in": 4.6},
        {"name": "25-year 24-hour", "depth_mm": 177.8},  # 7.0 in
    ]
    return SiteConfig.model_validate(
        {
            "site": {
                "id": "ds",
                "name": "Design Storm Site",
                "timezone": "America/New_York",
                "rule_packs": ["ny-lake-george"],
            },
            "stations": [
                {
                    "id": "st",
                    "sensors": [
                        {"id": "rain", "kind": "rain", "unit": "in", "interval_s": 900},
                        {"id": "lvl", "kind": "water_level", "unit": "ft", "interval_s": 300},
                        {"id": "sed", "kind": "sediment_depth", "unit": "ft", "interval_s": 3600},
                    ],
                }
            ],
            "infiltration_practices": [
                {
                    "id": "basin-a",
                    "type": "infiltration_basin",
                    "level_sensor": "lvl",
                    "design_level_ft": 0.0,
                    "tolerance_ft": 0.05,
                }
            ],
            "sediment_traps": [
                # Storage proportional to depth: 0.6 ft of sediment is 60 % of it.
                {"id": "trap-1", "depth_sensor": "sed", "stage_storage": [[0, 0], [1, 100]]}
            ],
            "rain_gauges": [{"id": "g", "sensor": "rain"}],
            "design_storms": storms if design else [],
        }
    )


def readings(next_storm: bool = False) -> list[SensorReading]:
    hours = 140
    rain = [
        SensorReading("rain", T0 + k * Q, 0.4 if k <= 16 else 0.0) for k in range(1, hours * 4 + 1)
    ]
    if next_storm:  # 0.10 in in the interval ending Fri 06-05 12:00 EDT (T0 + 84 h)
        rain = [SensorReading(r.sensor, r.t, 0.1) if r.t == T0 + 84 * MS_PER_H else r for r in rain]
    level = [
        SensorReading("lvl", T0 + i * STEP, 1.0 if 12 <= i < 131 * 12 else 0.0)
        for i in range(hours * 12 + 1)
    ]
    # Sediment 0.6 ft deep at 06:00, 07:00 and 08:00 EDT: the third reading decides.
    sediment = [SensorReading("sed", T0 + h * MS_PER_H, 0.6) for h in (6, 7, 8)]
    return sorted(rain + level + sediment, key=lambda r: r.t)


def run(
    config: SiteConfig, data: list[SensorReading], inspections: tuple[Inspection, ...] = ()
) -> tuple[Engine, list[Any]]:
    """Feed the readings and inspections in event order, then finish."""
    engine, events = Engine(config), []
    fed = 0
    for inspection in inspections:
        before = [r for r in data[fed:] if r.t <= inspection.t]
        events += engine.feed(before)
        fed += len(before)
        events += engine.feed_inspection(inspection)
    events += engine.feed(data[fed:])
    events += engine.finish()
    return engine, events


def alerts(engine: Engine, kind: str) -> list[Alert]:
    return [a for a in engine.alerts() if a.kind == kind]


def design_duties(engine: Engine) -> list[Duty]:
    return [d for d in engine.duties() if d.reason == "design_storm"]


INSPECTED = Inspection(to_ms(datetime.fromisoformat("2026-06-03T10:00:00-04:00")), "Jo Whitaker")


def test_a_storm_reaching_the_10_year_depth() -> None:
    engine, _events = run(site(), readings(), (INSPECTED,))
    (alert,) = alerts(engine, "design_storm_exceeded")
    assert alert.subject == "g" and alert.severity == "info"
    assert alert.opened_at == utc("2026-06-02T07:00:00Z")  # reading 12: 4.80 in >= 4.60 in
    assert alert.resolved_at == utc("2026-06-02T08:00:00Z")  # the storm's rain ended 04:00 EDT
    assert alert.rule == "Lake George §148-11 I(3)(c)[1],[2]"
    ev = alert.evidence
    assert ev["design_storm"] == "10-year 24-hour" and ev["design_depth_in"] == 4.6
    assert ev["depth_24h_in"] == 4.8
    assert ev["window_start"] == "2026-06-01T07:00:00Z"
    assert ev["window_end"] == "2026-06-02T07:00:00Z"
    assert ev["design_storms_reached"] == ["10-year 24-hour"]  # 7.0 in was never reached
    assert ev["storm"] == STORM and ev["storm_depth_in"] == 6.4
    assert "ended at 2026-06-02 04:00 EDT" in alert.message
    spec = alert_spec("design_storm_exceeded")
    assert spec is not None and spec.officer == Officer.NEVER and not spec.regulatory
    assert spec.how_much(alert.evidence, NY) == (
        "4.8 in in 24 h, beyond the 10-year 24-hour depth of 4.6 in"
    )

    # One inspection duty for the practices, due by the end of the next local day:
    # Wed 06-03 ends at Thu 06-04 00:00 EDT = 04:00 UTC; inspected Wed 10:00 EDT.
    (duty,) = design_duties(engine)
    assert duty.kind == "inspection" and duty.subject == STORM
    assert duty.created_at == utc("2026-06-02T07:00:00Z")
    assert duty.due_at == utc("2026-06-04T04:00:00Z")
    assert duty.completed_at == utc("2026-06-03T14:00:00Z")
    assert duty.rule.startswith("Lake George §148-11 I(3)(c)[1],[2]; due per siltwatch default")
    spec_duty = duty_spec("inspection")
    assert spec_duty is not None and "design_storm" in spec_duty.reasons
    assert not [a for a in alerts(engine, "inspection_overdue") if a.subject == duty.id]

    # The drain alerts raised after it say the practice met a storm beyond its design.
    (forecast,) = alerts(engine, "drain_time_forecast")
    assert forecast.opened_at == utc("2026-06-03T11:00:00Z")
    (drain,) = alerts(engine, "drain_time")
    assert drain.opened_at == utc("2026-06-07T05:00:00Z")
    assert drain.resolved_at == utc("2026-06-07T15:00:00Z")
    for episode in (forecast, drain):
        assert NOTE in episode.message and PRACTICE in episode.message  # resolved, still said
        assert episode.evidence["design_storm"]["name"] == "10-year 24-hour"
    # So does the trap's: 60 % lost, critical at the third reading, 08:00 EDT = 12:00 UTC.
    (trap,) = alerts(engine, "sediment_capacity")
    assert trap.opened_at == utc("2026-06-02T12:00:00Z") and trap.severity == "critical"
    assert NOTE in trap.message and TRAP in trap.message


def test_an_uninspected_design_storm_duty_goes_overdue_at_its_deadline() -> None:
    engine, events = run(site(), readings())
    (duty,) = design_duties(engine)
    assert duty.completed_at is None
    (overdue,) = [a for a in alerts(engine, "inspection_overdue") if a.subject == duty.id]
    assert overdue.opened_at == utc("2026-06-04T04:00:00Z")
    assert "design storm" in overdue.message
    created = [e for e in events if isinstance(e, DutyEvent) and e.duty.id == duty.id]
    assert [e.type for e in created] == ["created", "overdue"]


def test_the_next_storm_ends_what_the_alerts_say_of_the_design_storm() -> None:
    """0.10 in on Fri 06-05 12:00 EDT is the next storm: the drain_time alert opened on
    Sun 06-07 does not name the design storm; the forecast opened on Wed 06-03 still does."""
    engine, _events = run(site(), readings(next_storm=True), (INSPECTED,))
    (forecast,) = alerts(engine, "drain_time_forecast")
    assert NOTE in forecast.message
    (drain,) = alerts(engine, "drain_time")
    assert drain.opened_at == utc("2026-06-07T05:00:00Z")
    assert "design storm" not in drain.message and "design_storm" not in drain.evidence


def test_without_design_storms_nothing_is_said() -> None:
    engine, _events = run(site(design=False), readings(), (INSPECTED,))
    assert alerts(engine, "design_storm_exceeded") == []
    assert design_duties(engine) == []
    for kind in ("drain_time", "drain_time_forecast", "sediment_capacity"):
        (episode,) = alerts(engine, kind)
        assert "design storm" not in episode.message and "design_storm" not in episode.evidence


def test_the_design_storm_survives_a_snapshot() -> None:
    """Stop during the storm (after the 10-year depth, before the rain ends), restore, go on:
    the same alerts and duties."""
    data = readings()
    whole, _ = run(site(), data, (INSPECTED,))
    first = Engine(site())
    cut = T0 + 3 * MS_PER_H + 30 * MS_PER_MIN
    first.feed([r for r in data if r.t <= cut])
    restored = Engine.restore(site(), first.snapshot())
    rest = [r for r in data if r.t > cut]
    restored.feed([r for r in rest if r.t <= INSPECTED.t])
    restored.feed_inspection(INSPECTED)
    restored.feed([r for r in rest if r.t > INSPECTED.t])
    restored.finish()
    assert restored.alerts() == whole.alerts()
    assert restored.duties() == whole.duties()


def test_a_design_storm_needs_exactly_one_depth_and_a_unique_name(tmp_path: Path) -> None:
    storms = [
        {"name": "10-year 24-hour", "depth_in": 4.6, "depth_mm": 116.8},
        {"name": "25-year 24-hour"},
        {"name": "10-year 24-hour", "depth_in": 4.6},
    ]
    lines = load_problems(tmp_path, {**rain_gauge_site("in"), "design_storms": storms})
    assert "design_storms[0]: set only one of depth_in, depth_mm" in lines
    assert any(line.startswith("design_storms[1]: set depth_in or depth_mm") for line in lines)
    assert (
        "design_storms[2].name: duplicate design storm '10-year 24-hour' (also at design_storms[0])"
    ) in lines
    assert len(lines) == 3
