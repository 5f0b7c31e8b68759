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
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace
from statistics import median
from typing import Any

from analytics.detector import Context, Detector
from analytics.events import SensorReading
from analytics.quality import usable
from analytics.recession import RecessionForecast, RunningLine, recession_forecast
from analytics.timeutil import MS_PER_H, MS_PER_MIN, iso
from siltwatch.config import InfiltrationPractice, SiteConfig
from siltwatch.rulemath import drain_tolerance_m
from siltwatch.rulepacks import RuleValue
from siltwatch.timefmt import local_time
from siltwatch.units import from_metres, to_metres
from siltwatch.vocabulary import AlertKind, Severity

KIND = AlertKind.DRAIN_TIME
FORECAST_KIND = AlertKind.DRAIN_TIME_FORECAST
# Share of the limit after which the falling limb is long enough to choose between the
# exponential and the constant-rate recession model (analytics/recession.py).
DECISIVE_FRACTION = 0.25


SMOOTH_READINGS = 3  # the centred median of three readings drives every decision
FILL_TOLERANCES = 2.0  # a fill is a rise of more than two tolerances (drained: within one)
BASELINE_WINDOW_MS = 24 * MS_PER_H  # pre-event baseline: median level over the day before
BASELINE_REFRESH_MS = 15 * MS_PER_MIN
BASELINE_MIN_READINGS = 4
REFILL_FRACTION = 0.10  # a refill climbs this fraction of the peak rise (or 2 tol) above the trough
RECESSION_START_FRACTION = 0.90  # the recession rate is measured from 90 % of the rise ...
RECESSION_END_FRACTION = 0.10  # ... down to 10 % of it
FORECAST_MARGIN = 0.10  # warn when even the fastest plausible recession misses the limit by 10 %
STALLED_FRACTION = 0.25  # ... or when a quarter of the limit has passed with no measurable fall
TREND_EVENTS = 3  # clogging trend: mean rate of the last three events vs the first three
TREND_MIN_RISE_TOLS = 4.0  # events rising less than 4 tolerances are too small to rate
STALE_MIN_MS = (
    6 * MS_PER_H
)  # no alert at the deadline on a reading older than this (or 6 intervals)

TYPE_LABEL = {
    "infiltration_basin": "infiltration basin",
    "infiltration_trench": "infiltration trench",
    "dry_well": "dry well",
    "porous_pavement": "porous pavement",
    "vegetated_depression": "vegetated depression",
}


@dataclass
class Rise:
    """One climb of the level inside an event: the fill itself, then each refill."""

    start_at: int  # the fill's start, or the lowest point before a refill
    from_level_m: float  # the level it climbed from (the baseline for the fill itself)
    peak_at: int
    max_level_m: float  # the highest raw reading of this climb
    max_level_at: int


@dataclass
class DrainEvent:
    """One fill of a practice, from the fill to drain-down; times are epoch ms."""

    practice: str
    start_at: int
    baseline_m: float
    peak_at: int  # where the drain clock starts: the peak of the (median) level of the last rise
    peak_rise_m: float
    rises: list[Rise] = field(default_factory=list)
    refills: int = 0
    t90_at: int | None = None  # the rise fell to 90 % of its peak: the recession rate starts here
    t90_rise_m: float | None = None
    recession_end_at: int | None = None  # 10 % of the rise reached (or drained first)
    recession_end_rise_m: float | None = None
    t10_at: int | None = None
    drained_at: int | None = None
    k_per_h: float | None = None  # exponential decay rate of the rise fitted on the falling limb
    exceeded: bool = False
    forecast_warned: bool = False
    interrupted_at: int | None = None  # closed without a verdict: a data gap (pre_event mode)

    @property
    def peak_level_m(self) -> float:
        return self.baseline_m + self.peak_rise_m

    @property
    def max_level_m(self) -> float:
        """The highest raw reading of the whole event."""
        return max(r.max_level_m for r in self.rises)

    @property
    def drain_h(self) -> float | None:
        """Hours from the (last) peak to drain-down: what the law limits."""
        return None if self.drained_at is None else (self.drained_at - self.peak_at) / MS_PER_H

    @property
    def t10_h(self) -> float | None:
        """Hours from the peak until the rise fell to 10 % (independent of the tolerance)."""
        return None if self.t10_at is None else (self.t10_at - self.peak_at) / MS_PER_H

    @property
    def rate_mm_h(self) -> float | None:
        """Mean fall of the level (mm/h) from 90 % to 10 % of the rise (or to drain-down)."""
        start_at, start_rise = self.t90_at, self.t90_rise_m
        end_at, end_rise = self.recession_end_at, self.recession_end_rise_m
        if start_at is None or start_rise is None or end_at is None or end_rise is None:
            return None
        hours = (end_at - start_at) / MS_PER_H
        if hours <= 0:
            return None
        return (start_rise - end_rise) * 1000.0 / hours

    def summary(self, unit: str) -> dict[str, Any]:
        """JSON-ready numbers for alert evidence."""
        rate = self.rate_mm_h
        return {
            "start_at": iso(self.start_at),
            "peak_at": iso(self.peak_at),
            "baseline_m": round(self.baseline_m, 4),
            "peak_level_m": round(self.peak_level_m, 4),
            "max_level": round(from_metres(self.max_level_m, unit), 3),
            "rises": len(self.rises),
            "rise_m": round(self.peak_rise_m, 4),
            "refills": self.refills,
            "drained_at": None if self.drained_at is None else iso(self.drained_at),
            "drain_h": None if self.drain_h is None else round(self.drain_h, 2),
            "t10_h": None if self.t10_h is None else round(self.t10_h, 2),
            "rate_mm_h": None if rate is None else round(rate, 2),
            "rate_in_h": None if rate is None else round(rate / 25.4, 3),
            "k_per_h": None if self.k_per_h is None else round(self.k_per_h, 4),
            "exceeded": self.exceeded,
        }


def clogging_trend(events: list[DrainEvent], min_rise_m: float) -> dict[str, Any]:
    """Recession rate from event to event: a falling rate means the practice is clogging.

    Compares the mean rate of the last TREND_EVENTS rated events with the first
    TREND_EVENTS, and gives the least-squares slope of rate against event number.
    Small events (rise under ``min_rise_m``) are left out: their rate is noise.
    """
    rates = [
        r
        for e in events
        if e.peak_rise_m >= min_rise_m and (r := e.rate_mm_h) is not None and r > 0
    ]
    out: dict[str, Any] = {"events_rated": len(rates)}
    if len(rates) < 2:
        return out
    n = min(TREND_EVENTS, len(rates) // 2)
    first = sum(rates[:n]) / n
    last = sum(rates[-n:]) / n
    line = RunningLine()
    for i, r in enumerate(rates):
        line.add(float(i), r)
    fit = line.fit()
    out.update(
        first_mm_h=round(first, 2),
        last_mm_h=round(last, 2),
        last_over_first=round(last / first, 3),
        slope_mm_h_per_event=None if fit is None else round(fit.slope, 3),
        compared_events=n,
    )
    return out


@dataclass
class _Fill:
    """Working state of the event in progress (not exposed)."""

    event: DrainEvent
    trough_rise_m: float
    trough_at: int
    fit: RunningLine = field(default_factory=RunningLine)  # ln(rise) vs hours since the peak
    lin: RunningLine = field(default_factory=RunningLine)  # rise vs hours since the peak
    last_rise_m: float = 0.0


class DrainTimeDetector(Detector):
    """One infiltration practice: fill events, drain-time alerts, forecast, clogging trend."""

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
        self.practice_id = practice.id
        self.practice_type = practice.type
        self.site_name = site_name
        self.sensor = practice.level_sensor
        self.unit = unit
        self.mode = practice.baseline
        self.design_m = practice.design_level_metres()
        self.tol_m = drain_tolerance_m(practice.tolerance_metres())
        # Lake George §148-11 I(3): the drain-down limit by practice type, or the site's override.
        self.limit_h: float | None = None if rule is None else float(rule.value)
        self.rule_cite: str | None = None if rule is None else rule.cite()
        self.stale_ms = max(STALE_MIN_MS, round(6 * interval_s * 1000))
        self._recent: list[tuple[int, float]] = []
        self._window: deque[tuple[int, float]] = deque()
        self._baseline_cache: tuple[int, float] | None = None
        self._fill: _Fill | None = None
        self._last_t: int | None = None
        self.history: list[DrainEvent] = []
        self.ignored_readings = 0

    # --- public views ------------------------------------------------------------

    def sensors(self) -> tuple[str, ...]:
        return (self.sensor,)

    def events(self) -> list[DrainEvent]:
        """Every fill event so far, oldest first; the last may still be draining."""
        return self.history + ([self._fill.event] if self._fill is not None else [])

    def trend(self) -> dict[str, Any]:
        return clogging_trend(self.history, TREND_MIN_RISE_TOLS * self.tol_m)

    # --- engine callbacks -----------------------------------------------------------

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        # Not evidence unless usable (analytics/quality.py); counted, never silently dropped.
        if not usable(reading.flags) or not math.isfinite(reading.value):
            self.ignored_readings += 1
            return
        t = reading.t
        level = to_metres(reading.value, self.unit)
        if self._last_t is not None and t - self._last_t > self.stale_ms:
            self._after_gap(t, ctx)
        self._last_t = t
        self._remember(t, level)
        self._recent.append((t, level))
        if len(self._recent) > SMOOTH_READINGS:
            del self._recent[0]
        if len(self._recent) < SMOOTH_READINGS:
            return  # the first readings (or the first after a gap): no neighbours yet
        # The centred median: dated at the middle reading, decided now.
        mid = self._recent[1][0]
        smooth = median(v for _, v in self._recent)
        fill = self._fill
        if fill is None:
            base = self._baseline(mid, smooth)
            if base is not None and smooth - base > FILL_TOLERANCES * self.tol_m:
                self._start(mid, base, smooth - base, ctx)
            return
        rise = smooth - fill.event.baseline_m
        fill.last_rise_m = rise
        if rise <= self.tol_m:
            self._drained(mid, rise, ctx)
            return
        self._track(mid, rise, fill)
        self._check_deadline(mid, ctx)
        self._check_forecast(mid, ctx)

    def on_timer(self, at: int, tag: str, ctx: Context) -> None:
        fill = self._fill
        if fill is None or self.limit_h is None or tag != f"deadline:{fill.event.start_at}":
            return  # a timer of an event that has drained
        deadline = fill.event.peak_at + self._limit_ms()
        if at < deadline:
            ctx.schedule(self, deadline, tag)  # the clock restarted from a later peak
            return
        if self._last_t is None or at - self._last_t > self.stale_ms:
            return  # no recent reading: the next one decides (on_reading checks the deadline)
        self._check_deadline(at, ctx)

    # --- the state machine -----------------------------------------------------------

    def _limit_ms(self) -> int:
        assert self.limit_h is not None
        return round(self.limit_h * MS_PER_H)

    def _remember(self, t: int, level: float) -> None:
        if self.mode != "pre_event":
            return
        self._window.append((t, level))
        while self._window and self._window[0][0] <= t - BASELINE_WINDOW_MS:
            self._window.popleft()

    def _baseline(self, t: int, smooth: float) -> float | None:
        """The level a fill starting now rises above (before ``t``'s reading joins the window)."""
        if self.mode == "design":
            return self.design_m
        cached = self._baseline_cache
        if (
            cached is not None
            and t - cached[0] < BASELINE_REFRESH_MS
            and smooth - cached[1] <= FILL_TOLERANCES * self.tol_m
        ):
            return cached[1]
        values = [v for ts, v in self._window if t - BASELINE_WINDOW_MS < ts < t]
        if len(values) < BASELINE_MIN_READINGS:
            return None  # too little history (start of record, after a gap): wait
        base = median(values)
        self._baseline_cache = (t, base)
        return base

    def _after_gap(self, t: int, ctx: Context) -> None:
        """Readings resume after a gap: never take a median across it.

        With a pre-event baseline, a gap longer than the baseline window also
        ends the event in progress without a verdict: the datum drifts (the
        PWD well's dry level moved by 0.4 ft across its 42-day gap), so the old
        baseline no longer says whether the practice is drained.
        """
        self._recent = []
        self._baseline_cache = None
        fill = self._fill
        if fill is None or self.mode != "pre_event" or self._last_t is None:
            return
        if t - self._last_t <= BASELINE_WINDOW_MS:
            return
        ev = fill.event
        ev.interrupted_at = self._last_t
        self.history.append(ev)
        self._fill = None
        gap_h = (t - self._last_t) / MS_PER_H
        note = (
            f"{self._label()}: no level readings for {gap_h:.0f} h (from {local_time(self._last_t, ctx.zone)} to "
            f"{local_time(t, ctx.zone)}); the sensor's datum drifts, so the event of {local_time(ev.start_at, ctx.zone)} is closed "
            "without a verdict. Check the practice on site."
        )
        for kind in (KIND, FORECAST_KIND):
            if ctx.alerts.is_open(kind, self.practice_id):
                ctx.alerts.resolve(kind, self.practice_id, t, message=note)

    def _start(self, t: int, baseline: float, rise: float, ctx: Context) -> None:
        t_max, v_max = max(self._recent, key=lambda p: (p[1], p[0]))
        event = DrainEvent(self.practice_id, t, baseline, t, rise)
        event.rises.append(Rise(t, baseline, t, v_max, t_max))
        self._fill = _Fill(event, trough_rise_m=rise, trough_at=t, last_rise_m=rise)
        if self.limit_h is not None:
            # The clock can only start later (at the peak): a chain of timers follows it.
            ctx.schedule(self, t + self._limit_ms(), f"deadline:{t}")

    def _track(self, t: int, rise: float, fill: _Fill) -> None:
        ev = fill.event
        refill_rise = max(2.0 * self.tol_m, REFILL_FRACTION * ev.peak_rise_m)
        still_rising = rise > ev.peak_rise_m + self.tol_m / 2.0
        refilled = rise > fill.trough_rise_m + refill_rise
        if still_rising or refilled:
            t_max, v_max = max(self._recent, key=lambda p: (p[1], p[0]))
            if fill.trough_rise_m < ev.peak_rise_m - refill_rise:
                # A refill before drain-down restarts the clock from the new peak.
                ev.refills += 1
                from_level = ev.baseline_m + fill.trough_rise_m
                ev.rises.append(Rise(fill.trough_at, from_level, t, v_max, t_max))
            current = ev.rises[-1]
            current.peak_at = t
            if v_max > current.max_level_m:
                current.max_level_m, current.max_level_at = v_max, t_max
            ev.peak_at, ev.peak_rise_m = t, rise
            ev.t10_at = ev.recession_end_at = ev.t90_at = None
            ev.recession_end_rise_m = ev.t90_rise_m = None
            fill.trough_rise_m, fill.trough_at = rise, t
            fill.fit = RunningLine()
            fill.lin = RunningLine()
            return
        if rise < fill.trough_rise_m:
            fill.trough_rise_m, fill.trough_at = rise, t
        if t > ev.peak_at:
            fill.fit.add((t - ev.peak_at) / MS_PER_H, math.log(rise))
            fill.lin.add((t - ev.peak_at) / MS_PER_H, rise)
        if ev.t90_at is None and rise <= RECESSION_START_FRACTION * ev.peak_rise_m:
            ev.t90_at, ev.t90_rise_m = t, rise
        if ev.t10_at is None and rise <= RECESSION_END_FRACTION * ev.peak_rise_m:
            ev.t10_at = ev.recession_end_at = t
            ev.recession_end_rise_m = rise

    def _forecast(self, fill: _Fill) -> RecessionForecast | None:
        decisive = math.inf if self.limit_h is None else DECISIVE_FRACTION * self.limit_h
        return recession_forecast(fill.fit, self.tol_m, fill.lin, decisive_span_h=decisive)

    def _drained(self, t: int, rise: float, ctx: Context) -> None:
        fill = self._fill
        assert fill is not None
        ev = fill.event
        ev.drained_at = t
        if ev.t90_at is None:
            ev.t90_at, ev.t90_rise_m = t, rise
        if ev.recession_end_at is None:
            ev.recession_end_at, ev.recession_end_rise_m = t, rise
        fit = fill.fit.fit()
        ev.k_per_h = None if fit is None else -fit.slope
        self.history.append(ev)
        self._fill = None
        subject = self.practice_id
        drain_h = (t - ev.peak_at) / MS_PER_H
        if ctx.alerts.is_open(KIND, subject):
            ctx.alerts.resolve(
                KIND,
                subject,
                t,
                message=(
                    f"{self._label()} drained back to its design level at {local_time(t, ctx.zone)}, "
                    f"{drain_h:.1f} h after the peak of {local_time(ev.peak_at, ctx.zone)} "
                    f"(limit {self._limit_text()}, {self.rule_cite})."
                ),
                evidence=self._evidence(ev, t, rise),
            )
        if ctx.alerts.is_open(FORECAST_KIND, subject):
            ctx.alerts.resolve(
                FORECAST_KIND,
                subject,
                t,
                message=(
                    f"{self._label()} drained at {local_time(t, ctx.zone)}, {drain_h:.1f} h after its peak "
                    f"(limit {self._limit_text()}, {self.rule_cite})."
                ),
                evidence=self._evidence(ev, t, rise),
            )

    def _check_deadline(self, t: int, ctx: Context) -> None:
        fill = self._fill
        if fill is None or self.limit_h is None or ctx.alerts.is_open(KIND, self.practice_id):
            return
        ev = fill.event
        deadline = ev.peak_at + self._limit_ms()
        if t < deadline:
            return
        # Lake George §148-11 I(3): not back to the design level within the limit for its type.
        ev.exceeded = True
        rise = fill.last_rise_m
        level = self._level_text(ev.baseline_m + rise)
        ctx.alerts.open(
            KIND,
            self.practice_id,
            t,
            Severity.CRITICAL,
            rule=self.rule_cite or "",
            message=(
                f"{self._label()} has not drained: {(t - ev.peak_at) / MS_PER_H:.1f} h after "
                f"its peak of {self._level_text(ev.peak_level_m)} at {local_time(ev.peak_at, ctx.zone)} the water "
                f"is still {self._rise_text(rise)} above {self._base_text()} (level {level}); "
                f"the limit is {self._limit_text()} ({self.rule_cite}). Inspect it for clogging "
                "or a blocked outlet, keep sediment out of it and restore infiltration."
            ),
            evidence=self._evidence(ev, t, rise),
        )
        if ctx.alerts.is_open(FORECAST_KIND, self.practice_id):
            ctx.alerts.resolve(
                FORECAST_KIND,
                self.practice_id,
                t,
                message=(
                    f"{self._label()}: the forecast exceedance came true; "
                    f"superseded by the drain_time alert at {local_time(t, ctx.zone)}."
                ),
            )

    def _check_forecast(self, t: int, ctx: Context) -> None:
        fill = self._fill
        if fill is None or self.limit_h is None or ctx.alerts.is_open(KIND, self.practice_id):
            return
        ev = fill.event
        if t >= ev.peak_at + self._limit_ms():
            return
        fc = self._forecast(fill)
        subject = self.practice_id
        limit_h = self.limit_h
        hours = (t - ev.peak_at) / MS_PER_H
        # Not draining at all: a quarter of the limit gone and not one tolerance of fall.
        stalled = (
            hours >= STALLED_FRACTION * limit_h and ev.peak_rise_m - fill.last_rise_m < self.tol_m
        )
        trusted = fc is not None and fc.trusted
        is_open = ctx.alerts.is_open(FORECAST_KIND, subject)
        if not is_open:
            late = (
                fc is not None and trusted and fc.drain_h_fast >= limit_h * (1.0 + FORECAST_MARGIN)
            )
            if not (late or stalled):
                return
        elif fc is not None and trusted and fc.drain_h <= limit_h and not stalled:
            ctx.alerts.resolve(
                FORECAST_KIND,
                subject,
                t,
                message=(
                    f"{self._label()}: the recession has sped up; it is now forecast to drain "
                    f"{self._hours_text(fc.drain_h)} after its peak, within the limit of "
                    f"{self._limit_text()} ({self.rule_cite})."
                ),
                evidence=self._evidence(ev, t, fill.last_rise_m, fc),
            )
            return
        elif not (trusted or stalled):
            return  # open, and nothing new to say: keep the last trusted message
        ev.forecast_warned = True
        if fc is not None and trusted:
            outlook = (
                f"the recession forecasts drain-down {self._hours_text(fc.drain_h)} after the "
                f"peak (at the fastest plausible rate {self._hours_text(fc.drain_h_fast)})"
            )
        else:
            outlook = (
                f"{hours:.0f} h after the peak the level has fallen by only "
                f"{self._rise_text(ev.peak_rise_m - fill.last_rise_m)}"
            )
        message = (
            f"{self._label()} is draining too slowly: since its peak of "
            f"{self._level_text(ev.peak_level_m)} at {local_time(ev.peak_at, ctx.zone)} {outlook}; the limit is "
            f"{self._limit_text()} ({self.rule_cite}), due "
            f"{local_time(ev.peak_at + self._limit_ms(), ctx.zone)}. Inspect it for clogging or a blocked "
            "outlet now."
        )
        evidence = self._evidence(ev, t, fill.last_rise_m, fc)
        if is_open:
            ctx.alerts.update(FORECAST_KIND, subject, t, message=message, evidence=evidence)
        else:
            ctx.alerts.open(
                FORECAST_KIND,
                subject,
                t,
                Severity.WARNING,
                rule=self.rule_cite or "",
                message=message,
                evidence=evidence,
            )

    # --- texts --------------------------------------------------------------------------

    def _label(self) -> str:
        kind = TYPE_LABEL.get(self.practice_type, self.practice_type)
        where = f" at {self.site_name}" if self.site_name else ""
        return f"The {kind} {self.practice_id}{where}"

    def _limit_text(self) -> str:
        assert self.limit_h is not None
        h = self.limit_h
        return f"{h:g} h ({h / 24:g} d)" if h % 24 == 0 else f"{h:g} h"

    def _hours_text(self, hours: float) -> str:
        return "never (the level is not falling)" if math.isinf(hours) else f"{hours:.0f} h"

    def _level_text(self, metres: float) -> str:
        return f"{from_metres(metres, self.unit):.2f} {self.unit}"

    def _rise_text(self, metres: float) -> str:
        return f"{from_metres(metres, self.unit):.2f} {self.unit}"

    def _base_text(self) -> str:
        return "its design level" if self.mode == "design" else "its dry level before the storm"

    def _evidence(
        self, ev: DrainEvent, t: int, rise: float, fc: RecessionForecast | None = None
    ) -> dict[str, Any]:
        fill = self._fill
        if fc is None and fill is not None and fill.event is ev:
            fc = self._forecast(fill)
        out: dict[str, Any] = {
            "practice": self.practice_id,
            "type": self.practice_type,
            "sensor": self.sensor,
            "unit": self.unit,
            "baseline_mode": self.mode,
            "baseline_m": round(ev.baseline_m, 4),
            "tolerance_m": round(self.tol_m, 4),
            "peak_at": iso(ev.peak_at),
            "peak_level_m": round(ev.peak_level_m, 4),
            "rise_at_peak_m": round(ev.peak_rise_m, 4),
            "refills": ev.refills,
            "at": iso(t),
            "hours_since_peak": round((t - ev.peak_at) / MS_PER_H, 2),
            "rise_now_m": round(rise, 4),
            "limit_h": self.limit_h,
            "deadline": None
            if self.limit_h is None
            else iso(ev.peak_at + round(self.limit_h * MS_PER_H)),
            "event": ev.summary(self.unit),
            "clogging_trend": self.trend(),
            "recent_events": [e.summary(self.unit) for e in self.history[-5:]],
            "ignored_readings": self.ignored_readings,
        }
        if fc is not None:
            out["forecast"] = {
                "model": (
                    "exponential decay of the rise, least squares on ln(rise) since the peak"
                    if fc.model == "exponential"
                    else "constant rate of fall of the rise, least squares on the rise since the peak"
                ),
                "k_per_h": round(fc.k_per_h, 5),
                "k_fast_per_h": round(fc.k_fast_per_h, 5),
                "r2": round(fc.r2, 4),
                "points": fc.n,
                "drain_h": None if math.isinf(fc.drain_h) else round(fc.drain_h, 1),
                "drain_h_fast": None if math.isinf(fc.drain_h_fast) else round(fc.drain_h_fast, 1),
            }
        return out


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
