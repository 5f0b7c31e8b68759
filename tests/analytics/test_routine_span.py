"""Routine inspections over the site's life under Big Flats 17.37.100 A and NCG01 (Lake Lure).

Big Flats 17.37.100 A: a qualified inspector "every seven days or as required per
the state stormwater general permit" (NY GP Part IV.C: twice every 7 days over 5
acres disturbed at one time). NCG01 Part III §A, a condition of every Lake Lure
plan (96.05(B)(8)): every 7 calendar days, a rain-event inspection restarting the
clock. Both run from the first disturbance the site log shows to final
stabilization (every area with permanent cover); all deadlines below are computed
by hand in the site's zone (America/New_York).
"""

from __future__ import annotations

from analytics.engine import Engine
from analytics.events import Inspection
from siltwatch.config import SiteConfig
from tests.analytics.site_log_helpers import alerts, duties, log, run, t


def _routine(engine: Engine) -> list[tuple[str, str, str | None]]:
    return [
        (
            d.created_at.isoformat(),
            d.due_at.isoformat(),
            None if d.completed_at is None else d.completed_at.isoformat(),
        )
        for d in duties(engine, "inspection", "routine")
    ]


def test_big_flats_routine_inspections_run_from_the_first_disturbance_to_final_stabilization(
    flats: SiteConfig,
) -> None:
    """Controls installed Mon 06-01 08:00 EDT disturb nothing (no duty yet); north-cut
    cleared Wed 06-03 10:00 EDT starts the 7 days: due at the end of Wed 06-10 = 06-11
    04:00 UTC. Construction completed 06-05 leaves it owed; the last area's permanent
    cover on Mon 06-08 12:00 EDT ends it as not required, and no overdue alert comes.
    pad-b disturbed again Mon 06-15 09:00 starts a new one, due the end of 06-22."""
    rows = [
        log("2026-06-01T08:00-04:00", "milestone", detail="controls_installed"),
        log("2026-06-03T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-05T10:00-04:00", "milestone", detail="construction_completed"),
        log("2026-06-06T10:00-04:00", "permanent_cover", "north-cut"),
        log("2026-06-07T10:00-04:00", "permanent_cover", "pad-b"),
        log("2026-06-08T12:00-04:00", "permanent_cover", "stockpile"),
        log("2026-06-15T09:00-04:00", "disturbed", "pad-b"),
    ]
    engine = run(flats, rows, end="2026-06-24T00:00-04:00")
    assert _routine(engine) == [
        ("2026-06-03T14:00:00+00:00", "2026-06-11T04:00:00+00:00", "2026-06-08T16:00:00+00:00"),
        ("2026-06-15T13:00:00+00:00", "2026-06-23T04:00:00+00:00", None),
    ]
    first, second = duties(engine, "inspection", "routine")
    assert first.rule == "Big Flats 17.37.100 A"
    # The second one is owed: overdue from the end of 06-22, not before.
    (overdue,) = alerts(engine, "inspection_overdue")
    assert overdue.subject == second.id
    assert overdue.opened_at.isoformat() == "2026-06-23T04:00:00+00:00"


def test_big_flats_twice_weekly_over_5_open_acres_as_the_gp_requires(flats: SiteConfig) -> None:
    """north-cut and pad-b made 2.5 acres each, stockpile 0.2: exactly 5.0 acres open
    on Mon 06-01 is not more than 5 (weekly, due the end of 06-08); the stockpile on Tue
    06-02 09:00 EDT makes 5.2: twice weekly, the first due by the end of 06-05."""
    areas = [
        a.model_copy(update={"acres": {"north-cut": 2.5, "pad-b": 2.5}.get(a.id, a.acres)})
        for a in flats.areas
    ]
    site = flats.model_copy(update={"areas": areas})
    rows = [
        log("2026-06-01T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-01T11:00-04:00", "disturbed", "pad-b"),
        log("2026-06-02T09:00-04:00", "disturbed", "stockpile"),
    ]
    engine = run(site, rows, end="2026-06-03T00:00-04:00")
    assert _routine(engine) == [
        ("2026-06-01T14:00:00+00:00", "2026-06-09T04:00:00+00:00", None),
        ("2026-06-02T13:00:00+00:00", "2026-06-06T04:00:00+00:00", None),
    ]
    assert len(_routine(run(site, rows[:2], end="2026-06-03T00:00-04:00"))) == 1


def test_lake_lure_7_day_inspections_from_the_first_disturbance_to_permanent_cover(
    lure: SiteConfig,
) -> None:
    """NCG01 under Lake Lure, across the end of DST (Sun 11-01). Controls installed Thu
    10-29 start nothing; drive graded Fri 10-30 16:00 EDT starts the 7 calendar days:
    due at the end of Fri 11-06 EST = 11-07 05:00 UTC. An inspection at 23:59:59 EST on
    11-06 (exactly at the deadline's last second) is in time and restarts the clock: due
    the end of 11-13 = 11-14 05:00 UTC. Permanent cover of lot-1 (11-09) and of drive
    (Tue 11-10 12:00 EST = 17:00 UTC) ends it as not required: no overdue alert."""
    rows = [
        log("2026-10-29T08:00-04:00", "milestone", detail="controls_installed"),
        log("2026-10-30T16:00-04:00", "graded", "drive"),
        log("2026-11-09T10:00-05:00", "permanent_cover", "lot-1"),
        log("2026-11-10T12:00-05:00", "permanent_cover", "drive"),
    ]
    inspections = [Inspection(t("2026-11-06T23:59:59-05:00"), "Jo Whitaker")]
    engine = run(lure, rows, end="2026-11-20T00:00-05:00", inspections=inspections)
    assert _routine(engine) == [
        ("2026-10-30T20:00:00+00:00", "2026-11-07T05:00:00+00:00", "2026-11-07T04:59:59+00:00"),
        ("2026-11-07T04:59:59+00:00", "2026-11-14T05:00:00+00:00", "2026-11-10T17:00:00+00:00"),
    ]
    assert duties(engine, "inspection", "routine")[0].rule == "NCG01 Part III §A"
    assert [a for a in alerts(engine, "inspection_overdue") if "routine" in a.subject] == []


def test_lake_lure_routine_duty_left_uninspected_is_overdue_at_its_deadline(
    lure: SiteConfig,
) -> None:
    """drive disturbed Tue 03-02-2027 09:00 EST: due the end of 03-09 = 03-10 05:00 UTC;
    nothing inspects it: overdue then (the quarterly duty of Q1 runs beside it)."""
    rows = [log("2027-03-02T09:00-05:00", "disturbed", "drive")]
    engine = run(lure, rows, end="2027-03-11T00:00-05:00")
    ((created, due, done),) = _routine(engine)
    assert (created, due, done) == ("2027-03-02T14:00:00+00:00", "2027-03-10T05:00:00+00:00", None)
    (routine,) = duties(engine, "inspection", "routine")
    overdue = [a for a in alerts(engine, "inspection_overdue") if a.subject == routine.id]
    assert [a.opened_at.isoformat() for a in overdue] == ["2027-03-10T05:00:00+00:00"]
