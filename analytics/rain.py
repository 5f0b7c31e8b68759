"""Rainfall: depths per interval → rolling totals, storm events and a daily log.

A rain reading is the depth that fell during the interval ending at its time
(docs/replay-contract.md, "Recording"), in the sensor's unit (``in`` or
``mm``); the interval is the sensor's ``interval_s``. Inside this module depths
are whole nanometres (1 in = 25 400 000 nm, a 0.2 mm tip = 200 000 nm), so totals are
exact and "24.0 mm" never becomes 23.999999 against a threshold.

Storm segmentation (one implementation, :class:`StormSegmenter`, used both by
the pure function :func:`segment_storms` and by :class:`RainDetector`): a storm
is a run of wet intervals; a dry period of at least ``gap`` between the end of
one wet interval and the start of the next separates two storms (rule
``rain.storm_gap_h``, 6 h by default, EPA/Woodward-Clyde 1989; a gauge may
override it with ``storm_gap_h``). This is pwdgsi ``marsDetectEvents``' rule:
with 15-minute intervals it starts a new event when two wet stamps are at
least ``iet + 15 min`` apart, which is a dry period of at least ``iet``
(docs/storm-segmentation.md).

The end of a storm (when the rain stopped: the end of its last wet interval)
is only *known* once the dry gap has passed without rain: the detector sets a
timer for that moment and then publishes the finished storm as a typed
engine event, :class:`StormEnded` (``ctx.publish``); the inspection-duty
detector subscribes to it (``handles``).

NCG01 Part III §A item 1 requires the rain gauge to be read and recorded
daily: :meth:`RainDetector.daily_log` is that record, per local day of the site;
the detector offers it to the engine as its ``rain_days`` role
(:meth:`analytics.engine.Engine.rain_log`).

Design storms (siltwatch/detections/design_storms.py): the rain of the last
24 h at a gauge (``GaugeState.window``, all rain whatever the storm) is held
against the site's ``[[design_storms]]`` depths; when it reaches one, the
detector publishes :class:`~analytics.events.DesignStormExceeded`, once per
design storm and storm. A storm counts as begun (:class:`StormStarted`) once its
rain reaches ``rain.min_storm_in``, which ends what the practices' detectors
remember of the previous design storm at that gauge (:class:`DesignStormMemory`).
:class:`DesignStormDetector` records the event (``design_storm_exceeded``, the
inspection duty).

Rain days (Lake Lure 96.03 "Working Days": days "during which weather
conditions ... permit land disturbing activity"): with the site's
``rain_day_in``/``rain_day_mm`` set, a local day of a gauge's daily record that
reaches it is published as a :class:`WetDay` the moment it does (a day's rain
only grows); the stabilization detector stops counting it as a working day.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo

from analytics.calendar import SiteCalendar
from analytics.detector import Context, Detector
from analytics.events import DesignStormExceeded, DetectorEvent, Inspection, RainDay, SensorReading
from analytics.inspection_desk import completed_by
from analytics.inspection_overdue import DutyNote, OverdueWatch
from analytics.quality import usable
from analytics.statecodec import plain_copy
from analytics.timers import Tag
from analytics.timeutil import MS_PER_H, MS_PER_S, iso
from siltwatch.config import SiteConfig
from siltwatch.detections.design_storms import DESIGN_STORM_EXCEEDED, DesignStormReason
from siltwatch.detections.inspections import INSPECTION
from siltwatch.rulepacks import Rules
from siltwatch.timefmt import local_time
from siltwatch.units import mm_to, to_mm
from siltwatch.vocabulary import Severity

NM_PER_MM = 1_000_000
NM_PER_IN = 25_400_000
DEFAULT_WINDOW_H = 24.0
DAY_MS = 24 * MS_PER_H  # the design storms' window: NOAA Atlas 14 24-hour depths


# --- storm segmentation (pure) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StormSpan:
    """One storm: wet intervals with no dry period of ``gap`` or more inside.

    ``start`` is when the rain began (start of the first wet interval), ``end``
    when it stopped (end of the last wet interval); ``first_t``/``last_t`` are
    the time stamps of the first and last wet readings.
    """

    start: int
    end: int
    first_t: int
    last_t: int
    depth: float
    wet_intervals: int


class StormSegmenter:
    """Incremental storm segmentation over (t, depth) samples in time order.

    ``add`` returns the storm a sample closes (a wet sample after a long enough
    dry period); ``close_if_dry`` closes the open storm once event time shows the
    dry gap has passed. Plain data in slots: it lives in snapshotted detector
    state, which the snapshot codec reads slot by slot (no pickle hooks needed).
    """

    __slots__ = ("depth", "first_t", "gap_ms", "interval_ms", "last_seen", "last_t", "wet")

    def __init__(self, gap_ms: int, interval_ms: int = 0) -> None:
        if gap_ms <= 0:
            raise ValueError("the storm gap must be positive")
        if interval_ms < 0:
            raise ValueError("the interval must be >= 0")
        self.gap_ms = gap_ms
        self.interval_ms = interval_ms
        self.first_t: int | None = None
        self.last_t = 0
        self.depth = 0.0
        self.wet = 0
        self.last_seen: int | None = None

    @property
    def is_open(self) -> bool:
        return self.first_t is not None

    def closes_at(self) -> int | None:
        """When the open storm is final if no more rain comes.

        A wet sample at ``t`` began to fall at ``t - interval``; it belongs to the
        open storm while ``t - interval - last_t < gap``. So once every sample
        up to ``last_t + gap + interval`` is in, the storm cannot grow.
        """
        if self.first_t is None:
            return None
        return self.last_t + self.gap_ms + self.interval_ms

    def peek(self) -> StormSpan | None:
        """The open storm as it stands (not closed)."""
        if self.first_t is None:
            return None
        return StormSpan(
            start=self.first_t - self.interval_ms,
            end=self.last_t,
            first_t=self.first_t,
            last_t=self.last_t,
            depth=self.depth,
            wet_intervals=self.wet,
        )

    def _close(self) -> StormSpan | None:
        span = self.peek()
        self.first_t = None
        self.depth = 0.0
        self.wet = 0
        return span

    def add(self, t: int, depth: float) -> StormSpan | None:
        """Take one sample; return the storm it closed, if any.

        Samples must come in increasing time order (the engine guarantees it;
        :func:`segment_storms` sorts). Dry (zero) samples change nothing: a
        storm ends by the passage of time, not by a zero reading.
        """
        if self.last_seen is not None and t <= self.last_seen:
            raise ValueError(f"samples out of order: {t} after {self.last_seen}")
        self.last_seen = t
        if not depth > 0:
            return None
        closed: StormSpan | None = None
        # Dry period = start of this wet interval - end of the last one; >= gap: a new storm.
        if self.first_t is not None and (t - self.interval_ms) - self.last_t >= self.gap_ms:
            closed = self._close()
        if self.first_t is None:
            self.first_t = t
        self.last_t = t
        self.depth += depth
        self.wet += 1
        return closed

    def close_if_dry(self, now: int) -> StormSpan | None:
        """Close the open storm if event time ``now`` shows its dry gap has passed."""
        due = self.closes_at()
        if due is None or now < due:
            return None
        return self._close()

    def flush(self) -> StormSpan | None:
        """Close the open storm whatever the time (end of a finite series)."""
        return self._close()


def segment_storms(
    samples: Iterable[tuple[int, float]],
    *,
    gap_ms: int,
    interval_ms: int = 0,
    min_depth: float = 0.0,
) -> list[StormSpan]:
    """Storms in a series of (t epoch ms, depth that fell in the interval ending at t).

    Order of the input does not matter; two depths for the same time are an
    error. Storms shallower than ``min_depth`` (same unit as the depths) are
    dropped, as pwdgsi drops events under 0.10 in. ``interval_ms = 0`` treats
    samples as instants (tip times).
    """
    ordered = sorted(samples, key=lambda s: s[0])
    seg = StormSegmenter(gap_ms, interval_ms)
    spans: list[StormSpan] = []
    previous: int | None = None
    for t, depth in ordered:
        if t == previous:
            raise ValueError(f"two depths for the same time {iso(t)}")
        previous = t
        closed = seg.add(t, depth)
        if closed is not None:
            spans.append(closed)
    last = seg.flush()
    if last is not None:
        spans.append(last)
    # pwdgsi subtracts 1e-7 in for the same reason: a float sum just under the limit.
    tolerance = 1e-9 * max(1.0, abs(min_depth))
    return [s for s in spans if s.depth >= min_depth - tolerance]


# --- the detector --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StormRecord:
    """A storm seen by a gauge, with what the inspection rules need."""

    gauge: str
    id: str
    start: int
    end: int
    depth_nm: int
    wet_intervals: int
    peak_window_nm: int
    peak_window_at: int
    qualified_at: int | None
    closed: bool
    unit: str

    def depth(self, unit: str | None = None) -> float:
        return mm_to(self.depth_nm / NM_PER_MM, unit or self.unit)

    def peak_window(self, unit: str | None = None) -> float:
        return mm_to(self.peak_window_nm / NM_PER_MM, unit or self.unit)


@dataclass(frozen=True, slots=True)
class StormEnded(DetectorEvent):
    """A storm is finished (its dry gap passed), or the record ended while it was open.

    Published by :class:`RainDetector` at event time ``at``: when the dry gap
    passed, when the next storm's first wet reading closed it, or at the end of
    the record (then ``storm.closed`` is False). Storms shallower than
    ``rain.min_storm_in`` are traces and are not published.
    """

    storm: StormRecord
    at: int


@dataclass(frozen=True, slots=True)
class StormStarted(DetectorEvent):
    """A storm has begun at a gauge: its rain reached ``rain.min_storm_in`` (a trace is no storm).

    Published by :class:`RainDetector` at ``at``, the reading that made it a
    storm; ``storm`` is the id its :class:`StormEnded` will carry.
    """

    gauge: str
    storm: str
    at: int


@dataclass(frozen=True, slots=True)
class WetDay(DetectorEvent):
    """A local day's rain at a gauge reached the site's rain-day depth (``site.rain_day_in``).

    Published by :class:`RainDetector` at ``at``, the reading that made the day's
    total reach it (the day's record, :meth:`RainDetector.daily_log`, only grows);
    once per day and gauge.
    """

    day: date
    gauge: str
    depth_mm: float  # the day's rain so far
    threshold_mm: float
    at: int


@dataclass(frozen=True, slots=True)
class DesignLevel:
    """One design storm of the site: its name and 24-hour depth (plain data, snapshotted)."""

    name: str
    nm: int


@dataclass
class DayTotal:
    """One local day of a gauge: the depth recorded and how many readings made it."""

    depth_nm: int = 0
    readings: int = 0
    excluded: int = 0


@dataclass
class GaugeState:
    """Everything one gauge accumulates; plain data for the engine snapshot."""

    gauge_id: str
    sensor: str
    unit: str
    interval_ms: int
    gap_ms: int
    tip_nm: int | None
    segmenter: StormSegmenter
    window: deque[tuple[int, int]] = field(default_factory=deque)  # all rain, last 24 h (DAY_MS)
    window_nm: int = 0
    storm_window: deque[tuple[int, int]] = field(default_factory=deque)  # open storm, last 24 h
    storm_window_nm: int = 0
    peak_nm: int = 0
    peak_at: int = 0
    qualified_at: int | None = None
    days: dict[date, DayTotal] = field(default_factory=dict)
    storms: list[StormRecord] = field(default_factory=list)
    excluded: int = 0
    design_reached: list[str] = field(default_factory=list)  # design storms of the open storm


def _evict(window: deque[tuple[int, int]], total: int, after: int) -> int:
    """Drop samples with t <= ``after``; return the new total."""
    while window and window[0][0] <= after:
        total -= window.popleft()[1]
    return total


class RainDetector(Detector):
    """Rain accounting for every gauge of a site.

    Keeps, per gauge: the rolling totals (all rain over 24 h; the open storm's
    rain over the storm window), storm events, and the daily log. Finished
    storms are published as :class:`StormEnded`, begun ones as
    :class:`StormStarted`; the site's design storms reached as
    :class:`~analytics.events.DesignStormExceeded`, its rain days as :class:`WetDay`.
    """

    name = "rain"

    def __init__(
        self,
        gauges: list[GaugeState],
        calendar: SiteCalendar,
        *,
        window_ms: int = round(DEFAULT_WINDOW_H * MS_PER_H),
        qualify_nm: int | None = None,
        min_storm_nm: int = 0,
        design: tuple[DesignLevel, ...] = (),
        rain_day_nm: int | None = None,
    ) -> None:
        self.gauges = {g.gauge_id: g for g in gauges}
        self.by_sensor = {g.sensor: g for g in gauges}
        self.calendar = calendar
        self.window_ms = window_ms
        self.qualify_nm = qualify_nm
        self.min_storm_nm = min_storm_nm
        self.design = tuple(sorted(design, key=lambda d: d.nm))  # smallest first
        self.rain_day_nm = rain_day_nm

    @classmethod
    def from_site(
        cls,
        site: SiteConfig,
        rules: Rules,
        calendar: SiteCalendar,
        *,
        qualify_nm: int | None = None,
        window_h: float = DEFAULT_WINDOW_H,
    ) -> RainDetector | None:
        if not site.rain_gauges:
            return None
        sensors = site.sensors()
        default_gap_h = rules.number("rain.storm_gap_h")
        min_storm = rules.get("rain.min_storm_in")
        gauges = []
        for g in site.rain_gauges:
            sensor = sensors[g.sensor]
            tip_mm = sensor.tip_depth_mm()
            gap_h = g.storm_gap_h if g.storm_gap_h is not None else default_gap_h
            gauges.append(
                GaugeState(
                    gauge_id=g.id,
                    sensor=g.sensor,
                    unit=sensor.unit,
                    interval_ms=round(sensor.interval_s * MS_PER_S),
                    gap_ms=round(gap_h * MS_PER_H),
                    tip_nm=None if tip_mm is None else round(tip_mm * NM_PER_MM),
                    segmenter=StormSegmenter(
                        round(gap_h * MS_PER_H), round(sensor.interval_s * MS_PER_S)
                    ),
                )
            )
        rain_day_mm = site.site.rain_day_depth_mm()
        return cls(
            gauges,
            calendar,
            window_ms=round(window_h * MS_PER_H),
            qualify_nm=qualify_nm,
            min_storm_nm=0 if min_storm is None else round(float(min_storm.value) * NM_PER_IN),
            design=tuple(
                DesignLevel(d.name, round(d.depth_millimetres() * NM_PER_MM))
                for d in site.design_storms
            ),
            rain_day_nm=None if rain_day_mm is None else round(rain_day_mm * NM_PER_MM),
        )

    def sensors(self) -> Iterable[str]:
        return list(self.by_sensor)

    # --- engine callbacks -------------------------------------------------------------

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        g = self.by_sensor[reading.sensor]
        # Interval (t - interval, t]: a reading ending at midnight belongs to the day before.
        day = self.calendar.local_date(reading.t - 1)
        total = g.days.get(day)
        if total is None:
            total = g.days[day] = DayTotal()
        value = reading.value
        if not usable(reading.flags) or not math.isfinite(value) or value < 0:
            # Counted, never silently used (analytics/quality.py): a flagged tip must not
            # create a duty.
            total.excluded += 1
            g.excluded += 1
            return
        nm = round(to_mm(value, g.unit) * NM_PER_MM)
        total.readings += 1
        total.depth_nm += nm
        wet_day = self.rain_day_nm
        if wet_day is not None and total.depth_nm - nm < wet_day <= total.depth_nm:
            depth_mm, threshold_mm = total.depth_nm / NM_PER_MM, wet_day / NM_PER_MM
            ctx.publish(WetDay(day, g.gauge_id, depth_mm, threshold_mm, reading.t))
        if nm <= 0:
            return
        t = reading.t
        g.window.append((t, nm))
        g.window_nm = _evict(g.window, g.window_nm + nm, t - DAY_MS)
        closed = g.segmenter.add(t, nm)
        if closed is not None:
            self._finished(g, closed, t, ctx, closed_now=True)
        begun = max(self.min_storm_nm, 1)
        if g.segmenter.depth - nm < begun <= g.segmenter.depth:
            ctx.publish(StormStarted(g.gauge_id, self._open_storm_id(g), t))
        if self.design:
            self._design(g, nm, t, ctx)
        g.storm_window.append((t, nm))
        g.storm_window_nm = _evict(g.storm_window, g.storm_window_nm + nm, t - self.window_ms)
        if g.storm_window_nm > g.peak_nm:
            g.peak_nm, g.peak_at = g.storm_window_nm, t
        if (
            self.qualify_nm is not None
            and g.qualified_at is None
            and g.storm_window_nm >= self.qualify_nm
        ):
            g.qualified_at = t
        closes = g.segmenter.closes_at()
        if closes is not None:
            ctx.schedule(self, closes, g.gauge_id)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        g = self.gauges.get(tag) if isinstance(tag, str) else None  # the tag: the gauge id
        if g is None:
            return
        closed = g.segmenter.close_if_dry(at)
        if closed is not None:
            self._finished(g, closed, at, ctx, closed_now=True)

    def on_finish(self, end: int, ctx: Context) -> None:
        """A storm still open at the end of the record is reported as it stands.

        It has not been seen to end; its ``end`` is the last wet reading. If it
        qualified, its subscriber still creates a duty (the rain did qualify).
        """
        for g in self.gauges.values():
            span = g.segmenter.peek()
            if span is not None:
                self._finished(g, span, end, ctx, closed_now=False)

    # --- storms -------------------------------------------------------------------------

    @staticmethod
    def _open_storm_id(g: GaugeState) -> str:
        """The id the open storm's :class:`StormRecord` will have."""
        first_t = g.segmenter.first_t
        assert first_t is not None
        return f"{g.gauge_id}@{iso(first_t - g.segmenter.interval_ms)}"

    def _design(self, g: GaugeState, nm: int, t: int, ctx: Context) -> None:
        """Lake George §148-11 I(3)(c)[1],[2], Lake Lure 96.08(A): the rain of the 24 h
        ending at ``t`` reached a design storm's depth (the reading at ``t`` took it there)."""
        before, now = g.window_nm - nm, g.window_nm
        for level in self.design:
            if before < level.nm <= now and level.name not in g.design_reached:
                g.design_reached.append(level.name)
                event = DesignStormExceeded(
                    gauge=g.gauge_id,
                    storm=self._open_storm_id(g),
                    name=level.name,
                    depth_mm=level.nm / NM_PER_MM,
                    depth_24h_mm=now / NM_PER_MM,
                    window_start=t - DAY_MS,
                    unit=g.unit,
                    at=t,
                )
                ctx.publish(event)

    def _finished(
        self, g: GaugeState, span: StormSpan, now: int, ctx: Context, *, closed_now: bool
    ) -> None:
        record = StormRecord(
            gauge=g.gauge_id,
            id=f"{g.gauge_id}@{iso(span.start)}",
            start=span.start,
            end=span.end,
            depth_nm=round(span.depth),
            wet_intervals=span.wet_intervals,
            peak_window_nm=g.peak_nm,
            peak_window_at=g.peak_at,
            qualified_at=g.qualified_at,
            closed=closed_now,
            unit=g.unit,
        )
        if closed_now:
            g.storm_window.clear()
            g.storm_window_nm = 0
            g.peak_nm, g.peak_at, g.qualified_at = 0, 0, None
            g.design_reached = []
        if record.depth_nm < self.min_storm_nm:
            return  # a trace, not a storm
        g.storms.append(record)
        ctx.publish(StormEnded(record, now))

    # --- what the CLI and dashboards read -------------------------------------------------

    def _gauge(self, gauge: str | None) -> GaugeState:
        if gauge is None:
            return next(iter(self.gauges.values()))
        return self.gauges[gauge]

    def daily_log(
        self, gauge: str | None = None, unit: str | None = None
    ) -> list[tuple[date, float]]:
        """NCG01 Part III §A item 1 daily rain record: (local date, depth) per day with readings.

        Depth in ``unit`` (default: the gauge's unit), rounded to 1/10 000.
        Days without any reading are absent (unknown, not dry); ``gauge`` defaults
        to the site's first gauge.
        """
        g = self._gauge(gauge)
        out_unit = unit or g.unit
        return [
            (day, round(mm_to(total.depth_nm / NM_PER_MM, out_unit), 4))
            for day, total in sorted(g.days.items())
        ]

    def rain_days(self) -> list[RainDay]:
        """The daily log of every gauge, in site order, with reading counts (engine role)."""
        out: list[RainDay] = []
        for g in self.gauges.values():
            totals = dict(self.daily_totals(g.gauge_id))
            for day, depth in self.daily_log(g.gauge_id):
                total = totals[day]
                out.append(RainDay(day, g.gauge_id, depth, g.unit, total.readings, total.excluded))
        return out

    def daily_totals(self, gauge: str | None = None) -> list[tuple[date, DayTotal]]:
        """The daily log with reading counts (a day with excluded readings is not trustworthy)."""
        g = self._gauge(gauge)
        return sorted(g.days.items())

    def storms(self, gauge: str | None = None) -> list[StormRecord]:
        """Finished storms of a gauge, oldest first (after a run: also the one still open)."""
        return list(self._gauge(gauge).storms)

    def rolling_total(self, gauge: str | None = None, unit: str | None = None) -> float:
        """Rain in the 24 h ending at the gauge's last wet reading (the design storms' window)."""
        g = self._gauge(gauge)
        return mm_to(g.window_nm / NM_PER_MM, unit or g.unit)


# --- design storms ----------------------------------------------------------------------


def depth_text(mm: float, unit: str) -> str:
    """A rain depth as the gauge's people read it: inches, or mm with the inches."""
    if unit == "mm":
        return f"{mm:.1f} mm ({mm / 25.4:.2f} in)"
    return f"{mm / 25.4:.2f} in"


@dataclass(frozen=True, slots=True)
class DesignStormNote:
    """A design storm exceeded, as a practice's alerts mention it (plain data, snapshotted)."""

    gauge: str
    storm: str
    name: str
    depth_mm: float
    depth_24h_mm: float
    unit: str
    at: int

    def text(self, zone: ZoneInfo, what: str) -> str:
        """The sentence an alert of ``what`` ("the practice", "the trap") ends with."""
        return (
            f"The {self.name} design storm was exceeded: "
            f"{depth_text(self.depth_24h_mm, self.unit)} of rain fell in the 24 h to "
            f"{local_time(self.at, zone)} at gauge {self.gauge} (design depth "
            f"{depth_text(self.depth_mm, self.unit)}), so {what} met a storm beyond its design."
        )

    def evidence(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "gauge": self.gauge,
            "storm": self.storm,
            "at": iso(self.at),
            "design_depth_in": round(self.depth_mm / 25.4, 3),
            "depth_24h_in": round(self.depth_24h_mm / 25.4, 3),
        }


# What a practice's detector subscribes to, to know the design storm it met.
DESIGN_STORM_EVENTS: tuple[type[DetectorEvent], ...] = (DesignStormExceeded, StormStarted)


class DesignStormMemory:
    """The design storms a practice's detector has heard of, until each gauge's next storm.

    Drain-time and sediment-trap alerts raised after a design storm was exceeded,
    and before the next storm began at that gauge, say so: the practice met a
    storm beyond the one it is designed for (Lake George §148-11 I(3)(c),
    Lake Lure 96.08(A)). Plain data in the detector's snapshotted state.
    """

    def __init__(self) -> None:
        self.by_gauge: dict[str, DesignStormNote] = {}

    def on_event(self, event: DetectorEvent) -> None:
        if isinstance(event, DesignStormExceeded):
            self.by_gauge[event.gauge] = plain_copy(DesignStormNote, event)
        elif isinstance(event, StormStarted):
            note = self.by_gauge.get(event.gauge)
            if note is not None and note.storm != event.storm:
                del self.by_gauge[event.gauge]  # the next storm: the design storm is over

    def current(self) -> DesignStormNote | None:
        """The design storm that applies now: the latest heard of, if any."""
        return max(self.by_gauge.values(), key=lambda n: (n.at, n.depth_mm), default=None)


@dataclass(frozen=True)
class DesignStormRule:
    """The law the site's design storms come from, and siltwatch's inspection deadline."""

    cite: str  # the design standard: Lake George §148-11 I(3)(c)[1],[2] / Lake Lure 96.08(A)
    due_days: int
    duty_cite: str  # the duty's rule: the standard, and the deadline's source

    @classmethod
    def from_rules(cls, rules: Rules) -> DesignStormRule:
        standard = rules.get("design_storm.standard")
        due = rules.require("design_storm.inspection_due_days")
        cite = standard.cite() if standard is not None else "the site's design storms"
        return cls(cite, int(due.value), f"{cite}; due per {due.cite()}")


class DesignStormDetector(Detector):
    """Records each design storm a gauge's rain reaches: the alert and the inspection duty.

    ``design_storm_exceeded`` (info; subject: the gauge) opens at the reading
    that took the 24-hour depth to the design storm's, says so again if a bigger
    design storm is reached in the same storm, and resolves when the storm
    ends (at the end of its rain, once the dry gap shows it). One inspection duty
    per storm (kind ``inspection``, reason ``design_storm``, subject: the storm
    id), due by the end of the ``design_storm.inspection_due_days``-th local day
    after; the ordinances name no deadline, so that number is siltwatch's
    default. An inspection completes it as it completes every inspection duty
    (analytics/inspections.py: a record after its creation, or one naming it);
    this detector comes before the inspection detector, so it completes its own
    duties, and raises and resolves their ``inspection_overdue`` alerts itself.
    """

    name = "design-storms"
    handles = (DesignStormExceeded, StormEnded)

    def __init__(
        self, site_name: str, calendar: SiteCalendar, rule: DesignStormRule, practices: list[str]
    ) -> None:
        self.site_name = site_name
        self.rule = rule
        self.practices = list(practices)
        self.watch = OverdueWatch(site_name, calendar)
        self.open: dict[str, str] = {}  # gauge -> the storm its open alert is about
        self.reached: dict[str, list[str]] = {}  # storm id -> design storms reached, in order
        self.duties: dict[str, str] = {}  # storm id -> its duty id

    @classmethod
    def from_site(cls, site: SiteConfig, rules: Rules) -> DesignStormDetector:
        practices = [p.id for p in site.infiltration_practices]
        practices += [t.id for t in site.sediment_traps]
        return cls(
            site.site.name or site.site.id,
            SiteCalendar.from_site(site, rules),
            DesignStormRule.from_rules(rules),
            practices,
        )

    # --- engine callbacks -------------------------------------------------------------

    def on_event(self, event: DetectorEvent, ctx: Context) -> None:
        if isinstance(event, DesignStormExceeded):
            self._exceeded(event, ctx)
        elif isinstance(event, StormEnded):
            self._ended(event, ctx)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        if isinstance(tag, str):
            self.watch.check(tag, at, ctx)  # the tag is the duty id: its deadline passed

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        for duty_id in self.duties.values():
            rec = ctx.duties.records.get(duty_id)
            if rec is not None and completed_by(inspection, rec):
                self.watch.complete(rec, inspection.t, inspection.inspector, ctx)

    def on_finish(self, end: int, ctx: Context) -> None:
        self.watch.refresh(end, ctx)

    # --- the alert and the duty ---------------------------------------------------------

    def _exceeded(self, e: DesignStormExceeded, ctx: Context) -> None:
        reached = self.reached.setdefault(e.storm, [])
        reached.append(e.name)
        duty_id = self.duties.get(e.storm)
        if duty_id is None:
            duty_id = self._duty(e, ctx)
        due = ctx.duties.records[duty_id].due_at
        depth, design = depth_text(e.depth_24h_mm, e.unit), depth_text(e.depth_mm, e.unit)
        message = (
            f"Rain at gauge {e.gauge} ({self.site_name}) went beyond the {e.name} design storm: "
            f"{depth} fell in the 24 h to {local_time(e.at, ctx.zone)}, over the design depth "
            f"of {design} ({self.rule.cite}). The site's controls are designed for that storm, "
            f"not beyond it: inspect {self._practices()} by {local_time(due, ctx.zone)} "
            f"(duty {duty_id}) and record the inspection."
        )
        evidence = self._evidence(e, reached, duty_id)
        kind, subject = DESIGN_STORM_EXCEEDED.kind, e.gauge
        if ctx.alerts.is_open(kind, subject):
            ctx.alerts.update(kind, subject, e.at, message=message, evidence=evidence)
        else:
            ctx.alerts.open(
                kind,
                subject,
                e.at,
                Severity.INFO,
                rule=self.rule.cite,
                message=message,
                evidence=evidence,
            )
        self.open[e.gauge] = e.storm

    def _duty(self, e: DesignStormExceeded, ctx: Context) -> str:
        """The storm's inspection duty, due by the end of the rule's day after ``e.at``."""
        due = self.watch.calendar.end_of_calendar_days(e.at, self.rule.due_days)
        note = DutyNote(
            label=(
                f"inspection of {self._practices()} after rain beyond the {e.name} design storm "
                f"at gauge {e.gauge} ({depth_text(e.depth_24h_mm, e.unit)} in 24 h, design "
                f"depth {depth_text(e.depth_mm, e.unit)})"
            ),
            cite=self.rule.duty_cite,
            evidence={
                "storm": e.storm,
                "gauge": e.gauge,
                "design_storm": e.name,
                "reached_at": iso(e.at),
                "practices": list(self.practices),
            },
        )
        reason = DesignStormReason.DESIGN_STORM
        rec = self.watch.create(ctx, INSPECTION.kind, reason, e.storm, (e.at, due), note)
        self.duties[e.storm] = rec.id
        ctx.schedule(self, due, rec.id)
        return rec.id

    def _ended(self, event: StormEnded, ctx: Context) -> None:
        storm = event.storm
        if not storm.closed or self.open.get(storm.gauge) != storm.id:
            return  # not a design storm, or still raining when the record ended
        del self.open[storm.gauge]
        kind, subject = DESIGN_STORM_EXCEEDED.kind, storm.gauge
        episode = ctx.alerts.get_open(kind, subject)
        if episode is None:
            return
        names = " and ".join(self.reached.get(storm.id, []))
        message = (
            f"The storm at gauge {storm.gauge} ({self.site_name}) that went beyond the {names} "
            f"design storm ended at {local_time(storm.end, ctx.zone)} (known at "
            f"{local_time(event.at, ctx.zone)}, after its dry gap): "
            f"{depth_text(storm.depth_nm / NM_PER_MM, storm.unit)} in all, at most "
            f"{depth_text(storm.peak_window_nm / NM_PER_MM, storm.unit)} of its own rain in "
            f"24 h. {episode.message}"
        )
        evidence = episode.evidence | {
            "storm_end": iso(storm.end),
            "storm_depth_in": round(storm.depth_nm / NM_PER_IN, 3),
        }
        ctx.alerts.resolve(kind, subject, storm.end, message=message, evidence=evidence)

    def _practices(self) -> str:
        if not self.practices:
            return "the site's erosion and sediment controls"
        return f"the practices ({', '.join(self.practices)})"

    def _evidence(self, e: DesignStormExceeded, reached: list[str], duty_id: str) -> dict[str, Any]:
        return {
            "gauge": e.gauge,
            "storm": e.storm,
            "design_storm": e.name,
            "design_depth_in": round(e.depth_mm / 25.4, 3),
            "design_depth_mm": round(e.depth_mm, 2),
            "depth_24h_in": round(e.depth_24h_mm / 25.4, 3),
            "depth_24h_mm": round(e.depth_24h_mm, 2),
            "window_start": iso(e.window_start),
            "window_end": iso(e.at),
            "design_storms_reached": list(reached),
            "duty": duty_id,
        }


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """The design-storm detector, when the site declares design storms and has gauges.

    The rain detector itself is built with the inspection duties
    (analytics/inspections.py), which give it the storm rule's window.
    """
    if not site.design_storms or not site.rain_gauges:
        return []
    return [DesignStormDetector.from_site(site, ctx.rules)]
