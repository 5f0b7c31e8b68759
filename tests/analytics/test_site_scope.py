"""The permit and the project class from the land the site log shows disturbed (Lake George
§148-11 C(3), E(1)(a); Lake Lure 96.05(B)(2)). Square feet are acres x 43,560; times
America/New_York (EDT, UTC-4)."""

from __future__ import annotations

from alerts.routing import NoticeEvent, route
from siltwatch.config import SiteConfig
from tests.analytics.site_log_helpers import alerts, iso, keeping_paperwork, log, officers, run

EXACTLY_5000 = 5000 / 43560  # acres
EXACTLY_15000 = 15000 / 43560


# Its example sites keep the paperwork in their logs (``paperwork_in_site_log``).
george = keeping_paperwork("george")
lure = keeping_paperwork("lure")


def _site(site: SiteConfig, acres: dict[str, float], **info: object) -> SiteConfig:
    areas = [a.model_copy(update={"acres": acres.get(a.id, a.acres)}) for a in site.areas]
    return site.model_copy(update={"areas": areas, "site": site.site.model_copy(update=info)})


def test_more_than_5000_square_feet_disturbed_without_the_permit(george: SiteConfig) -> None:
    """north-cut of exactly 5,000 sq ft cleared Mon 06-01: not greater than 5,000, nothing.
    The stockpile (0.01 acre, 435.6 sq ft) disturbed Tue 06-02 09:00 EDT makes 5,435.6:
    permit_missing opens (13:00Z), critical, to the officer; the permit recorded Wed 06-03
    08:00 EDT resolves it (12:00Z). Covering ground does not undo the count."""
    site = _site(george, {"north-cut": EXACTLY_5000, "stockpile": 0.01})
    rows = [
        log("2026-06-01T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-01T15:00-04:00", "temporary_cover", "north-cut"),
        log("2026-06-02T09:00-04:00", "disturbed", "stockpile"),
        log("2026-06-03T08:00-04:00", "plan_approved", detail="SMP-2026-07"),
    ]
    (alert,) = alerts(run(site, rows, end="2026-06-05T00:00-04:00"), "permit_missing")
    assert alert.rule == "Lake George §148-11 C(3)" and alert.severity == "critical"
    assert (alert.opened_at, alert.resolved_at) == (
        iso("2026-06-02T13:00Z"),
        iso("2026-06-03T12:00Z"),
    )
    assert alert.evidence["disturbed_sq_ft"] == 5435.6
    assert alert.evidence["areas"] == "north-cut, stockpile"
    assert "5,436 sq ft" in alert.message
    assert officers(site) <= set(
        route(site, NoticeEvent.OPENED, "2026-06-02T13:00:00Z", alert).recipients
    )
    assert alerts(run(site, rows[:2], end="2026-06-05T00:00-04:00"), "permit_missing") == []
    permitted = [log("2026-05-20T08:00-04:00", "plan_approved", detail="SMP"), *rows[:3]]
    assert alerts(run(site, permitted, end="2026-06-05T00:00-04:00"), "permit_missing") == []
    outside = _site(site, {}, in_lake_george_park=False)
    assert alerts(run(outside, rows[:3], end="2026-06-05T00:00-04:00"), "permit_missing") == []


def test_a_minor_project_that_reaches_15000_square_feet_is_major(george: SiteConfig) -> None:
    """§148-11 E(1)(a): minor means "affecting less than 15,000 square feet". pad-b of
    14,999.9 sq ft: still minor. pad-b of exactly 15,000 sq ft disturbed Thu 06-04 07:00
    EDT: project_class_exceeded (11:00Z), critical; a major project never gets it."""
    permit = log("2026-05-20T08:00-04:00", "plan_approved", detail="SMP")
    rows = [permit, log("2026-06-04T07:00-04:00", "disturbed", "pad-b")]
    under = _site(george, {"pad-b": 14999.9 / 43560}, project="minor")
    assert alerts(run(under, rows, end="2026-06-05T00:00-04:00"), "project_class_exceeded") == []
    exact = _site(george, {"pad-b": EXACTLY_15000}, project="minor")
    (alert,) = alerts(run(exact, rows, end="2026-06-05T00:00-04:00"), "project_class_exceeded")
    assert alert.opened_at == iso("2026-06-04T11:00Z") and alert.severity == "critical"
    assert alert.rule == "Lake George §148-11 E(1)(a)"
    assert 'Set project = "major"' in alert.message
    major = _site(george, {"pad-b": EXACTLY_15000}, project="major")
    assert alerts(run(major, rows, end="2026-06-05T00:00-04:00"), "project_class_exceeded") == []


def test_a_lake_lure_minor_plan_that_uncovers_one_acre_needs_the_major_plan(
    lure: SiteConfig,
) -> None:
    """96.05(B)(2): a major plan "whenever one acre or more is to be uncovered". lot-1 of
    0.6 acre graded Mon 06-01, drive of 0.4 disturbed Tue 06-02 10:00 EDT: exactly one acre,
    project_class_exceeded (14:00Z). Lake Lure sets no 5,000 sq ft permit threshold."""
    site = _site(lure, {"lot-1": 0.6, "drive": 0.4}, project="minor")
    rows = [
        log("2026-06-01T10:00-04:00", "graded", "lot-1"),
        log("2026-06-02T10:00-04:00", "disturbed", "drive"),
    ]
    engine = run(site, rows, end="2026-06-05T00:00-04:00")
    (alert,) = alerts(engine, "project_class_exceeded")
    assert alert.opened_at == iso("2026-06-02T14:00Z")
    assert alert.rule == "Lake Lure 96.05(B)(2)"
    assert alert.evidence["disturbed_sq_ft"] == 43560.0
    assert alerts(engine, "permit_missing") == []
