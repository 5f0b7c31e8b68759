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
from analytics.engine import Engine
from analytics.episodes import stable_id
from analytics.events import Inspection, SiteLogEntry
from analytics.post_construction import anniversary
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


def run(site: SiteConfig, inspections: Sequence[Inspection], end: str) -> Engine:
    """The site, construction completed (COMPLETED), with ``inspections``, to ``end``."""
    return site_log_helpers.run(site, [COMPLETED], end, inspections)


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
    assert set(found) == {"guarantee_inspection", "engineer_inspection", "engineer_report"}
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
    (alert,) = overdue(engine)
    assert alert.subject == report.id and alert.opened_at == iso("2031-11-01T04:00Z")
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
