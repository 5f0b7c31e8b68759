"""Inspection duties: what the permit says must be inspected, and by when.

Duties come from the site's rule packs (``inspection.*``) and are kept in the
engine's DutyBook; a recorded inspection completes them; a duty past due
raises an ``inspection_overdue`` alert that stays open until the inspection is
recorded (:mod:`analytics.inspection_overdue`).

One detector, :class:`InspectionDetector`, runs the site's regimes, each in
its own module with its rule and its citations:

* storm duties after qualifying rain (CGP 2022 Part 4.2, NCG01 Part III §A):
  :mod:`analytics.inspection_storm`, fed by the rain detector's ``StormEnded``;
* routine duties every N calendar days: :mod:`analytics.inspection_routine`,
  or on a large site NY GP Part IV.C's twice-weekly cadence instead:
  :mod:`analytics.inspection_twice_weekly`; where the pack says so (Lake George
  §148-10 A), from the first disturbance to final stabilization, twice weekly
  while the site log shows more than 5 acres open: :mod:`analytics.inspection_routine_life`;
* quarterly self-inspections until permanent ground cover (Lake Lure 96.05
  (B)(17)(c)(vi)): :mod:`analytics.inspection_quarterly` — permanent cover is
  the configured date, or every site area covered in the site log;
* phase inspections after each phase milestone of the site log (96.05
  (B)(17)(c)(i)-(v)): :mod:`analytics.inspection_phase`.

They share one detector because an inspection is one event for all of them:
it completes the inspection duties that were open at its time, of whatever
regime — created strictly before it (a duty created at the same instant was
created by it or after it); ``Inspection.duty`` names one duty: only that one
(if it exists by then and is not done) — and a completion in one regime can
restart another's clock (a storm inspection resets the routine one under
NCG01). Their timers are typed (:mod:`analytics.inspection_timers`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from analytics.calendar import SiteCalendar
from analytics.detector import Context, Detector, QuietReading
from analytics.episodes import DutyRecord
from analytics.events import DetectorEvent, Inspection, SensorReading, SiteLogEntry
from analytics.inspection_desk import KIND as KIND
from analytics.inspection_desk import DutyDesk, completed_by
from analytics.inspection_overdue import ALERT_KIND as ALERT_KIND
from analytics.inspection_overdue import OverdueWatch
from analytics.inspection_phase import PhaseDuties, area_phase_rules, phase_rule
from analytics.inspection_quarterly import QuarterlyDuties, QuarterlyRule
from analytics.inspection_record import RecordRule, check_record
from analytics.inspection_routine import RoutineCadence, routine_rule
from analytics.inspection_routine_life import Change, RoutineLife
from analytics.inspection_storm import StormDuties, storm_lookback_ms, storm_rule
from analytics.inspection_timers import (
    CoverTimer,
    DueTimer,
    QuarterTimer,
    SecondTimer,
    WeekTimer,
)
from analytics.inspection_twice_weekly import TwiceWeeklyCadence, TwiceWeeklyRule
from analytics.rain import RainDetector, StormEnded
from analytics.timers import Tag
from analytics.timeutil import MS_PER_H
from siltwatch.config import SiteConfig
from siltwatch.detections import corrective_actions
from siltwatch.rulepacks import Rules
from siltwatch.vocabulary import DutyReason, SiteEvent, is_paperwork


class InspectionDetector(Detector):
    """Runs the site's inspection regimes: duties, completions, overdue alerts."""

    name = "inspection-duties"
    handles = (StormEnded,)  # finished storms, from the rain detector

    def __init__(self, sensors: list[str], watch: OverdueWatch) -> None:
        self._sensors = sensors
        self.watch = watch
        self.started_at: int | None = None
        self.routine: RoutineCadence | TwiceWeeklyCadence | None = None
        self.storm: StormDuties | None = None
        self.quarterly: QuarterlyDuties | None = None
        self.phase: PhaseDuties | None = None
        self.record: RecordRule | None = None  # what an inspection record must hold
        self.areas: set[str] = set()  # the site's areas
        self.covered: set[str] = set()  # those with permanent cover, per the site log
        # inspection.routine_by_site_log: the routine span and cadence from the site log
        self.life: RoutineLife | None = None
        self.weekly: RoutineCadence | None = None
        self.twice: TwiceWeeklyCadence | None = None
        self.twice_epoch: date | None = None  # the period the current twice-weekly run began

    @classmethod
    def from_site(
        cls, site: SiteConfig, rules: Rules, calendar: SiteCalendar
    ) -> InspectionDetector:
        det = cls(list(site.sensors()), OverdueWatch(site.site.name or site.site.id, calendar))
        site_id = site.site.id
        twice = TwiceWeeklyRule.from_site(site, rules)
        routine = routine_rule(rules)
        life = rules.get("inspection.routine_by_site_log")
        if life is not None and life.value is True and site.areas and routine is not None:
            det.life = RoutineLife({a.id: a.acres for a in site.areas}, life.cite())
            det.weekly = det.routine = RoutineCadence(routine, site_id)
            by_acres = TwiceWeeklyRule.of_rules(rules)
            det.twice = None if by_acres is None else TwiceWeeklyCadence(by_acres, site_id)
        elif twice is not None:  # NY GP Part IV.C replaces the routine cadence on a large site
            det.routine = TwiceWeeklyCadence(twice, site_id)
        elif routine is not None:
            det.routine = RoutineCadence(routine, site_id)
        storm = storm_rule(rules)
        if storm is not None:
            det.storm = StormDuties(storm, storm_lookback_ms(site, rules))
        quarterly = QuarterlyRule.from_site(site, rules)
        if quarterly is not None:
            det.quarterly = QuarterlyDuties(quarterly, site_id)
        phase = phase_rule(rules)
        if phase is not None:
            det.phase = PhaseDuties(phase, area_phase_rules(rules))
        det.record = RecordRule.from_rules(rules)
        det.areas = {a.id for a in site.areas}
        return det

    def has_duties(self) -> bool:
        regimes = (self.routine, self.storm, self.quarterly, self.phase)
        return any(x is not None for x in regimes)

    def sensors(self) -> Iterable[str]:
        # Every sensor: the routine clock starts at the first reading of any of them.
        return list(self._sensors)

    def quiet_reading(self) -> QuietReading:
        # A reading only starts the routine clock: after the first one it changes nothing.
        return QuietReading.STARTS_CLOCK if self.started_at is None else QuietReading.NOTHING

    # --- engine callbacks ---------------------------------------------------------------

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        if self.started_at is None:
            self._start(reading.t, self._desk(ctx))

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        t, desk = inspection.t, self._desk(ctx)
        if self.started_at is None:
            self._start(t, desk)
        if self.storm is not None:
            self.storm.remember(t, inspection.inspector, inspection.duty)
        if inspection.duty is None:
            candidates = ctx.duties.open_at(t)
        else:
            named = desk.record(inspection.duty)
            candidates = [] if named is None else [named]
        targets = [r for r in candidates if completed_by(inspection, r)]
        done = [r for r in targets if desk.complete(r, t, inspection.inspector)]
        self._after_completions(done, t, inspection.inspector, desk)
        named = ctx.duties.records.get(inspection.duty) if inspection.duty else None
        closes_action = named is not None and named.kind == corrective_actions.ACTION.kind
        if self.record is not None and not closes_action:  # a closure is not an inspection
            check_record(self.record, inspection, done, ctx)

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        """Phase milestones create duties; permanent cover of every area ends the quarters."""
        desk = self._desk(ctx)
        if self.started_at is None and not is_paperwork(entry.event):
            self._start(entry.t, desk)  # work on site starts the clocks, as readings do
        if entry.area in self.areas and self.phase is not None:  # 96.05(B)(17) per area
            self.phase.on_area_row(entry.event, entry.area, entry.t, desk)
        if self.life is not None:
            self._life(entry, desk)
        if entry.event == SiteEvent.MILESTONE and self.phase is not None:
            self.phase.on_milestone(entry.detail, entry.t, desk)
        elif entry.area in self.areas and self.quarterly is not None:
            was_covered = self.covered == self.areas
            if entry.event == SiteEvent.PERMANENT_COVER:
                self.covered.add(entry.area)
            elif entry.event in (SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED):
                self.covered.discard(entry.area)
            now_covered = self.covered == self.areas
            if now_covered and not was_covered:
                self.quarterly.stop(entry.t, "every site area has permanent cover", desk)
            elif was_covered and not now_covered and self.started_at is not None:
                self.quarterly.resume(entry.t, desk)

    def on_event(self, event: DetectorEvent, ctx: Context) -> None:
        if not isinstance(event, StormEnded) or self.storm is None:
            return
        if not self.storm.wants(event.storm):
            return
        desk = self._desk(ctx)
        if self.started_at is None:
            self._start(event.at, desk)
        done = self.storm.on_storm_ended(event.storm, event.at, desk)
        if done is not None:
            self._after_completions([done.rec], done.t, done.inspector, desk)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        timer, desk = tag, self._desk(ctx)
        routine, quarterly = self.routine, self.quarterly
        if isinstance(timer, DueTimer):
            self.watch.check(timer.duty_id, at, ctx)
        elif not self._routine_runs(timer):
            return  # before the first disturbance, after final stabilization, a cadence left
        elif isinstance(timer, WeekTimer) and isinstance(routine, TwiceWeeklyCadence):
            routine.on_week(timer, desk)
        elif isinstance(timer, SecondTimer) and isinstance(routine, TwiceWeeklyCadence):
            routine.on_second(timer, at, desk)
        elif isinstance(timer, QuarterTimer) and quarterly is not None:
            quarterly.on_quarter(timer, at, desk)
        elif isinstance(timer, CoverTimer) and quarterly is not None:
            quarterly.stop(at, "permanent ground cover (the site's permanent_cover_at)", desk)

    def on_finish(self, end: int, ctx: Context) -> None:
        """Refresh the open overdue alerts: how overdue each duty is at the end of the record."""
        self.watch.refresh(end, ctx)

    # --- the regimes together -----------------------------------------------------------

    def _desk(self, ctx: Context) -> DutyDesk:
        return DutyDesk(ctx, self, self.watch)

    def _start(self, t: int, desk: DutyDesk) -> None:
        """The clocks start at the first event seen for the site (the routine one, where
        the site log drives it, at the first disturbance: :meth:`_life`)."""
        self.started_at = t
        if self.routine is not None and self.life is None:
            self.routine.start(t, desk)
        if self.quarterly is not None:
            self.quarterly.start(t, desk)

    def _after_completions(
        self, done: list[DutyRecord], t: int, inspector: str, desk: DutyDesk
    ) -> None:
        """Restart the clocks the completed duties drive."""
        routine, storm = self.routine, self.storm
        if self.life is not None and not self.life.running:
            return  # no routine inspections before the first disturbance or after the last cover
        if isinstance(routine, TwiceWeeklyCadence):
            for rec in done:
                routine.on_completed(rec, t, desk)
        elif routine is not None and any(
            routine.drives(rec) or (storm is not None and storm.resets_routine(rec)) for rec in done
        ):
            routine.restart(t, inspector, desk)

    # --- the routine span and cadence from the site log (inspection.routine_by_site_log) ---

    def _life(self, entry: SiteLogEntry, desk: DutyDesk) -> None:
        life = self.life
        assert life is not None
        for change in life.on_entry(entry):
            if change in (Change.START, Change.RESUME):
                self._cadence(entry.t, desk, fresh=True)
            elif change == Change.STOP:
                for rec in desk.ctx.duties.open_at(entry.t):
                    if (
                        rec.kind == KIND
                        and rec.reason == DutyReason.ROUTINE
                        and rec.due_at > entry.t
                    ):
                        desk.complete(
                            rec,
                            entry.t,
                            "not required: final stabilization (every area has "
                            f"permanent cover; {life.cite})",
                        )
            elif change == Change.ACRES and life.running:
                self._cadence(entry.t, desk)

    def _cadence(self, t: int, desk: DutyDesk, *, fresh: bool = False) -> None:
        """NY GP Part IV.C: twice weekly while more than the pack's acres are open, else
        weekly; a switch (or a fresh start) starts the chosen cadence's clock at ``t``."""
        life, twice, weekly = self.life, self.twice, self.weekly
        assert life is not None and weekly is not None
        over = twice is not None and life.open_acres() > twice.rule.over_acres
        want: RoutineCadence | TwiceWeeklyCadence = twice if over and twice else weekly
        if not fresh and type(want) is type(self.routine):
            return
        self.routine = want
        if isinstance(want, TwiceWeeklyCadence):
            self.twice_epoch = desk.calendar.local_date(t)
        want.start(t, desk)

    def _routine_runs(self, timer: object) -> bool:
        """Whether a routine timer still matters: always without the site log's span; with
        it, while the span runs and the timer belongs to the current twice-weekly run."""
        if self.life is None or not isinstance(timer, WeekTimer | SecondTimer):
            return True
        if not self.life.running or not isinstance(self.routine, TwiceWeeklyCadence):
            return False
        epoch = self.twice_epoch
        return epoch is not None and timer.period >= epoch and (timer.period - epoch).days % 7 == 0


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """The rain detector (if the site has gauges) and the inspection-duty detector."""
    rules = ctx.rules
    calendar = SiteCalendar.from_site(site, rules)
    duties = InspectionDetector.from_site(site, rules, calendar)
    storm = None if duties.storm is None else duties.storm.rule
    rain = RainDetector.from_site(
        site,
        rules,
        calendar,
        qualify_nm=None if storm is None else storm.threshold_nm,
        window_h=24.0 if storm is None else storm.window_ms / MS_PER_H,
    )
    out: list[Detector] = []
    if rain is not None:
        out.append(rain)
    if duties.has_duties():
        out.append(duties)
    return out
