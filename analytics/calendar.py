"""A site's calendar: local days, weekends, holidays and business hours.

Inspection deadlines are written in the jurisdiction's day arithmetic, in the
site's local time: "every 7 calendar days", "by the start of the next business
day" (NCG01 Part III §A), "working days ... exclusive of Saturday and Sunday"
(Lake Lure 96.03, which does not exclude holidays: the site's holidays count
for business days only). Event times are UTC milliseconds; this module turns local
days and hours into them, honouring DST through the IANA zone of the site.

Everything here is plain data (the zone is kept by name), so a detector may
hold a calendar in its snapshotted state.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from analytics.timeutil import to_ms
from siltwatch.config import SiteConfig
from siltwatch.rulepacks import Rules, site_rules

WEEKDAYS: dict[str, int] = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
DEFAULT_BUSINESS_HOURS = "08:00-17:00"


def anniversary(day: date, years: int) -> date:
    """``day`` ``years`` years on; 29 February falls on 28 February in a common year."""
    try:
        return day.replace(year=day.year + years)
    except ValueError:
        return day.replace(year=day.year + years, day=28)


def parse_business_hours(text: str) -> tuple[int, int]:
    """``"08:00-17:00"`` as (start, end) minutes after local midnight."""
    try:
        start_text, end_text = text.split("-")
        start = time.fromisoformat(start_text.strip())
        end = time.fromisoformat(end_text.strip())
    except ValueError:
        raise ValueError(f"business hours {text!r}: expected 'HH:MM-HH:MM'") from None
    start_min, end_min = start.hour * 60 + start.minute, end.hour * 60 + end.minute
    if end_min <= start_min:
        raise ValueError(f"business hours {text!r}: the end must be after the start")
    return start_min, end_min


def parse_weekend(names: list[str]) -> tuple[int, ...]:
    """``["sat", "sun"]`` as sorted weekday numbers (Monday = 0)."""
    days = []
    for name in names:
        key = name.strip().lower()[:3]
        if key not in WEEKDAYS:
            raise ValueError(f"weekend day {name!r}: expected one of {', '.join(WEEKDAYS)}")
        days.append(WEEKDAYS[key])
    return tuple(sorted(set(days)))


@dataclass(frozen=True)
class SiteCalendar:
    """Local-time day arithmetic for one site."""

    zone_name: str = "UTC"
    weekend: tuple[int, ...] = (5, 6)
    holidays: tuple[date, ...] = ()
    business_start_min: int = 8 * 60
    business_end_min: int = 17 * 60

    @classmethod
    def from_site(cls, site: SiteConfig, rules: Rules | None = None) -> SiteCalendar:
        """The calendar from ``site.timezone``, ``site.holidays`` and the ``calendar.*`` rules."""
        rules = rules if rules is not None else site_rules(site)
        weekend_rule = rules.get("calendar.weekend")
        hours_rule = rules.get("calendar.business_hours")
        start, end = parse_business_hours(
            str(hours_rule.value) if hours_rule is not None else DEFAULT_BUSINESS_HOURS
        )
        return cls(
            zone_name=site.site.timezone,
            weekend=parse_weekend(list(weekend_rule.value)) if weekend_rule else (5, 6),
            holidays=tuple(sorted(set(site.site.holidays))),
            business_start_min=start,
            business_end_min=end,
        )

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.zone_name)

    # --- instants and local days -------------------------------------------------

    def local(self, t: int) -> datetime:
        """The instant ``t`` (epoch ms) as an aware local datetime."""
        return datetime.fromtimestamp(t / 1000, tz=self.zone)

    def local_date(self, t: int) -> date:
        return self.local(t).date()

    def at_local(self, day: date, minutes: int = 0) -> int:
        """Epoch ms of local wall time ``day`` + ``minutes`` after midnight.

        A wall time that does not exist (inside a spring-forward gap) is read
        as the instant after the gap; an ambiguous one (fall back) as its first
        occurrence, which is the earlier deadline.
        """
        naive = datetime.combine(day, time()) + timedelta(minutes=minutes)
        # fold=0 (PEP 495): a gap time takes the offset before the gap, which lands
        # after it; an ambiguous time takes its first occurrence.
        return to_ms(naive.replace(tzinfo=self.zone, fold=0))

    def start_of_day(self, day: date) -> int:
        return self.at_local(day)

    def end_of_day(self, day: date) -> int:
        """The deadline "by the end of ``day``": the local midnight that ends it."""
        return self.at_local(day + timedelta(days=1))

    def end_of_calendar_days(self, t: int, days: int) -> int:
        """End of the local calendar day ``days`` days after the day of ``t``."""
        return self.end_of_day(self.local_date(t) + timedelta(days=days))

    # --- working and business days -----------------------------------------------

    def _some_day_counts(self) -> None:
        """Refuse a calendar whose weekend is the whole week: counting N working or
        business days in it would never end. Packs and site overrides with such a
        weekend are refused at load (siltwatch/rulepacks.py check_weekend); this
        guards a calendar built by hand."""
        if len(set(self.weekend)) >= len(WEEKDAYS):
            raise ValueError(
                "calendar.weekend names all seven days: no working or business day is left"
            )

    def is_weekend(self, day: date) -> bool:
        return day.weekday() in self.weekend

    def is_working_day(self, day: date) -> bool:
        """Lake Lure 96.03 "Working Days": days excluding Saturday and Sunday (the weekend)."""
        return not self.is_weekend(day)

    def is_business_day(self, day: date) -> bool:
        """A working day that is not one of the site's holidays."""
        return not self.is_weekend(day) and day not in self.holidays

    def add_working_days(self, day: date, n: int, skip: Collection[date] = ()) -> date:
        """The ``n``-th working day after ``day``: Lake Lure 96.03 "Working Days. Days
        exclusive of Saturday and Sunday during which weather conditions or soil
        conditions permit land disturbing activity". Weekends do not count, nor the
        days in ``skip`` (days whose weather or soil did not permit the work); the
        site's holidays DO count: 96.03 does not exclude them (they matter only to
        business-day rules, :meth:`add_business_days`).

        A day in ``skip`` that is a weekend day was not counted anyway: it does not
        push the result out a second time.
        """
        return self._count_days(day, n, skip, self.is_working_day)

    def add_business_days(self, day: date, n: int, skip: Collection[date] = ()) -> date:
        """The ``n``-th business day after ``day``: weekends and the site's holidays do
        not count, nor the days in ``skip``.

        A day in ``skip`` that is a weekend day or a holiday was not counted anyway:
        it does not push the result out a second time.
        """
        return self._count_days(day, n, skip, self.is_business_day)

    def _count_days(
        self, day: date, n: int, skip: Collection[date], counts: Callable[[date], bool]
    ) -> date:
        """The ``n``-th day after ``day`` that ``counts`` and is not in ``skip``."""
        if n < 0:
            raise ValueError("n must be >= 0")
        self._some_day_counts()
        current = day
        while n > 0:
            current += timedelta(days=1)
            if counts(current) and current not in skip:
                n -= 1
        return current

    def in_business_hours(self, t: int) -> bool:
        """Whether ``t`` falls inside business hours on a business day (local time)."""
        loc = self.local(t)
        if not self.is_business_day(loc.date()):
            return False
        minute = loc.hour * 60 + loc.minute
        return self.business_start_min <= minute < self.business_end_min

    def next_business_day(self, day: date) -> date:
        """The first business day after ``day``."""
        current = day + timedelta(days=1)
        # A year of holidays cannot exhaust 400 days; the bound only guards a broken calendar.
        for _ in range(400):
            if self.is_business_day(current):
                return current
            current += timedelta(days=1)
        raise ValueError("no business day within 400 days: check calendar.weekend and holidays")

    def start_of_next_business_day(self, t: int) -> int:
        """Business-hours opening on the first business day after the local day of ``t``."""
        return self.at_local(self.next_business_day(self.local_date(t)), self.business_start_min)
