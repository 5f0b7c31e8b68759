"""Infiltration drain time: a practice must drain back to its design level in time.

Lake George §148-11 I(3) requires an infiltration practice to drain back to its
design level within a limit set by its type (basin 5 d, trench 15 d, dry well
15 d, porous pavement 2 d, vegetated depression 1 d). A water-level sensor in
the practice shows each fill: the detector finds the fill, its peak and the
time back to the design level, raises ``drain_time`` (critical) when the limit
passes undrained, and ``drain_time_forecast`` (warning) earlier, when the
recession fitted since the peak says the limit will be missed. Every event's
recession rate is kept, so a practice that clogs shows it from event to event.

Models and thresholds are documented in docs/drain-time.md. In short:

* Decisions use the centred median of three readings (a reading and its two
  neighbours, dated at the middle one), so one spike can neither start, end
  nor refill an event, and a step in the level is dated where it happened.
  The cost is one reading of delay before a decision is taken.
* ``baseline = "design"`` (default): the rise is measured above the design
  level (a sensor zeroed there). ``baseline = "pre_event"``: above the dry
  level before the fill — the median of the last 24 h of readings — for a
  sensor whose datum drifts (the PWD record drifts between −0.65 and 0 ft).
* A fill starts when the rise exceeds twice the tolerance; the practice is
  drained when it falls back within the tolerance (the hysteresis keeps a
  level wobbling around the tolerance from making many small events). The
  tolerance is at least 1 mm; siltwatch/rulemath.py computes it and the
  drained level the dashboards draw.
* The clock starts at the peak. A refill before drain-down (the rise climbs
  again by ``max(2·tolerance, 10 % of the peak rise)`` above its lowest point
  since the peak) restarts the clock from the new peak.
* The event's recession rate is the mean fall of the level between 90 % and
  10 % of the rise (or the drain point, if that comes first): it leaves out
  the flat top of the peak and the slow tail, so it compares across events.

After a design storm (the site's ``[[design_storms]]``, Lake George §148-11
I(3)(c)): an alert raised from the moment a gauge's 24-hour rain reached a
design storm's depth until the next storm at that gauge says so in every
message of its episode, and carries the storm in its evidence
(``design_storm``): the practice met a storm beyond its design
(analytics/rain.py publishes ``DesignStormExceeded``).

The parts, each in its own module: finding the fills (analytics/drain_fill.py),
the events and the clogging trend (analytics/drain_event.py), the early warning
(analytics/drain_forecast.py) and what the alerts say
(analytics/drain_report.py); this module turns their findings into alerts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from analytics.detector import Context, Detector
from analytics.drain_event import DrainEvent as DrainEvent
from analytics.drain_event import Rise as Rise
from analytics.drain_event import clogging_trend
from analytics.drain_fill import Change, Fill, FillTracker
from analytics.drain_forecast import ForecastView
from analytics.drain_report import DrainReport, beyond_design
from analytics.events import DetectorEvent, SensorReading
from analytics.quality import usable
from analytics.rain import DESIGN_STORM_EVENTS, DesignStormMemory, DesignStormNote
from analytics.recession import RecessionForecast
from analytics.timers import Tag, TimerTag
from analytics.timeutil import MS_PER_H
from siltwatch.config import InfiltrationPractice, SiteConfig
from siltwatch.detections.drain import DRAIN_TIME, DRAIN_TIME_FORECAST
from siltwatch.rulepacks import RuleValue
from siltwatch.units import to_metres
from siltwatch.vocabulary import Severity

KIND = DRAIN_TIME.kind
FORECAST_KIND = DRAIN_TIME_FORECAST.kind
SEVERITY = {KIND: Severity.CRITICAL, FORECAST_KIND: Severity.WARNING}
TREND_MIN_RISE_TOLS = 4.0  # events rising less than 4 tolerances are too small to rate
STALE_MIN_MS = (
    6 * MS_PER_H
)  # no alert at the deadline on a reading older than this (or 6 intervals)


@dataclass(frozen=True, slots=True)
class DrainDeadline(TimerTag):
    """The drain-time deadline of the fill event that started at ``start_at``."""

    word, sep = "deadline", ":"
    start_at: int


class DrainTimeDetector(Detector):
    """One infiltration practice: fill events, drain-time alerts, forecast, clogging trend."""

    handles = DESIGN_STORM_EVENTS  # the design storms the practice meets (analytics/rain.py)

    def __init__(
        self,
        *,
        practice: InfiltrationPractice,
        site_name: str,
        unit: str,
        interval_s: float,
        rule: RuleValue | None,
    ) -> None:
        self.name = f"drain/{practice.id}"
        self.design_m = practice.design_level_metres()
        self.report = DrainReport.of(practice, site_name, unit, rule)
        self.tracker = FillTracker(practice.id, practice.baseline, self.design_m, self.tol_m)
        self.stale_ms = max(STALE_MIN_MS, round(6 * interval_s * 1000))
        self._last_t: int | None = None
        self.ignored_readings = 0
        self.design = DesignStormMemory()
        self.design_said: dict[
            str, DesignStormNote
        ] = {}  # alert kind -> the storm its episode names

    # --- public views ------------------------------------------------------------

    @property
    def practice_id(self) -> str:
        return self.report.practice_id

    @property
    def tol_m(self) -> float:
        return self.report.tol_m

    def sensors(self) -> tuple[str, ...]:
        return (self.report.sensor,)

    def events(self) -> list[DrainEvent]:
        """Every fill event so far, oldest first; the last may still be draining."""
        return self.tracker.events()

    def trend(self) -> dict[str, Any]:
        return clogging_trend(self.tracker.history, TREND_MIN_RISE_TOLS * self.tol_m)

    # --- engine callbacks -----------------------------------------------------------

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        # Not evidence unless usable (analytics/quality.py); counted, never silently dropped.
        if not usable(reading.flags) or not math.isfinite(reading.value):
            self.ignored_readings += 1
            return
        t = reading.t
        if self._last_t is not None and t - self._last_t > self.stale_ms:
            self._after_gap(self._last_t, t, ctx)
        self._last_t = t
        step = self.tracker.add(t, to_metres(reading.value, self.report.unit))
        if step is None:
            return
        if step.change is Change.STARTED:
            if self.report.limit_h is not None:
                # The clock can only start later (at the peak): a chain of timers follows it.
                ctx.schedule(self, step.at + self.report.limit_ms(), DrainDeadline(step.at))
        elif step.change is Change.DRAINED:
            self._drained(step.event, step.at, step.rise_m, ctx)
        else:
            self._check_deadline(step.at, ctx)
            self._check_forecast(step.at, ctx)

    def on_event(self, event: DetectorEvent, ctx: Context) -> None:
        self.design.on_event(event)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        fill = self.tracker.fill
        if fill is None or self.report.limit_h is None or tag != DrainDeadline(fill.event.start_at):
            return  # a timer of an event that has drained
        deadline = fill.event.peak_at + self.report.limit_ms()
        if at < deadline:
            ctx.schedule(self, deadline, tag)  # the clock restarted from a later peak
            return
        if self._last_t is None or at - self._last_t > self.stale_ms:
            return  # no recent reading: the next one decides (on_reading checks the deadline)
        self._check_deadline(at, ctx)

    # --- alerts -------------------------------------------------------------------------

    def _after_gap(self, last_t: int, t: int, ctx: Context) -> None:
        """Readings resume after a gap; an event it closed without a verdict ends its alerts."""
        ev = self.tracker.after_gap(last_t, t)
        if ev is not None:
            note = self.report.gap(ev, last_t, t, ctx.zone)
            for kind in (KIND, FORECAST_KIND):
                if ctx.alerts.is_open(kind, self.practice_id):
                    self._resolve(kind, t, note, None, ctx)

    def _drained(self, ev: DrainEvent, t: int, rise: float, ctx: Context) -> None:
        for kind in (KIND, FORECAST_KIND):
            if ctx.alerts.is_open(kind, self.practice_id):
                message = self.report.drained(kind, ev, t, ctx.zone)
                self._resolve(kind, t, message, self._evidence(ev, t, rise), ctx)

    def _watched_fill(self, ctx: Context) -> Fill | None:
        """The fill in progress if it is held to a limit and has no drain_time alert yet."""
        fill = self.tracker.fill
        if (
            fill is None
            or self.report.limit_h is None
            or ctx.alerts.is_open(KIND, self.practice_id)
        ):
            return None
        return fill

    def _check_deadline(self, t: int, ctx: Context) -> None:
        fill, report = self._watched_fill(ctx), self.report
        if fill is None or t < fill.event.peak_at + report.limit_ms():
            return
        # Lake George §148-11 I(3): not back to the design level within the limit for its type.
        ev, rise = fill.event, fill.last_rise_m
        ev.exceeded = True
        message = report.not_drained(ev, t, rise, ctx.zone)
        self._open(KIND, t, message, self._evidence(ev, t, rise), ctx)
        if ctx.alerts.is_open(FORECAST_KIND, self.practice_id):
            self._resolve(FORECAST_KIND, t, report.superseded(t, ctx.zone), None, ctx)

    def _check_forecast(self, t: int, ctx: Context) -> None:
        fill, report, subject = self._watched_fill(ctx), self.report, self.practice_id
        if fill is None or report.limit_h is None or t >= fill.event.peak_at + report.limit_ms():
            return
        ev, view = fill.event, ForecastView.of(self.tracker, t, report.limit_h)
        assert view is not None
        is_open = ctx.alerts.is_open(FORECAST_KIND, subject)
        if not is_open and not view.warns():
            return
        if is_open and view.clears():
            assert view.trusted is not None
            evidence = self._evidence(ev, t, fill.last_rise_m, view.forecast)
            self._resolve(FORECAST_KIND, t, report.sped_up(view.trusted), evidence, ctx)
            return
        if is_open and not view.speaks():
            return  # open, and nothing new to say: keep the last trusted message
        ev.forecast_warned = True
        message = report.too_slow(ev, view, ctx.zone)
        evidence = self._evidence(ev, t, fill.last_rise_m, view.forecast)
        if is_open:
            message, extra = self._beyond_design(FORECAST_KIND, message, ctx)
            evidence |= extra
            ctx.alerts.update(FORECAST_KIND, subject, t, message=message, evidence=evidence)
        else:
            self._open(FORECAST_KIND, t, message, evidence, ctx)

    def _open(
        self, kind: str, t: int, message: str, evidence: dict[str, Any], ctx: Context
    ) -> None:
        rule, severity = self.report.rule_cite or "", SEVERITY[kind]
        subject = self.practice_id
        message, extra = self._beyond_design(kind, message, ctx)
        evidence = evidence | extra
        ctx.alerts.open(kind, subject, t, severity, rule=rule, message=message, evidence=evidence)

    def _resolve(
        self, kind: str, t: int, message: str, evidence: dict[str, Any] | None, ctx: Context
    ) -> None:
        message, extra = self._beyond_design(kind, message, ctx)
        evidence = None if evidence is None else evidence | extra
        self.design_said.pop(kind, None)  # the episode ends
        ctx.alerts.resolve(kind, self.practice_id, t, message=message, evidence=evidence)

    def _beyond_design(self, kind: str, message: str, ctx: Context) -> tuple[str, dict[str, Any]]:
        """The ``kind`` episode's message saying the design storm it met, and the evidence
        to add (``design_storm``; nothing when the episode met none).

        An episode names the design storm in force when it first speaks after one
        was exceeded (until the next storm at that gauge), and keeps naming it in
        every later message, its resolution included (drain_report.beyond_design).
        """
        note = self.design_said.get(kind)
        if note is None:
            note = self.design.current()
            if note is None:
                return message, {}
            self.design_said[kind] = note
        return beyond_design(message, note, ctx.zone), {"design_storm": note.evidence()}

    def _evidence(
        self, ev: DrainEvent, t: int, rise: float, fc: RecessionForecast | None = None
    ) -> dict[str, Any]:
        fill = self.tracker.fill
        if fc is None and fill is not None and fill.event is ev:
            fc = self.tracker.forecast(self.report.limit_h)
        practice_record = {
            "clogging_trend": self.trend(),
            "recent_events": [e.summary(self.report.unit) for e in self.tracker.history[-5:]],
            "ignored_readings": self.ignored_readings,
        }
        return self.report.evidence(ev, t, rise, fc, practice_record)


def drain_rule(practice: InfiltrationPractice, site: SiteConfig, ctx: Context) -> RuleValue | None:
    """The drain-down limit: the pack's value for the type, or the site's ``drain_limit_h``."""
    key = f"drain.limit_h.{practice.type}"
    rule = ctx.rules.get(key)
    if practice.drain_limit_h is None:
        return rule
    if rule is not None:
        # A site override is shown as such: "site override of Lake George §148-11 I(3)".
        return replace(rule, value=practice.drain_limit_h, site_override=True)
    return RuleValue(
        key,
        practice.drain_limit_h,
        f"site configuration ({site.site.id}, practice {practice.id} drain_limit_h)",
        "default",
        "site",
    )


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """One detector per infiltration practice."""
    sensors = site.sensors()
    out: list[Detector] = []
    for practice in site.infiltration_practices:
        sensor = sensors[practice.level_sensor]
        out.append(
            DrainTimeDetector(
                practice=practice,
                site_name=site.site.name,
                unit=sensor.unit,
                interval_s=sensor.interval_s,
                rule=drain_rule(practice, site, ctx),
            )
        )
    return out
