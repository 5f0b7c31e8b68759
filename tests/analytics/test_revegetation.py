"""Revegetation quality, Lake George §148-11 I(3)(e)[3][c][1] and [d].

Area pad-b of the Lake George example (a major project) gets permanent cover on
Wed 2026-06-10 15:00 EDT. The cover-crop check (siltwatch's 30-day default: the
ordinance names no date) is due by the end of Fri 07-10 = 07-11 00:00 EDT =
04:00 UTC. The 75 % survival check is due by the end of the first anniversary,
Thu 2027-06-10 = 2027-06-11 00:00 EDT = 04:00 UTC, and opens 30 local days
before the day that deadline falls on: 2027-05-12 00:00 EDT.
"""

from __future__ import annotations

from analytics.events import Inspection
from siltwatch.config import SiteConfig
from tests.analytics.site_log_helpers import alerts, duties, iso, log, run, t

COVERED = log("2026-06-10T15:00-04:00", "permanent_cover", "pad-b")
END = "2027-07-01T00:00-04:00"


def test_the_cover_crop_check_and_the_survival_check_a_year_on(george: SiteConfig) -> None:
    first = run(george, [COVERED], end=END)
    (check,) = duties(first, "revegetation_check", "cover_crop_90")
    (survival,) = duties(first, "revegetation", "survival_75")
    assert check.subject == survival.subject == "pad-b"
    assert check.created_at == iso("2026-06-10T19:00Z")
    assert check.due_at == iso("2026-07-11T04:00Z")
    assert check.rule.startswith("siltwatch default")
    assert survival.created_at == iso("2027-05-12T04:00Z")
    assert survival.due_at == iso("2027-06-11T04:00Z")
    assert survival.rule == "Lake George §148-11 I(3)(e)[3][d]"

    # The check inspected on 07-01 names its duty; the survival check is never recorded.
    checked = Inspection(t("2026-07-01T10:00-04:00"), "Jo Whitaker", duty=check.id)
    engine = run(george, [COVERED], end=END, inspections=[checked])
    (done,) = duties(engine, "revegetation_check", "cover_crop_90")
    assert done.completed_at == iso("2026-07-01T14:00Z")
    assert alerts(engine, "revegetation_check_overdue") == []
    (late,) = alerts(engine, "revegetation_overdue")
    assert late.opened_at == iso("2027-06-11T04:00Z") and late.subject == survival.id
    assert "75 % of the cover crop alive" in late.message
    assert "The Stormwater Management Officer is notified." in late.message


def test_a_missed_cover_crop_check_tells_the_site_not_the_officer(george: SiteConfig) -> None:
    engine = run(george, [COVERED], end="2026-08-01T00:00-04:00")
    (late,) = alerts(engine, "revegetation_check_overdue")
    assert late.opened_at == iso("2026-07-11T04:00Z")
    assert "is notified" not in late.message
    assert "90 % of the seeded area" in late.message


def test_each_reseeding_starts_a_new_year(george: SiteConfig) -> None:
    """Survival fell short: pad-b seeded again on 2027-06-15 owes a new check a year on."""
    again = log("2027-06-15T09:00-04:00", "seeded", "pad-b")
    engine = run(george, [COVERED, again], end="2028-07-01T00:00-04:00")
    dues = sorted(d.due_at for d in duties(engine, "revegetation", "survival_75"))
    assert dues == [iso("2027-06-11T04:00Z"), iso("2028-06-16T04:00Z")]


def test_a_minor_project_or_another_town_owes_none(george: SiteConfig, lure: SiteConfig) -> None:
    minor = george.model_copy(update={"site": george.site.model_copy(update={"project": "minor"})})
    assert duties(run(minor, [COVERED], end=END), "revegetation") == []
    covered = log("2026-06-10T15:00-04:00", "permanent_cover", "lot-1")
    assert duties(run(lure, [covered], end=END), "revegetation") == []


def test_cold_season_clearing_needs_extra_measures_at_revegetation(george: SiteConfig) -> None:
    """§148-11 I(3)(e)[3][e]: clearing between October 15 and April 15 incorporates extra
    measures during revegetation. north-cut cleared Thu 2026-10-15 08:00 EDT (the first
    day of the window) and seeded Mon 10-26 09:00 EDT with none recorded:
    cold_season_measures_missing opens (13:00Z), warning, the town told once; netting
    recorded Tue 10-27 10:00 resolves it. pad-b cleared Wed 10-14 (the day before the
    window) and seeded: nothing; stockpile graded Wed 2027-04-15 (the window's last day),
    measures first, then seeded: nothing."""
    rows = [
        log("2026-10-14T09:00-04:00", "cleared", "pad-b"),
        log("2026-10-15T08:00-04:00", "cleared", "north-cut"),
        log("2026-10-20T09:00-04:00", "seeded", "pad-b"),
        log("2026-10-26T09:00-04:00", "seeded", "north-cut", "rye and straw"),
        log("2026-10-27T10:00-04:00", "extra_measures", "north-cut", "jute netting"),
        log("2027-04-15T16:00-04:00", "graded", "stockpile"),
        log("2027-04-20T09:00-04:00", "extra_measures", "stockpile", "extra mulch"),
        log("2027-04-21T09:00-04:00", "permanent_cover", "stockpile"),
    ]
    engine = run(george, rows, end="2027-05-01T00:00-04:00")
    (alert,) = alerts(engine, "cold_season_measures_missing")
    assert alert.subject == "north-cut" and alert.severity == "warning"
    assert alert.rule == "Lake George §148-11 I(3)(e)[3][e]"
    assert (alert.opened_at, alert.resolved_at) == (
        iso("2026-10-26T13:00Z"),
        iso("2026-10-27T14:00Z"),
    )
    assert alert.evidence["event"] == "seeded"
    assert "jute netting" in alert.message  # the resolution says what was done
    minor = george.model_copy(update={"site": george.site.model_copy(update={"project": "minor"})})
    assert (
        alerts(run(minor, rows, end="2027-05-01T00:00-04:00"), "cold_season_measures_missing") == []
    )
