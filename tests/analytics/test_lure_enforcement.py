"""Lake Lure 96.05(B)(14): a revised plan required, and work ceasing until it is approved.

"If ... the Erosion Control Officer ... determines that a significant risk of
accelerated erosion or off-site sedimentation exists, the Erosion Control
Officer shall require a revised Plan. Pending the preparation of the revised
Plan, work shall cease or shall continue under conditions outlined by the
Erosion Control Officer." The site log records the requirement as a violation
row (remedy by: the day the revised plan is due) and the approval as
violation_corrected. Times are America/New_York (EDT, UTC-4).
"""

from __future__ import annotations

from siltwatch.config import SiteConfig
from tests.analytics.site_log_helpers import alerts, duties, iso, log, run

ORDER = log("2026-06-01T14:00-04:00", "violation", detail="RP-1 remedy by 2026-06-12 revised plan")


def test_work_before_the_revised_plan_is_approved(lure: SiteConfig) -> None:
    rows = [
        ORDER,
        log("2026-06-03T08:00-04:00", "graded", "lot-1"),  # work: not allowed
        log("2026-06-04T08:00-04:00", "temporary_cover", "drive"),  # stabilization: allowed
        log("2026-06-15T09:00-04:00", "violation_corrected", detail="RP-1 revised plan approved"),
    ]
    engine = run(lure, rows, end="2026-06-20T00:00-04:00")
    (work,) = alerts(engine, "work_during_violation")
    assert work.subject == "lot-1" and work.rule == "Lake Lure 96.05(B)(14)"
    assert work.opened_at == iso("2026-06-03T12:00Z")
    assert work.resolved_at == iso("2026-06-15T13:00Z")

    # The revised plan was due by the end of Fri 06-12 (06-13 00:00 EDT = 04:00 UTC) and
    # came on Mon 06-15: remedy_overdue from the deadline to the approval.
    (remedy,) = duties(engine, "remedy")
    assert remedy.due_at == iso("2026-06-13T04:00Z")
    assert remedy.completed_at == iso("2026-06-15T13:00Z")
    (late,) = alerts(engine, "remedy_overdue")
    assert late.opened_at == iso("2026-06-13T04:00Z")
    assert late.rule == "Lake Lure 96.05(B)(14)"
    (opened,) = alerts(engine, "violation_open")
    assert opened.rule == "Lake Lure 96.05(B)(14)"


def test_an_officer_who_lets_work_continue_is_a_site_override(lure: SiteConfig) -> None:
    site = lure.model_copy(update={"rule_overrides": {"violation.stabilization_only": False}})
    rows = [ORDER, log("2026-06-03T08:00-04:00", "graded", "lot-1")]
    engine = run(site, rows, end="2026-06-10T00:00-04:00")
    assert alerts(engine, "work_during_violation") == []
    assert len(alerts(engine, "violation_open")) == 1
