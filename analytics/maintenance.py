"""Maintenance on the plan's schedule (kinds and citations: siltwatch/detections/maintenance.py).

One duty at a time per practice: the detector keeps each practice's interval
and its open duty's id; the deadline of each duty is a timer.
"""

from __future__ import annotations

from analytics.calendar import SiteCalendar
from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.inspection_overdue import DutyNote, OverdueWatch, OverdueWords
from analytics.timers import Tag
from siltwatch.config import SiteConfig
from siltwatch.detections.maintenance import MAINTENANCE, MaintenanceReason
from siltwatch.maintenance import maintained_practice, parse_schedule
from siltwatch.rulepacks import RuleValue
from siltwatch.vocabulary import Milestone, SiteEvent

WORDS = OverdueWords(
    MAINTENANCE.overdue_kind,
    "Maintenance",
    "no maintained row of the site log records it",
    "Maintain the practice and record it in the site log (event maintained, detail: the practice).",
    "Maintenance done",
)


class MaintenanceDetector(Detector):
    """Each scheduled practice's next maintenance, from the site log."""

    name = "maintenance"

    def __init__(
        self, site: SiteConfig, schedule: str | None, program: str | None, cal: SiteCalendar
    ) -> None:
        self.schedule_cite, self.program_cite = schedule, program
        self.watch = OverdueWatch(site.site.name or site.site.id, cal, WORDS)
        self.completed = False  # the construction_completed milestone seen
        self.every: dict[str, int] = {}  # practice -> days between maintenances
        self.cite: dict[str, str] = {}  # practice -> the rule its schedule was entered under
        self.open: dict[str, str] = {}  # practice -> its open duty's id

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event == SiteEvent.MILESTONE and entry.detail == Milestone.CONSTRUCTION_COMPLETED:
            self.completed = True
        elif entry.event == SiteEvent.MAINTENANCE_SCHEDULED:
            self._scheduled(entry, ctx)
        elif entry.event == SiteEvent.MAINTAINED:
            practice = maintained_practice(entry.detail)
            if practice in self.every:
                self._end(practice, entry, ctx, None)
                self._next(practice, entry.t, ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if isinstance(tag, str):
            self.watch.check(tag, at, ctx)  # the tag is the duty id: its deadline passed

    def on_finish(self, end: int, ctx: Context) -> None:
        self.watch.refresh(end, ctx)

    def _scheduled(self, entry: SiteLogEntry, ctx: Context) -> None:
        schedule = parse_schedule(entry.detail)
        practice = schedule.practice
        cite = self.program_cite if self.completed else self.schedule_cite
        if schedule.every_days is None or cite is None:
            if practice in self.every:
                why = "practice removed" if schedule.every_days is None else "no schedule rule"
                self._end(practice, entry, ctx, f"Not required ({why})")
                del self.every[practice]
            return
        self._end(practice, entry, ctx, "Not required (a new schedule replaces it)")
        self.every[practice], self.cite[practice] = schedule.every_days, cite
        self._next(practice, entry.t, ctx)

    def _end(self, practice: str, entry: SiteLogEntry, ctx: Context, why: str | None) -> None:
        duty_id = self.open.pop(practice, None)
        rec = None if duty_id is None else ctx.duties.records.get(duty_id)
        if rec is not None:
            self.watch.complete(rec, entry.t, entry.by, ctx, done=why)

    def _next(self, practice: str, t: int, ctx: Context) -> None:
        days, cite = self.every[practice], self.cite[practice]
        due = self.watch.calendar.end_of_calendar_days(t, days)
        note = DutyNote(
            label=f"maintenance of {practice}, every {days} days on the plan's schedule",
            cite=cite,
            evidence={"practice": practice, "every_days": days},
        )
        rec = self.watch.create(
            ctx, MAINTENANCE.kind, MaintenanceReason.SCHEDULED, practice, (t, due), note
        )
        self.open[practice] = rec.id
        ctx.schedule(self, due, rec.id)


def cite_of(rule: RuleValue | None) -> str | None:
    return rule.cite() if rule is not None and rule.value is True else None


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when the site's packs ask for the schedule or the program."""
    rules = ctx.rules
    schedule = cite_of(rules.get("maintenance.schedule"))
    program = cite_of(rules.get("maintenance.program"))
    if schedule is None and program is None:
        return []
    return [MaintenanceDetector(site, schedule, program, SiteCalendar.from_site(site, ctx.rules))]
