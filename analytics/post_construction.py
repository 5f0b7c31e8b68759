"""The post-construction calendar (kinds, reasons and citations: siltwatch/detections/post_construction.py).

The site log's ``milestone`` row ``construction_completed`` starts it (the
first such row; later ones change nothing). Each duty the site's packs ask for
is a ``post_construction`` duty, subject the site, due at the end of a local
day of the site's calendar:

- ``annual_report`` (``post_construction.annual_report_years``, Lake George 1):
  the k-th report is due at the end of the k-th anniversary of the day
  construction was completed (a 29 February falls on 28 February), every year;
- ``guarantee_inspection`` (``post_construction.guarantee_inspection_years``:
  Lake George 2, Big Flats 1): due at the end of that anniversary, once;
- ``engineer_inspection`` (``post_construction.engineer_inspection_years``, Big
  Flats 5): due at the end of that anniversary; once it is done, the next is
  due at the same interval after the day of that inspection;
- ``engineer_report`` (``post_construction.engineer_report_days``, Big Flats
  30): created by the inspection that completes an engineer inspection, due at
  the end of the 30th local day after it.

A duty whose period is counted in years opens as a reminder 30 local days
before its deadline (``created_at``: the start of that local day), not at the
milestone; an inspection record naming the duty (``Inspection.duty``, the
``duty`` column of the inspections CSV) completes it, as in
analytics/inspections.py — an inspection dated before the duty exists cannot.
An inspection naming no duty (a routine site inspection) completes none of
them: each is a particular inspection (the town's, a Professional Engineer's)
or a report, which the record must name. A duty past its deadline raises
``post_construction_overdue`` (analytics/inspection_overdue.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from analytics.calendar import SiteCalendar
from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.events import Inspection, SiteLogEntry
from analytics.inspection_overdue import DutyNote, OverdueWatch, OverdueWords
from analytics.timers import DutyDue, Tag, TimerTag
from analytics.timeutil import iso
from siltwatch.config import SiteConfig
from siltwatch.detections.post_construction import PostConstructionKind, PostConstructionReason
from siltwatch.vocabulary import Milestone, SiteEvent

Reason = PostConstructionReason
KIND = PostConstructionKind.POST_CONSTRUCTION
REMINDER_DAYS = 30  # a duty counted in years opens this many local days before its deadline
WORDS = OverdueWords(
    PostConstructionKind.OVERDUE,
    "Post-construction duty",
    "no inspection record names it",
    "Carry it out and record it in the inspections record, naming the duty id.",
    "Post-construction duty done",
)


@dataclass(frozen=True, slots=True)
class ReminderOpens(TimerTag):
    """The ``n``-th duty of ``reason`` opens (30 local days before its deadline ``due``)."""

    reason: Reason
    n: int
    due: int

    def text(self) -> str:
        return f"open|{self.reason!s}|{self.n}|{self.due}"


@dataclass(frozen=True)
class CalendarRules:
    """The periods the site's packs set (None: that duty is not owed here)."""

    annual_report: Cited | None
    guarantee: Cited | None
    engineer: Cited | None
    engineer_report: Cited | None

    def any(self) -> bool:
        return any(p is not None for p in (self.annual_report, self.guarantee, self.engineer))


def anniversary(day: date, years: int) -> date:
    """``day`` ``years`` years on; 29 February falls on 28 February in a common year."""
    try:
        return day.replace(year=day.year + years)
    except ValueError:
        return day.replace(year=day.year + years, day=28)


class PostConstructionDetector(Detector):
    """Plans, opens, completes and watches the post-construction duties."""

    name = "post-construction"

    def __init__(self, site: SiteConfig, rules: CalendarRules, calendar: SiteCalendar) -> None:
        self.site_id = site.site.id
        self.rules = rules
        self.watch = OverdueWatch(site.site.name or site.site.id, calendar, WORDS)
        self.completed_at: int | None = None  # the construction_completed milestone
        self.completed_day: date | None = None  # its local day: anniversaries count from it
        self.engineer_done = 0  # engineer inspections completed

    @property
    def calendar(self) -> SiteCalendar:
        return self.watch.calendar

    # --- engine callbacks ----------------------------------------------------------

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event != SiteEvent.MILESTONE or entry.detail != Milestone.CONSTRUCTION_COMPLETED:
            return
        if self.completed_at is not None:
            return  # the first completion starts the calendar
        t = entry.t
        day = self.calendar.local_date(t)
        self.completed_at, self.completed_day = t, day
        rules = self.rules
        if rules.annual_report is not None:
            self._plan(Reason.ANNUAL_REPORT, 1, self._after(day, rules.annual_report), t, ctx)
        if rules.guarantee is not None:
            self._plan(Reason.GUARANTEE_INSPECTION, 1, self._after(day, rules.guarantee), t, ctx)
        if rules.engineer is not None:
            self._plan(Reason.ENGINEER_INSPECTION, 1, self._after(day, rules.engineer), t, ctx)

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        if inspection.duty is None:
            return  # a site inspection completes none of these (see the module docstring)
        t = inspection.t
        rec = ctx.duties.records.get(inspection.duty)
        if rec is None or rec.kind != KIND or rec.created_at > t:
            return
        if not self.watch.complete(rec, t, inspection.inspector, ctx):
            return
        engineer, report = self.rules.engineer, self.rules.engineer_report
        if rec.reason == Reason.ENGINEER_INSPECTION and engineer is not None:
            day = self.calendar.local_date(t)
            if report is not None:
                label = (
                    f"the engineer's written report of the inspection of {day.isoformat()} "
                    f"to the town within {report.count} days"
                )
                due = self.calendar.end_of_calendar_days(t, report.count)
                self._create(Reason.ENGINEER_REPORT, t, due, report, label, ctx)
            done = self.engineer_done = self.engineer_done + 1
            self._plan(Reason.ENGINEER_INSPECTION, done + 1, self._after(day, engineer), t, ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if isinstance(tag, DutyDue):  # a deadline: the tag names the duty
            self.watch.check(tag.duty_id, at, ctx)
        elif isinstance(tag, ReminderOpens):
            self._open(tag.reason, tag.n, tag.due, at, ctx)

    def on_finish(self, end: int, ctx: Context) -> None:
        self.watch.refresh(end, ctx)

    # --- planning ---------------------------------------------------------------------

    def _after(self, day: date, period: Cited) -> int:
        """The deadline ``period`` years after ``day``: the end of that anniversary."""
        return self.calendar.end_of_day(anniversary(day, period.count))

    def _plan(self, reason: Reason, n: int, due: int, after: int, ctx: Context) -> None:
        """Open the ``n``-th duty of ``reason`` 30 local days before its deadline (at
        ``after`` if that is later)."""
        cal = self.calendar
        opens = cal.at_local(cal.local_date(due) - timedelta(days=REMINDER_DAYS))
        if opens <= after:
            self._open(reason, n, due, after, ctx)
        else:
            ctx.schedule(self, opens, ReminderOpens(reason, n, due))

    def _open(self, reason: Reason, n: int, due: int, at: int, ctx: Context) -> None:
        rules, since = self.rules, self._since()
        if reason == Reason.ANNUAL_REPORT and rules.annual_report is not None:
            label = (
                f"annual report {n} to the town on the operation and maintenance of the "
                f"stormwater facilities in the year to {self._day_of(due)} ({since})"
            )
            self._create(reason, at, due, rules.annual_report, label, ctx)
            day = self.completed_day
            if day is not None:  # the report recurs every year, counted from the completion
                years = (n + 1) * rules.annual_report.count
                next_due = self.calendar.end_of_day(anniversary(day, years))
                self._plan(reason, n + 1, next_due, at, ctx)
        elif reason == Reason.GUARANTEE_INSPECTION and rules.guarantee is not None:
            label = (
                f"the {rules.guarantee.count}-year inspection of the stormwater facilities "
                f"before the town releases the performance guarantee ({since})"
            )
            self._create(reason, at, due, rules.guarantee, label, ctx)
        elif reason == Reason.ENGINEER_INSPECTION and rules.engineer is not None:
            label = (
                f"engineer inspection {n}: the stormwater control measures inspected by a "
                f"licensed Professional Engineer at least once in every "
                f"{rules.engineer.count}-year period ({since})"
            )
            self._create(reason, at, due, rules.engineer, label, ctx)

    def _create(
        self, reason: Reason, at: int, due: int, rule: Cited, label: str, ctx: Context
    ) -> None:
        completed = self.completed_at
        note = DutyNote(
            label=label,
            cite=rule.cite,
            evidence={"construction_completed": None if completed is None else iso(completed)},
        )
        rec = self.watch.create(ctx, KIND, reason, self.site_id, (at, due), note)
        ctx.schedule(self, due, DutyDue(rec.id))

    # --- days ---------------------------------------------------------------------------

    def _day_of(self, due: int) -> str:
        """The local day a deadline ends (it is the midnight after that day)."""
        return (self.calendar.local_date(due) - timedelta(days=1)).isoformat()

    def _since(self) -> str:
        day = self.completed_day
        return "construction completed" + ("" if day is None else f" on {day.isoformat()}")


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs set a post-construction duty."""
    rules = ctx.rules
    found = CalendarRules(
        annual_report=Cited.of(rules.get("post_construction.annual_report_years")),
        guarantee=Cited.of(rules.get("post_construction.guarantee_inspection_years")),
        engineer=Cited.of(rules.get("post_construction.engineer_inspection_years")),
        engineer_report=Cited.of(rules.get("post_construction.engineer_report_days")),
    )
    if not found.any():
        return []
    return [PostConstructionDetector(site, found, SiteCalendar.from_site(site, rules))]
