"""Routine inspections over the site's life under Lake George §148-10 A, Big Flats
17.37.100 A and NCG01 (Lake Lure).

Big Flats 17.37.100 A: a qualified inspector "every seven days or as required per
the state stormwater general permit"; Lake George's pack cites §148-10 A with the
permit itself (NY GP Part IV.C: twice every 7 days over 5 acres disturbed at one
time), so the New York tests run under both packs. NCG01 Part III §A, a condition
of every Lake Lure plan (96.05(B)(8)): every 7 calendar days, a rain-event
inspection restarting the clock. All run from the first disturbance the site log
shows to final stabilization (every area with permanent cover); all deadlines below
are computed by hand in the site's zone (America/New_York).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

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


GP = "NY GP-0-25-001 Part IV.C"
NEW_YORK = [  # the site's fixture, the rules its weekly and its twice-weekly duties cite
    pytest.param(
        ("george", f"Lake George §148-10 A; {GP}", f"Lake George §148-10 A; {GP}"), id="lake-george"
    ),
    pytest.param(("flats", "Big Flats 17.37.100 A", f"per {GP}"), id="big-flats"),
]


class NewYork(NamedTuple):
    site: SiteConfig
    weekly: str
    twice_weekly: str


@pytest.fixture(params=NEW_YORK)
def new_york(request: pytest.FixtureRequest) -> NewYork:
    """The Lake George example under Lake George's pack and under Big Flats': both run the
    NY GP's weekly and twice-weekly clocks, each citing its own rules."""
    fixture, weekly, twice_weekly = request.param
    return NewYork(request.getfixturevalue(fixture), weekly, twice_weekly)


def test_routine_inspections_start_at_the_first_disturbance(
    new_york: NewYork,
) -> None:
    """A milestone of installed controls disturbs nothing; clearing north-cut Wed 06-03
    10:00 EDT starts the 7 calendar days: due at the end of 06-10 = 06-11 04:00 UTC."""
    site = new_york.site
    rows = [
        log("2026-06-01T08:00-04:00", "milestone", detail="controls_installed"),
        log("2026-06-03T10:00-04:00", "cleared", "north-cut"),
    ]
    engine = run(site, rows, end="2026-06-05T00:00-04:00")
    ((created, due, done),) = _routine(engine)
    assert (created, due, done) == ("2026-06-03T14:00:00+00:00", "2026-06-11T04:00:00+00:00", None)
    assert duties(engine, "inspection", "routine")[0].rule == new_york.weekly


def test_routine_inspections_end_at_final_stabilization_not_at_construction_completed(
    new_york: NewYork,
) -> None:
    """Construction completed 06-05 leaves the duty owed (ground still open); permanent
    cover of the last of the three areas on 06-08 12:00 EDT ends it ("not required"), and
    no overdue alert comes at the end of 06-10. Ground opened again on 06-15 09:00 EDT
    starts a new one, due at the end of 06-22: overdue from then, not before."""
    site = new_york.site
    rows = [
        log("2026-06-03T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-05T10:00-04:00", "milestone", detail="construction_completed"),
        log("2026-06-06T10:00-04:00", "permanent_cover", "north-cut"),
        log("2026-06-07T10:00-04:00", "permanent_cover", "pad-b"),
        log("2026-06-08T12:00-04:00", "permanent_cover", "stockpile"),
        log("2026-06-15T09:00-04:00", "disturbed", "pad-b"),
    ]
    engine = run(site, rows, end="2026-06-24T00:00-04:00")
    assert _routine(engine) == [
        ("2026-06-03T14:00:00+00:00", "2026-06-11T04:00:00+00:00", "2026-06-08T16:00:00+00:00"),
        ("2026-06-15T13:00:00+00:00", "2026-06-23T04:00:00+00:00", None),
    ]
    (overdue,) = alerts(engine, "inspection_overdue")
    assert overdue.subject == duties(engine, "inspection", "routine")[1].id
    assert overdue.opened_at.isoformat() == "2026-06-23T04:00:00+00:00"


def test_twice_weekly_from_the_acres_open_at_one_time(new_york: NewYork) -> None:
    """north-cut and pad-b of 2.5 acres each, stockpile 0.2 (the file says 3.2 acres
    disturbed: not used). Mon 06-01: 2.5 then exactly 5.0 acres open, not more than 5:
    weekly, due at the end of 06-08. Tue 06-02 09:00 EDT the stockpile makes 5.2: twice
    weekly, the first of the 7 days 06-02..06-08 due by the end of 06-05 (P+3). Thu 06-04
    12:00 EDT the stockpile is covered: 5.0 again, weekly from then, due the end of 06-11."""
    site = new_york.site
    areas = [
        a.model_copy(update={"acres": {"north-cut": 2.5, "pad-b": 2.5}.get(a.id, a.acres)})
        for a in site.areas
    ]
    site = site.model_copy(update={"areas": areas})
    rows = [
        log("2026-06-01T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-01T11:00-04:00", "disturbed", "pad-b"),
        log("2026-06-02T09:00-04:00", "disturbed", "stockpile"),
        log("2026-06-04T12:00-04:00", "temporary_cover", "stockpile"),
    ]
    engine = run(site, rows, end="2026-06-05T12:00-04:00")
    assert _routine(engine) == [
        ("2026-06-01T14:00:00+00:00", "2026-06-09T04:00:00+00:00", None),
        ("2026-06-02T13:00:00+00:00", "2026-06-06T04:00:00+00:00", None),
        ("2026-06-04T16:00:00+00:00", "2026-06-12T04:00:00+00:00", None),
    ]
    first_of_two = duties(engine, "inspection", "routine")[1]
    assert first_of_two.rule == new_york.twice_weekly
    exactly_five = run(site, rows[:2], end="2026-06-05T12:00-04:00")
    assert len(_routine(exactly_five)) == 1  # 5.0 acres is not more than 5


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
