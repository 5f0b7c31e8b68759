"""Quarterly self-inspections (reason ``quarterly``, subject = the site id).

Lake Lure 96.05 (B)(17)(c)(vi): one duty per calendar quarter (local time),
due at its end, "quarterly until the establishment of permanent ground
cover". The first quarter is the one the clock starts in; its duty is created
then. Permanent cover is the site's ``permanent_cover_at`` date, or every site
area covered in the site log: from then on no quarter has a duty, and the
quarter in which cover is reached is not owed either (its duty is closed at
the cover, not left to fall overdue). A quarter whose deadline had already
passed stays overdue: that inspection was missed. New disturbance of a covered
area starts the quarters again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from analytics.inspection_desk import KIND, DutyDesk
from analytics.inspection_overdue import DutyNote
from analytics.inspection_timers import CoverTimer, QuarterTimer
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
        self.stopped = False  # permanent cover reached

    def start(self, t: int, desk: DutyDesk) -> None:
        """The clock starts at ``t``: the quarter it falls in has its duty from now."""
        until = self.rule.until
        if until is not None:
            cover_at = desk.calendar.start_of_day(until)
            if cover_at <= t:
                self.stopped = True
                return
            desk.schedule(cover_at, CoverTimer(until))
        self.open_quarter(quarter_start(desk.calendar.local_date(t)), t, desk)

    def stop(self, t: int, why: str, desk: DutyDesk) -> None:
        """Permanent cover at ``t``: no more quarters, and the current one is not owed."""
        self.stopped = True
        for rec in desk.ctx.duties.open_at(t):
            if rec.kind == KIND and rec.reason == DutyReason.QUARTERLY and rec.due_at > t:
                desk.complete(rec, t, f"not required: {why}")

    def resume(self, t: int, desk: DutyDesk) -> None:
        """Ground opened again after permanent cover: the quarters start again."""
        if not self.stopped:
            return
        self.stopped = False
        self.open_quarter(quarter_start(desk.calendar.local_date(t)), t, desk)

    def on_quarter(self, timer: QuarterTimer, at: int, desk: DutyDesk) -> None:
        self.open_quarter(timer.quarter, at, desk)

    def open_quarter(self, start: date, t: int, desk: DutyDesk) -> None:
        """Lake Lure 96.05 (B)(17)(c): quarterly self-inspections until permanent ground cover."""
        rule = self.rule
        if self.stopped or (rule.until is not None and start >= rule.until):
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
