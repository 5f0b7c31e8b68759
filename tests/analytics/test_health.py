"""Sensor health: offline episodes (in order and backfilled), range, flatline and spike flags."""

from __future__ import annotations

from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.health import SensorHealth
from siltwatch.config import SiteConfig
from tests.analytics.turbidity_helpers import (
    at_min,
    level,
    minute,
    of_kind,
    pair_site,
    run,
    series,
)

NY_PROXY = {"over_background_ntu": 25.0}


def ny_site(**kwargs: object) -> SiteConfig:
    return pair_site(limit=NY_PROXY, **kwargs)  # type: ignore[arg-type]


def health_of(engine: Engine) -> SensorHealth:
    health = engine.detectors["health"]
    assert isinstance(health, SensorHealth)
    return health


# --- offline -------------------------------------------------------------------------


def test_offline_opens_after_five_intervals_and_resolves_when_data_resumes() -> None:
    up = series("turb-up", 0, level(8.0, 31)) + series("turb-up", 51, level(8.0, 40))
    down = series("turb-down", 0, level(10.0, 91))
    engine = run(ny_site(), up + down)
    (alert,) = of_kind(engine, "sensor_offline")
    assert alert.subject == "turb-up"
    assert alert.severity == "warning"
    assert at_min(alert.opened_at) == 35  # last reading at 30 + 5 x 60 s
    assert alert.resolved_at is not None and at_min(alert.resolved_at) == 51
    assert alert.rule == "siltwatch default"
    assert alert.evidence["last_reading_at"] == "2026-06-01T12:30:00Z"
    assert alert.evidence["data_resumed_at"] == "2026-06-01T12:51:00Z"
    assert alert.evidence["gap_s"] == 21 * 60
    assert "turb-up" in alert.message and "Test site" in alert.message
    # The 21-minute blind spell of the pair is shorter than the 30-minute sustain.
    assert of_kind(engine, "data_quality") == []


def test_a_reading_exactly_at_the_deadline_keeps_the_sensor_online() -> None:
    up = series("turb-up", 0, level(8.0, 31)) + series("turb-up", 35, level(8.0, 30))
    down = series("turb-down", 0, level(10.0, 65))
    assert of_kind(run(ny_site(), up + down), "sensor_offline") == []


def test_a_sensor_that_never_reported_is_not_watched() -> None:
    """Commissioning is not an outage: a sensor is watched from its first reading."""
    engine = run(ny_site(), series("turb-down", 0, level(10.0, 120)))
    assert of_kind(engine, "sensor_offline") == []


def feed_live(engine: Engine, readings: list[SensorReading]) -> None:
    """Readings arriving one by one in this order (as a live broker delivers them)."""
    for r in readings:
        engine.feed([r])


def test_backfill_closes_the_episode_at_the_resume_time_and_never_reopens_it() -> None:
    """turb-up's link drops after minute 30; its outbox delivers 31-120 later, in two batches.

    Live, the watermark (15 min lateness) passes minute 35 once turb-down's reading
    of minute 50 arrives: the offline episode opens at 35. The backfill is older
    than the watermark, so the engine processes it at once; its first reading
    (minute 31) closes the episode at max(35, 31) = 35. Had the next offline
    check been placed at 31 + 5 minutes, it would fire right after the first
    batch (which ends at 75) and open a second episode at 80.
    """
    engine = Engine(ny_site())
    live = series("turb-up", 0, level(8.0, 31)) + series("turb-down", 0, level(10.0, 121))
    feed_live(engine, sorted(live, key=lambda r: (r.t, r.sensor)))
    assert [at_min(a.opened_at) for a in of_kind(engine, "sensor_offline")] == [35]
    backfill = series("turb-up", 31, level(8.0, 90))
    engine.feed(backfill[:45])  # minutes 31-75
    engine.feed(backfill[45:])  # minutes 76-120
    engine.finish()
    assert engine.stats.late_processed > 0
    (alert,) = of_kind(engine, "sensor_offline")
    assert at_min(alert.opened_at) == 35
    assert alert.resolved_at is not None and at_min(alert.resolved_at) == 35
    assert alert.evidence["data_resumed_at"] == "2026-06-01T12:31:00Z"
    assert alert.evidence["gap_s"] == 60
    assert "backfilled data from" in alert.message


def test_whole_site_outage_with_heartbeats_backfills_without_duplicates() -> None:
    """Both stations go silent after minute 30; the live service's clock advances event time.

    Both sensors go offline at 35. The backfills come per station in two
    batches each; no batch boundary may open a second episode.
    """
    engine = Engine(ny_site())
    feed_live(
        engine,
        sorted(
            series("turb-up", 0, level(8.0, 31)) + series("turb-down", 0, level(10.0, 31)),
            key=lambda r: (r.t, r.sensor),
        ),
    )
    engine.advance_to(minute(150))
    assert sorted(a.subject for a in of_kind(engine, "sensor_offline")) == [
        "turb-down",
        "turb-up",
    ]
    for sensor, value in (("turb-up", 8.0), ("turb-down", 10.0)):
        backfill = series(sensor, 31, level(value, 120))
        engine.feed(backfill[:45])
        engine.feed(backfill[45:])
    engine.finish()
    alerts = of_kind(engine, "sensor_offline")
    assert len(alerts) == 2
    for alert in alerts:
        assert at_min(alert.opened_at) == 35
        assert alert.resolved_at is not None and at_min(alert.resolved_at) == 35


# --- range -----------------------------------------------------------------------------


def out_of_range(bad: int, minutes: int) -> Engine:
    """Downstream (max_value 1000) reads 1500 NTU ``bad`` times from minute 20 and 10 NTU
    otherwise, upstream 8 NTU; ``minutes`` of readings in all."""
    site = ny_site(down_extra={"max_value": 1000.0})
    up = series("turb-up", 0, level(8.0, minutes))
    rest = minutes - 20 - bad
    down = series("turb-down", 0, level(10.0, 20) + level(1500.0, bad) + level(10.0, rest))
    return run(site, up + down)


def test_out_of_range_flags_and_a_persistent_run_alerts() -> None:
    """max_value 1000: six readings of 1500 from minute 20; the fifth (minute 24) alerts."""
    engine = out_of_range(bad=6, minutes=60)
    assert health_of(engine).flag_counts("turb-down") == {"out_of_range": 6}
    (dq,) = of_kind(engine, "data_quality", "turb-down")
    assert at_min(dq.opened_at) == 24
    assert dq.resolved_at is not None and at_min(dq.resolved_at) == 26
    assert "the sensor's configured max_value" in dq.message
    assert dq.evidence["range"] == [-5.0, 1000.0]
    assert dq.evidence["bad_flags"] == ["out_of_range"]
    # The 1500s never reached the contrast: no violation.
    assert of_kind(engine, "turbidity_contrast") == []


def test_four_bad_readings_are_flagged_but_not_alerted() -> None:
    engine = out_of_range(bad=4, minutes=40)
    assert health_of(engine).flag_counts("turb-down") == {"out_of_range": 4}
    assert of_kind(engine, "data_quality") == []


def test_negative_rain_and_impossible_turbidity_are_out_of_range() -> None:
    site = SiteConfig.model_validate(
        {
            "site": {"id": "s", "rule_packs": ["ny-lake-george"]},
            "stations": [
                {
                    "id": "st",
                    "sensors": [
                        {"id": "rain", "kind": "rain", "unit": "in", "interval_s": 300},
                        {"id": "turb", "kind": "turbidity", "unit": "NTU", "interval_s": 60},
                    ],
                }
            ],
        }
    )
    engine = Engine(site)
    health = health_of(engine)
    checks = [
        (SensorReading("rain", minute(0), -0.01), {"out_of_range"}),
        (SensorReading("rain", minute(5), 0.0), set()),
        (SensorReading("turb", minute(0), -5.5), {"out_of_range"}),
        (SensorReading("turb", minute(1), -0.5), set()),  # a probe offset, not a fault
        (SensorReading("turb", minute(2), 4001.0), {"out_of_range"}),
    ]
    for reading, expected in checks:
        (out,) = health(reading, engine.ctx)
        assert set(out.flags) == expected, reading


# --- flatline ----------------------------------------------------------------------------


def test_a_frozen_probe_is_a_data_quality_alert_and_never_a_pass() -> None:
    """turb-up reads exactly 7.3 for 180 minutes, then moves; a plume runs downstream.

    Flatline: 60 identical readings *and* 2 h -> flagged from minute 120, and the
    probe's data_quality alert opens then; it resolves when the value moves (180).
    The pair: the downstream reading at minute m sees upstream readings m-14..m-1,
    of which those before 120 are still usable: 134 - m < 8 from minute 127, so
    the pair is blind from 127 and its data_quality alert opens 30 min later (157).
    It is judged again when 8 fresh readings (180-187) are in: minute 188.
    """
    site = ny_site()
    up = series("turb-up", 0, level(7.3, 180), wobble=False) + series(
        "turb-up", 180, level(8.0, 60)
    )
    down = series("turb-down", 0, level(10.0, 130) + level(150.0, 40) + level(10.0, 70))
    engine = run(site, up + down)
    (probe,) = of_kind(engine, "data_quality", "turb-up")
    assert at_min(probe.opened_at) == 120
    assert probe.resolved_at is not None and at_min(probe.resolved_at) == 180
    assert "frozen" in probe.message
    assert probe.evidence["stuck_value"] == 7.3
    (pair,) = of_kind(engine, "data_quality", "outfall-a")
    assert at_min(pair.opened_at) == 157
    assert pair.resolved_at is not None and at_min(pair.resolved_at) == 188
    assert "flatline" in pair.evidence["reason"]
    # The plume downstream (minutes 130-169) was never judged against a frozen background.
    assert of_kind(engine, "turbidity_contrast") == []
    assert health_of(engine).flag_counts("turb-up") == {"flatline": 60}


def test_forty_identical_readings_at_the_probe_floor_are_not_a_flatline() -> None:
    """The Pope Brook record holds its floor value for up to 40 readings (10 h at 15 min)."""
    site = ny_site(interval_s=900, window_s=2700)
    floor = series("turb-up", 0, level(-0.701152, 40), step_min=15, wobble=False)
    engine = run(site, floor)
    assert health_of(engine).flag_counts("turb-up") == {}
    assert of_kind(engine, "data_quality") == []


# --- spikes -------------------------------------------------------------------------------


def test_spike_flag_is_causal_and_keeps_edge_flags() -> None:
    engine = Engine(ny_site())
    health = health_of(engine)
    values = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 600.0, 600.0, 10.1, 9.8]
    flags = []
    for i, v in enumerate(values):
        edge = frozenset({"backfilled"}) if i == 6 else frozenset()
        (out,) = health(SensorReading("turb-down", minute(i), v, None, edge), engine.ctx)
        flags.append(set(out.flags))
    # Only the jump itself: the second 600 continues the first, the return is at the median.
    assert flags == [set()] * 6 + [{"backfilled", "spike"}] + [set()] * 3


def test_isolated_spikes_are_flagged_and_never_drive_an_alert() -> None:
    """An 800 NTU debris hit every 10 minutes for 3 hours: at most 2 in any 15-minute median."""
    site = ny_site()
    up = series("turb-up", 0, level(8.0, 200))
    values = [800.0 if i % 10 == 5 else 10.0 for i in range(200)]
    engine = run(site, up + series("turb-down", 0, values))
    assert of_kind(engine, "turbidity_contrast") == []
    assert health_of(engine).flag_counts("turb-down") == {"spike": 20}


def test_small_steps_are_not_spikes() -> None:
    """A rise of 15 NTU is below the 20 NTU floor: a real change, not an outlier."""
    site = ny_site()
    down = series("turb-down", 0, level(10.0, 30) + level(25.0, 30))
    engine = run(site, series("turb-up", 0, level(8.0, 60)) + down)
    assert health_of(engine).flag_counts("turb-down") == {}
