"""The post-construction calendar, with deadlines computed here by hand.

The Lake George example site (id lg-route9n), and the same site under the Big
Flats pack. America/New_York: EDT is UTC-4 (in 2027, 2028 and 2031 it lasts
until the first Sunday of November), EST UTC-5. A deadline N years on ends at
the end of that anniversary, local time; a reminder opens 30 local days before
its deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from alerts.routing import NoticeEvent, route
from analytics.calendar import anniversary
from analytics.engine import Engine
from analytics.episodes import stable_id
from analytics.events import Inspection, SiteLogEntry
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert, Duty
from tests.analytics import site_log_helpers
from tests.analytics.site_log_helpers import alerts, iso, officers, restarted, t

SITE_ID = "lg-route9n"
KIND = "post_construction"


def duty_id(reason: str, created: str) -> str:
    """The stable id of the site's post-construction duty created at ``created``."""
    return stable_id("du", SITE_ID, KIND, reason, SITE_ID, t(created))


COMPLETED = SiteLogEntry(
    t("2026-10-15T14:00-04:00"), "milestone", None, "Jo Whitaker", "construction_completed"
)

# The town's final acceptance the same afternoon: the guarantee counts from it.
ACCEPTED = SiteLogEntry(
    t("2026-10-15T16:00-04:00"), "milestone", None, "Jo Whitaker", "final_acceptance"
)


def run(site: SiteConfig, inspections: Sequence[Inspection], end: str) -> Engine:
    """The site, construction completed and accepted the same day (COMPLETED, ACCEPTED),
    with ``inspections``, to ``end``."""
    return site_log_helpers.run(site, [COMPLETED, ACCEPTED], end, inspections)


def post(engine: Engine) -> dict[str, list[Duty]]:
    found: dict[str, list[Duty]] = {}
    for d in engine.duties():
        if d.kind == KIND:
            found.setdefault(d.reason, []).append(d)
    return found


def overdue(engine: Engine) -> list[Alert]:
    return alerts(engine, "post_construction_overdue")


def test_lake_george_annual_reports_and_the_two_year_inspection(george: SiteConfig) -> None:
    """§148-10 C(4), §148-13 A. Completed Thu 2026-10-15 14:00 EDT. Report 1: end of
    2027-10-15 = 2027-10-16 04:00Z, opening 30 days before, 2027-09-16 00:00 EDT
    (04:00Z). Report 2 and the two-year inspection: end of 2028-10-15 = 2028-10-16 04:00Z,
    opening 2028-09-16 04:00Z. Report 1 named 09-01 (before it exists: no) and 10-01
    (yes); a routine inspection naming no duty completes none; report 2 named 10-10;
    the two-year inspection is never recorded: overdue, to the officer."""
    report_1 = duty_id("annual_report", "2027-09-16T00:00-04:00")
    report_2 = duty_id("annual_report", "2028-09-16T00:00-04:00")
    engine = run(
        george,
        [
            Inspection(t("2027-09-01T10:00-04:00"), "Jo Whitaker", report_1),
            Inspection(t("2027-09-20T10:00-04:00"), "Jo Whitaker"),
            Inspection(t("2027-10-01T10:00-04:00"), "Jo Whitaker", report_1),
            Inspection(t("2028-10-10T10:00-04:00"), "Jo Whitaker", report_2),
        ],
        end="2028-11-01T00:00-04:00",
    )
    found = post(engine)
    assert set(found) == {"annual_report", "guarantee_inspection"}
    first, second = found["annual_report"]  # the third opens in 2029: not yet
    assert first.id == report_1 and second.id == report_2 and first.subject == SITE_ID
    assert first.created_at == iso("2027-09-16T04:00Z")
    assert first.due_at == iso("2027-10-16T04:00Z")
    assert first.completed_at == iso("2027-10-01T14:00Z")
    assert first.rule == "Lake George §148-10 C(4)"
    assert second.created_at == iso("2028-09-16T04:00Z")
    assert second.due_at == iso("2028-10-16T04:00Z")
    assert second.completed_at == iso("2028-10-10T14:00Z")
    (guarantee,) = found["guarantee_inspection"]
    assert guarantee.created_at == iso("2028-09-16T04:00Z")
    assert guarantee.due_at == iso("2028-10-16T04:00Z")
    assert guarantee.completed_at is None
    assert guarantee.rule == "Lake George §148-13 A"
    (alert,) = overdue(engine)
    assert alert.subject == guarantee.id and alert.resolved_at is None
    assert alert.opened_at == iso("2028-10-16T04:00Z") and alert.severity == "critical"
    assert officers(george) <= set(
        route(george, NoticeEvent.OPENED, "2028-10-16T04:00:00Z", alert).recipients
    )


def test_big_flats_one_year_inspection_and_the_engineer_every_five_years(
    flats: SiteConfig,
) -> None:
    """17.37.120 A: end of 2027-10-15 = 2027-10-16 04:00Z, done 2027-10-05. Schedule B
    (4): the engineer by the end of 2031-10-15 = 2031-10-16 04:00Z (opens 2031-09-16
    04:00Z); inspected Wed 2031-10-01 10:00 EDT (14:00Z): the report is due by the end of
    the 30th day, 10-31, i.e. 2031-11-01 00:00 EDT = 04:00Z (EST only from 11-02), and
    is never filed: overdue. The next engineer inspection (2036) is not open yet."""
    guarantee_id = duty_id("guarantee_inspection", "2027-09-16T00:00-04:00")
    engineer_id = duty_id("engineer_inspection", "2031-09-16T00:00-04:00")
    engine = run(
        flats,
        [
            Inspection(t("2027-10-05T10:00-04:00"), "Sam Okafor", guarantee_id),
            Inspection(t("2031-10-01T10:00-04:00"), "Pat Lee, P.E.", engineer_id),
        ],
        end="2031-11-15T00:00-05:00",
    )
    found = post(engine)
    # (and the as-built plans, 17.37.110 B, never submitted here)
    assert set(found) == {
        "guarantee_inspection",
        "engineer_inspection",
        "engineer_report",
        "as_built",
    }
    (guarantee,) = found["guarantee_inspection"]
    assert guarantee.due_at == iso("2027-10-16T04:00Z")
    assert guarantee.completed_at == iso("2027-10-05T14:00Z")
    assert guarantee.rule == "Big Flats 17.37.120 A"
    (engineer,) = found["engineer_inspection"]
    assert engineer.id == engineer_id
    assert engineer.created_at == iso("2031-09-16T04:00Z")
    assert engineer.due_at == iso("2031-10-16T04:00Z")
    assert engineer.completed_at == iso("2031-10-01T14:00Z")
    assert engineer.rule == "Big Flats Schedule B (4)"
    (report,) = found["engineer_report"]
    assert report.created_at == iso("2031-10-01T14:00Z")
    assert report.due_at == iso("2031-11-01T04:00Z")
    assert report.completed_at is None
    (alert,) = [a for a in overdue(engine) if a.subject == report.id]
    assert alert.opened_at == iso("2031-11-01T04:00Z")
    assert "annual_report" not in found  # Big Flats asks for no annual report


def test_no_calendar_before_construction_is_completed_and_one_start_only(
    george: SiteConfig,
) -> None:
    engine = Engine(george)
    engine.feed_site_log(
        SiteLogEntry(t("2026-06-01T09:00-04:00"), "milestone", None, "Jo", "controls_installed")
    )
    engine.finish(t("2029-01-01T00:00-05:00"))
    assert post(engine) == {}
    again = SiteLogEntry(
        t("2027-03-01T09:00-05:00"), "milestone", None, "Jo", "construction_completed"
    )
    twice = Engine(george)
    twice.feed_site_log(COMPLETED)
    twice.feed_site_log(again)
    twice.finish(t("2027-11-01T00:00-04:00"))
    (report,) = post(twice)["annual_report"]
    assert report.due_at == iso("2027-10-16T04:00Z")  # from the first completion


def test_anniversaries_of_a_leap_day() -> None:
    assert anniversary(date(2028, 2, 29), 1) == date(2029, 2, 28)
    assert anniversary(date(2028, 2, 29), 4) == date(2032, 2, 29)
    assert anniversary(date(2026, 10, 15), 2) == date(2028, 10, 15)


def test_a_snapshot_between_reminders_gives_the_same_duties_and_alerts(
    george: SiteConfig,
) -> None:
    report_1 = duty_id("annual_report", "2027-09-16T00:00-04:00")
    done = Inspection(t("2027-10-01T10:00-04:00"), "Jo Whitaker", report_1)
    whole, engine = restarted(
        george,
        [COMPLETED],
        end="2028-11-01T00:00-04:00",
        at="2027-09-20T00:00-04:00",
        inspections=[done],
    )
    assert engine.duties() == whole.duties()
    assert engine.alerts() == whole.alerts()
    assert len(post(whole)["annual_report"]) == 2


def milestone(when: str, name: str) -> SiteLogEntry:
    return SiteLogEntry(t(when), "milestone", None, "Jo Whitaker", name)


def test_the_guarantee_inspection_counts_from_final_acceptance_not_completion(
    george: SiteConfig,
) -> None:
    """§148-13 A: the guarantee stays "at least two years after final acceptance" and
    until a two-year inspection. Completed Thu 2026-10-15; the town accepts Tue
    2026-12-01 10:00 EST. Due at the end of 2028-12-01 EST (the midnight 12-02 05:00Z),
    opening 30 local days before that midnight, 2028-11-02 00:00 EDT (DST ends 11-05 in
    2028) = 04:00Z.
    Completion alone owes no guarantee inspection: without the acceptance, none by 2029."""
    rows = [COMPLETED, milestone("2026-12-01T10:00-05:00", "final_acceptance")]
    engine = site_log_helpers.run(george, rows, "2028-12-03T00:00-05:00")
    (guarantee,) = post(engine)["guarantee_inspection"]
    assert guarantee.created_at == iso("2028-11-02T04:00Z")
    assert guarantee.due_at == iso("2028-12-02T05:00Z")
    assert guarantee.rule == "Lake George §148-13 A"
    (alert,) = [a for a in overdue(engine) if a.subject == guarantee.id]
    assert alert.opened_at == iso("2028-12-02T05:00Z")
    assert "final acceptance by the town on 2026-12-01" in alert.message
    assert alert.evidence["final_acceptance"] == "2026-12-01T15:00:00Z"
    unaccepted = site_log_helpers.run(george, [COMPLETED], "2029-01-01T00:00-05:00")
    assert "guarantee_inspection" not in post(unaccepted)
    assert len(post(unaccepted)["annual_report"]) == 2  # the reports count from completion


def test_big_flats_engineer_period_from_the_maintenance_agreement(flats: SiteConfig) -> None:
    """Schedule B (4): "not less than once in every five year period". The agreement
    signed Tue 2026-03-31 (a month end) 11:00 EDT, completion 2026-10-15: the first
    engineer inspection is due at the end of 2031-03-31 EDT = 2031-04-01 04:00Z, opening
    30 local days before that midnight, 2031-03-02 00:00 EST = 05:00Z (DST starts 03-09
    in 2031).
    Signed after the completion instead (2027-01-04), the period runs from the earlier
    completion: due the end of 2031-10-15 = 2031-10-16 04:00Z."""
    agreed = milestone("2026-03-31T11:00-04:00", "maintenance_agreement")
    engine = site_log_helpers.run(flats, [agreed, COMPLETED], "2031-04-02T00:00-04:00")
    (engineer,) = post(engine)["engineer_inspection"]
    assert engineer.created_at == iso("2031-03-02T05:00Z")
    assert engineer.due_at == iso("2031-04-01T04:00Z")
    assert engineer.rule == "Big Flats Schedule B (4)"
    (alert,) = [a for a in overdue(engine) if a.subject == engineer.id]
    assert alert.opened_at == iso("2031-04-01T04:00Z")
    assert "maintenance agreement signed on 2026-03-31" in alert.message
    late = milestone("2027-01-04T09:00-05:00", "maintenance_agreement")
    after = site_log_helpers.run(flats, [COMPLETED, late], "2031-10-17T00:00-04:00")
    (engineer,) = post(after)["engineer_inspection"]
    assert engineer.due_at == iso("2031-10-16T04:00Z")


def test_lake_george_as_built_plans_only_after_changes_from_the_approved_plan(
    george: SiteConfig,
) -> None:
    """§148-12 B: "if there were any changes from the approved plan". Completed Thu
    2026-10-15 14:00 EDT with no change logged: nothing owed. With a change logged 09-01:
    due at the end of the 60th day (siltwatch's default) after 10-15, 12-14, i.e. 12-15
    00:00 EST = 05:00Z; the as_built row at 23:59 EST on 12-14 is in time. A change
    logged only after completion, Fri 11-20 09:00 EST, owes them from then: the 60th day
    is 2027-01-19 (across the year end), ending 01-20 05:00Z."""
    plain = site_log_helpers.run(george, [COMPLETED], "2027-03-01T00:00-05:00")
    assert "as_built" not in post(plain)
    changed = SiteLogEntry(
        t("2026-09-01T10:00-04:00"), "plan_changed", None, "Jo Whitaker", "basin moved 20 ft"
    )
    done = SiteLogEntry(t("2026-12-14T23:59-05:00"), "as_built", None, "Jo Whitaker", "")
    engine = site_log_helpers.run(george, [changed, COMPLETED, done], "2027-03-01T00:00-05:00")
    (plans,) = post(engine)["as_built"]
    assert plans.created_at == iso("2026-10-15T18:00Z")
    assert plans.due_at == iso("2026-12-15T05:00Z")
    assert plans.completed_at == iso("2026-12-15T04:59Z")
    assert plans.rule == (
        "Lake George §148-12 B; siltwatch default (Lake George §148-12 B and "
        "Big Flats 17.37.110 B name no deadline)"
    )
    assert [a for a in overdue(engine) if a.subject == plans.id] == []
    later = SiteLogEntry(t("2026-11-20T09:00-05:00"), "plan_changed", None, "Jo Whitaker", "")
    engine = site_log_helpers.run(george, [COMPLETED, later], "2027-03-01T00:00-05:00")
    (plans,) = post(engine)["as_built"]
    assert plans.created_at == iso("2026-11-20T14:00Z")
    assert plans.due_at == iso("2027-01-20T05:00Z")


def test_big_flats_as_built_plans_after_every_completion_overdue_without_them(
    flats: SiteConfig,
) -> None:
    """17.37.110 B asks for them whatever changed: completed 2026-10-15, due the end of
    12-14 (12-15 05:00Z), never submitted: overdue then, in words of the site log's
    as_built row, to the officer."""
    engine = site_log_helpers.run(flats, [COMPLETED], "2026-12-20T00:00-05:00")
    (plans,) = post(engine)["as_built"]
    assert plans.due_at == iso("2026-12-15T05:00Z") and plans.completed_at is None
    (alert,) = [a for a in overdue(engine) if a.subject == plans.id]
    assert alert.opened_at == iso("2026-12-15T05:00Z")
    assert alert.rule.startswith("Big Flats 17.37.110 B")
    assert alert.message.startswith("As-built plans overdue at")
    assert "(event as_built)" in alert.message
    assert officers(flats) <= set(
        route(flats, NoticeEvent.OPENED, "2026-12-15T05:00:00Z", alert).recipients
    )
