"""Site calendar: local days, weekends, holidays, business hours and DST (hand-computed)."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from analytics.calendar import SiteCalendar, parse_business_hours, parse_weekend
from analytics.timeutil import iso, to_ms
from siltwatch.config import SiteConfig

NY = ZoneInfo("America/New_York")


def local(text: str) -> int:
    return to_ms(datetime.fromisoformat(text).replace(tzinfo=NY))


def lake_lure_calendar(holidays: list[str] | None = None) -> SiteCalendar:
    site = SiteConfig.model_validate(
        {
            "site": {
                "id": "ll",
                "timezone": "America/New_York",
                "rule_packs": ["nc-ncg01", "nc-lake-lure"],
                "holidays": holidays or ["2026-05-25"],
            }
        }
    )
    return SiteCalendar.from_site(site)


def test_from_site_reads_zone_weekend_holidays_and_business_hours() -> None:
    cal = lake_lure_calendar()
    assert cal.zone_name == "America/New_York"
    assert cal.weekend == (5, 6)
    assert cal.holidays == (date(2026, 5, 25),)
    assert (cal.business_start_min, cal.business_end_min) == (8 * 60, 17 * 60)


def test_next_business_day_after_friday_evening_is_monday_opening() -> None:
    cal = lake_lure_calendar()
    # Fri 2026-05-08 19:00 EDT -> Mon 2026-05-11 08:00 EDT = 12:00Z.
    assert iso(cal.start_of_next_business_day(local("2026-05-08T19:00"))) == "2026-05-11T12:00:00Z"


def test_holiday_monday_moves_the_next_business_day_to_tuesday() -> None:
    cal = lake_lure_calendar()
    # Memorial Day 2026-05-25 is a site holiday.
    assert iso(cal.start_of_next_business_day(local("2026-05-22T19:00"))) == "2026-05-26T12:00:00Z"
    assert not cal.is_business_day(date(2026, 5, 25))
    # Lake Lure 96.03 working days exclude only Saturday and Sunday: the holiday is one.
    assert cal.is_working_day(date(2026, 5, 25))
    assert cal.add_working_days(date(2026, 5, 22), 1) == date(2026, 5, 25)
    assert cal.add_working_days(date(2026, 5, 22), 5) == date(2026, 5, 29)


def test_next_business_day_across_the_spring_dst_change() -> None:
    cal = lake_lure_calendar()
    # Sat 2026-03-07 23:00 EST; clocks go forward Sun 03-08; Mon 08:00 is EDT = 12:00Z (not 13:00Z).
    assert iso(cal.start_of_next_business_day(local("2026-03-07T23:00"))) == "2026-03-09T12:00:00Z"


def test_business_hours_boundaries() -> None:
    cal = lake_lure_calendar()
    assert cal.in_business_hours(local("2026-05-08T08:00"))
    assert cal.in_business_hours(local("2026-05-08T16:59"))
    assert not cal.in_business_hours(local("2026-05-08T17:00"))
    assert not cal.in_business_hours(local("2026-05-08T07:59"))
    assert not cal.in_business_hours(local("2026-05-09T10:00"))  # Saturday
    assert not cal.in_business_hours(local("2026-05-25T10:00"))  # holiday


def test_end_of_calendar_days_is_local_midnight_across_dst() -> None:
    cal = lake_lure_calendar()
    # Thu 2026-03-05 10:00 EST + 7 calendar days -> end of Thu 03-12 = 03-13 00:00 EDT = 04:00Z.
    assert iso(cal.end_of_calendar_days(local("2026-03-05T10:00"), 7)) == "2026-03-13T04:00:00Z"
    # In winter the same midnight is 05:00Z.
    assert iso(cal.end_of_day(date(2026, 1, 1))) == "2026-01-02T05:00:00Z"


def test_local_date_uses_the_site_zone() -> None:
    cal = lake_lure_calendar()
    # 2026-05-09 03:00Z is still Friday 05-08 in New York.
    assert cal.local_date(to_ms(datetime(2026, 5, 9, 3, 0, tzinfo=ZoneInfo("UTC")))) == date(
        2026, 5, 8
    )


def test_wall_times_in_the_dst_gap_and_overlap() -> None:
    cal = lake_lure_calendar()
    # 02:30 does not exist on 2026-03-08: read as the instant after the gap (03:30 EDT = 07:30Z).
    assert iso(cal.at_local(date(2026, 3, 8), 150)) == "2026-03-08T07:30:00Z"
    # 01:30 happens twice on 2026-11-01: the first (EDT) occurrence, the earlier deadline.
    assert iso(cal.at_local(date(2026, 11, 1), 90)) == "2026-11-01T05:30:00Z"


def test_parsers_reject_nonsense() -> None:
    assert parse_business_hours("07:30-16:00") == (450, 960)
    assert parse_weekend(["Sun", "fri"]) == (4, 6)
    with pytest.raises(ValueError):
        parse_business_hours("17:00-08:00")
    with pytest.raises(ValueError):
        parse_business_hours("eight to five")
    with pytest.raises(ValueError):
        parse_weekend(["caturday"])
