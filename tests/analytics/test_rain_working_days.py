"""Working days that skip rain days (Lake Lure 96.03), computed by hand.

96.03: working days are days other than Saturday and Sunday "during which
weather conditions or soil conditions permit land disturbing activity". With
``site.rain_day_in`` set, a local day whose rain at one of the site's gauges
reaches it is no working day for the 96.07(D) permanent-cover deadline.

The Lake Lure example (America/New_York, EST = UTC-5; holidays 2026-12-25 and
2027-01-01; gauge gauge-yard on rain-yard, mm, every 5 minutes). Area drive is
graded Fri 2026-12-18 15:00 EST. Without rain days its 15th working day is
Fri 2027-01-08 (tests/analytics/test_site_life.py): 12-21, 22, 23, 24, 25, 28,
29, 30, 31, 01-01, 04, 05, 06, 07, 08 (96.03 excludes Saturdays and Sundays,
not the site's holidays 12-25 and 01-01); due at the end of it, 01-09 05:00 UTC.

Rain, with ``rain_day_in = 0.5`` (12.7 mm):

* Wed 12-23: 2.0 mm in each interval ending 10:05 ... 10:35 EST; the 7th
  reading takes the day from 12.0 to 14.0 mm: a rain day from 10:35 EST =
  15:35 UTC. The 15th working day becomes Mon 01-11: due 01-12 05:00 UTC.
* Mon 01-04: 3 x 2.0 = 6.0 mm: not a rain day.
* Sat 01-09: 5 x 3.0 mm, 12.0 then 15.0 mm at 09:25 EST: a rain day, but a
  Saturday is no working day anyway: the deadline does not move again.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from analytics.calendar import SiteCalendar
from analytics.engine import Engine
from analytics.events import DutyEvent, SensorReading, SiteLogEntry
from analytics.timeutil import MS_PER_MIN, to_ms
from siltwatch.config import SiteConfig, load_site
from tests.analytics.site_files import load_problems, rain_gauge_site

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEP = 5 * MS_PER_MIN


def t(text: str) -> int:
    return to_ms(datetime.fromisoformat(text))


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text)


@pytest.fixture(scope="module")
def lure() -> SiteConfig:
    return load_site(EXAMPLES / "lake-lure-site.toml")


def with_rain_days(site: SiteConfig, **depth: float) -> SiteConfig:
    return site.model_copy(update={"site": site.site.model_copy(update=depth)})


def rain(start: str, mm: list[float]) -> list[SensorReading]:
    """Readings of rain-yard, the first ending at ``start``, one every 5 minutes."""
    first = t(start)
    return [SensorReading("rain-yard", first + i * STEP, v) for i, v in enumerate(mm)]


RAIN = (
    rain("2026-12-23T10:05-05:00", [2.0] * 7)
    + rain("2027-01-04T09:05-05:00", [2.0] * 3)
    + rain("2027-01-09T09:05-05:00", [3.0] * 5)
)
GRADED = SiteLogEntry(t("2026-12-18T15:00-05:00"), "graded", "drive", "Dana Ruiz")


def run(site: SiteConfig) -> tuple[Engine, list[Any]]:
    engine = Engine(site)
    events = list(engine.feed_site_log(GRADED))
    events += engine.feed(RAIN)
    events += engine.finish(t("2027-01-20T00:00-05:00"))
    return engine, events


def permanent(engine: Engine) -> Any:
    (duty,) = [d for d in engine.duties() if d.reason == "permanent_cover"]
    return duty


def test_two_rain_days_one_on_a_weekend_extend_the_deadline_by_one_working_day(
    lure: SiteConfig,
) -> None:
    engine, events = run(with_rain_days(lure, rain_day_in=0.5))
    rain_days = {(r.day, round(r.depth, 1)) for r in engine.rain_log()}
    assert {(date(2026, 12, 23), 14.0), (date(2027, 1, 9), 15.0)} <= rain_days
    duty = permanent(engine)
    assert duty.created_at == utc("2026-12-18T20:00Z")
    assert duty.due_at == utc("2027-01-12T05:00Z")  # end of Mon 01-11, one working day later
    assert duty.rule.startswith("Lake Lure 96.07(D); working days per Lake Lure 96.03")
    assert "0.5 in (site rain_day_in)" in duty.rule
    moved = [e for e in events if isinstance(e, DutyEvent) and e.duty.id == duty.id]
    assert [e.type for e in moved] == ["created", "extended", "overdue"]
    extended = moved[1]
    assert extended.at == t("2026-12-23T15:35Z")
    assert extended.duty.due_at == utc("2027-01-12T05:00Z")
    # The deadline set first (01-09) passes without an alert; the extended one raises it.
    (alert,) = [a for a in engine.alerts() if a.subject == duty.id]
    assert alert.kind == "stabilization_overdue"
    assert alert.opened_at == utc("2027-01-12T05:00Z")
    assert alert.evidence["rain_days"] == ["2026-12-23"]  # the Saturday cost no working day
    assert "96.03" in alert.message


def test_without_the_option_rain_changes_nothing(lure: SiteConfig) -> None:
    engine, events = run(lure)
    duty = permanent(engine)
    assert duty.due_at == utc("2027-01-09T05:00Z")
    assert duty.rule == "Lake Lure 96.07(D)"
    assert not [e for e in events if isinstance(e, DutyEvent) and e.type == "extended"]
    (alert,) = [a for a in engine.alerts() if a.subject == duty.id]
    assert alert.opened_at == utc("2027-01-09T05:00Z")
    assert "rain_days" not in alert.evidence


def test_the_depth_may_be_given_in_mm(lure: SiteConfig) -> None:
    """12.7 mm is 0.5 in: the same rain days, the same deadline."""
    engine, _events = run(with_rain_days(lure, rain_day_mm=12.7))
    assert permanent(engine).due_at == utc("2027-01-12T05:00Z")
    # 14.0 mm is not 15 mm: with 14.5 mm only the Saturday is a rain day, and it moves nothing.
    engine, _events = run(with_rain_days(lure, rain_day_mm=14.5))
    assert permanent(engine).due_at == utc("2027-01-09T05:00Z")


def test_a_weekend_or_holiday_rain_day_does_not_count_twice(lure: SiteConfig) -> None:
    cal = SiteCalendar.from_site(lure)
    start = date(2026, 12, 18)
    assert cal.add_business_days(start, 15) == date(2027, 1, 12)
    skip = {date(2026, 12, 23), date(2027, 1, 9)}  # a Wednesday and a Saturday
    assert cal.add_business_days(start, 15, skip) == date(2027, 1, 13)
    holiday_and_sunday = {date(2026, 12, 25), date(2026, 12, 27)}
    assert cal.add_business_days(start, 15, holiday_and_sunday) == date(2027, 1, 12)


def test_working_days_count_the_sites_holidays_but_not_weekends_or_rain_days(
    lure: SiteConfig,
) -> None:
    """96.03: "days exclusive of Saturday and Sunday" -- the holidays 12-25 and 01-01 are
    working days. From Fri 12-18: the 15th is Fri 01-08; a rain day on Wed 12-23 makes it
    Mon 01-11; a rain day on a Sunday (12-27) moves nothing; a holiday that rained (12-25)
    was a working day and so moves it too."""
    cal = SiteCalendar.from_site(lure)
    start = date(2026, 12, 18)
    assert cal.add_working_days(start, 15) == date(2027, 1, 8)
    assert cal.add_working_days(start, 15, {date(2026, 12, 23)}) == date(2027, 1, 11)
    assert cal.add_working_days(start, 15, {date(2026, 12, 27)}) == date(2027, 1, 8)
    assert cal.add_working_days(start, 15, {date(2026, 12, 25)}) == date(2027, 1, 11)


def test_the_rain_day_depth_is_one_positive_depth_read_at_the_sites_gauges(
    tmp_path: Path,
) -> None:
    both = load_problems(tmp_path, rain_gauge_site("mm", rain_day_in=0.5, rain_day_mm=12.7))
    assert both == ["site: set only one of rain_day_in, rain_day_mm"]
    (negative,) = load_problems(tmp_path, rain_gauge_site("mm", rain_day_in=-0.5))
    assert negative.startswith("site.rain_day_in: ")
    no_gauge = load_problems(tmp_path, rain_gauge_site("mm", gauge=False, rain_day_mm=12.7))
    assert no_gauge == [
        "site.rain_day_mm: rain days are read at the site's rain gauges: "
        "add a [[rain_gauges]] entry"
    ]
