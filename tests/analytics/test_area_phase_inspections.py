"""Lake Lure 96.05(B)(17): an inspection after each area's phase, not only site-wide ones.

96.05(B)(17) asks for an inspection "after each phase of the plan has been
completed and after establishment of temporary ground cover", and (17)(c)(iii)
after "completion of any phase of grading of slopes or fills". On the Lake Lure
example (areas lot-1 and drive, America/New_York) an area's ``graded`` and
``temporary_cover`` rows each create a phase inspection duty, due by the end of
the 2nd local day after (siltwatch's cited default: the ordinance names none).
Deadlines by hand: EDT is UTC-4 until Sun 2026-11-01 02:00, EST UTC-5 after.
"""

from __future__ import annotations

from analytics.events import Inspection
from siltwatch.config import SiteConfig
from tests.analytics.site_log_helpers import alerts, duties, iso, log, run, t


def test_a_graded_area_and_a_temporary_cover_each_need_an_inspection(lure: SiteConfig) -> None:
    rows = [
        # Thu 10-29 16:00 EDT: the 2nd day after ends Sat 10-31 24:00 EDT = 11-01 04:00 UTC.
        log("2026-10-29T16:00-04:00", "graded", "lot-1"),
        # Fri 10-30 10:00 EDT: the 2nd day after ends Sun 11-01 24:00, after the clocks went
        # back: Mon 11-02 00:00 EST = 05:00 UTC, not 04:00.
        log("2026-10-30T10:00-04:00", "temporary_cover", "drive"),
    ]
    # Fri 10-30 09:00 EDT: after the grading, before the cover.
    inspected = Inspection(t("2026-10-30T09:00-04:00"), "Jo Whitaker")
    engine = run(lure, rows, end="2026-11-05T00:00-05:00", inspections=[inspected])
    phases = {d.subject: d for d in duties(engine, "inspection", "phase")}
    assert set(phases) == {"lot-1:graded", "drive:temporary_cover"}

    graded = phases["lot-1:graded"]
    assert graded.created_at == iso("2026-10-29T20:00Z")
    assert graded.due_at == iso("2026-11-01T04:00Z")
    assert graded.completed_at == iso("2026-10-30T13:00Z")
    assert graded.rule.startswith("Lake Lure 96.05(B)(17)(c)(iii); due per siltwatch default")

    cover = phases["drive:temporary_cover"]
    assert cover.due_at == iso("2026-11-02T05:00Z")
    assert cover.completed_at is None
    assert cover.rule.startswith("Lake Lure 96.05(B)(17); due per siltwatch default")
    (overdue,) = [a for a in alerts(engine, "inspection_overdue") if a.subject == cover.id]
    assert overdue.opened_at == iso("2026-11-02T05:00Z")
    assert "area drive after establishment of temporary ground cover" in overdue.message
    assert "Lake Lure 96.05(B)(17)" in overdue.message
    assert not [a for a in alerts(engine, "inspection_overdue") if a.subject == graded.id]


def test_exactly_at_the_deadline_is_in_time_and_one_inspection_serves_both(
    lure: SiteConfig,
) -> None:
    """Graded Mon 2026-06-01 08:00 EDT, due Thu 06-04 00:00 EDT = 04:00 UTC; a site-wide
    rough-grading milestone the same day makes its own duty; one inspection at 03:59:59
    UTC, before the deadline, completes both and nothing goes overdue."""
    rows = [
        log("2026-06-01T08:00-04:00", "graded", "lot-1"),
        log("2026-06-01T17:00-04:00", "milestone", detail="rough_grading_completed"),
    ]
    inspected = Inspection(t("2026-06-03T23:59:59-04:00"), "Jo Whitaker")
    engine = run(lure, rows, end="2026-06-10T00:00-04:00", inspections=[inspected])
    phases = {d.subject: d for d in duties(engine, "inspection", "phase")}
    assert set(phases) == {"lot-1:graded", "rough_grading_completed"}
    assert phases["lot-1:graded"].due_at == iso("2026-06-04T04:00Z")
    assert all(d.completed_at == iso("2026-06-04T03:59:59Z") for d in phases.values())
    ids = {d.id for d in phases.values()}
    assert not [a for a in alerts(engine, "inspection_overdue") if a.subject in ids]


def test_new_york_packs_ask_no_area_phase_inspection(george: SiteConfig) -> None:
    rows = [
        log("2026-06-01T08:00-04:00", "graded", "pad-b"),
        log("2026-06-01T09:00-04:00", "temporary_cover", "pad-b"),
    ]
    engine = run(george, rows, end="2026-06-10T00:00-04:00")
    assert duties(engine, "inspection", "phase") == []
