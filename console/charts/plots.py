"""Server-side SVG charts for the console and the inspector's report: no JavaScript, no assets.

Why SVG drawn here rather than a plotting library: the console must work offline
(no CDN) and the report must print to PDF through a headless browser, so each
chart is a self-contained ``<svg>`` string that an HTML page or a PDF embeds as
it is. Two halves:

* the chart model and its renderer (:class:`Series`, :class:`RefLine`,
  :class:`Marker`, :class:`Chart`): pure, no I/O. Axes are labelled in the
  site's local time (siltwatch/timefmt.py: people never convert from UTC), a
  line breaks across a gap of more than three sampling intervals (a station
  that was down must not look like a smooth ramp), and a long window is
  reduced to the minimum and maximum of each pixel column, so a 30-day chart
  of one-minute turbidity stays a few kilobytes and keeps every peak;
* :func:`site_charts`: a site's charts from the store, one per turbidity pair,
  rain gauge, infiltration practice and sediment trap, in the dashboard's row
  order. The reference lines come from the same places the detectors and the
  Grafana dashboards take them (siltwatch/rulemath.py and each detection's
  description in siltwatch/detections/), so a line on the page cannot drift
  from the alert it explains. Readings pass the one usable-reading policy
  (analytics/quality.py) before they are drawn, as they do before they are
  judged.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal

from analytics.quality import usable, usable_in_median
from ingest.store.queries import SqlStore
from siltwatch import rulemath
from siltwatch.config import (
    InfiltrationPractice,
    RainGauge,
    SedimentTrap,
    SiteConfig,
    TurbidityPair,
)
from siltwatch.detections import alert_spec
from siltwatch.detections.drain import practice_levels
from siltwatch.detections.inspections import ROLLING_RAIN_H
from siltwatch.detections.sediment import trap_fractions
from siltwatch.schema import Alert
from siltwatch.units import to_metres
from siltwatch.vocabulary import AlertKind

MS_PER_MIN = 60_000
MS_PER_H = 3_600_000
MS_PER_DAY = 86_400_000
GAP_INTERVALS = (
    3  # a line breaks where consecutive points are further apart than this many intervals
)
EMPTY_TEXT = "no readings in this window"

Style = Literal["line", "bars", "step"]
Point = tuple[int, float]

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
    """

    label: str
    points: Sequence[Point]
    style: Style = "line"
    interval_ms: int | None = None
    color: str | None = None
    dashed: bool = False


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

    def svg(self, width: int = 720, height: int = 220) -> str:
        """The chart as a standalone ``<svg>`` element, drawn at ``width`` x ``height`` px
        (console/charts/draw.py: text at 12 px at that size; every label escaped)."""
        from console.charts.draw import svg_text

        return svg_text(self, width, height)

    def png(self, width: int = 440, height: int = 250, scale: int = 2) -> bytes:
        """The chart as a PNG (the alert email's plot), ``scale`` pixels per CSS px."""
        from console.charts.draw import png_bytes

        return png_bytes(self, width, height, scale)

    def html(self) -> str:
        """The chart for a console page: a wide and a phone-width drawing, one shown at a
        time by the page's CSS (``.chart-wide``/``.chart-narrow``), so its text is never
        scaled below 11 px."""
        from console.charts.draw import NARROW, WIDE

        return (
            f'<div class="chart-wide">{self.svg(*WIDE)}</div>'
            f'<div class="chart-narrow">{self.svg(*NARROW)}</div>'
        )


# --- drawing helpers (the drawing itself: console/charts/draw.py) ------------------------


def _color(series: Series, i: int) -> str:
    if series.color:
        return series.color
    return LIMIT_RED if series.dashed else PALETTE[i % len(PALETTE)]


def _in_window(series: Series, start: int, end: int) -> list[Point]:
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


def _value_axis(
    chart: Chart, visible: Sequence[Sequence[Point]]
) -> tuple[float, float, list[float]]:
    values = [v for points in visible for _, v in points]
    values += [line.value for line in chart.lines if math.isfinite(line.value)]
    if any(s.style == "bars" for s in chart.series) or not values:
        values.append(0.0)
    if len(values) == 1:
        values.append(values[0] + 1.0)
    return nice_ticks(min(values), max(values))


def _tick_text(v: float, ticks: Sequence[float]) -> str:
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


# --- a site's charts from the store -------------------------------------------------------

PLOT_COLUMNS = 640  # about the plot width of a 720 px chart: one aggregate per pixel column
MAX_BARS = 400  # rain bars: hourly, or longer when a window would have more than this
_BAR_HOURS = (1, 2, 3, 6, 12, 24)


def site_charts(site: SiteConfig, store: SqlStore, start_ms: int, end_ms: int) -> list[Chart]:
    """The site's charts over ``start_ms``..``end_ms``, in the dashboard's row order.

    One per turbidity pair (``turbidity-<pair>``), rain gauge (``rain-<gauge>``),
    infiltration practice (``level-<practice>``) and sediment trap (``trap-<trap>``).
    """
    if end_ms <= start_ms:
        raise ValueError(f"the window ends ({end_ms}) before it starts ({start_ms})")
    alerts = store.alerts(site.site.id)
    charts = [turbidity_chart(site, store, p, start_ms, end_ms) for p in site.turbidity_pairs]
    charts += [rain_chart(site, store, g, start_ms, end_ms) for g in site.rain_gauges]
    charts += [
        level_chart(site, store, p, start_ms, end_ms, drain_deadlines(site, p, alerts))
        for p in site.infiltration_practices
    ]
    charts += [trap_chart(site, store, t, start_ms, end_ms) for t in site.sediment_traps]
    return [with_episodes(chart, alerts) for chart in charts]


def chart_subject(chart: Chart) -> str:
    """The pair, gauge, practice or trap a chart of :func:`site_charts` is about."""
    return chart.id.split("-", 1)[1] if "-" in chart.id else chart.id


def episode_span(alert: Alert, end_ms: int) -> tuple[int, int]:
    """When an alert episode was open: from opening to resolution (``end_ms`` if open)."""
    opened = round(alert.opened_at.timestamp() * 1000)
    if alert.resolved_at is None:
        return opened, max(end_ms, opened)
    return opened, max(round(alert.resolved_at.timestamp() * 1000), opened)


def with_episodes(chart: Chart, alerts: Iterable[Alert]) -> Chart:
    """The chart with the episodes of the alerts on its subject shaded."""
    subject = chart_subject(chart)
    spans = sorted(episode_span(a, chart.end_ms) for a in alerts if a.subject == subject)
    return replace(chart, episodes=tuple(spans)) if spans else chart


def stored_points(
    store: SqlStore,
    site_id: str,
    sensor: str,
    start_ms: int,
    end_ms: int,
    keep: Callable[[frozenset[str]], bool],
) -> list[Point]:
    """A sensor's stored readings in ``start_ms``..``end_ms`` whose flags pass ``keep``.

    A range query on the store's ``readings`` table (its (site, sensor, t) key
    is the index, :meth:`~ingest.store.queries.SqlStore.sensor_points`).
    """
    rows = store.sensor_points(site_id, sensor, start_ms, end_ms)
    out: list[Point] = []
    for t, value, flags in rows:
        marks = frozenset(str(flags).split(",")) if flags else frozenset()
        if keep(marks) and math.isfinite(value):
            out.append((int(t), float(value)))
    return out


def bucket_width(start_ms: int, end_ms: int, floor_ms: int, columns: int = PLOT_COLUMNS) -> int:
    """At least ``floor_ms`` (a detector's window, a sensor's interval) and about one pixel
    column, in whole minutes: what one aggregate point stands for."""
    per_column = math.ceil((end_ms - start_ms) / columns / MS_PER_MIN) * MS_PER_MIN
    return max(floor_ms, per_column, 1)


def bucketed(
    points: Iterable[Point], width_ms: int, aggregate: Callable[[list[float]], float]
) -> list[Point]:
    """One aggregate per bucket [k·w, (k+1)·w) aligned to the epoch (as InfluxDB's
    ``GROUP BY time``, so the console and Grafana agree), stamped at the bucket's middle."""
    groups: dict[int, list[float]] = {}
    for t, v in points:
        groups.setdefault(t // width_ms, []).append(v)
    return [(k * width_ms + width_ms // 2, aggregate(vs)) for k, vs in sorted(groups.items())]


def interval_sums(points: Iterable[Point], width_ms: int) -> list[Point]:
    """Depth per interval, stamped at the interval's end: a reading at ``t`` is the depth
    that fell in the interval ending at ``t`` (``t - 1`` places it, as the daily rain log
    does)."""
    sums: dict[int, float] = {}
    for t, v in points:
        key = (t - 1) // width_ms
        sums[key] = sums.get(key, 0.0) + v
    return [((k + 1) * width_ms, v) for k, v in sorted(sums.items())]


def running_total(hourly: Sequence[Point], hours: int) -> list[Point]:
    """At the end of each hour with readings, the rain of the ``hours`` hours up to it."""
    out: list[Point] = []
    total, first = 0.0, 0
    for end, v in hourly:
        total += v
        while hourly[first][0] <= end - hours * MS_PER_H:
            total -= hourly[first][1]
            first += 1
        out.append((end, round(total, 6)))
    return out


def _dur(ms: int) -> str:
    return f"{ms // MS_PER_MIN} min" if ms < MS_PER_H else f"{ms / MS_PER_H:g} h"


def turbidity_chart(
    site: SiteConfig, store: SqlStore, pair: TurbidityPair, start_ms: int, end_ms: int
) -> Chart:
    """Upstream and downstream medians with the limit the detector applies to them.

    The limit is the pair's limit table as the detector picks it
    (:func:`siltwatch.rulemath.choose_limit`): a fixed cap is a line; a limit
    over the background is computed per bucket from the upstream median
    (:meth:`~siltwatch.rulemath.LimitRule.allowed`, the detector's own maths),
    as the dashboard computes it from the same median.
    """
    sid, rules = site.site.id, site.rules()
    unit = site.sensor(pair.downstream).unit
    window_s = pair.window_s or rules.number("turbidity.window_s")
    width = bucket_width(start_ms, end_ms, round(window_s * 1000))
    up, down = (
        bucketed(
            stored_points(store, sid, s, start_ms, end_ms, usable_in_median),
            width,
            statistics.median,
        )
        for s in (pair.upstream, pair.downstream)
    )
    series = [
        Series(f"upstream {pair.upstream} (background)", up, interval_ms=width),
        Series(f"downstream {pair.downstream}", down, interval_ms=width),
    ]
    lines: list[RefLine] = []
    table, cite = rulemath.choose_limit(
        pair.limit, site.water(pair.receiving_water).water_class, rules, pair.id
    )
    if table is None:
        limit_text = "no numeric turbidity limit applies to this pair"
    else:
        rule = rulemath.LimitRule.from_shape(table)
        limit_text = f"limit: {rule.describe()} ({cite})"
        if (
            rule.cap is not None
            and rule.delta is None
            and rule.pct is None
            and not rule.no_increase
        ):
            lines.append(RefLine(f"limit {rule.cap:g} {unit}", rule.cap))
        else:
            limit = [(t, rule.allowed(v)) for t, v in up]
            series.append(
                Series(f"limit ({rule.describe()})", limit, interval_ms=width, dashed=True)
            )
    travel = (
        f" Plume travel time {pair.travel_time_s:g} s is not shifted out."
        if pair.travel_time_s
        else ""
    )
    return Chart(
        f"Turbidity {pair.id}: upstream vs downstream",
        unit,
        series,
        lines,
        (),
        start_ms,
        end_ms,
        id=f"turbidity-{pair.id}",
        zone=site.site.zone,
        description=(
            f"Medians per {_dur(width)} (at least the detector's {_dur(round(window_s * 1000))} "
            f"window) of {pair.upstream} above and {pair.downstream} below the discharge; "
            f"{limit_text}, computed from the upstream median.{travel}"
        ),
    )


def rain_chart(
    site: SiteConfig, store: SqlStore, gauge: RainGauge, start_ms: int, end_ms: int
) -> Chart:
    """Rain per interval (bars) and the rain of the 24 h up to each hour's end (line).

    Readings are counted as the rain detector counts them (analytics/rain.py):
    usable (analytics/quality.py), finite and not negative; 24 h is the storm
    rule's window the dashboard draws (siltwatch/detections/inspections.py).
    """
    unit = site.sensor(gauge.sensor).unit
    window = ROLLING_RAIN_H * MS_PER_H
    points = [
        (t, v)
        for t, v in stored_points(
            store, site.site.id, gauge.sensor, start_ms - window, end_ms, usable
        )
        if v >= 0
    ]
    span_h = (end_ms - start_ms) / MS_PER_H
    bar_h = next((h for h in _BAR_HOURS if span_h / h <= MAX_BARS), _BAR_HOURS[-1])
    bars = [(t, v) for t, v in interval_sums(points, bar_h * MS_PER_H) if t > start_ms]
    rolling = running_total(interval_sums(points, MS_PER_H), ROLLING_RAIN_H)
    return Chart(
        f"Rain {gauge.id}",
        unit,
        [
            Series(f"rain per {bar_h} h", bars, "bars", interval_ms=bar_h * MS_PER_H),
            Series(f"{ROLLING_RAIN_H} h total", rolling, interval_ms=MS_PER_H, color="#00838f"),
        ],
        (),
        (),
        start_ms,
        end_ms,
        id=f"rain-{gauge.id}",
        zone=site.site.zone,
        description=(
            f"Bars: rain at {gauge.sensor} per {bar_h} h. Line: the rain of the "
            f"{ROLLING_RAIN_H} h up to the end of each hour, the window storm-triggered "
            "inspections count."
        ),
    )


_DRAIN_KINDS = (AlertKind.DRAIN_TIME, AlertKind.DRAIN_TIME_FORECAST)


def drain_deadlines(
    site: SiteConfig, practice: InfiltrationPractice, alerts: Iterable[Alert]
) -> list[Marker]:
    """The drain deadlines (peak + the limit) the drain detector's alerts on the practice
    name in their evidence (analytics/drain.py: ``deadline``, else ``peak_at`` + ``limit_h``)."""
    zone = site.site.zone
    seen: dict[int, Marker] = {}
    for alert in alerts:
        if alert.subject != practice.id or alert.kind not in _DRAIN_KINDS:
            continue
        spec = alert_spec(alert.kind)
        ev = spec.read_evidence(alert.evidence) if spec is not None else None
        if ev is None:
            continue
        extra = ev.model_extra or {}
        at = _iso_ms(extra.get("deadline"))
        peak = _iso_ms(extra.get("peak_at"))
        if at is None and peak is not None and ev.limit_h:
            at = peak + round(float(ev.limit_h) * MS_PER_H)
        if at is None or at in seen:
            continue
        limit = f" (peak + {float(ev.limit_h):g} h)" if ev.limit_h else ""
        when = datetime.fromtimestamp(at / 1000, tz=zone).strftime("%m-%d %H:%M %Z")
        seen[at] = Marker(f"drain deadline {when}{limit}", at)
    return sorted(seen.values(), key=lambda m: m.at_ms)


def _iso_ms(value: object) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return round(parsed.timestamp() * 1000)


def level_chart(
    site: SiteConfig,
    store: SqlStore,
    practice: InfiltrationPractice,
    start_ms: int,
    end_ms: int,
    markers: Sequence[Marker] = (),
) -> Chart:
    """The practice's mean water level with its design and drained levels (the drain
    description's lines, siltwatch/detections/drain.py) and the drain deadlines."""
    design, drained, unit = practice_levels(site, practice)
    sensor = site.sensor(practice.level_sensor)
    width = bucket_width(start_ms, end_ms, round(sensor.interval_s * 1000))
    raw = stored_points(store, site.site.id, practice.level_sensor, start_ms, end_ms, usable)
    kind = practice.type.replace("_", " ")
    return Chart(
        f"Water level {practice.id} ({kind})",
        unit,
        [
            Series(
                f"level {practice.level_sensor}",
                bucketed(raw, width, statistics.fmean),
                interval_ms=width,
            )
        ],
        [
            RefLine(f"design level {design:g} {unit}", design, DESIGN_BLUE),
            RefLine(f"drained at or below {drained:g} {unit}", drained, WARN_ORANGE),
        ],
        markers,
        start_ms,
        end_ms,
        id=f"level-{practice.id}",
        zone=site.site.zone,
        description=(
            f"Mean level of {practice.level_sensor} per {_dur(width)}. The practice counts as "
            f"drained at or below the design level plus its tolerance ({drained:g} {unit}); "
            f"{_drain_limit_text(site, practice)}"
        ),
    )


def _drain_limit_text(site: SiteConfig, practice: InfiltrationPractice) -> str:
    """The drain-time limit the site's packs set for the practice's type, with its citation
    (a Lake Lure trench has none: saying so, not borrowing another town's section)."""
    rule = site.rules().get(f"drain.limit_h.{practice.type}")
    if rule is None:
        kind = practice.type.replace("_", " ")
        return f"no rule pack of this site sets a drain-time limit for its type ({kind})."
    return f"a deadline is the peak plus {float(rule.value):g} h ({rule.cite()})."


def trap_chart(
    site: SiteConfig, store: SqlStore, trap: SedimentTrap, start_ms: int, end_ms: int
) -> Chart:
    """The share of the trap's design storage volume filled with sediment, with the warning
    and cleanout levels (Lake George §148-10 A: clean out at 50 % loss of capacity).

    Volume, not depth (siltwatch/rulemath.py ``TrapGeometry``): a trap widens
    upward, so half its depth holds far less than half its volume.
    """
    geometry = rulemath.TrapGeometry.of(site, trap)
    sensor = site.sensor(trap.depth_sensor)
    warn, clean = trap_fractions(site, trap)
    rules = site.rules()
    _, warn_source = rulemath.warn_fraction(
        trap.warn_fraction, rules.require("sediment.warn_fraction")
    )
    clean_cite = rules.require("sediment.cleanout_fraction").cite()
    raw = stored_points(store, site.site.id, trap.depth_sensor, start_ms, end_ms, usable)
    filled = [(t, 100.0 * geometry.fraction_lost(to_metres(v, sensor.unit))) for t, v in raw]
    width = bucket_width(start_ms, end_ms, round(sensor.interval_s * 1000))
    return Chart(
        f"Sediment trap {trap.id}: storage lost",
        "% of design storage",
        [
            Series(
                f"filled ({trap.depth_sensor})",
                bucketed(filled, width, statistics.fmean),
                interval_ms=width,
            )
        ],
        [
            RefLine(f"warn {warn * 100:g} %", warn * 100, WARN_ORANGE),
            RefLine(f"clean out {clean * 100:g} % ({clean_cite})", clean * 100, LIMIT_RED),
        ],
        (),
        start_ms,
        end_ms,
        id=f"trap-{trap.id}",
        zone=site.site.zone,
        description=(
            f"Share of the design storage volume filled, from {trap.depth_sensor}'s sediment "
            f"depth and the trap's geometry. Warning at {warn * 100:g} % ({warn_source}); "
            f"cleanout due at {clean * 100:g} % ({clean_cite})."
        ),
    )
