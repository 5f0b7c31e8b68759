"""Stabilization duties from the site log: cover exposed ground by the law's deadlines.

Kinds, reasons and citations: siltwatch/detections/stabilization.py. Each rule
applies when the site's rule packs set its key, so a Lake George site gets the
10-day and 24-hour rules and a Lake Lure site the 21-day and permanent-cover
ones. Deadlines are in the site's calendar: "N days" ends at the end of the
Nth local day (a DST change inside it is the calendar's business, not a 24 h
multiple); "24 hours" is 24 hours; working days (Lake Lure 96.03) skip
Saturdays and Sundays, not the site's holidays (those are for business-day
rules only).

Lake George §148-11 I(3)(e)[1],[2] (the 10-day clock): an area is active while
substantial construction activity has occurred in the past seven calendar
days. An ``inactive`` row (its time is the last substantial activity) starts a
duty due 10 days later; so does, by itself, an area whose last ``active`` row
is more than 7 days old (exactly 7 days later it is still active: "within the
past seven calendar days"), unless the area was covered since. An ``active``
row ends the open duty (work resumed: the area is an active construction area
again, which may stay open), and the next stop starts a new one.

Lake George §148-11 I(3)(e)[3][c] (revegetation): 10 days from the substantial
completion of clearing and construction, i.e. the ``completed`` row of an area
that was ``cleared``, completed only by revegetation (``seeded``) or
``permanent_cover``: plastic sheeting or mulch alone is not revegetation.

Lake Lure 96.08(B)(5) (HQW zones): ground cover within 15 working days or 60
calendar days following completion of construction or development. 96.03
defines that completion per phase, so the duty starts at the earlier of the
area's ``completed`` row and the ``construction_completed`` milestone (the
protective reading; ``cover.hqw_from_area_completed = false`` in a site's
rule_overrides starts it at the milestone only). The grading clock of 96.07(D)
(90 calendar days) runs in every area, and cites only 96.07(D).

Per area, at most one duty per reason and rule is open at a time: the first
deadline is the binding one (a second ``graded`` row while the first phase's 21
days run does not push it out). The cover recorded in the log completes them —
``temporary_cover`` and ``seeded`` every reason but permanent cover
(``temporary_cover`` not revegetation), ``permanent_cover`` all — and only
duties created before it. A row naming an area the site does not have is
counted and ignored (ingest refuses such rows; a replay reports them).

Rain days (off unless the site sets ``rain_day_in`` or ``rain_day_mm``): Lake
Lure 96.03 counts as working days only those "during which weather conditions
or soil conditions permit land disturbing activity". A local day whose rain at
one of the site's gauges reaches that depth (the rain detector's daily record,
published as :class:`~analytics.rain.WetDay`) is then no working day for the
permanent-cover deadline. Rain to come is unknown when the duty is created, so
its deadline is first counted without rain days and moves out as they are
recorded (``DutyBook.extend``: an ``extended`` duty event); a rain day on a
weekend or a holiday was no working day anyway and moves nothing. The calendar
bound (90 or 60 days) does not move, so the shorter period still wins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta

from analytics.calendar import SiteCalendar
from analytics.cited import Cited
from analytics.detector import Context, Detector
from analytics.episodes import DutyRecord
from analytics.events import DetectorEvent, SiteLogEntry
from analytics.inspection_overdue import DutyNote, OverdueWatch, OverdueWords
from analytics.rain import WetDay
from analytics.statecodec import plain_copy
from analytics.timers import Tag, TimerTag
from analytics.timeutil import MS_PER_H, iso
from siltwatch.config import SiteConfig
from siltwatch.detections.stabilization import STABILIZATION, StabilizationReason
from siltwatch.rulepacks import Rules
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Milestone, SiteEvent

Reason = StabilizationReason
KIND = STABILIZATION.kind
WORDS = OverdueWords(
    STABILIZATION.overdue_kind,
    "Stabilization",
    "no cover that completes it has been recorded in the site log",
    "Cover the area as the rule asks (revegetation: seed with mulch or replant; permanent "
    "cover: permanent ground cover) and record it in the site log.",
    "Stabilization done",
)
# §148-11 I(3)(e)[3][b] accepts any protective covering (plastic included); [3][c]
# revegetation only reseeding or replanting: ``temporary_cover`` does not complete it.
TEMPORARY_COVERS = frozenset({Reason.INACTIVE_AREA, Reason.EXPOSED_24H, Reason.GRADED_SLOPES})
SEEDING_COVERS = TEMPORARY_COVERS | {Reason.REVEGETATION}


@dataclass(frozen=True, slots=True)
class AreaIdle(TimerTag):
    """7 days after an area's last ``active`` row: the area counts as inactive (§148-11 I(3)(e)[1])."""

    word, sep = "idle", ":"
    area: str


ACTIVE_DAYS = 7  # §148-11 I(3)(e)[1]: "activity ... within the past seven calendar days"


@dataclass(frozen=True)
class AreaFacts:
    """What the rules need of a site area (plain values: detector state is snapshotted)."""

    id: str
    name: str
    acres: float
    slope_pct: float
    distance_to_water_ft: float
    hqw_zone: bool


@dataclass(frozen=True)
class CoverRules:
    """The deadlines the site's packs set (None: that rule does not apply here)."""

    inactive: Cited | None
    revegetation: Cited | None
    exposed: Cited | None
    steep_pct: float
    near_ft: float
    graded: Cited | None
    permanent_working: Cited | None
    permanent_days: Cited | None
    permanent_days_hqw: Cited | None
    working_days_cite: str  # what the site's packs say a working day is (calendar.weekend)
    hqw_from_area_completed: bool = True  # 96.08(B)(5): also from the area's ``completed``

    @classmethod
    def from_rules(cls, rules: Rules) -> CoverRules:
        steep = Cited.of(rules.get("cover.steep_slope_pct"))
        near = Cited.of(rules.get("cover.near_water_ft"))
        weekend = rules.get("calendar.weekend")
        from_area = rules.get("cover.hqw_from_area_completed")
        return cls(
            inactive=Cited.of(rules.get("stabilization.inactive_days")),
            revegetation=Cited.of(rules.get("stabilization.revegetation_days")),
            exposed=Cited.of(rules.get("cover.exposed_near_water_h")),
            steep_pct=15.0 if steep is None else steep.value,
            near_ft=500.0 if near is None else near.value,
            graded=Cited.of(rules.get("cover.graded_slopes_days")),
            permanent_working=Cited.of(rules.get("cover.permanent_working_days")),
            permanent_days=Cited.of(rules.get("cover.permanent_calendar_days")),
            permanent_days_hqw=Cited.of(rules.get("cover.permanent_calendar_days_hqw")),
            working_days_cite="" if weekend is None else weekend.cite(),
            hqw_from_area_completed=True if from_area is None else from_area.value is True,
        )

    def any(self) -> bool:
        rules = (self.inactive, self.revegetation, self.exposed, self.graded)
        return any(r is not None for r in (*rules, self.permanent_working))


@dataclass(frozen=True)
class PermanentClock:
    """How a permanent-cover deadline is counted, to count it again when a rain day comes."""

    start: date  # the local day of the graded row; working days count from the next
    working: int
    by_calendar: int | None  # the calendar-day bound (epoch ms), which rain does not move


class StabilizationDetector(Detector):
    """Creates, completes and watches the site's stabilization duties."""

    name = "stabilization"
    handles = (WetDay,)  # rain days, from the rain detector's daily record (96.03)

    def __init__(self, site: SiteConfig, rules: CoverRules, calendar: SiteCalendar) -> None:
        self.rules = rules
        self.areas = {a.id: plain_copy(AreaFacts, a) for a in site.areas}
        self.watch = OverdueWatch(site.site.name or site.site.id, calendar, WORDS)
        self.unknown_areas = 0
        info = site.site
        # Lake Lure 96.03: the site's rain-day depth, as its file says it (None: off).
        self.rain_day: str | None = None
        if info.rain_day_in is not None:
            self.rain_day = f"{info.rain_day_in:g} in (site rain_day_in)"
        elif info.rain_day_mm is not None:
            self.rain_day = f"{info.rain_day_mm:g} mm (site rain_day_mm)"
        self.wet_days: set[date] = set()
        self.clocks: dict[str, PermanentClock] = {}  # open permanent-cover duty id -> its count
        self.cleared: set[str] = set()  # areas with a ``cleared`` row (§148-11 I(3)(e)[3][c])
        self.last_active: dict[str, int] = {}  # area -> its last ``active`` row
        self.stopped: dict[str, int] = {}  # area -> last stop that started a 10-day duty
        self.covered: dict[str, int] = {}  # area -> its last cover row
        self.permanent: set[str] = set()  # areas with ``permanent_cover``

    @property
    def calendar(self) -> SiteCalendar:
        return self.watch.calendar

    # --- engine callbacks ----------------------------------------------------------

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        if entry.event == SiteEvent.MILESTONE and entry.detail == Milestone.CONSTRUCTION_COMPLETED:
            for hqw in (a for a in self.areas.values() if a.hqw_zone):
                if hqw.id not in self.permanent:
                    self._hqw_completion(hqw, entry.t, "construction completed (milestone)", ctx)
            return
        area = self.areas.get(entry.area or "")
        if area is None:
            if entry.area is not None:
                self.unknown_areas += 1
            return
        t, event = entry.t, entry.event
        if event in (SiteEvent.DISTURBED, SiteEvent.CLEARED) and self._exposed(area):
            self._exposed_24h(area, t, ctx)
        if event in (SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED):
            self.permanent.discard(area.id)  # opened again: its permanent cover is gone
        if event == SiteEvent.CLEARED:
            self.cleared.add(area.id)
        elif event == SiteEvent.COMPLETED:
            self._completed(area, t, ctx)
        elif event == SiteEvent.GRADED:
            self._graded(area, t, ctx)
        elif event == SiteEvent.ACTIVE:
            self._active(area, t, entry.by, ctx)
        elif event == SiteEvent.INACTIVE:
            self._inactive(area, t, t, ctx)
        elif event == SiteEvent.TEMPORARY_COVER:
            self.covered[area.id] = t
            self._cover(area, t, entry.by, TEMPORARY_COVERS, "temporary cover", ctx)
        elif event == SiteEvent.SEEDED:
            self.covered[area.id] = t
            self._cover(area, t, entry.by, SEEDING_COVERS, "seeding", ctx)
        elif event == SiteEvent.PERMANENT_COVER:
            self.covered[area.id] = t
            self.permanent.add(area.id)
            self._cover(area, t, entry.by, frozenset(Reason), "permanent cover", ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if isinstance(tag, AreaIdle):
            self._idle(tag.area, at, ctx)
            return
        if not isinstance(tag, str):
            return
        rec = ctx.duties.records.get(tag)  # the tag is the duty id: its deadline passed
        if rec is not None and at < rec.due_at:
            return  # a deadline since extended by rain days: its own timer is set
        self.watch.check(tag, at, ctx)

    def on_event(self, event: DetectorEvent, ctx: Context) -> None:
        """Lake Lure 96.03: a rain day is no working day; open permanent-cover deadlines move."""
        if not isinstance(event, WetDay) or self.rain_day is None:
            return
        if event.day in self.wet_days:
            return  # another gauge already made it a rain day
        self.wet_days.add(event.day)
        for duty_id, clock in list(self.clocks.items()):
            rec = ctx.duties.records.get(duty_id)
            if rec is None or rec.completed_at is not None or rec.overdue:
                del self.clocks[duty_id]  # done or past its deadline: nothing moves any more
                continue
            if event.day <= clock.start:
                continue
            due = self._permanent_due(clock)
            if ctx.duties.extend(duty_id, due, event.at) is not None:
                ctx.schedule(self, due, duty_id)
            note = self.watch.notes.get(duty_id)
            if note is not None:
                # The working days lost to rain so far (a weekend or holiday cost none).
                last = self.calendar.local_date(rec.due_at - 1)  # the deadline's own day
                cal = self.calendar
                days = sorted(
                    d for d in self.wet_days if clock.start < d <= last and cal.is_working_day(d)
                )
                rain_days = [d.isoformat() for d in days]
                self.watch.notes[duty_id] = replace(
                    note, evidence=note.evidence | {"rain_days": rain_days}
                )

    def on_finish(self, end: int, ctx: Context) -> None:
        self.watch.refresh(end, ctx)

    # --- the rules ---------------------------------------------------------------------

    def _exposed(self, area: AreaFacts) -> bool:
        """Lake George §148-11 I(3)(e)[3][b]: steeper than 15 % or within 500 ft of water."""
        r = self.rules
        return area.slope_pct > r.steep_pct or area.distance_to_water_ft <= r.near_ft

    def _exposed_24h(self, area: AreaFacts, t: int, ctx: Context) -> None:
        rule = self.rules.exposed
        if rule is None:
            return
        hours = rule.value
        why = (
            f"slope {area.slope_pct:g} % over {self.rules.steep_pct:g} %"
            if area.slope_pct > self.rules.steep_pct
            else f"{area.distance_to_water_ft:g} ft from water, within {self.rules.near_ft:g} ft"
        )
        label = f"protective cover of {_name(area)} within {hours:g} h of exposing it ({why})"
        self._open(Reason.EXPOSED_24H, area, t, t + round(hours * MS_PER_H), rule, label, ctx)

    def _completed(self, area: AreaFacts, t: int, ctx: Context) -> None:
        """The area's clearing and construction substantially completed: §148-11
        I(3)(e)[3][c] revegetation of cleared ground, and 96.08(B)(5) in an HQW zone."""
        if area.id in self.cleared:

            def label(days: int) -> str:
                return (
                    f"revegetation of {_name(area)} (reseeding with mulch or replanting) within "
                    f"{days} days of the substantial completion of its clearing and construction "
                    f"({self._local(t)})"
                )

            rule = self.rules.revegetation
            self._in_calendar_days(Reason.REVEGETATION, area, t, rule, label, ctx)
        if area.hqw_zone and self.rules.hqw_from_area_completed and area.id not in self.permanent:
            self._hqw_completion(area, t, "the area's work completed", ctx)

    def _active(self, area: AreaFacts, t: int, by: str, ctx: Context) -> None:
        """§148-11 I(3)(e)[1]: substantial activity makes the area active again. The open
        10-day duty ends (work resumed), and the area idles into a new one after 7 days."""
        if self.rules.inactive is None:
            return
        self.last_active[area.id] = max(t, self.last_active.get(area.id, t))
        for rec in self._open_duties(area, {Reason.INACTIVE_AREA}, t, ctx):
            if rec.created_at < t:
                self.watch.complete(
                    rec, t, f"the active row recorded by {by} (work resumed)", ctx, "Work resumed"
                )
        idle_at = self.calendar.at_local(
            self.calendar.local_date(t) + timedelta(days=ACTIVE_DAYS), self._minutes(t)
        )
        ctx.schedule(self, idle_at, AreaIdle(area.id))

    def _idle(self, area_id: str, at: int, ctx: Context) -> None:
        """A 7-day timer after an ``active`` row: if no later activity, stop or cover came,
        the area is inactive by §148-11 I(3)(e)[1] and its 10-day duty starts now."""
        area = self.areas.get(area_id)
        last = self.last_active.get(area_id)
        if area is None or last is None:
            return
        if (
            self.calendar.at_local(
                self.calendar.local_date(last) + timedelta(days=ACTIVE_DAYS), self._minutes(last)
            )
            != at
        ):
            return  # a later active row set its own timer
        if self.covered.get(area_id, -1) >= last or self.stopped.get(area_id, -1) >= last:
            return  # covered since, or an ``inactive`` row already started its duty
        self._inactive(area, last, at, ctx)

    def _inactive(self, area: AreaFacts, last: int, at: int, ctx: Context) -> None:
        """The 10-day duty of §148-11 I(3)(e)[2], created at ``at``, due 10 days after the
        last substantial activity ``last``."""
        rule = self.rules.inactive
        if rule is None:
            return
        self.stopped[area.id] = max(last, self.stopped.get(area.id, last))
        days = int(rule.value)
        how = "logged inactive" if at == last else f"no active row for {ACTIVE_DAYS} days"
        label = (
            f"stabilization of {_name(area)} within {days} days of its last substantial "
            f"activity ({self._local(last)}; {how})"
        )
        due = self.calendar.end_of_calendar_days(last, days)
        self._open(Reason.INACTIVE_AREA, area, at, due, rule, label, ctx, {"last_activity": last})

    def _hqw_completion(self, area: AreaFacts, t: int, what: str, ctx: Context) -> None:
        """Lake Lure 96.08(B)(5): in a HQW zone, ground cover within 15 working days or 60
        calendar days following completion of construction or development."""
        rules = self.rules
        if rules.permanent_working is None or rules.permanent_days_hqw is None:
            return
        cite = rules.permanent_days_hqw.cite
        self._permanent(area, t, rules.permanent_working, rules.permanent_days_hqw, cite, what, ctx)

    def _minutes(self, t: int) -> int:
        loc = self.calendar.local(t)
        return loc.hour * 60 + loc.minute

    def _graded(self, area: AreaFacts, t: int, ctx: Context) -> None:
        def label(days: int) -> str:
            return f"cover of the graded slopes of {_name(area)} within {days} calendar days"

        rules = self.rules
        self._in_calendar_days(Reason.GRADED_SLOPES, area, t, rules.graded, label, ctx)
        if rules.permanent_working is not None:
            cite = rules.permanent_working.cite
            permanent_days = rules.permanent_days
            words = "the completion of a phase of grading"
            self._permanent(area, t, rules.permanent_working, permanent_days, cite, words, ctx)

    def _permanent(
        self,
        area: AreaFacts,
        t: int,
        rule: Cited,
        calendar_days: Cited | None,
        cite: str,
        since: str,
        ctx: Context,
    ) -> None:
        """Lake Lure 96.07(D): 15 working days or 90 calendar days after a phase of grading,
        whichever is shorter; 96.08(B)(5): 15 working days or 60 calendar days after the
        completion of construction or development in a High Quality Water zone."""
        cal, rules = self.calendar, self.rules
        working = int(rule.value)
        words = f"{working} working days"
        by_calendar: int | None = None
        if calendar_days is not None:
            by_calendar = cal.end_of_calendar_days(t, int(calendar_days.value))
            words += f" or {calendar_days.value:g} calendar days, whichever is shorter"
            if calendar_days.cite != cite:
                cite = f"{cite}; {calendar_days.cite}"
        if self.rain_day is not None:
            # Lake Lure 96.03 "Working Days": only days whose weather permits the work.
            cite = (
                f"{cite}; working days per {rules.working_days_cite or 'the site calendar'}: "
                f"not a day with {self.rain_day} of rain or more at the site's gauges"
            )
        clock = PermanentClock(cal.local_date(t), working, by_calendar)
        due = self._permanent_due(clock)
        zone = " (High Quality Water zone)" if area.hqw_zone else ""
        label = f"permanent ground cover of {_name(area)}{zone} within {words} (from {since})"
        rec = self._open(Reason.PERMANENT_COVER, area, t, due, Cited(working, cite), label, ctx)
        if rec is not None and self.rain_day is not None:
            self.clocks[rec.id] = clock

    def _permanent_due(self, clock: PermanentClock) -> int:
        """The end of the ``working``-th working day after the start (weekends and the rain
        days recorded so far skipped; holidays count, 96.03), or the calendar bound if that
        is earlier."""
        cal = self.calendar
        due = cal.end_of_day(cal.add_working_days(clock.start, clock.working, self.wet_days))
        return due if clock.by_calendar is None else min(due, clock.by_calendar)

    # --- duties ------------------------------------------------------------------------

    def _in_calendar_days(
        self,
        reason: Reason,
        area: AreaFacts,
        t: int,
        rule: Cited | None,
        label: Callable[[int], str],
        ctx: Context,
    ) -> None:
        """The duty due at the end of the rule's N-th local day after ``t`` (``label(N)``
        says what is due); nothing where the site's packs do not set the rule."""
        if rule is None:
            return
        days = int(rule.value)
        due = self.calendar.end_of_calendar_days(t, days)
        self._open(reason, area, t, due, rule, label(days), ctx)

    def _open(
        self,
        reason: Reason,
        area: AreaFacts,
        t: int,
        due: int,
        rule: Cited,
        label: str,
        ctx: Context,
        since: dict[str, int] | None = None,
    ) -> DutyRecord | None:
        """Create the duty and watch its deadline; None when one under the same rule is
        already open. ``since`` adds times the deadline counts from to the evidence."""
        if any(r.rule == rule.cite for r in self._open_duties(area, {reason}, t, ctx)):
            return None  # the first deadline binds
        evidence: dict[str, object] = {"area": area.id, "acres": area.acres, "started": iso(t)}
        evidence |= {k: iso(v) for k, v in (since or {}).items()}
        note = DutyNote(label=label, cite=rule.cite, evidence=evidence)
        rec = self.watch.create(ctx, KIND, reason, area.id, (t, due), note)
        ctx.schedule(self, due, rec.id)
        return rec

    def _cover(
        self,
        area: AreaFacts,
        t: int,
        by: str,
        reasons: frozenset[Reason],
        what: str,
        ctx: Context,
    ) -> None:
        for rec in self._open_duties(area, reasons, t, ctx):
            self.watch.complete(rec, t, f"{what} recorded by {by}", ctx)

    def _open_duties(
        self, area: AreaFacts, reasons: set[Reason] | frozenset[Reason], t: int, ctx: Context
    ) -> list[DutyRecord]:
        return [
            r
            for r in ctx.duties.open_at(t)
            if r.kind == KIND and r.subject == area.id and r.reason in reasons
        ]

    def _local(self, t: int) -> str:
        return local_time(t, self.calendar.zone)


def _name(area: AreaFacts) -> str:
    return f"area {area.id}" + (f" ({area.name})" if area.name else "")


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """One detector when the site has areas and its packs set a cover rule."""
    rules = CoverRules.from_rules(ctx.rules)
    if not site.areas or not rules.any():
        return []
    return [StabilizationDetector(site, rules, SiteCalendar.from_site(site, ctx.rules))]
