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

from collections.abc import Sequence

from analytics.events import SiteLogEntry
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import Alert, site_log_problem
from siltwatch.vocabulary import SiteEvent
from tests.analytics.site_log_helpers import (
    EXAMPLES,
    alerts,
    iso,
    keeping_paperwork,
    keeps_paperwork,
    log,
    restarted,
    run,
)

CLEARED = log("2026-06-03T10:00-04:00", "cleared", "north-cut")


def _missing(site: SiteConfig, rows: Sequence[SiteLogEntry]) -> list[Alert]:
    """The paperwork the site log ``rows`` leave missing by the end of Thu 2026-06-04."""
    return alerts(run(site, rows, end="2026-06-05T00:00-04:00"), "paperwork_missing")


# Its example sites keep the paperwork in their logs (``paperwork_in_site_log``).
george = keeping_paperwork("george")
lure = keeping_paperwork("lure")
flats = keeping_paperwork("flats")


def test_work_without_the_certification_or_the_plan_on_site(george: SiteConfig) -> None:
    rows = [
        CLEARED,  # Wed 06-03 10:00 EDT = 14:00 UTC: the first work, nothing on record
        log("2026-06-04T08:00-04:00", "disturbed", "stockpile"),  # later work: no second alert
        log("2026-06-05T09:00-04:00", "certification", detail="Ruiz Excavating LLC, D. Ruiz"),
    ]
    engine = run(george, rows, end="2026-06-10T00:00-04:00")
    found = {a.subject: a for a in alerts(engine, "paperwork_missing")}
    # The controls were never installed either (§148-11 I(2)(f)).
    assert set(found) == {"contractor_certification", "plan_on_site", "erosion_controls"}

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
        log("2026-06-03T09:59-04:00", "milestone", detail="controls_installed"),
        CLEARED,
    ]
    engine = run(george, rows, end="2026-06-10T00:00-04:00")
    assert alerts(engine, "paperwork_missing") == []


def test_big_flats_asks_the_same_under_its_own_sections(flats: SiteConfig) -> None:
    engine = run(flats, [CLEARED], end="2026-06-10T00:00-04:00")
    rules = {a.subject: a.rule for a in alerts(engine, "paperwork_missing")}
    assert rules == {  # §148-11 I(2)(f) is Lake George's alone
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
    assert set(found) == {"start_notice", "plan_on_site", "plan_approval", "approval_displayed"}
    assert found["start_notice"].rule == "Lake Lure 96.05(B)(11)"
    assert found["start_notice"].opened_at == iso("2026-06-01T12:00Z")
    assert found["start_notice"].resolved_at is None
    assert found["plan_on_site"].rule == "Lake Lure 96.05(B)(13)"
    assert found["plan_on_site"].resolved_at == iso("2026-06-02T12:00Z")

    notice = log("2026-06-01T07:00-04:00", "notice", detail="start_of_development")
    approved = log("2026-05-20T12:00-04:00", "plan_approved", detail="expires 2029-05-20")
    shown = log("2026-05-20T12:00-04:00", "approval_displayed", detail="at the gate")
    rows = [approved, shown, notice, graded, late_plan]
    engine = run(lure, rows, end="2026-06-05T00:00-04:00")
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
    assert len(alerts(whole, "paperwork_missing")) == 3
    assert after.alerts() == whole.alerts()  # the presence alert of 06-03 as well


def test_lake_george_wants_the_erosion_controls_before_ground_is_opened(
    george: SiteConfig,
) -> None:
    """§148-11 I(2)(f). The start of development (Mon 06-01) and a day of activity open
    no ground: nothing yet. north-cut cleared Wed 06-03 10:00 EDT (14:00Z) with no
    controls_installed milestone: erosion_controls opens; the milestone at 10:00:01
    resolves it as late. Installed at 09:59:59, a second before, is in time.
    Outside the Lake George Park (§148-11 A) it is not asked."""
    paper = [
        log("2026-05-29T09:00-04:00", "certification", detail="Ruiz Excavating LLC"),
        log("2026-05-29T09:00-04:00", "plan_on_site", detail="site trailer"),
        log("2026-06-01T08:00-04:00", "milestone", detail="start_of_development"),
        log("2026-06-02T08:00-04:00", "active", "pad-b"),
    ]
    late = log("2026-06-03T10:00:01-04:00", "milestone", detail="controls_installed")
    engine = run(george, [*paper, CLEARED, late], end="2026-06-05T00:00-04:00")
    (alert,) = alerts(engine, "paperwork_missing")
    assert alert.subject == "erosion_controls" and alert.rule == "Lake George §148-11 I(2)(f)"
    assert alert.opened_at == iso("2026-06-03T14:00Z")
    assert alert.resolved_at == iso("2026-06-03T14:00:01Z")
    assert "installation of the temporary erosion controls (Lake George §148-11 I(2)(f))" in (
        alert.message
    )
    at_once = log("2026-06-03T09:59:59-04:00", "milestone", detail="controls_installed")
    assert (
        alerts(
            run(george, [*paper, at_once, CLEARED], end="2026-06-05T00:00-04:00"),
            "paperwork_missing",
        )
        == []
    )
    outside = george.model_copy(
        update={"site": george.site.model_copy(update={"in_lake_george_park": False})}
    )
    engine = run(outside, [*paper, CLEARED], end="2026-06-05T00:00-04:00")
    assert alerts(engine, "paperwork_missing") == []


LURE_PAPER = [
    log("2026-05-20T12:00-04:00", "plan_approved", detail="expires 2029-05-20"),
    log("2026-05-20T12:00-04:00", "plan_on_site", detail="job box"),
    log("2026-05-20T12:00-04:00", "notice", detail="start_of_development"),
]


def test_lake_lure_wants_the_plan_approval_displayed(lure: SiteConfig) -> None:
    """96.05(B)(13): the approval "prominently displayed until all construction is
    complete". Graded Mon 06-01 08:00 EDT with it not displayed: opened 12:00Z; displayed
    Tue 06-02 07:00 EDT: resolved 11:00Z as late."""
    graded = log("2026-06-01T08:00-04:00", "graded", "lot-1")
    shown = log("2026-06-02T07:00-04:00", "approval_displayed", detail="at the gate")
    engine = run(lure, [*LURE_PAPER, graded, shown], end="2026-06-05T00:00-04:00")
    (alert,) = alerts(engine, "paperwork_missing")
    assert alert.subject == "approval_displayed" and alert.rule == "Lake Lure 96.05(B)(13)"
    assert (alert.opened_at, alert.resolved_at) == (
        iso("2026-06-01T12:00Z"),
        iso("2026-06-02T11:00Z"),
    )


def test_lake_lure_work_before_a_required_preconstruction_conference(lure: SiteConfig) -> None:
    """96.05(B)(12). No conference required: nothing. The officer requires one Fri 05-29;
    lot-1 disturbed Mon 06-01 08:00 EDT (12:00Z) opens preconstruction_conference, a
    second row of work adds nothing, the conference held Wed 06-03 09:00 EDT resolves it
    (13:00Z). Work after it is fine; a second requirement (06-10) and work on 06-11 open a
    new episode."""
    shown = log("2026-05-20T12:00-04:00", "approval_displayed", detail="gate")
    work = [
        log("2026-06-01T08:00-04:00", "disturbed", "lot-1"),
        log("2026-06-02T08:00-04:00", "active", "lot-1"),
    ]
    base = [*LURE_PAPER, shown]
    assert _missing(lure, [*base, *work]) == []
    rows = [
        *base,
        log("2026-05-29T10:00-04:00", "conference_required", detail="officer's letter"),
        *work,
        log("2026-06-03T09:00-04:00", "conference_held"),
        log("2026-06-04T08:00-04:00", "graded", "lot-1"),
        log("2026-06-10T10:00-04:00", "conference_required", detail="revised phasing"),
        log("2026-06-11T08:00-04:00", "active", "drive"),
    ]
    engine = run(lure, rows, end="2026-06-12T00:00-04:00")
    first, second = alerts(engine, "paperwork_missing")
    assert first.subject == second.subject == "preconstruction_conference"
    assert first.rule == "Lake Lure 96.05(B)(12)"
    assert (first.opened_at, first.resolved_at) == (
        iso("2026-06-01T12:00Z"),
        iso("2026-06-03T13:00Z"),
    )
    assert second.opened_at == iso("2026-06-11T12:00Z") and second.resolved_at is None


def _lure_areas(lure: SiteConfig, **areas: tuple[float, float]) -> SiteConfig:
    """Lake Lure with areas' (square feet, feet to water) replaced."""
    new = [
        a.model_copy(
            update={"acres": areas[a.id][0] / 43560, "distance_to_water_ft": areas[a.id][1]}
        )
        if a.id in areas
        else a
        for a in lure.areas
    ]
    return lure.model_copy(update={"areas": new})


NOTICE = log("2026-05-20T12:00-04:00", "notice", detail="start_of_development")


def _owed_with(site: SiteConfig, first: SiteLogEntry, second: SiteLogEntry) -> list[Alert]:
    """Lake Lure after the start notice: with the work of ``first`` alone no plan is owed
    (nothing missing); what is missing once the work of ``second`` crosses the threshold."""
    assert _missing(site, [NOTICE, first]) == []
    return _missing(site, [NOTICE, first, second])


def test_lake_lure_needs_no_plan_for_2000_square_feet_away_from_water(lure: SiteConfig) -> None:
    """96.05(A)(1)(c): no plan where the disturbance, not within 35 ft of water, does not
    exceed 2,000 sq ft. lot-1 of exactly 2,000 sq ft, 200 ft from water, graded Mon 06-01:
    no plan asked. drive of 1 sq ft more disturbed Tue 06-02 09:00 EDT: 2,001 sq ft, the
    plan approval, its copy on site and its display are owed from then (13:00Z)."""
    site = _lure_areas(lure, **{"lot-1": (2000.0, 200.0), "drive": (1.0, 200.0)})
    graded = log("2026-06-01T10:00-04:00", "graded", "lot-1")
    drive = log("2026-06-02T09:00-04:00", "disturbed", "drive")
    found = _owed_with(site, graded, drive)
    assert {a.subject for a in found} == {"plan_approval", "plan_on_site", "approval_displayed"}
    assert {a.opened_at for a in found} == {iso("2026-06-02T13:00Z")}
    approval = next(a for a in found if a.subject == "plan_approval")
    assert "2,001 sq ft, exceeds the 2,000 sq ft" in approval.message


def test_lake_lure_near_water_the_plan_comes_past_100_square_feet(lure: SiteConfig) -> None:
    """96.05(A)(1)(b): within 35 ft of water, no plan up to 100 sq ft. drive of exactly
    100 sq ft at exactly 35 ft: none. lot-1, 50 sq ft at 300 ft, added: 150 sq ft with
    part of it within 35 ft, past 100: owed (the protective reading of a mixed
    disturbance). At 35.5 ft the 2,000 sq ft threshold holds: none."""
    near = _lure_areas(lure, **{"drive": (100.0, 35.0), "lot-1": (50.0, 300.0)})
    drive = log("2026-06-01T10:00-04:00", "disturbed", "drive")
    lot = log("2026-06-03T10:00-04:00", "cleared", "lot-1")
    found = _owed_with(near, drive, lot)
    assert {a.opened_at for a in found} == {iso("2026-06-03T14:00Z")}
    assert "(within 35 ft of water)" in found[0].message
    far = _lure_areas(lure, **{"drive": (100.0, 35.5), "lot-1": (50.0, 300.0)})
    assert _missing(far, [NOTICE, drive, lot]) == []


def test_a_log_that_does_not_keep_the_paperwork_raises_nothing() -> None:
    """The reference site file says nothing of paperwork in its log: work with no
    certification, no plan on site and no permit then raises no paperwork_missing and no
    permit_missing (a missing row is not missing paperwork when the log never keeps it)."""
    plain = load_site(EXAMPLES / "lake-george-site.toml")
    assert plain.site.paperwork_in_site_log is False
    rows = [log("2026-06-01T09:00-04:00", "disturbed", "north-cut")]
    engine = run(plain, rows, end="2026-06-10T00:00-04:00")
    assert alerts(engine, "paperwork_missing") == []
    assert alerts(engine, "permit_missing") == []
    assert alerts(
        run(keeps_paperwork(plain), rows, end="2026-06-10T00:00-04:00"), "paperwork_missing"
    )
