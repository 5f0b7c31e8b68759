"""The demo's stations go on after their week, and what they send raises nothing new.

Issue 25: the demo served its console over stations that stopped at the end of
their week, so every sensor went offline minutes later. The stations now send a
quiet day after the storm (app/demo_stations.py). Here the week and twelve more
hours of those readings go through the engine together, and every episode that
opens after the week is one the law asks for (a missed deadline), never a
sensor offline, a stuck probe or a plume.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics.events import SensorReading
from analytics.timeutil import MS_PER_H, MS_PER_S
from app.demo_stations import LiveStations, quiet_ms
from ingest.recordings.formats import read_csv_readings, read_inspections, read_site_log
from ingest.recordings.replay import replay_site
from siltwatch.config import load_site

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HOURS_AFTER = 12


@pytest.mark.parametrize("name", ["lake-george", "lake-lure"])
def test_twelve_hours_after_the_week_no_sensor_goes_offline_and_nothing_new_alerts(
    name: str,
) -> None:
    site = load_site(EXAMPLES / f"{name}-site.toml")
    week = read_csv_readings(EXAMPLES / f"{name}-storm.csv", site.sensors())
    week_end = max(r.t for r in week)
    live = LiveStations(site, EXAMPLES, name)
    until = week_end + HOURS_AFTER * MS_PER_H
    batches = []
    while not live.caught_up(until):  # a minute a call, every station together
        batches += live.due(until)
    after = [
        SensorReading(item.sensor, round(item.time.timestamp() * MS_PER_S), item.value)
        for batch in batches
        for item in batch.readings
    ]
    for sensor in site.sensors().values():
        mine = [r for r in after if r.sensor == sensor.id]
        assert len(mine) == HOURS_AFTER * 3600 // sensor.interval_s, sensor.id
        if sensor.kind == "turbidity":
            assert len({r.value for r in mine[:60]}) > 10, f"{sensor.id} looks stuck"
        if sensor.kind == "rain":
            assert {r.value for r in mine} == {0.0}
    result = replay_site(
        site,
        [*week, *after],
        read_inspections(EXAMPLES / f"{name}-inspections.csv"),
        site_log=read_site_log(EXAMPLES / f"{name}-site-log.csv", [a.id for a in site.areas]),
    )
    new = [a for a in result.alerts if a.opened_at.timestamp() * MS_PER_S > week_end]
    assert [a.kind for a in new if not a.kind.endswith("_overdue")] == [], new
    open_at_end = {
        (a.kind, a.subject)
        for a in result.alerts
        if a.resolved_at is None or a.resolved_at.timestamp() * MS_PER_S > week_end
    }
    assert not [k for k in open_at_end if k[0] in ("sensor_offline", "data_quality")]


def test_the_service_clock_runs_far_enough_ahead_for_a_form_to_be_judged_at_once() -> None:
    site = load_site(EXAMPLES / "lake-george-site.toml")
    step = LiveStations(site, EXAMPLES, "lake-george").step_ms()
    assert step == 300 * MS_PER_S  # the basin station's rain gauge and level every 5 min
    idle = lateness = 900 * MS_PER_S
    # the slowest station's newest data, less the lateness, is still past the people's now
    assert quiet_ms(idle, lateness, step) - step - lateness >= 0
    assert quiet_ms(idle * 3, lateness, step) == idle * 3
