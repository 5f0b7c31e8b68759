"""Finding fills in a practice's level record: start, peak, refills, drain-down.

The event detection of the drain-time detector (analytics/drain.py, whose
docstring and docs/drain-time.md give the reasons): the centred median of three
readings drives every decision; a fill starts when the rise above the baseline
(the design level, or the dry level of the day before) exceeds two tolerances
and ends, drained, when it falls back within one; a refill before drain-down
restarts the clock from the new peak. While the level falls, the tracker keeps
the running fits the recession forecast needs (analytics/recession.py). It
raises no alert: it tells the detector what changed (:class:`Step`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from statistics import median

from analytics.drain_event import DrainEvent, Rise
from analytics.recession import RecessionForecast, RunningLine, recession_forecast
from analytics.timeutil import MS_PER_H, MS_PER_MIN

SMOOTH_READINGS = 3  # the centred median of three readings drives every decision
FILL_TOLERANCES = 2.0  # a fill is a rise of more than two tolerances (drained: within one)
BASELINE_WINDOW_MS = 24 * MS_PER_H  # pre-event baseline: median level over the day before
BASELINE_REFRESH_MS = 15 * MS_PER_MIN
BASELINE_MIN_READINGS = 4
REFILL_FRACTION = 0.10  # a refill climbs this fraction of the peak rise (or 2 tol) above the trough
RECESSION_START_FRACTION = 0.90  # the recession rate is measured from 90 % of the rise ...
RECESSION_END_FRACTION = 0.10  # ... down to 10 % of it
# Share of the limit after which the falling limb is long enough to choose between the
# exponential and the constant-rate recession model (analytics/recession.py).
DECISIVE_FRACTION = 0.25


@dataclass
class Fill:
    """Working state of the event in progress."""

    event: DrainEvent
    trough_rise_m: float
    trough_at: int
    fit: RunningLine = field(default_factory=RunningLine)  # ln(rise) vs hours since the peak
    lin: RunningLine = field(default_factory=RunningLine)  # rise vs hours since the peak
    last_rise_m: float = 0.0


class Change(Enum):
    STARTED = "started"  # a fill began: its drain clock can only start later, at the peak
    DRAINING = "draining"  # the event goes on (rising, refilling or falling)
    DRAINED = "drained"  # back within the tolerance: the event is in the history now


@dataclass(frozen=True, slots=True)
class Step:
    """What one reading changed, dated at the middle reading of the median."""

    change: Change
    at: int
    rise_m: float
    event: DrainEvent


class FillTracker:
    """The fill events of one practice, from its level readings (metres) in time order."""

    def __init__(self, practice_id: str, mode: str, design_m: float, tol_m: float) -> None:
        self.practice_id = practice_id
        self.mode = mode
        self.design_m = design_m
        self.tol_m = tol_m
        self.recent: list[tuple[int, float]] = []
        self.window: deque[tuple[int, float]] = deque()
        self.baseline_cache: tuple[int, float] | None = None
        self.fill: Fill | None = None
        self.history: list[DrainEvent] = []

    def events(self) -> list[DrainEvent]:
        """Every fill event so far, oldest first; the last may still be draining."""
        return self.history + ([self.fill.event] if self.fill is not None else [])

    def forecast(self, limit_h: float | None) -> RecessionForecast | None:
        """The recession forecast of the event in progress (None without one, or too early)."""
        fill = self.fill
        if fill is None:
            return None
        decisive = math.inf if limit_h is None else DECISIVE_FRACTION * limit_h
        return recession_forecast(fill.fit, self.tol_m, fill.lin, decisive_span_h=decisive)

    def add(self, t: int, level: float) -> Step | None:
        """Take one usable reading; what it changed, if anything."""
        self._remember(t, level)
        self.recent.append((t, level))
        if len(self.recent) > SMOOTH_READINGS:
            del self.recent[0]
        if len(self.recent) < SMOOTH_READINGS:
            return None  # the first readings (or the first after a gap): no neighbours yet
        # The centred median: dated at the middle reading, decided now.
        mid = self.recent[1][0]
        smooth = median(v for _, v in self.recent)
        fill = self.fill
        if fill is None:
            base = self._baseline(mid, smooth)
            if base is None or smooth - base <= FILL_TOLERANCES * self.tol_m:
                return None
            return Step(Change.STARTED, mid, smooth - base, self._start(mid, base, smooth - base))
        rise = smooth - fill.event.baseline_m
        fill.last_rise_m = rise
        if rise <= self.tol_m:
            return Step(Change.DRAINED, mid, rise, self._drained(mid, rise, fill))
        self._track(mid, rise, fill)
        return Step(Change.DRAINING, mid, rise, fill.event)

    def after_gap(self, last_t: int, t: int) -> DrainEvent | None:
        """Readings resume at ``t`` after a gap since ``last_t``: never take a median across it.

        With a pre-event baseline, a gap longer than the baseline window also
        ends the event in progress without a verdict (returned): the datum
        drifts (the PWD well's dry level moved by 0.4 ft across its 42-day
        gap), so the old baseline no longer says whether the practice is drained.
        """
        self.recent = []
        self.baseline_cache = None
        fill = self.fill
        if fill is None or self.mode != "pre_event" or t - last_t <= BASELINE_WINDOW_MS:
            return None
        fill.event.interrupted_at = last_t
        self.history.append(fill.event)
        self.fill = None
        return fill.event

    def _remember(self, t: int, level: float) -> None:
        if self.mode != "pre_event":
            return
        self.window.append((t, level))
        while self.window and self.window[0][0] <= t - BASELINE_WINDOW_MS:
            self.window.popleft()

    def _baseline(self, t: int, smooth: float) -> float | None:
        """The level a fill starting now rises above (before ``t``'s reading joins the window)."""
        if self.mode == "design":
            return self.design_m
        cached = self.baseline_cache
        if (
            cached is not None
            and t - cached[0] < BASELINE_REFRESH_MS
            and smooth - cached[1] <= FILL_TOLERANCES * self.tol_m
        ):
            return cached[1]
        values = [v for ts, v in self.window if t - BASELINE_WINDOW_MS < ts < t]
        if len(values) < BASELINE_MIN_READINGS:
            return None  # too little history (start of record, after a gap): wait
        base = median(values)
        self.baseline_cache = (t, base)
        return base

    def _start(self, t: int, baseline: float, rise: float) -> DrainEvent:
        t_max, v_max = max(self.recent, key=lambda p: (p[1], p[0]))
        event = DrainEvent(self.practice_id, t, baseline, t, rise)
        event.rises.append(Rise(t, baseline, t, v_max, t_max))
        self.fill = Fill(event, trough_rise_m=rise, trough_at=t, last_rise_m=rise)
        return event

    def _track(self, t: int, rise: float, fill: Fill) -> None:
        ev = fill.event
        refill_rise = max(2.0 * self.tol_m, REFILL_FRACTION * ev.peak_rise_m)
        still_rising = rise > ev.peak_rise_m + self.tol_m / 2.0
        refilled = rise > fill.trough_rise_m + refill_rise
        if still_rising or refilled:
            t_max, v_max = max(self.recent, key=lambda p: (p[1], p[0]))
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

    def _drained(self, t: int, rise: float, fill: Fill) -> DrainEvent:
        ev = fill.event
        ev.drained_at = t
        if ev.t90_at is None:
            ev.t90_at, ev.t90_rise_m = t, rise
        if ev.recession_end_at is None:
            ev.recession_end_at, ev.recession_end_rise_m = t, rise
        fit = fill.fit.fit()
        ev.k_per_h = None if fit is None else -fit.slope
        self.history.append(ev)
        self.fill = None
        return ev
