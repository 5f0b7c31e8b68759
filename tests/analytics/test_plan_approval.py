"""Lake Lure 96.05(B)(8): a plan approval's expiration date, "not to exceed 3 years".

A ``plan_approved`` row records the approval and, optionally, ``expires
YYYY-MM-DD``: the last day it holds. Past the end of that local day, before
construction is completed and with no renewal, ``plan_expired`` opens (work
without an approved plan is a violation, 96.05(B)(16)). Times are
America/New_York: EDT is UTC-4, EST UTC-5.
"""

from __future__ import annotations

from datetime import date

import pytest

from analytics.calendar import anniversary
from siltwatch.config import SiteConfig
from siltwatch.schema import site_log_problem
from siltwatch.vocabulary import SiteEvent
from tests.analytics.site_log_helpers import alerts, iso, log, run

APPROVED = log("2026-06-01T09:00-04:00", "plan_approved", detail="expires 2026-06-30 permit 26-04")


def test_an_expired_approval_is_critical_until_it_is_renewed(lure: SiteConfig) -> None:
    rows = [
        APPROVED,
        log("2026-06-02T08:00-04:00", "graded", "lot-1"),
        # Renewed Mon 07-06 10:00 EDT, through the end of the year.
        log("2026-07-06T10:00-04:00", "plan_approved", detail="expires 2026-12-31"),
    ]
    engine = run(lure, rows, end="2026-08-01T00:00-04:00")
    (alert,) = alerts(engine, "plan_expired")
    # The end of Tue 06-30 is Wed 07-01 00:00 EDT = 04:00 UTC.
    assert alert.opened_at == iso("2026-07-01T04:00Z") and alert.severity == "critical"
    assert alert.rule == "Lake Lure 96.05(B)(8)"
    assert alert.resolved_at == iso("2026-07-06T14:00Z")
    assert alert.evidence["expires_on"] == "2026-06-30" and alert.evidence["capped"] is False


def test_the_expiry_after_the_clocks_go_back(lure: SiteConfig) -> None:
    """Expires Sun 2026-11-01, the day EDT ends: its end is Mon 11-02 00:00 EST = 05:00 UTC."""
    row = log("2026-06-01T09:00-04:00", "plan_approved", detail="expires 2026-11-01")
    engine = run(lure, [row], end="2026-11-10T00:00-05:00")
    (alert,) = alerts(engine, "plan_expired")
    assert alert.opened_at == iso("2026-11-02T05:00Z")
    assert alert.resolved_at is None


@pytest.mark.parametrize(
    ("expires", "last_day", "capped"),
    [
        ("2029-06-01", "2029-06-01", False),  # exactly 3 years: allowed
        ("2029-06-02", "2029-06-01", True),  # a day more: held to 3 years
    ],
)
def test_no_approval_holds_more_than_3_years(
    lure: SiteConfig, expires: str, last_day: str, capped: bool
) -> None:
    row = log("2026-06-01T09:00-04:00", "plan_approved", detail=f"expires {expires}")
    engine = run(lure, [row], end="2029-07-01T00:00-04:00")
    (alert,) = alerts(engine, "plan_expired")
    assert alert.evidence["expires_on"] == last_day and alert.evidence["capped"] is capped
    assert alert.opened_at == iso("2029-06-02T04:00Z")  # the end of Fri 2029-06-01 EDT
    assert ("allows at most 3 years" in alert.message) is capped


def test_completion_or_no_expiry_date_raises_nothing(lure: SiteConfig) -> None:
    done = log("2026-06-20T12:00-04:00", "milestone", detail="construction_completed")
    engine = run(lure, [APPROVED, done], end="2026-08-01T00:00-04:00")
    assert alerts(engine, "plan_expired") == []
    open_ended = log("2026-06-01T09:00-04:00", "plan_approved", detail="permit 26-04")
    engine = run(lure, [open_ended], end="2030-01-01T00:00-05:00")
    assert alerts(engine, "plan_expired") == []


def test_new_york_packs_set_no_bound(george: SiteConfig) -> None:
    engine = run(george, [APPROVED], end="2026-08-01T00:00-04:00")
    assert alerts(engine, "plan_expired") == []


def test_a_bad_expiry_is_named() -> None:
    assert site_log_problem(SiteEvent.PLAN_APPROVED, None, "expires soon") == (
        "detail",
        "event 'plan_approved': 'expires' takes the approval's last day as YYYY-MM-DD "
        "(e.g. 2029-05-01); got 'soon'",
    )
    assert site_log_problem(SiteEvent.PLAN_APPROVED, None, "expires 2029-05-01 ok") is None
    assert site_log_problem(SiteEvent.PLAN_APPROVED, None, "") is None


def test_a_leap_day_approval_ends_on_feb_28() -> None:
    assert anniversary(date(2028, 2, 29), 3) == date(2031, 2, 28)
    assert anniversary(date(2026, 6, 1), 3) == date(2029, 6, 1)
