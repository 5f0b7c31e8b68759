"""Quarterly self-inspections (reason ``quarterly``, subject = the site id).

Lake Lure 96.05 (B)(17)(c): one duty per calendar quarter (local time), due at
its end, for every quarter that starts before ``site.permanent_cover_at``
(quarterly self-inspections until permanent ground cover). The first quarter
is the one the clock starts in; its duty is created then.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from analytics.inspection_desk import DutyDesk
from analytics.inspection_overdue import DutyNote
from analytics.inspection_timers import QuarterTimer
from siltwatch.config import SiteConfig
from siltwatch.rulepacks import Rules
from siltwatch.vocabulary import DutyReason


@dataclass(frozen=True)
class QuarterlyRule:
    until: date | None
    cite: str

    @classmethod
    def from_site(cls, site: SiteConfig, rules: Rules) -> QuarterlyRule | None:
        value = rules.get("inspection.quarterly")
        if value is None or not bool(value.value):
            return None
        return cls(site.site.permanent_cover_at, value.cite())


def quarter_start(day: date) -> date:
    """The first day of the calendar quarter ``day`` is in."""
    return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


def next_quarter(start: date) -> date:
    """The first day of the quarter after the one starting on ``start``."""
    month = start.month + 3
    return date(start.year + (month > 12), (month - 1) % 12 + 1, 1)


class QuarterlyDuties:
    """A duty for each quarter; the start of each quarter creates its duty."""

    def __init__(self, rule: QuarterlyRule, site_id: str) -> None:
        self.rule = rule
        self.site_id = site_id

    def start(self, t: int, desk: DutyDesk) -> None:
        """The clock starts at ``t``: the quarter it falls in has its duty from now."""
        self.open_quarter(quarter_start(desk.calendar.local_date(t)), t, desk)

    def on_quarter(self, timer: QuarterTimer, at: int, desk: DutyDesk) -> None:
        self.open_quarter(timer.quarter, at, desk)

    def open_quarter(self, start: date, t: int, desk: DutyDesk) -> None:
        """Lake Lure 96.05 (B)(17)(c): quarterly self-inspections until permanent ground cover."""
        rule = self.rule
        if rule.until is not None and start >= rule.until:
            return
        nxt = next_quarter(start)
        cal = desk.calendar
        note = DutyNote(
            label=f"quarterly self-inspection for the quarter from {start.isoformat()}",
            cite=rule.cite,
            evidence={"quarter_start": start.isoformat()},
        )
        span = (max(t, cal.start_of_day(start)), cal.start_of_day(nxt))
        desk.open(DutyReason.QUARTERLY, self.site_id, span, note, t)
        desk.schedule(cal.start_of_day(nxt), QuarterTimer(nxt))
