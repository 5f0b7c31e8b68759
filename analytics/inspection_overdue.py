"""Overdue duties: the alert that tells the officer a duty's deadline passed.

A duty past due raises a ``<duty kind>_overdue`` alert (``inspection_overdue``,
``stabilization_overdue``; critical: the alerts router sends it to the
officer), dated at the deadline, that stays open until the duty is completed
(an inspection, a cover recorded in the site log); at the end of a record every
open one is refreshed with how overdue it is by then. Every regime's duties end
here, so the messages read the same whatever rule created the duty: the regime
leaves a :class:`DutyNote` (what the duty is, under which rule) for each duty
it creates, and the duty kind's :class:`OverdueWords` say what completes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from analytics.calendar import SiteCalendar
from analytics.detector import Context
from analytics.episodes import DutyRecord
from analytics.timeutil import MS_PER_H, iso
from siltwatch.detections.inspections import INSPECTION
from siltwatch.officials import officer_notified
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity

ALERT_KIND = INSPECTION.overdue_kind
REMINDER_DAYS = 30  # a duty counted in years opens this many local days before its deadline


@dataclass(frozen=True)
class OverdueWords:
    """How the alerts of one duty kind speak: its alert kind, and what completes it."""

    alert_kind: str
    title: str  # "Inspection"
    missing: str  # "no inspection has been recorded"
    todo: str  # "Inspect the site and record the inspection."
    done: str  # "Inspection done"
    officer: bool = True  # whether the officer hears it (a siltwatch-default reminder: no)


INSPECTION_WORDS = OverdueWords(
    ALERT_KIND,
    "Inspection",
    "no inspection has been recorded",
    "Inspect the site and record the inspection.",
    "Inspection done",
)


@dataclass(frozen=True)
class DutyNote:
    """What the regime that created a duty says about it (for messages and evidence)."""

    label: str
    cite: str
    evidence: dict[str, Any]


def fmt_hours(ms: int) -> str:
    """A duration as people say it: hours up to two days, days beyond."""
    hours = ms / MS_PER_H
    if hours >= 48:
        return f"{hours / 24:.1f} days"
    return f"{hours:.1f} h"


class OverdueWatch:
    """The notes of every duty of one kind, and their overdue alerts."""

    def __init__(
        self, site_name: str, calendar: SiteCalendar, words: OverdueWords = INSPECTION_WORDS
    ) -> None:
        self.site_name = site_name
        self.calendar = calendar
        self.words = words
        self.notes: dict[str, DutyNote] = {}  # duty id -> note, in creation order

    def create(
        self,
        ctx: Context,
        kind: str,
        reason: str,
        subject: str,
        span: tuple[int, int],
        note: DutyNote,
    ) -> DutyRecord:
        """Create the duty (``span`` = created at, due at) under the note's rule, and keep the
        note for its overdue alert: the duty and its alert cite the same rule."""
        created_at, due_at = span
        rec = ctx.duties.create(
            kind=kind,
            reason=reason,
            subject=subject,
            created_at=created_at,
            due_at=due_at,
            rule=note.cite,
        )
        self.notes[rec.id] = note
        return rec

    def reminder_opens(self, due: int) -> int:
        """When a duty counted in years, due at ``due``, opens as a reminder: the start of
        the local day ``REMINDER_DAYS`` before the day of its deadline."""
        cal = self.calendar
        return cal.at_local(cal.local_date(due) - timedelta(days=REMINDER_DAYS))

    def check(self, duty_id: str, at: int, ctx: Context) -> None:
        """The deadline of ``duty_id`` is ``at``: open its alert unless it was done."""
        rec = ctx.duties.records.get(duty_id)
        if rec is None or rec.completed_at is not None or rec.overdue:
            return
        ctx.duties.mark_overdue(duty_id, at)
        self._alert(rec, at, ctx, refresh=False)

    def complete(
        self, rec: DutyRecord, t: int, inspector: str, ctx: Context, done: str | None = None
    ) -> bool:
        """Complete the duty at ``t`` (by an inspection, or by what the site log says) and
        resolve its alert; False if it was already done. ``done`` replaces the words'
        "... done" where the duty ended otherwise (e.g. work resumed in an idle area)."""
        if ctx.duties.complete(rec.id, t, inspector) is None:
            return False
        note = self.notes.get(rec.id)
        if note is not None:
            late = t - rec.due_at
            how = f", {fmt_hours(late)} late" if late > 0 else ""
            ctx.alerts.resolve(
                self.words.alert_kind,
                rec.id,
                t,
                message=(
                    f"{done or self.words.done} at {self.site_name}: {note.label} (duty {rec.id}) "
                    "was due "
                    f"{self._local(rec.due_at)} under {note.cite}; completed {self._local(t)} "
                    f"by {inspector}{how}."
                ),
                evidence=self._evidence(rec, t) | {"completed_at": iso(t), "inspector": inspector},
            )
        return True

    def refresh(self, end: int, ctx: Context) -> None:
        """The record ends at ``end``: each open alert says how overdue its duty is by then."""
        for duty_id in list(self.notes):
            rec = ctx.duties.records.get(duty_id)
            if rec is None or rec.completed_at is not None or not rec.overdue:
                continue
            self._alert(rec, end, ctx, refresh=True)

    def _alert(self, rec: DutyRecord, now: int, ctx: Context, *, refresh: bool) -> None:
        note = self.notes[rec.id]
        late = now - rec.due_at
        how = (
            f"It is {fmt_hours(late)} overdue at {self._local(now)}."
            if late > 0
            else "It is overdue from now."
        )
        words = self.words
        told = f"{officer_notified(ctx.rules)} " if words.officer else ""
        message = (
            f"{words.title} overdue at {self.site_name}: {note.label} (duty {rec.id}) was due "
            f"{self._local(rec.due_at)} under {note.cite}, and {words.missing}. "
            f"{how} {told}{words.todo}"
        )
        evidence = self._evidence(rec, now)
        if refresh:
            ctx.alerts.update(words.alert_kind, rec.id, now, message=message, evidence=evidence)
        else:
            ctx.alerts.open(
                words.alert_kind,
                rec.id,
                rec.due_at,
                Severity.CRITICAL,
                rule=note.cite,
                message=message,
                evidence=evidence,
            )

    def _evidence(self, rec: DutyRecord, now: int) -> dict[str, Any]:
        return {
            "duty": rec.id,
            "reason": rec.reason,
            "subject": rec.subject,
            "created_at": iso(rec.created_at),
            "due_at": iso(rec.due_at),
            "overdue_h": round(max(0, now - rec.due_at) / MS_PER_H, 2),
            "as_of": iso(now),
        } | self.notes[rec.id].evidence

    def _local(self, t: int) -> str:
        return local_time(t, self.calendar.zone, weekday=True)
