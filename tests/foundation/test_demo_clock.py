"""The demo's clock: the end of its week is now, and time runs on at the wall's pace."""

from __future__ import annotations

from app.demo_clock import QUIET_MARGIN_MS, DemoClock
from tests.alerts.helpers import FakeClock

WEEK_END = 1_778_472_000_000  # 2026-05-11T04:00:00Z, the demo week's last reading


def test_the_demo_starts_at_the_end_of_its_week_and_runs_on() -> None:
    wall = FakeClock(1000.0)
    clock = DemoClock(WEEK_END, wall)
    assert clock.now_ms() == WEEK_END == clock.arrival_ms()
    wall.t += 90.5
    assert clock.now_ms() == WEEK_END + 90_500 and clock.seconds() == (WEEK_END + 90_500) / 1000


def test_once_quiet_the_stations_look_silent_to_the_service_but_people_keep_their_now() -> None:
    wall = FakeClock(1000.0)
    clock = DemoClock(WEEK_END, wall)
    idle_ms = 15 * 60_000
    clock.quiet(idle_ms)
    clock.quiet(1)  # a shorter idle time never moves arrivals back
    assert clock.arrival_ms() - clock.now_ms() == idle_ms + QUIET_MARGIN_MS
    wall.t += 5
    assert clock.now_ms() == WEEK_END + 5000
