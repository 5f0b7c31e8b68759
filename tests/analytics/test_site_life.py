"""The site's life: duties the site log starts, with deadlines computed here by hand.

One test per row of the site-log contract's duty table (docs/replay-contract.md),
on the two example sites (Lake George: areas north-cut (22 % slope), pad-b (flat,
900 ft from water), stockpile (320 ft from West Brook); Lake Lure: lot-1 and
drive, holidays 2026-12-25 and 2027-01-01). Both sites are in America/New_York:
EDT is UTC-4, EST (from 2026-11-01) UTC-5. "N days" ends at the end of the Nth
local day; "24 hours" is 24 hours; working days (Lake Lure 96.03) skip weekends,
not holidays. Revegetation and the Lake George idle clock: tests/analytics/test_site_law.py.
"""

from __future__ import annotations

import pytest

from alerts.routing import NoticeEvent, announced, route
from analytics.events import Inspection
from siltwatch.config import SiteConfig
from tests.analytics.site_log_helpers import alerts, duties, iso, log, officers, restarted, run, t

# --- Lake George ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "times", "duty", "rule"),
    [
        # §148-11 I(3)(e)[2]: last activity Fri 06-12 17:00 EDT; the 10th day is 06-22,
        # which ends at local midnight 06-23 00:00 EDT = 04:00 UTC; covered on 06-20.
        (
            "inactive",
            ("2026-06-12T17:00-04:00", "2026-06-20T11:00-04:00", "2026-07-01T00:00-04:00"),
            ("inactive_area", "2026-06-23T04:00Z", "2026-06-20T15:00Z"),
            "Lake George §148-11 I(3)(e)[2]",
        ),
    ],
    ids=["inactive-area-10-days-after-the-last-activity"],
)
def test_a_10_day_duty_of_pad_b_is_completed_by_a_temporary_cover(
    george: SiteConfig,
    event: str,
    times: tuple[str, str, str],
    duty: tuple[str, str, str],
    rule: str,
) -> None:
    """A row on pad-b at the first of ``times`` starts a stabilization duty (``duty``:
    its reason, due and completed times); a temporary cover of pad-b at the second
    completes it before it is overdue; the run ends at the third."""
    start, cover, end = times
    reason, due_at, completed_at = duty
    rows = [log(start, event, "pad-b"), log(cover, "temporary_cover", "pad-b")]
    engine = run(george, rows, end=end)
    (found,) = duties(engine, "stabilization", reason)
    assert found.subject == "pad-b"
    assert found.due_at == iso(due_at)
    assert found.completed_at == iso(completed_at)
    assert found.rule == rule
    assert alerts(engine, "stabilization_overdue") == []


def test_a_dst_change_inside_a_deadline_moves_the_utc_end(george: SiteConfig) -> None:
    """Inactive 10-28 17:00 EDT: the 10th day is 11-07, after the change to EST on 11-01,
    so it ends at 11-08 00:00 EST = 05:00 UTC (not 04:00)."""
    engine = run(
        george, [log("2026-10-28T17:00-04:00", "inactive", "pad-b")], end="2026-11-10T00:00-05:00"
    )
    (duty,) = duties(engine, "stabilization", "inactive_area")
    assert duty.due_at == iso("2026-11-08T05:00Z")
    (alert,) = alerts(engine, "stabilization_overdue")
    assert alert.opened_at == iso("2026-11-08T05:00Z") and alert.severity == "critical"
    assert alert.subject == duty.id and alert.resolved_at is None


def test_exposed_ground_on_a_steep_slope_or_near_water_is_due_in_24_hours(
    george: SiteConfig,
) -> None:
    """§148-11 I(3)(e)[3][b]: north-cut (22 % slope) and stockpile (320 ft from water) get
    24 hours; pad-b (3 %, 900 ft) does not. north-cut is never covered: overdue."""
    engine = run(
        george,
        [
            log("2026-06-03T10:00-04:00", "cleared", "north-cut"),
            log("2026-06-03T10:30-04:00", "disturbed", "stockpile"),
            log("2026-06-03T11:00-04:00", "disturbed", "pad-b"),
            log("2026-06-04T09:00-04:00", "temporary_cover", "stockpile"),
        ],
        end="2026-06-06T00:00-04:00",
    )
    exposed = {d.subject: d for d in duties(engine, "stabilization", "exposed_24h")}
    assert set(exposed) == {"north-cut", "stockpile"}
    assert exposed["north-cut"].due_at == iso("2026-06-04T14:00Z")
    assert exposed["stockpile"].due_at == iso("2026-06-04T14:30Z")
    assert exposed["stockpile"].completed_at == iso("2026-06-04T13:00Z")
    (alert,) = alerts(engine, "stabilization_overdue")
    assert alert.subject == exposed["north-cut"].id
    assert alert.opened_at == iso("2026-06-04T14:00Z")
    assert alert.rule == "Lake George §148-11 I(3)(e)[3][b]"
    assert officers(george) <= set(
        route(george, NoticeEvent.OPENED, "2026-06-04T14:00:00Z", alert).recipients
    )


def test_notice_of_a_milestone_48_hours_before(george: SiteConfig) -> None:
    """§148-12 A: controls_installed was noticed 72 h before (fine); clearing_completed
    only 24 h before: one notice_missing, opened and closed at the milestone, which the
    officer hears once (the opening)."""
    engine = run(
        george,
        [
            log("2026-05-29T15:00-04:00", "notice", detail="controls_installed"),
            log("2026-06-01T15:00-04:00", "milestone", detail="controls_installed"),
            log("2026-06-08T09:00-04:00", "notice", detail="clearing_completed"),
            log("2026-06-09T09:00-04:00", "milestone", detail="clearing_completed"),
        ],
        end="2026-06-10T00:00-04:00",
    )
    (alert,) = alerts(engine, "notice_missing")
    assert alert.subject == "clearing_completed"
    assert alert.opened_at == alert.resolved_at == iso("2026-06-09T13:00Z")
    assert alert.evidence["notice_at"] == "2026-06-08T13:00:00Z"
    assert alert.rule == "Lake George §148-12 A"
    assert officers(george) <= set(
        route(george, NoticeEvent.OPENED, "2026-06-09T13:00:00Z", alert).recipients
    )
    assert not officers(george) & set(
        route(george, NoticeEvent.RESOLVED, "2026-06-09T13:00:00Z", alert).recipients
    )
    assert announced(NoticeEvent.OPENED, alert) and not announced(
        NoticeEvent.RESOLVED, alert
    )  # one message


# --- Lake Lure ------------------------------------------------------------------------


def test_graded_slopes_in_21_days_and_permanent_cover_in_15_working_days(
    lure: SiteConfig,
) -> None:
    """96.07(B) and (D): graded Fri 2026-12-18 15:00 EST. Graded slopes: the 21st day is
    01-08, ending 01-09 00:00 EST = 05:00 UTC. Permanent cover: 15 working days skipping
    weekends only (96.03: the holidays 12-25 and 01-01 are working days) is Fri 01-08
    (90 calendar days would be 03-18: the shorter wins), ending 01-09 05:00 UTC."""
    engine = run(
        lure,
        [
            log("2026-12-18T15:00-05:00", "graded", "drive"),
            log("2027-01-05T12:00-05:00", "temporary_cover", "drive"),
        ],
        end="2027-01-20T00:00-05:00",
    )
    (slopes,) = duties(engine, "stabilization", "graded_slopes")
    assert slopes.due_at == iso("2027-01-09T05:00Z")
    assert slopes.completed_at == iso("2027-01-05T17:00Z")  # temporary cover completes it
    (permanent,) = duties(engine, "stabilization", "permanent_cover")
    assert permanent.due_at == iso("2027-01-09T05:00Z")
    assert permanent.completed_at is None  # temporary cover is not permanent cover
    assert permanent.rule == "Lake Lure 96.07(D)"
    (alert,) = alerts(engine, "stabilization_overdue")
    assert alert.subject == permanent.id and alert.opened_at == iso("2027-01-09T05:00Z")


def test_the_shorter_of_working_and_calendar_days_binds(lure: SiteConfig) -> None:
    """96.07(D) "whichever period is shorter": a site whose weekend is Monday to Saturday
    (only Sundays are working days) needs 15 weeks for 15 working days, so 90 calendar
    days bind: graded 2027-03-01 10:00 EST, the 90th day is 05-30, ending 05-31 00:00 EDT =
    04:00 UTC (the DST change of 03-14 inside it is the calendar's)."""
    six = ["mon", "tue", "wed", "thu", "fri", "sat"]
    site = lure.model_copy(update={"rule_overrides": {"calendar.weekend": six}})
    engine = run(
        site, [log("2027-03-01T10:00-05:00", "graded", "lot-1")], end="2027-03-02T00:00-05:00"
    )
    (permanent,) = duties(engine, "stabilization", "permanent_cover")
    assert permanent.due_at == iso("2027-05-31T04:00Z")
    assert permanent.rule == "Lake Lure 96.07(D)"


def test_phase_inspections_after_each_phase_milestone(lure: SiteConfig) -> None:
    """96.05(B)(17)(c)(i): controls installed Mon 06-01 15:00 EDT; due by the end of the
    2nd day (siltwatch's cited default) = 06-04 04:00 UTC; inspected 06-02."""
    rows = [
        log("2026-06-01T15:00-04:00", "milestone", detail="controls_installed"),
        log("2026-06-10T15:00-04:00", "milestone", detail="storm_drainage_completed"),
        log("2026-06-11T15:00-04:00", "milestone", detail="construction_season_closed"),
    ]
    engine = run(
        lure,
        rows,
        end="2026-06-20T00:00-04:00",
        inspections=[Inspection(t("2026-06-02T10:00-04:00"), "Jo Whitaker")],
    )
    phases = {d.subject: d for d in duties(engine, "inspection", "phase")}
    assert set(phases) == {"controls_installed", "storm_drainage_completed"}  # not (i)-(v)
    first = phases["controls_installed"]
    assert first.due_at == iso("2026-06-04T04:00Z")
    assert first.completed_at == iso("2026-06-02T14:00Z")
    assert "96.05(B)(17)(c)(i)-(v)" in first.rule
    late = phases["storm_drainage_completed"]
    assert late.completed_at is None
    overdue = [a for a in alerts(engine, "inspection_overdue") if a.subject == late.id]
    assert overdue and overdue[0].opened_at == iso("2026-06-13T04:00Z")


def test_quarterly_duties_stop_in_the_quarter_every_area_is_covered(lure: SiteConfig) -> None:
    """96.05(B)(17)(c)(vi): quarterly until permanent ground cover. Both areas covered by
    08-10: the quarter from 07-01 is not owed (closed at the cover, no overdue alert at
    10-01), and the quarter from 10-01 has no duty."""
    rows = [
        log("2026-06-01T09:00-04:00", "disturbed", "lot-1"),
        log("2026-08-03T12:00-04:00", "permanent_cover", "lot-1"),
        log("2026-08-10T12:00-04:00", "permanent_cover", "drive"),
    ]
    engine = run(lure, rows, end="2026-11-15T00:00-05:00")
    quarters = duties(engine, "inspection", "quarterly")
    assert [d.due_at for d in quarters] == [iso("2026-07-01T04:00Z"), iso("2026-10-01T04:00Z")]
    assert quarters[1].completed_at == iso("2026-08-10T16:00Z")
    overdue = {a.subject for a in alerts(engine, "inspection_overdue")}
    assert quarters[1].id not in overdue
    assert quarters[0].id in overdue  # the quarter to 07-01 was never inspected


def test_a_row_for_an_area_the_site_does_not_have_changes_nothing(george: SiteConfig) -> None:
    engine = run(
        george, [log("2026-06-12T17:00-04:00", "inactive", "nowhere")], end="2026-07-01T00:00-04:00"
    )
    assert duties(engine, "stabilization") == []


def test_a_snapshot_between_log_rows_gives_the_same_duties_and_alerts(george: SiteConfig) -> None:
    rows = [
        log("2026-06-01T15:00-04:00", "milestone", detail="controls_installed"),
        log("2026-06-03T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-12T17:00-04:00", "inactive", "pad-b"),
        log("2026-06-20T11:00-04:00", "temporary_cover", "pad-b"),
    ]
    whole, engine = restarted(
        george, rows, end="2026-07-01T00:00-04:00", at="2026-06-12T17:00-04:00"
    )
    assert engine.duties() == whole.duties()
    assert engine.alerts() == whole.alerts()
    assert duties(whole, "stabilization")  # the comparison is not of two empty lists


# --- limits and seasons -----------------------------------------------------------------


def test_open_acres_over_the_limit_open_one_episode_until_cover(george: SiteConfig) -> None:
    """§148-8 B(1)(d): five acres at one time; a site whose SWPPP says otherwise overrides
    the value — here 1.5, so north-cut (0.6) + pad-b (1.1) = 1.7 acres is over."""
    site = george.model_copy(update={"rule_overrides": {"area.max_disturbed_acres": 1.5}})
    engine = run(
        site,
        [
            log("2026-06-01T09:00-04:00", "disturbed", "north-cut"),
            log("2026-06-02T09:00-04:00", "disturbed", "pad-b"),
            log("2026-06-02T10:00-04:00", "graded", "pad-b"),  # still over: one episode
            log("2026-06-05T16:00-04:00", "temporary_cover", "north-cut"),
        ],
        end="2026-06-10T00:00-04:00",
    )
    (alert,) = alerts(engine, "disturbed_area_limit")
    assert alert.opened_at == iso("2026-06-02T13:00Z")
    assert alert.resolved_at == iso("2026-06-05T20:00Z")
    assert alert.severity == "critical" and "site override" in alert.rule
    assert alert.evidence["open_acres"] == 1.1  # after the cover
    unchanged = run(
        george, [log("2026-06-01T09:00-04:00", "disturbed", "pad-b")], end="2026-06-10T00:00-04:00"
    )
    assert alerts(unchanged, "disturbed_area_limit") == []  # 1.1 of the pack's 5 acres


def test_clearing_in_the_cold_season_reminds_until_cover(george: SiteConfig) -> None:
    """§148-11 I(3)(e)[3][e]: October 15 to April 15. Cleared 11-02 (in), 06-03 (out)."""
    rows = [
        log("2026-06-03T10:00-04:00", "cleared", "pad-b"),
        log("2026-11-02T10:00-05:00", "cleared", "north-cut"),
        log("2026-11-03T10:00-05:00", "temporary_cover", "north-cut"),
    ]
    engine = run(george, rows, end="2026-11-10T00:00-05:00")
    (alert,) = alerts(engine, "cold_season_earthwork")
    assert alert.subject == "north-cut" and alert.severity == "info"
    assert alert.opened_at == iso("2026-11-02T15:00Z")
    assert alert.resolved_at == iso("2026-11-03T15:00Z")
    assert alert.rule == "Lake George §148-11 I(3)(e)[3][e]"


def test_an_inspection_record_without_the_required_fields_is_kept_and_flagged(
    lure: SiteConfig,
) -> None:
    """96.05(B)(17)(b): address, affiliation, telephone, signature. The unsigned record
    still completes the phase duty (the inspection happened) and is flagged, naming the
    duty; the next complete record clears the flag."""
    unsigned = Inspection(t("2026-06-02T10:00-04:00"), "Jo Whitaker", affiliation="BREC")
    complete = Inspection(
        t("2026-06-09T10:00-04:00"),
        "Jo Whitaker",
        affiliation="BREC",
        address="412 Memorial Hwy",
        phone="+1 828 555 0142",
        signed=True,
    )
    engine = run(
        lure,
        [log("2026-06-01T15:00-04:00", "milestone", detail="controls_installed")],
        end="2026-06-20T00:00-04:00",
        inspections=[unsigned, complete],
    )
    (phase,) = duties(engine, "inspection", "phase")
    assert phase.completed_at == iso("2026-06-02T14:00Z")
    (alert,) = alerts(engine, "inspection_record_incomplete")
    assert alert.opened_at == iso("2026-06-02T14:00Z")
    assert alert.resolved_at == iso("2026-06-09T14:00Z")
    assert phase.id in alert.evidence["duties"]  # with the routine and quarterly ones
    assert "address, telephone number, signature" in alert.message
    assert alert.rule == "Lake Lure 96.05(B)(17)(b)"
