"""Corrective actions as duties (kinds, reasons, citations and the reading of the law:
siltwatch/detections/corrective_actions.py).

An inspection record whose ``findings`` name practices opens one
``corrective_action`` duty per practice, due at the end of the N-th local day
after the inspection (N: the pack's ``corrective_action.due_days``, else the
site's ``[field_desk] corrective_action_days``). A later record naming the duty
(the closure) completes it; past the deadline it is ``corrective_action_overdue``.
"""

from __future__ import annotations

from analytics.calendar import SiteCalendar
from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.events import Inspection
from analytics.inspection_overdue import DutyNote, OverdueWatch, OverdueWords
from analytics.timers import Tag
from analytics.timeutil import iso
from siltwatch.config import SiteConfig
from siltwatch.detections.corrective_actions import ACTION, CorrectiveReason

WORDS = OverdueWords(
    ACTION.overdue_kind,
    "Corrective action",
    "it has not been closed",
    "Repair the practice and close the action in the field desk with a note and a photo.",
    "Corrective action closed",
    officer=False,  # no legal deadline behind the date: the site's people
)


class CorrectiveActionDetector(Detector):
    """One duty per practice a checklist found needing work, closed by a record naming it."""

    name = "corrective_actions"

    def __init__(self, site: SiteConfig, days: Cited, calendar: SiteCalendar) -> None:
        self.days = days
        self.practices = {p.id: p for p in site.practices}
        self.watch = OverdueWatch(site.site.name or site.site.id, calendar, WORDS)

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        t = inspection.t
        for practice in inspection.findings:
            due = self.watch.calendar.end_of_calendar_days(t, self.days.count)
            found = self.practices.get(practice)
            name = f"{found.name} ({practice})" if found is not None and found.name else practice
            note = DutyNote(
                label=f"corrective action on {name} found needing work by {inspection.inspector}",
                cite=self.days.cite,
                evidence={"practice": practice, "found_at": iso(t), "by": inspection.inspector},
            )
            rec = self.watch.create(
                ctx, ACTION.kind, CorrectiveReason.FINDING, practice, (t, due), note
            )
            ctx.schedule(self, due, rec.id)
        if inspection.duty is not None:
            named = ctx.duties.records.get(inspection.duty)
            if named is not None and named.kind == ACTION.kind and named.created_at <= t:
                self.watch.complete(named, t, inspection.inspector, ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if isinstance(tag, str):
            self.watch.check(tag, at, ctx)  # the tag is the duty id: its deadline passed

    def on_finish(self, end: int, ctx: Context) -> None:
        self.watch.refresh(end, ctx)


def due_days(site: SiteConfig, ctx_rule: Cited | None) -> Cited:
    """The pack's days where a law or permit sets them, else the site's own default."""
    if ctx_rule is not None:
        return ctx_rule
    days = site.field_desk.corrective_action_days
    return Cited(days, f"site default, {days} days ([field_desk] corrective_action_days)")


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """Always: a site without a field desk's findings opens no action."""
    days = due_days(site, Cited.of(ctx.rules.get("corrective_action.due_days")))
    return [CorrectiveActionDetector(site, days, SiteCalendar.from_site(site, ctx.rules))]
