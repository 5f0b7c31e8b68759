"""Inspection duties: what the permit says must be inspected, and by when.

Duties come from the site's rule packs (``inspection.*``) and are kept in the
engine's DutyBook; a recorded inspection completes them; a duty past due
raises an ``inspection_overdue`` alert (critical: the alerts router sends it to
the officer) that stays open until the inspection is recorded.

Decisions (docs/storm-segmentation.md has the storm side in full):

* **Storm duties** (reason ``storm``, subject = the storm id
  ``<gauge>@<start of rain, UTC>``). One duty per storm, however many hours
  it spends over the threshold. The storm qualifies when the rain *of that
  storm* within any 24-h window reaches ``inspection.storm_threshold_in``
  (CGP 2022 Part 4.2 "0.25 in in 24 h"; NCG01 Part III §A "a rain event
  >= 1.0 in in 24 h"). The permits count "within 24 h" from the rain event,
  and NCG01 says "if the rain *ends* outside normal business hours", so the
  clock starts when the rain ends (the end of the storm's last wet interval).
  That end is only known once the dry gap (``rain.storm_gap_h``) has passed:
  the duty is created then, with ``created_at`` = the end of the rain (the
  time the permit's 24 h count from), and a full inspection recorded between
  the end of the rain and that moment completes it. An inspection while it is
  still raining does not. A storm still raining when the record ends creates
  its duty at the end of the run if it has qualified (the rain did reach the
  threshold; the end of rain is provisionally its last wet reading).
* **Routine duties** (reason ``routine``, subject = the site id). The clock
  starts at the first event the engine shows this detector for the site
  (the first reading of any sensor, or an inspection): siltwatch cannot know
  about inspections before it was watching. Every ``inspection.routine_days``
  calendar days: a duty due by the end of the local day ``routine_days``
  after the clock start; completing it restarts the clock at the inspection.
  NY GP Part IV.C twice weekly (``site.disturbed_acres`` >
  ``inspection.twice_weekly_over_acres``) replaces that cadence, see
  :meth:`InspectionDetector._tw_period`.
* **Quarterly** (reason ``quarterly``, Lake Lure 96.05 (B)(17)(c)): one duty
  per calendar quarter (local time), due at its end, for every quarter that
  starts before ``site.permanent_cover_at``.
* An inspection completes the inspection duties that were open at its time:
  created strictly before it (a duty created at the same instant was created
  by it or after it). ``Inspection.duty`` names one duty: only that one (if it
  exists by then and is not done).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from analytics.calendar import SiteCalendar
from analytics.detector import Context, Detector
from analytics.episodes import DutyRecord
from analytics.events import DetectorEvent, Inspection, SensorReading
from analytics.rain import NM_PER_IN, NM_PER_MM, RainDetector, StormEnded, StormRecord
from analytics.timeutil import MS_PER_H, iso
from siltwatch.config import SiteConfig
from siltwatch.rulepacks import Rules
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import AlertKind, DutyKind, DutyReason, Severity

KIND = DutyKind.INSPECTION
ALERT_KIND = AlertKind.INSPECTION_OVERDUE


@dataclass(frozen=True)
class StormRule:
    threshold_nm: int
    threshold_in: float
    window_ms: int
    due_ms: int
    next_business_day: bool
    resets_routine: bool
    cite: str
    due_cite: str
    business_cite: str
    reset_cite: str


@dataclass(frozen=True)
class RoutineRule:
    days: int
    cite: str


@dataclass(frozen=True)
class TwiceWeeklyRule:
    min_gap_days: int
    over_acres: float
    cite: str


@dataclass(frozen=True)
class QuarterlyRule:
    until: date | None
    cite: str


@dataclass(frozen=True)
class DutyNote:
    """What this detector knows about a duty it created (for messages)."""

    label: str
    cite: str
    evidence: dict[str, Any]


def _cite(rules: Rules, key: str) -> str:
    value = rules.get(key)
    return "" if value is None else value.cite()


def storm_rule(rules: Rules) -> StormRule | None:
    threshold = rules.get("inspection.storm_threshold_in")
    if threshold is None:
        return None
    window = rules.get("inspection.storm_window_h")
    due = rules.get("inspection.storm_due_h")
    nbd = rules.get("inspection.storm_due_next_business_day")
    resets = rules.get("inspection.storm_resets_routine")
    return StormRule(
        threshold_nm=round(float(threshold.value) * NM_PER_IN),
        threshold_in=float(threshold.value),
        window_ms=round(float(window.value if window else 24) * MS_PER_H),
        due_ms=round(float(due.value if due else 24) * MS_PER_H),
        next_business_day=bool(nbd.value) if nbd else False,
        resets_routine=bool(resets.value) if resets else False,
        cite=threshold.cite(),
        due_cite=_cite(rules, "inspection.storm_due_h") or threshold.cite(),
        business_cite=_cite(rules, "inspection.storm_due_next_business_day"),
        reset_cite=_cite(rules, "inspection.storm_resets_routine"),
    )


def _fmt_depth(nm: int, unit: str) -> str:
    if unit == "mm":
        return f"{nm / NM_PER_MM:.1f} mm ({nm / NM_PER_IN:.2f} in)"
    return f"{nm / NM_PER_IN:.2f} in"


def _fmt_hours(ms: int) -> str:
    hours = ms / MS_PER_H
    if hours >= 48:
        return f"{hours / 24:.1f} days"
    return f"{hours:.1f} h"


class InspectionDetector(Detector):
    """Creates inspection duties, completes them on inspections, alerts when overdue."""

    name = "inspection-duties"
    handles = (StormEnded,)  # finished storms, from the rain detector

    def __init__(
        self,
        *,
        site_id: str,
        site_name: str,
        sensors: list[str],
        calendar: SiteCalendar,
        storm: StormRule | None = None,
        routine: RoutineRule | None = None,
        twice_weekly: TwiceWeeklyRule | None = None,
        quarterly: QuarterlyRule | None = None,
        lookback_ms: int = 0,
    ) -> None:
        self.site_id = site_id
        self.site_name = site_name or site_id
        self._sensors = sensors
        self.calendar = calendar
        self.storm = storm
        self.routine = routine
        self.twice_weekly = twice_weekly
        self.quarterly = quarterly
        self.lookback_ms = lookback_ms
        self.started_at: int | None = None
        self.notes: dict[str, DutyNote] = {}
        self.routine_duty: str | None = None
        self.storm_duties: dict[str, str] = {}
        self.tw_first: dict[str, date] = {}  # duty id of a period's first duty -> period start
        self.recent: list[tuple[int, str, str | None]] = []  # inspections, for late-known storms

    @classmethod
    def from_site(
        cls, site: SiteConfig, rules: Rules, calendar: SiteCalendar
    ) -> InspectionDetector:
        storm = storm_rule(rules)
        routine_value = rules.get("inspection.routine_days")
        routine = (
            RoutineRule(round(float(routine_value.value)), routine_value.cite())
            if routine_value is not None
            else None
        )
        twice: TwiceWeeklyRule | None = None
        over = rules.get("inspection.twice_weekly_over_acres")
        acres = site.site.disturbed_acres
        # NY GP-0-25-001 Part IV.C: twice every 7 days when more than 5 acres are disturbed at once.
        if over is not None and acres is not None and acres > float(over.value):
            gap = rules.get("inspection.twice_weekly_min_gap_days")
            twice = TwiceWeeklyRule(
                min_gap_days=round(float(gap.value)) if gap else 2,
                over_acres=float(over.value),
                cite=over.cite(),
            )
        quarterly_value = rules.get("inspection.quarterly")
        quarterly = (
            QuarterlyRule(site.site.permanent_cover_at, quarterly_value.cite())
            if quarterly_value is not None and bool(quarterly_value.value)
            else None
        )
        lookback = max(
            (
                round((g.storm_gap_h or rules.number("rain.storm_gap_h")) * MS_PER_H)
                + round(site.sensor(g.sensor).interval_s * 1000)
                for g in site.rain_gauges
            ),
            default=0,
        )
        return cls(
            site_id=site.site.id,
            site_name=site.site.name,
            sensors=list(site.sensors()),
            calendar=calendar,
            storm=storm,
            routine=routine,
            twice_weekly=twice,
            quarterly=quarterly,
            lookback_ms=lookback,
        )

    def sensors(self) -> Iterable[str]:
        # Every sensor: the routine clock starts at the first reading of any of them.
        return list(self._sensors)

    # --- engine callbacks ---------------------------------------------------------------

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        if self.started_at is None:
            self._start(reading.t, ctx)

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        t = inspection.t
        if self.started_at is None:
            self._start(t, ctx)
        self.recent.append((t, inspection.inspector, inspection.duty))
        self._prune(t)
        if inspection.duty is None:
            targets = [r for r in ctx.duties.open_at(t) if r.kind == KIND and r.created_at < t]
        else:
            rec = ctx.duties.records.get(inspection.duty)
            targets = (
                [rec]
                if rec is not None
                and rec.kind == KIND
                and rec.created_at <= t
                and rec.completed_at is None
                else []
            )
        done = [r for r in targets if self._complete(r, t, inspection.inspector, ctx)]
        self._after_completions(done, t, inspection.inspector, ctx)

    def on_timer(self, at: int, tag: str, ctx: Context) -> None:
        kind, _, arg = tag.partition("|")
        if kind == "due":
            self._check_overdue(arg, at, ctx)
        elif kind == "tw-period":
            self._tw_period(
                date.fromisoformat(arg), self.calendar.at_local(date.fromisoformat(arg)), ctx
            )
        elif kind == "tw-second":
            period, first_day = (date.fromisoformat(x) for x in arg.split(","))
            self._tw_second(period, first_day, at, ctx)
        elif kind == "quarter":
            self._quarter(date.fromisoformat(arg), at, ctx)

    def on_finish(self, end: int, ctx: Context) -> None:
        """Refresh the open overdue alerts: how overdue each duty is at the end of the record."""
        for duty_id in list(self.notes):
            rec = ctx.duties.records.get(duty_id)
            if rec is None or rec.completed_at is not None or not rec.overdue:
                continue
            self._alert(rec, end, ctx, refresh=True)

    # --- storms (from the rain detector) ------------------------------------------------

    def on_event(self, event: DetectorEvent, ctx: Context) -> None:
        if isinstance(event, StormEnded):
            self._storm_ended(event.storm, event.at, ctx)

    def _storm_ended(self, storm: StormRecord, now: int, ctx: Context) -> None:
        rule = self.storm
        if rule is None or storm.qualified_at is None or storm.id in self.storm_duties:
            return
        if self.started_at is None:
            self._start(now, ctx)
        cal = self.calendar
        end = storm.end
        # CGP 2022 Part 4.2 / NCG01 Part III §A: inspect within 24 h of the rain event,
        # counted from the end of the rain.
        due = end + rule.due_ms
        why_due = f"{_fmt_hours(rule.due_ms)} after the rain ended ({rule.due_cite})"
        if rule.next_business_day and not cal.in_business_hours(end):
            # NCG01 Part III §A: "if the rain ends outside normal business hours, by the start
            # of the next business day". Read as a relaxation (inspections are required in
            # business hours): the later of end + 24 h and the opening of the first business
            # day after the day the rain ended — never less than the 24 h.
            opening = cal.start_of_next_business_day(end)
            if opening > due:
                due = opening
                why_due = (
                    "the rain ended outside business hours: by the start of the next "
                    f"business day ({rule.business_cite})"
                )
        label = (
            f"storm inspection after {storm.id} ({_fmt_depth(storm.peak_window_nm, storm.unit)} "
            f"in {_fmt_hours(rule.window_ms)}, threshold {rule.threshold_in:g} in)"
        )
        rec = ctx.duties.create(
            kind=KIND,
            reason=DutyReason.STORM,
            subject=storm.id,
            created_at=end,
            due_at=due,
            rule=rule.cite,
        )
        self.storm_duties[storm.id] = rec.id
        self.notes[rec.id] = DutyNote(
            label=label,
            cite=rule.cite,
            evidence={
                "storm": storm.id,
                "gauge": storm.gauge,
                "rain_start": iso(storm.start),
                "rain_end": iso(storm.end),
                "storm_ongoing_at_end_of_record": not storm.closed,
                "depth_mm": round(storm.depth_nm / NM_PER_MM, 2),
                "depth_in": round(storm.depth_nm / NM_PER_IN, 3),
                "max_24h_mm": round(storm.peak_window_nm / NM_PER_MM, 2),
                "max_24h_in": round(storm.peak_window_nm / NM_PER_IN, 3),
                "threshold_in": rule.threshold_in,
                "qualified_at": iso(storm.qualified_at),
                "due_rule": why_due,
            },
        )
        # The end of the rain is known only now (after the dry gap): a full inspection
        # recorded since the rain ended already did this duty.
        for t, inspector, named in self.recent:
            if named is None and end < t <= now and self._complete(rec, t, inspector, ctx):
                self._after_completions([rec], t, inspector, ctx)
                return
        self._arm(rec, now, ctx)

    # --- routine cadences --------------------------------------------------------------

    def _start(self, t: int, ctx: Context) -> None:
        self.started_at = t
        if self.twice_weekly is not None:
            self._tw_period(self.calendar.local_date(t), t, ctx)
        elif self.routine is not None:
            self._new_routine(t, ctx)
        if self.quarterly is not None:
            self._quarter(_quarter_start(self.calendar.local_date(t)), t, ctx)

    def _new_routine(self, t: int, ctx: Context) -> None:
        rule = self.routine
        assert rule is not None
        # Every N calendar days: by the end of the local day N days after the clock (re)start.
        due = self.calendar.end_of_calendar_days(t, rule.days)
        rec = ctx.duties.create(
            kind=KIND,
            reason=DutyReason.ROUTINE,
            subject=self.site_id,
            created_at=t,
            due_at=due,
            rule=rule.cite,
        )
        self.routine_duty = rec.id
        self.notes[rec.id] = DutyNote(
            label=f"routine inspection every {rule.days} calendar days",
            cite=rule.cite,
            evidence={"every_days": rule.days, "clock_start": iso(t)},
        )
        self._arm(rec, t, ctx)

    def _tw_period(self, period: date, t: int, ctx: Context) -> None:
        """NY GP Part IV.C: two inspections every 7 calendar days, >= 2 full days apart.

        siltwatch counts 7-day periods from the clock start (local dates P..P+6).
        The first inspection of a period is due by the end of P+3 (the last day
        that leaves room for the second 2 full days later inside the period);
        once it is done on day D, the second duty appears at the start of day
        D+3 and is due by the end of P+6. Inspections in between do not count
        as the second.
        """
        rule = self.twice_weekly
        assert rule is not None
        cal = self.calendar
        last_first_day = period + timedelta(days=6 - (rule.min_gap_days + 1))
        rec = ctx.duties.create(
            kind=KIND,
            reason=DutyReason.ROUTINE,
            subject=self.site_id,
            created_at=t,
            due_at=cal.end_of_day(last_first_day),
            rule=rule.cite,
        )
        self.tw_first[rec.id] = period
        self.notes[rec.id] = DutyNote(
            label=(
                f"first of two inspections in the 7 days {period.isoformat()} to "
                f"{(period + timedelta(days=6)).isoformat()}"
            ),
            cite=rule.cite,
            evidence={"period_start": period.isoformat(), "of": "1 of 2"},
        )
        self._arm(rec, t, ctx)
        nxt = period + timedelta(days=7)
        ctx.schedule(self, cal.start_of_day(nxt), f"tw-period|{nxt.isoformat()}")

    def _tw_second(self, period: date, first_day: date, at: int, ctx: Context) -> None:
        rule = self.twice_weekly
        assert rule is not None
        earliest = first_day + timedelta(days=rule.min_gap_days + 1)
        last_day = max(period + timedelta(days=6), earliest)
        rec = ctx.duties.create(
            kind=KIND,
            reason=DutyReason.ROUTINE,
            subject=self.site_id,
            created_at=at,
            due_at=self.calendar.end_of_day(last_day),
            rule=rule.cite,
        )
        self.notes[rec.id] = DutyNote(
            label=(
                f"second of two inspections in the 7 days from {period.isoformat()}, at least "
                f"{rule.min_gap_days} full days after the first ({first_day.isoformat()})"
            ),
            cite=rule.cite,
            evidence={
                "period_start": period.isoformat(),
                "of": "2 of 2",
                "first": first_day.isoformat(),
            },
        )
        self._arm(rec, at, ctx)

    def _quarter(self, q_start: date, t: int, ctx: Context) -> None:
        rule = self.quarterly
        assert rule is not None
        # Lake Lure 96.05 (B)(17)(c): quarterly self-inspections until permanent ground cover.
        if rule.until is not None and q_start >= rule.until:
            return
        nxt = _next_quarter(q_start)
        cal = self.calendar
        rec = ctx.duties.create(
            kind=KIND,
            reason=DutyReason.QUARTERLY,
            subject=self.site_id,
            created_at=max(t, cal.start_of_day(q_start)),
            due_at=cal.start_of_day(nxt),
            rule=rule.cite,
        )
        self.notes[rec.id] = DutyNote(
            label=f"quarterly self-inspection for the quarter from {q_start.isoformat()}",
            cite=rule.cite,
            evidence={"quarter_start": q_start.isoformat()},
        )
        self._arm(rec, t, ctx)
        ctx.schedule(self, cal.start_of_day(nxt), f"quarter|{nxt.isoformat()}")

    # --- completion and deadlines -------------------------------------------------------

    def _complete(self, rec: DutyRecord, t: int, inspector: str, ctx: Context) -> bool:
        if ctx.duties.complete(rec.id, t, inspector) is None:
            return False
        if rec.id in self.notes:
            note = self.notes[rec.id]
            late = t - rec.due_at
            how = f", {_fmt_hours(late)} late" if late > 0 else ""
            ctx.alerts.resolve(
                ALERT_KIND,
                rec.id,
                t,
                message=(
                    f"Inspection done at {self.site_name}: {note.label} (duty {rec.id}) was due "
                    f"{self._local(rec.due_at)} under {note.cite}; completed {self._local(t)} "
                    f"by {inspector}{how}."
                ),
                evidence=self._evidence(rec, t) | {"completed_at": iso(t), "inspector": inspector},
            )
        return True

    def _after_completions(
        self, done: list[DutyRecord], t: int, inspector: str, ctx: Context
    ) -> None:
        """Restart the clocks the completed duties drive."""
        restart = False
        for rec in done:
            if rec.id == self.routine_duty:
                restart = True
            elif (
                rec.reason == DutyReason.STORM
                and self.storm is not None
                and self.storm.resets_routine
            ):
                # NCG01 Part III §A: a rain-event inspection resets the 7-day clock.
                restart = True
            if rec.id in self.tw_first:
                period = self.tw_first.pop(rec.id)
                first_day = self.calendar.local_date(t)
                assert self.twice_weekly is not None
                earliest = first_day + timedelta(days=self.twice_weekly.min_gap_days + 1)
                ctx.schedule(
                    self,
                    self.calendar.start_of_day(earliest),
                    f"tw-second|{period.isoformat()},{first_day.isoformat()}",
                )
        if restart and self.routine is not None and self.twice_weekly is None:
            current = ctx.duties.records.get(self.routine_duty or "")
            if current is not None and current.completed_at is None:
                if current.created_at >= t:
                    return  # the clock already (re)started at this instant
                self._complete(current, t, inspector, ctx)
            self._new_routine(t, ctx)

    def _arm(self, rec: DutyRecord, now: int, ctx: Context) -> None:
        if rec.due_at <= now:
            self._check_overdue(rec.id, rec.due_at, ctx)
        else:
            ctx.schedule(self, rec.due_at, f"due|{rec.id}")

    def _check_overdue(self, duty_id: str, at: int, ctx: Context) -> None:
        rec = ctx.duties.records.get(duty_id)
        if rec is None or rec.completed_at is not None or rec.overdue:
            return
        ctx.duties.mark_overdue(duty_id, at)
        self._alert(rec, at, ctx, refresh=False)

    def _alert(self, rec: DutyRecord, now: int, ctx: Context, *, refresh: bool) -> None:
        note = self.notes[rec.id]
        late = now - rec.due_at
        how = (
            f"It is {_fmt_hours(late)} overdue at {self._local(now)}."
            if late > 0
            else "It is overdue from now."
        )
        message = (
            f"Inspection overdue at {self.site_name}: {note.label} (duty {rec.id}) was due "
            f"{self._local(rec.due_at)} under {note.cite}, and no inspection has been recorded. "
            f"{how} The erosion-control officer is notified. Inspect the site and record the "
            "inspection."
        )
        evidence = self._evidence(rec, now)
        if refresh:
            ctx.alerts.update(ALERT_KIND, rec.id, now, message=message, evidence=evidence)
        else:
            ctx.alerts.open(
                ALERT_KIND,
                rec.id,
                rec.due_at,
                Severity.CRITICAL,
                rule=note.cite,
                message=message,
                evidence=evidence,
            )

    def _evidence(self, rec: DutyRecord, now: int) -> dict[str, Any]:
        note = self.notes[rec.id]
        return {
            "duty": rec.id,
            "reason": rec.reason,
            "subject": rec.subject,
            "created_at": iso(rec.created_at),
            "due_at": iso(rec.due_at),
            "overdue_h": round(max(0, now - rec.due_at) / MS_PER_H, 2),
            "as_of": iso(now),
        } | note.evidence

    def _local(self, t: int) -> str:
        return local_time(t, self.calendar.zone, weekday=True)

    def _prune(self, now: int) -> None:
        horizon = now - self.lookback_ms
        self.recent = [x for x in self.recent if x[0] >= horizon]


def _quarter_start(day: date) -> date:
    return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


def _next_quarter(q_start: date) -> date:
    month = q_start.month + 3
    return date(q_start.year + (month > 12), (month - 1) % 12 + 1, 1)


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """The rain detector (if the site has gauges) and the inspection-duty detector."""
    rules = ctx.rules
    calendar = SiteCalendar.from_site(site, rules)
    duties = InspectionDetector.from_site(site, rules, calendar)
    has_rules = any(
        x is not None for x in (duties.storm, duties.routine, duties.twice_weekly, duties.quarterly)
    )
    rain = RainDetector.from_site(
        site,
        rules,
        calendar,
        qualify_nm=None if duties.storm is None else duties.storm.threshold_nm,
        window_h=24.0 if duties.storm is None else duties.storm.window_ms / MS_PER_H,
    )
    out: list[Detector] = []
    if rain is not None:
        out.append(rain)
    if has_rules:
        out.append(duties)
    return out
