"""The console's chart model: series, reference lines, markers and the axes they need.

Pure and without I/O: :mod:`console.charts.plots` builds charts from the store and a
site's descriptions, :mod:`console.charts.draw` draws them with matplotlib, and both
read this module, which imports neither. Axes are labelled in the site's local
time (siltwatch/timefmt.py: people never convert from UTC), a line breaks across a
gap of more than three sampling intervals (a station that was down must not look
like a smooth ramp), and a long window is reduced to the minimum and maximum of
each pixel column, so a 30-day chart of one-minute turbidity stays a few kilobytes
and keeps every peak.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal

MS_PER_MIN = 60_000
MS_PER_H = 3_600_000
MS_PER_DAY = 86_400_000
GAP_INTERVALS = (
    3  # a line breaks where consecutive points are further apart than this many intervals
)
EMPTY_TEXT = "no readings in this window"

Style = Literal["line", "bars", "step"]
Point = tuple[int, float]
Band = tuple[int, float, float]  # (UTC epoch ms, lowest, highest) of the readings of a bucket

# Colours: the series in order; reference lines red (the law), design lines blue/orange.
PALETTE = ("#1565c0", "#8d4e2a", "#2e7d32", "#6a1b9a", "#00838f")
LIMIT_RED = "#c62828"
DESIGN_BLUE = "#1e88e5"
WARN_ORANGE = "#ef6c00"
MARKER_PURPLE = "#6a1b9a"


@dataclass(frozen=True)
class Series:
    """One data series: (UTC epoch ms, value) points in time order.

    ``interval_ms`` is the sampling interval: a line breaks where two points are
    more than :data:`GAP_INTERVALS` intervals apart, and a bar covers the
    interval ending at its time (a rain reading is the depth that fell in the
    interval ending at its time). None: the median spacing of the points.
    ``dashed`` draws a reference series (a limit computed from the background).
    ``band`` is each bucket's lowest and highest reading, drawn as a shaded band
    behind the line where the line is an aggregate of many readings (a median
    per 4 h), so a short plume the aggregate smooths away stays visible.
    """

    label: str
    points: Sequence[Point]
    style: Style = "line"
    interval_ms: int | None = None
    color: str | None = None
    dashed: bool = False
    band: Sequence[Band] = ()


@dataclass(frozen=True)
class RefLine:
    """A horizontal dashed line at ``value`` (a fixed limit, a design level)."""

    label: str
    value: float
    color: str = LIMIT_RED


@dataclass(frozen=True)
class Marker:
    """A vertical dashed line at an instant (e.g. a drain deadline)."""

    label: str
    at_ms: int
    color: str = MARKER_PURPLE


@dataclass(frozen=True)
class Chart:
    """One chart over ``start_ms``..``end_ms``; ``id`` becomes the root's ``data-chart``."""

    title: str
    unit: str
    series: Sequence[Series]
    lines: Sequence[RefLine] = ()
    markers: Sequence[Marker] = ()
    start_ms: int = 0
    end_ms: int = 0
    id: str = field(default="chart", kw_only=True)
    zone: tzinfo = field(default=UTC, kw_only=True)
    description: str = field(default="", kw_only=True)  # what it shows and the law behind its lines
    # Alert episodes on the chart's subject, (opened, ended) in epoch ms: shaded.
    episodes: Sequence[tuple[int, int]] = field(default=(), kw_only=True)

    def has_data(self) -> bool:
        """Whether any series has a point inside the window."""
        return any(self.start_ms <= t <= self.end_ms for s in self.series for t, _ in s.points)


# --- what the drawing reads (the drawing itself: console/charts/draw.py) -------------------


def series_color(series: Series, i: int) -> str:
    if series.color:
        return series.color
    return LIMIT_RED if series.dashed else PALETTE[i % len(PALETTE)]


def in_window(series: Series, start: int, end: int) -> list[Point]:
    """The series' finite points inside the window, in time order."""
    points = [(t, v) for t, v in series.points if start <= t <= end and math.isfinite(v)]
    if any(points[i][0] > points[i + 1][0] for i in range(len(points) - 1)):
        points.sort(key=lambda p: p[0])
    return points


# --- axes -------------------------------------------------------------------------------


def nice_ticks(lo: float, hi: float, count: int = 5) -> tuple[float, float, list[float]]:
    """A value axis from ``lo`` to ``hi``: round ends and about ``count`` round ticks."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    if hi <= lo:
        pad = abs(lo) * 0.1 or 1.0
        # An axis of nothing but zeros (a dry rain gauge) goes up from zero, never below it.
        lo, hi = (lo, lo + pad) if lo == 0 else (lo - pad, hi + pad)
    raw = (hi - lo) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(lo / step + 1e-9) * step
    last = math.ceil(hi / step - 1e-9) * step
    ticks = [first + i * step for i in range(round((last - first) / step) + 1)]
    return first, last, ticks


def value_axis(
    chart: Chart, visible: Sequence[Sequence[Point]]
) -> tuple[float, float, list[float]]:
    values = [v for points in visible for _, v in points]
    values += [
        v
        for s in chart.series
        for t, lo, hi in s.band
        if chart.start_ms <= t <= chart.end_ms
        for v in (lo, hi)
        if math.isfinite(v)
    ]
    values += [line.value for line in chart.lines if math.isfinite(line.value)]
    if any(s.style == "bars" for s in chart.series) or not values:
        values.append(0.0)
    if len(values) == 1:
        values.append(values[0] + 1.0)
    return nice_ticks(min(values), max(values))


def tick_text(v: float, ticks: Sequence[float]) -> str:
    """A tick value with as many decimals as the step needs (2.5 -> one, 0.25 -> two)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = next((d for d in range(8) if abs(step * 10**d - round(step * 10**d)) < 1e-6), 8)
    text = f"{v:.{decimals}f}"
    return "0" if float(text) == 0 else text


# Tick steps: hours, then days; the first that keeps the labels apart is used.
_HOUR_STEPS = (1, 2, 3, 6, 12)
_DAY_STEPS = (1, 2, 3, 7, 14, 28)


def time_ticks(start: int, end: int, zone: tzinfo, max_ticks: int) -> list[tuple[int, str]]:
    """Ticks on round local times (whole hours, local midnights), labelled in the site's zone.

    Local midnight and hours are computed on the wall clock, so a DST change
    moves the tick in UTC, not in the label; an hour that does not exist on
    the wall clock (spring forward) gets no tick.
    """
    span_h = (end - start) / MS_PER_H
    max_ticks = max(max_ticks, 2)
    first = datetime.fromtimestamp(start / 1000, tz=zone).date() - timedelta(days=1)
    last = datetime.fromtimestamp(end / 1000, tz=zone).date() + timedelta(days=1)
    for step in _HOUR_STEPS:
        if span_h / step <= max_ticks:
            return _local_ticks(start, end, zone, first, last, step, 1)
    for days in _DAY_STEPS:
        if span_h / 24 / days <= max_ticks:
            return _local_ticks(start, end, zone, first, last, 24, days)
    days = math.ceil(span_h / 24 / max_ticks)
    return _local_ticks(start, end, zone, first, last, 24, days)


def _local_ticks(
    start: int, end: int, zone: tzinfo, first: date, last: date, hours: int, days: int
) -> list[tuple[int, str]]:
    long_span = end - start > 60 * MS_PER_DAY
    out: list[tuple[int, str]] = []
    day = first
    while day <= last:
        if days == 1 or day.toordinal() % days == 0:
            for hour in range(0, 24, hours):
                local = datetime.combine(day, time(hour), tzinfo=zone)
                ms = round(local.timestamp() * 1000)
                back = datetime.fromtimestamp(ms / 1000, tz=zone)
                if back.hour != hour or back.date() != day or not start <= ms <= end:
                    continue  # not on this wall clock (DST), or outside the window
                if long_span:
                    label = back.strftime("%Y-%m-%d")
                elif hour == 0:
                    label = back.strftime("%a %m-%d")
                else:
                    label = back.strftime("%H:%M")
                out.append((ms, label))
        day += timedelta(days=1)
    return out


def zone_names(start: int, end: int, zone: tzinfo) -> str:
    """The zone's abbreviations over the window: ``EDT``, or ``EST/EDT`` across a change."""
    names: list[str] = []
    for ms in (start, end):
        name = datetime.fromtimestamp(ms / 1000, tz=zone).tzname() or "local"
        if name not in names:
            names.append(name)
    return "/".join(names)


# --- series -----------------------------------------------------------------------------


def sampling_interval(points: Sequence[Point]) -> int:
    """The median spacing of the points (at least 1 ms)."""
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(points) if b[0] > a[0]]
    return max(int(statistics.median(gaps)), 1) if gaps else MS_PER_MIN


def split_at_gaps(points: Sequence[Point], interval_ms: int) -> list[list[Point]]:
    """Runs of points with no gap of more than :data:`GAP_INTERVALS` intervals inside."""
    runs: list[list[Point]] = []
    limit = GAP_INTERVALS * interval_ms
    for p in points:
        if not runs or p[0] - runs[-1][-1][0] > limit:
            runs.append([p])
        else:
            runs[-1].append(p)
    return runs


def downsample(start: int, end: int, columns: int, run: Sequence[Point]) -> list[Point]:
    """At most the minimum and the maximum of each of ``columns`` pixel columns across
    ``start``..``end``, in time order.

    Every peak and trough survives (a plume's peak is the point of the chart);
    what is dropped could not be seen anyway.
    """
    if len(run) <= 2 * columns:
        return list(run)
    span = max(end - start, 1)
    out: list[Point] = []
    col = None
    lo = hi = run[0]
    for p in run:
        c = int((p[0] - start) * columns / span)
        if c != col:
            if col is not None:
                out += [lo, hi] if lo[0] <= hi[0] else [hi, lo]
            col, lo, hi = c, p, p
            continue
        if p[1] < lo[1]:
            lo = p
        if p[1] > hi[1]:
            hi = p
    out += [lo, hi] if lo[0] <= hi[0] else [hi, lo]
    return [p for i, p in enumerate(out) if i == 0 or p != out[i - 1]]
