"""Paperwork before the first disturbance, from the site log.

Lake George §148-8 D and Big Flats 17.37.080 D: each contractor signs the SWPPP
certification "before undertaking any land development activity"; §148-8 F and
17.37.080 E: a copy of the SWPPP is retained at the site "from the date of
initiation"; Lake Lure 96.05(B)(11): "No person may initiate a land-disturbing
activity before notifying the Erosion Control Officer ... of the date that
land-disturbing activity will begin", and 96.05(B)(13): "A copy of the approved
plan shall be kept on file at the job site". Times are America/New_York (EDT,
UTC-4).
"""

from __future__ import annotations

from siltwatch.config import SiteConfig
from siltwatch.schema import site_log_problem
from siltwatch.vocabulary import SiteEvent
from tests.analytics.site_log_helpers import alerts, iso, log, restarted, run

CLEARED = log("2026-06-03T10:00-04:00", "cleared", "north-cut")


def test_work_without_the_certification_or_the_plan_on_site(george: SiteConfig) -> None:
    rows = [
        CLEARED,  # Wed 06-03 10:00 EDT = 14:00 UTC: the first work, nothing on record
        log("2026-06-04T08:00-04:00", "disturbed", "stockpile"),  # later work: no second alert
        log("2026-06-05T09:00-04:00", "certification", detail="Ruiz Excavating LLC, D. Ruiz"),
    ]
    engine = run(george, rows, end="2026-06-10T00:00-04:00")
    found = {a.subject: a for a in alerts(engine, "paperwork_missing")}
    assert set(found) == {"contractor_certification", "plan_on_site"}

    cert = found["contractor_certification"]
    assert cert.rule == "Lake George §148-8 D" and cert.severity == "warning"
    assert cert.opened_at == iso("2026-06-03T14:00Z")
    assert cert.resolved_at == iso("2026-06-05T13:00Z")  # recorded late, Fri 09:00 EDT
    assert cert.evidence["recorded_at"] == "2026-06-05T13:00:00Z"
    assert cert.evidence["work"] == "cleared north-cut"
    assert "Lake George §148-8 D" in cert.message

    plan = found["plan_on_site"]
    assert plan.rule == "Lake George §148-8 F"
    assert plan.opened_at == iso("2026-06-03T14:00Z") and plan.resolved_at is None
    assert "Work began at" in plan.message and "2026-06-03 10:00 EDT" in plan.message
    assert "a copy of the plan is retained at the site" in plan.message


def test_paperwork_a_minute_before_the_first_work_is_in_time(george: SiteConfig) -> None:
    rows = [
        log("2026-06-03T09:59-04:00", "certification", detail="Ruiz Excavating LLC"),
        log("2026-06-03T09:59-04:00", "plan_on_site", detail="site trailer"),
        CLEARED,
    ]
    engine = run(george, rows, end="2026-06-10T00:00-04:00")
    assert alerts(engine, "paperwork_missing") == []


def test_big_flats_asks_the_same_under_its_own_sections(flats: SiteConfig) -> None:
    engine = run(flats, [CLEARED], end="2026-06-10T00:00-04:00")
    rules = {a.subject: a.rule for a in alerts(engine, "paperwork_missing")}
    assert rules == {
        "contractor_certification": "Big Flats 17.37.080 D",
        "plan_on_site": "Big Flats 17.37.080 E",
    }


def test_lake_lure_wants_the_start_date_notified_first(lure: SiteConfig) -> None:
    """The start notice may come any time before the work (96.05(B)(11) sets no lead time):
    a notice of start_of_development one hour before satisfies it; a plan on file the
    next day resolves its alert as late."""
    graded = log("2026-06-01T08:00-04:00", "graded", "lot-1")
    late_plan = log("2026-06-02T08:00-04:00", "plan_on_site", detail="job box")
    engine = run(lure, [graded, late_plan], end="2026-06-05T00:00-04:00")
    found = {a.subject: a for a in alerts(engine, "paperwork_missing")}
    # No certification in Ch. 96; the plan approval (96.04(C)) is missing too.
    assert set(found) == {"start_notice", "plan_on_site", "plan_approval"}
    assert found["start_notice"].rule == "Lake Lure 96.05(B)(11)"
    assert found["start_notice"].opened_at == iso("2026-06-01T12:00Z")
    assert found["start_notice"].resolved_at is None
    assert found["plan_on_site"].rule == "Lake Lure 96.05(B)(13)"
    assert found["plan_on_site"].resolved_at == iso("2026-06-02T12:00Z")

    notice = log("2026-06-01T07:00-04:00", "notice", detail="start_of_development")
    approved = log("2026-05-20T12:00-04:00", "plan_approved", detail="expires 2029-05-20")
    engine = run(lure, [approved, notice, graded, late_plan], end="2026-06-05T00:00-04:00")
    assert {a.subject for a in alerts(engine, "paperwork_missing")} == {"plan_on_site"}


def test_lake_lure_work_needs_an_approved_plan_first(lure: SiteConfig) -> None:
    """96.04(C): "No person shall undertake any land-disturbing activity ... without first
    obtaining a plan approval"; approved the next day, the alert resolves as late."""
    graded = log("2026-06-01T08:00-04:00", "graded", "lot-1")
    approved = log("2026-06-02T15:00-04:00", "plan_approved", detail="expires 2029-06-01")
    engine = run(lure, [graded, approved], end="2026-06-05T00:00-04:00")
    (alert,) = [a for a in alerts(engine, "paperwork_missing") if a.subject == "plan_approval"]
    assert alert.rule == "Lake Lure 96.04(C)"
    assert alert.opened_at == iso("2026-06-01T12:00Z")
    assert alert.resolved_at == iso("2026-06-02T19:00Z")
    assert alert.evidence["recorded_at"] == "2026-06-02T19:00:00Z"
    assert "after work began" in alert.message
    assert "approval of the plan (Lake Lure 96.04(C))" in alert.message


def test_the_start_of_development_milestone_is_work_too(lure: SiteConfig) -> None:
    start = log("2026-06-01T07:00-04:00", "milestone", detail="start_of_development")
    engine = run(lure, [start], end="2026-06-05T00:00-04:00")
    (notice,) = [a for a in alerts(engine, "paperwork_missing") if a.subject == "start_notice"]
    assert notice.opened_at == iso("2026-06-01T11:00Z")
    assert notice.evidence["work"] == "milestone"


def test_a_certification_row_names_the_contractor() -> None:
    assert site_log_problem(SiteEvent.CERTIFICATION, None, "") == (
        "detail",
        "event 'certification' names the contractor who signed (name and firm); none given",
    )
    assert site_log_problem(SiteEvent.CERTIFICATION, None, "Ruiz Excavating LLC") is None
    problem = site_log_problem(SiteEvent.PLAN_ON_SITE, "north-cut", "")
    assert problem is not None and problem[0] == "area"  # site-wide: it names no area
    assert site_log_problem(SiteEvent.PLAN_ON_SITE, None, "") is None


def test_a_restart_between_the_work_and_the_certification_changes_nothing(
    george: SiteConfig,
) -> None:
    rows = [CLEARED, log("2026-06-05T09:00-04:00", "certification", detail="Ruiz Excavating")]
    whole, after = restarted(
        george, rows, end="2026-06-10T00:00-04:00", at="2026-06-04T00:00-04:00"
    )
    assert alerts(after, "paperwork_missing") == alerts(whole, "paperwork_missing")
    assert len(alerts(whole, "paperwork_missing")) == 2
