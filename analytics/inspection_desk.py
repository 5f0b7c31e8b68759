"""Where the inspection regimes create duties, set their timers and complete duties.

Each regime (routine, twice-weekly, storm, quarterly) decides *which* duty is
due *when*; creating it in the engine's DutyBook, arming its deadline (an
overdue alert when it passes, :mod:`analytics.inspection_overdue`) and
scheduling the regime's typed timers (:mod:`analytics.inspection_timers`) are
the same for all of them and done here. A :class:`DutyDesk` is made by the
inspection detector for one engine callback: it is not detector state (it
holds the context and the detector only to reach the engine).
"""

from __future__ import annotations

from dataclasses import dataclass

from analytics.calendar import SiteCalendar
from analytics.detector import Context, Detector
from analytics.episodes import DutyRecord
from analytics.events import Inspection
from analytics.inspection_overdue import DutyNote, OverdueWatch
from analytics.inspection_timers import DueTimer, InspectionTimer
from siltwatch.detections.inspections import INSPECTION
from siltwatch.vocabulary import DutyReason

KIND = INSPECTION.kind


def completed_by(inspection: Inspection, rec: DutyRecord) -> bool:
    """Whether ``inspection`` completes the inspection duty ``rec`` — the one rule every
    detector holding inspection duties applies: a record naming no duty completes every
    one created strictly before it (one created at the same instant was created by it or
    after it); a record naming a duty completes only that one, if it exists by then."""
    if rec.kind != KIND or rec.completed_at is not None:
        return False
    if inspection.duty is None:
        return rec.created_at < inspection.t
    return inspection.duty == rec.id and rec.created_at <= inspection.t


@dataclass(frozen=True, slots=True)
class DutyDesk:
    """The engine as the inspection regimes see it during one callback."""

    ctx: Context
    owner: Detector  # the detector whose timers these are
    watch: OverdueWatch

    def create(
        self, reason: DutyReason, subject: str, span: tuple[int, int], note: DutyNote
    ) -> DutyRecord:
        """Create the duty (``span`` = created at, due at) under the note's rule."""
        return self.watch.create(self.ctx, KIND, reason, subject, span, note)

    def open(
        self, reason: DutyReason, subject: str, span: tuple[int, int], note: DutyNote, now: int
    ) -> DutyRecord:
        """Create the duty and arm its deadline, as of event time ``now``."""
        rec = self.create(reason, subject, span, note)
        self.arm(rec, now)
        return rec

    def arm(self, rec: DutyRecord, now: int) -> None:
        """Watch the duty's deadline: at once if it already passed, else by a timer."""
        if rec.due_at <= now:
            self.watch.check(rec.id, rec.due_at, self.ctx)
        else:
            self.schedule(rec.due_at, DueTimer(rec.id))

    @property
    def calendar(self) -> SiteCalendar:
        return self.watch.calendar

    def schedule(self, at: int, timer: InspectionTimer) -> None:
        self.ctx.schedule(self.owner, at, timer)

    def complete(self, rec: DutyRecord, t: int, inspector: str) -> bool:
        """Complete the duty by an inspection at ``t``; False if it was already done."""
        return self.watch.complete(rec, t, inspector, self.ctx)

    def record(self, duty_id: str | None) -> DutyRecord | None:
        return None if duty_id is None else self.ctx.duties.records.get(duty_id)
