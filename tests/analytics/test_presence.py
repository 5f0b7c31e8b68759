"""The applicant or a representative on site during construction or grading (Lake George
§148-10 A; Big Flats 17.37.100 A). Times are America/New_York, computed by hand."""

from __future__ import annotations

from alerts.routing import NoticeEvent, route
from siltwatch.config import SiteConfig
from tests.analytics.site_log_helpers import alerts, iso, log, officers, run


def _absent(site: SiteConfig, rows: list, end: str) -> list:  # type: ignore[type-arg]
    return alerts(run(site, rows, end=end), "representative_absent")


def test_work_on_a_day_with_nobody_on_site_until_the_day_ends(george: SiteConfig) -> None:
    """Mon 06-01: Jo on site 07:30, work at 09:00: nothing. Tue 06-02: north-cut cleared
    10:00 EDT with nobody recorded: the alert opens then (subject the day) and, nobody
    coming, resolves at the end of the day, 06-03 00:00 EDT = 04:00Z. The town hears it
    once. A second row of work the same day opens nothing more."""
    rows = [
        log("2026-06-01T07:30-04:00", "on_site", detail="Jo Whitaker"),
        log("2026-06-01T09:00-04:00", "active", "pad-b"),
        log("2026-06-02T10:00-04:00", "cleared", "north-cut"),
        log("2026-06-02T14:00-04:00", "active", "pad-b"),
    ]
    (alert,) = _absent(george, rows, "2026-06-04T00:00-04:00")
    assert alert.subject == "2026-06-02"
    assert alert.opened_at == iso("2026-06-02T14:00Z")
    assert alert.resolved_at == iso("2026-06-03T04:00Z")
    assert alert.rule == "Lake George §148-10 A" and alert.severity == "warning"
    assert alert.evidence["work"] == "cleared north-cut"
    assert "the day 2026-06-02 ended with nobody of the applicant's recorded" in alert.message
    assert officers(george) <= set(
        route(george, NoticeEvent.OPENED, "2026-06-02T14:00:00Z", alert).recipients
    )


def test_someone_on_site_a_minute_before_is_in_time_and_later_is_late(
    flats: SiteConfig,
) -> None:
    """Big Flats. Wed 06-03: on site 08:59, work 09:00: in time. Thu 06-04: work 08:00,
    Jo arrives 08:30: the alert opens 12:00Z and resolves 12:30Z as late. A presence on
    the day before does not cover the next day: Fri 06-05 work at 00:00:30 opens one."""
    rows = [
        log("2026-06-03T08:59-04:00", "on_site", detail="Jo Whitaker"),
        log("2026-06-03T09:00-04:00", "graded", "north-cut"),
        log("2026-06-04T08:00-04:00", "disturbed", "pad-b"),
        log("2026-06-04T08:30-04:00", "on_site", detail="Jo Whitaker"),
        log("2026-06-05T00:00:30-04:00", "active", "pad-b"),
    ]
    late, next_day = _absent(flats, rows, "2026-06-05T12:00-04:00")
    assert (late.subject, late.opened_at, late.resolved_at) == (
        "2026-06-04",
        iso("2026-06-04T12:00Z"),
        iso("2026-06-04T12:30Z"),
    )
    assert late.rule == "Big Flats 17.37.100 A"
    assert late.evidence["on_site_at"] == "2026-06-04T12:30:00Z"
    assert next_day.subject == "2026-06-05" and next_day.resolved_at is None


def test_local_days_across_the_dst_end_and_no_rule_no_alert(
    george: SiteConfig, lure: SiteConfig
) -> None:
    """Sun 11-01-2026 (25 hours): on site 00:30 EDT, work 23:30 EST (11-02 04:30Z), the
    same local day: nothing. Lake Lure's ordinance asks nothing of the kind."""
    rows = [
        log("2026-11-01T00:30-04:00", "on_site", detail="Jo Whitaker"),
        log("2026-11-01T23:30-05:00", "active", "pad-b"),
    ]
    assert _absent(george, rows, "2026-11-03T00:00-05:00") == []
    lure_rows = [log("2026-06-02T10:00-04:00", "graded", "drive")]
    assert _absent(lure, lure_rows, "2026-06-04T00:00-04:00") == []


def test_a_log_that_never_records_presence_raises_nothing_until_it_does(
    george: SiteConfig,
) -> None:
    """Work logged Mon 06-01 and Tue 06-02 with no on_site row ever: the log does not keep
    that record, so nothing opens (a missing record is not a person missing). From the
    first on_site row (Wed 06-03 07:00) the check runs: Thu 06-04 work with nobody opens."""
    rows = [
        log("2026-06-01T09:00-04:00", "cleared", "north-cut"),
        log("2026-06-02T09:00-04:00", "graded", "north-cut"),
    ]
    assert _absent(george, rows, "2026-06-03T00:00-04:00") == []
    rows += [
        log("2026-06-03T07:00-04:00", "on_site", detail="Jo Whitaker"),
        log("2026-06-03T09:00-04:00", "active", "pad-b"),
        log("2026-06-04T09:00-04:00", "active", "pad-b"),
    ]
    (alert,) = _absent(george, rows, "2026-06-05T00:00-04:00")
    assert alert.subject == "2026-06-04"
