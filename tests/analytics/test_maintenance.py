"""Maintenance on the plan's schedule (Lake George §148-8 B(1)(l), §148-10 C(1); Big Flats
17.37.080 B(12), 17.37.100 C(1)). Times America/New_York, computed by hand."""

from __future__ import annotations

from alerts.routing import NoticeEvent, route
from siltwatch.config import SiteConfig
from siltwatch.schema import site_log_problem
from siltwatch.vocabulary import SiteEvent
from tests.analytics.site_log_helpers import alerts, duties, iso, log, officers, restarted, run

ROWS = [
    log("2026-06-01T09:00-04:00", "maintenance_scheduled", detail="silt-fence-east every 7 days"),
    log("2026-06-08T23:59-04:00", "maintained", detail="silt-fence-east re-trenched"),
    log("2026-06-20T10:00-04:00", "maintenance_scheduled", detail="silt-fence-east removed"),
]


def test_each_maintenance_due_on_the_schedule_and_overdue_without_it(george: SiteConfig) -> None:
    """Scheduled Mon 06-01 09:00 EDT every 7 days: due the end of 06-08 (06-09 04:00Z);
    maintained 06-08 23:59 EDT, in time. The next is due 7 days after that maintenance,
    the end of 06-15 (06-16 04:00Z), and nobody maintains it: maintenance_overdue then,
    to the officer. The fence removed 06-20 ends it (not required)."""
    engine = run(george, ROWS, end="2026-06-30T00:00-04:00")
    first, second = duties(engine, "maintenance", "scheduled")
    assert first.subject == second.subject == "silt-fence-east"
    assert (first.created_at, first.due_at, first.completed_at) == (
        iso("2026-06-01T13:00Z"),
        iso("2026-06-09T04:00Z"),
        iso("2026-06-09T03:59Z"),
    )
    assert first.rule == "Lake George §148-8 B(1)(l)"
    assert (second.created_at, second.due_at) == (
        iso("2026-06-09T03:59Z"),
        iso("2026-06-16T04:00Z"),
    )
    assert second.completed_at == iso("2026-06-20T14:00Z")
    (alert,) = alerts(engine, "maintenance_overdue")
    assert alert.subject == second.id
    assert (alert.opened_at, alert.resolved_at) == (
        iso("2026-06-16T04:00Z"),
        iso("2026-06-20T14:00Z"),
    )
    assert alert.message.startswith("Not required (practice removed)")
    assert officers(george) <= set(
        route(george, NoticeEvent.OPENED, "2026-06-16T04:00:00Z", alert).recipients
    )
    whole, after = restarted(
        george, ROWS, end="2026-06-30T00:00-04:00", at="2026-06-12T00:00-04:00"
    )
    assert after.duties() == whole.duties() and after.alerts() == whole.alerts()


def test_after_completion_the_schedule_is_the_maintenance_program(flats: SiteConfig) -> None:
    """Big Flats. Construction completed 06-25; basin-a scheduled every 30 days on Thu
    10-01: 17.37.100 C(1), due the end of 10-31 = 11-01 00:00 EDT = 04:00Z (EST only from
    02:00 that night). A schedule entered before completion cites 17.37.080 B(12)."""
    rows = [
        log("2026-06-02T09:00-04:00", "maintenance_scheduled", detail="inlet-3 every 14 days"),
        log("2026-06-25T09:00-04:00", "milestone", detail="construction_completed"),
        log("2026-10-01T09:00-04:00", "maintenance_scheduled", detail="basin-a every 30 days"),
    ]
    engine = run(flats, rows, end="2026-10-02T00:00-04:00")
    program = [d for d in duties(engine, "maintenance") if d.subject == "basin-a"]
    (basin,) = program
    assert basin.rule == "Big Flats 17.37.100 C(1)" and basin.due_at == iso("2026-11-01T04:00Z")
    inlet = [d for d in duties(engine, "maintenance") if d.subject == "inlet-3"]
    assert inlet[0].rule == "Big Flats 17.37.080 B(12)"
    assert inlet[0].due_at == iso("2026-06-17T04:00Z")


def test_a_maintenance_row_names_its_practice_and_a_schedule_its_days(lure: SiteConfig) -> None:
    assert (
        site_log_problem(SiteEvent.MAINTENANCE_SCHEDULED, None, "silt-fence every 7 days") is None
    )
    assert site_log_problem(SiteEvent.MAINTENANCE_SCHEDULED, None, "silt-fence removed") is None
    field, why = site_log_problem(SiteEvent.MAINTENANCE_SCHEDULED, None, "weekly") or ("", "")
    assert field == "detail" and "'<practice> every <N> days'" in why
    assert site_log_problem(SiteEvent.MAINTENANCE_SCHEDULED, None, "x every 0 days") is not None
    assert site_log_problem(SiteEvent.MAINTAINED, None, "") is not None
    # Lake Lure's ordinance sets no such schedule: no duty.
    assert duties(run(lure, ROWS, end="2026-06-30T00:00-04:00"), "maintenance") == []
