"""A site's charts from the store, for the console and the inspector's report.

:func:`site_charts` draws one chart per turbidity pair, rain gauge, infiltration
practice and sediment trap, in the dashboard's row order. The reference lines
come from the same places the detectors and the Grafana dashboards take them
(siltwatch/rulemath.py and each detection's description in
siltwatch/detections/), so a line on the page cannot drift from the alert it
explains. Readings pass the one usable-reading policy (analytics/quality.py)
before they are drawn, as they do before they are judged. The chart model is
console/charts/model.py; console/charts/draw.py draws it as SVG or PNG.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from analytics.quality import usable, usable_in_median
from console.charts.model import (
    DESIGN_BLUE,
    LIMIT_RED,
    MS_PER_DAY,
    MS_PER_H,
    MS_PER_MIN,
    WARN_ORANGE,
    Band,
    Chart,
    Marker,
    Point,
    RefLine,
    Series,
    Style,
)
from ingest.store.queries import SqlStore
from ingest.store.summaries import HourSummary
from siltwatch import rulemath
from siltwatch.config import (
    InfiltrationPractice,
    RainGauge,
    SedimentTrap,
    SiteConfig,
    TurbidityPair,
)
from siltwatch.detections import alert_spec, descriptions, sensor_panels
from siltwatch.detections.drain import DESCRIPTION as DRAIN
from siltwatch.detections.drain import practice_levels
from siltwatch.detections.inspections import DESCRIPTION as RAIN
from siltwatch.detections.inspections import ROLLING_RAIN_H
from siltwatch.detections.sediment import DESCRIPTION as SEDIMENT
from siltwatch.detections.sediment import trap_fractions
from siltwatch.detections.turbidity import DESCRIPTION as TURBIDITY
from siltwatch.panels import Panel
from siltwatch.rulepacks import site_rules
from siltwatch.rules import Rules
from siltwatch.schema import Alert
from siltwatch.units import to_metres

# --- a site's charts from the store -------------------------------------------------------

PLOT_COLUMNS = 640  # about the plot width of a 720 px chart: one aggregate per pixel column
MAX_BARS = 400  # rain bars: hourly, or longer when a window would have more than this
_BAR_HOURS = (1, 2, 3, 6, 12, 24)


def site_charts(site: SiteConfig, store: SqlStore, start_ms: int, end_ms: int) -> list[Chart]:
    """The site's charts over ``start_ms``..``end_ms``, in the dashboard's row order.

    One per item of each described detection's section (a turbidity pair
    ``turbidity-<pair>``, a rain gauge ``rain-<gauge>``, a practice
    ``level-<practice>``, a trap ``trap-<trap>``), then one per sensor no detection
    charts (``sensor-<sensor>``), as dashboards/build.py lays out the same rows.
    """
    if end_ms <= start_ms:
        raise ValueError(f"the window ends ({end_ms}) before it starts ({start_ms})")
    alerts = store.alerts(site.site.id)
    charts = [
        drawn.chart(store, start_ms, end_ms, alerts) for drawn in _subjects(site, site_rules(site))
    ]
    return [with_episodes(chart, alerts) for chart in charts]


def subject_chart(
    site: SiteConfig, store: SqlStore, subject: str, start_ms: int, end_ms: int
) -> Chart | None:
    """The chart of the pair, practice, trap, gauge or lone sensor ``subject`` names, or None."""
    for drawn in _subjects(site, site_rules(site)):
        if drawn.subject == subject:
            return drawn.chart(store, start_ms, end_ms, ())
    return None


# A finer chart than the description's panel: (site, store, section item, start, end,
# alerts on the site) -> Chart.
Finer = Callable[[SiteConfig, SqlStore, Any, int, int, Sequence[Alert]], Chart]


@dataclass(frozen=True)
class _Subject:
    """One chart the console can draw: a described section's item, or a lone sensor."""

    site: SiteConfig
    subject: str
    panel: Panel
    finer: Finer | None = None
    item: Any = None

    def chart(self, store: SqlStore, start_ms: int, end_ms: int, alerts: Sequence[Alert]) -> Chart:
        if self.finer is not None:
            return self.finer(self.site, store, self.item, start_ms, end_ms, alerts)
        return panel_chart(self.site, store, self.panel, f"sensor-{self.subject}", start_ms, end_ms)


def _subjects(site: SiteConfig, rules: Rules) -> list[_Subject]:
    """What the console charts for ``site``, in the dashboard's row order: each panel of
    a described detection (with the console's finer chart where it has one), then each
    sensor no detection charts, in its kind's own panel."""
    out: list[_Subject] = []
    for d in sorted(descriptions(), key=lambda d: d.dashboard.position if d.dashboard else 0):
        if d.section is None or d.dashboard is None:
            continue
        items = getattr(site, d.section.key)
        for item, panel in zip(items, d.panels(site, rules), strict=True):
            out.append(_Subject(site, item.id, panel, FINER_CHARTS.get(d.key), item))
    charted = {s.sensor for drawn in out for s in drawn.panel.series}
    sensors = site.sensors()
    for panel in sensor_panels(site, charted):
        out.append(_Subject(site, sensors[panel.series[0].sensor].id, panel))
    return out


_AGGREGATES: dict[str, Callable[[list[float]], float]] = {
    "median": statistics.median,
    "mean": statistics.fmean,
    "sum": math.fsum,
}
# The same aggregates over a bucket of whole hours, from the hours' summaries: a sum and a
# mean are exact; a median is the median of the hours' medians.
_HOURLY: dict[str, Callable[[Sequence[HourSummary]], float]] = {
    "median": lambda hours: statistics.median(h.mid for h in hours),
    "mean": lambda hours: math.fsum(h.total for h in hours) / sum(h.n for h in hours),
    "sum": lambda hours: math.fsum(h.total for h in hours),
}
_COLOURS = {"red": LIMIT_RED, "orange": WARN_ORANGE, "blue": DESIGN_BLUE}


def panel_chart(
    site: SiteConfig, store: SqlStore, panel: Panel, chart_id: str, start_ms: int, end_ms: int
) -> Chart:
    """A description's panel drawn from the store, as the dashboard draws it: its measured
    series aggregated per interval, its thresholds as lines. Series computed from another
    (``expression``, ``rolling_h``) are the finer charts' business and left out here."""
    sid = site.site.id
    series: list[Series] = []
    for s in panel.series:
        if s.expression is not None or s.rolling_h is not None:
            continue
        sensor = site.sensor(s.sensor)
        floor_s = max(panel.interval_s or 0.0, sensor.interval_s)
        width = bucket_width(start_ms, end_ms, round(floor_s * 1000))
        style: Style = "bars" if panel.bars else "line"
        hourly = summary_width(width, round(sensor.interval_s * 1000))
        if hourly is None:
            points = stored_points(store, sid, s.sensor, start_ms, end_ms, usable)
            agg = bucketed(points, width, _AGGREGATES[s.aggregate])
            series.append(Series(s.alias, agg, style, interval_ms=width))
            continue
        hours = store.hour_summaries(sid, s.sensor, start_ms, end_ms)
        agg, band = hourly_buckets(hours, hourly, _HOURLY[s.aggregate])
        series.append(
            Series(s.alias, agg, style, interval_ms=hourly, band=() if panel.bars else band)
        )
    lines = [
        RefLine(f"{value:g} {panel.unit}", value, _COLOURS.get(colour, LIMIT_RED))
        for value, colour in panel.thresholds
        if value is not None
    ]
    return Chart(
        panel.title,
        panel.unit,
        series,
        lines,
        (),
        start_ms,
        end_ms,
        id=chart_id,
        zone=site.site.zone,
        description=panel.description,
    )


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


# Buckets of whole hours a plot reads from the hourly summaries: divisors of a day, so
# buckets align with UTC days as the epoch-aligned raw buckets do; past a day, whole days.
SUMMARY_HOURS = (1, 2, 3, 4, 6, 8, 12, 24)
BAND_TEXT = " The shaded band spans each bucket's lowest to highest reading."


def summary_width(width_ms: int, interval_ms: int) -> int | None:
    """The bucket drawn from the hourly summaries when a bucket of ``width_ms`` spans an
    hour or more (a window of more than about 27 days at :data:`PLOT_COLUMNS`) and more
    than one sampling interval ``interval_ms`` of the sensor: the next of
    :data:`SUMMARY_HOURS`, or whole days. None: drawn from the readings (a finer bucket,
    or one reading a bucket, where a summary would save nothing)."""
    if width_ms < MS_PER_H or width_ms <= interval_ms:
        return None
    hours = next((h for h in SUMMARY_HOURS if h * MS_PER_H >= width_ms), None)
    if hours is None:
        return math.ceil(width_ms / MS_PER_DAY) * MS_PER_DAY
    return hours * MS_PER_H


def hourly_buckets(
    hours: Iterable[HourSummary],
    width_ms: int,
    aggregate: Callable[[Sequence[HourSummary]], float],
    value: Callable[[float], float] = float,
) -> tuple[list[Point], list[Band]]:
    """One aggregate of the hours' summaries per bucket of ``width_ms`` (whole hours,
    aligned to the epoch as :func:`bucketed`), stamped at the bucket's middle, and the
    bucket's lowest and highest reading; ``value`` maps a reading to what is drawn (a
    monotone map: a depth to the share of a trap filled)."""
    groups: dict[int, list[HourSummary]] = {}
    for h in hours:
        groups.setdefault(h.start_ms // width_ms, []).append(h)
    points: list[Point] = []
    band: list[Band] = []
    for k, group in sorted(groups.items()):
        at = k * width_ms + width_ms // 2
        points.append((at, aggregate(group)))
        ends = (value(min(h.lo for h in group)), value(max(h.hi for h in group)))
        band.append((at, min(ends), max(ends)))
    return points, band


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
    sid, rules = site.site.id, site_rules(site)
    unit = site.sensor(pair.downstream).unit
    window_s = pair.window_s or rules.number("turbidity.window_s")
    width = bucket_width(start_ms, end_ms, round(window_s * 1000))
    interval_ms = round(
        max(site.sensor(s).interval_s for s in (pair.upstream, pair.downstream)) * 1000
    )
    hourly = summary_width(width, interval_ms)
    bands: tuple[Sequence[Band], Sequence[Band]] = ((), ())
    if hourly is None:
        up, down = (
            bucketed(
                stored_points(store, sid, s, start_ms, end_ms, usable_in_median),
                width,
                statistics.median,
            )
            for s in (pair.upstream, pair.downstream)
        )
        how, band_text = f"Medians per {_dur(width)}", ""
    else:
        width = hourly
        (up, up_band), (down, down_band) = (
            hourly_buckets(
                store.hour_summaries(sid, s, start_ms, end_ms, median=True),
                width,
                _HOURLY["median"],
            )
            for s in (pair.upstream, pair.downstream)
        )
        bands = (up_band, down_band)
        how, band_text = f"Medians per {_dur(width)} of hourly medians", BAND_TEXT
    series = [
        Series(f"upstream {pair.upstream} (background)", up, interval_ms=width, band=bands[0]),
        Series(f"downstream {pair.downstream}", down, interval_ms=width, band=bands[1]),
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
            f"{how} (at least the detector's {_dur(round(window_s * 1000))} "
            f"window) of {pair.upstream} above and {pair.downstream} below the discharge; "
            f"{limit_text}, computed from the upstream median.{travel}{band_text}"
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
    sensor = site.sensor(gauge.sensor)
    unit = sensor.unit
    window = ROLLING_RAIN_H * MS_PER_H
    span_h = (end_ms - start_ms) / MS_PER_H
    bar_h = next((h for h in _BAR_HOURS if span_h / h <= MAX_BARS), _BAR_HOURS[-1])
    interval = round(sensor.interval_s * 1000)
    if summary_width(bucket_width(start_ms, end_ms, interval), interval) is None:
        points = [
            (t, v)
            for t, v in stored_points(
                store, site.site.id, gauge.sensor, start_ms - window, end_ms, usable
            )
            if v >= 0
        ]
        hourly = interval_sums(points, MS_PER_H)
        bars = interval_sums(points, bar_h * MS_PER_H)
    else:
        # A long window: the hours' sums, each hour ending at a reading's time as above
        # (a negative depth is refused before it is stored, siltwatch/sensorkinds/rain.py).
        hours = store.hour_summaries(site.site.id, gauge.sensor, start_ms - window, end_ms)
        hourly = HourSummary.ending_sums(hours)
        bars = interval_sums(hourly, bar_h * MS_PER_H)
    bars = [(t, v) for t, v in bars if t > start_ms]
    rolling = running_total(hourly, ROLLING_RAIN_H)
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


_DRAIN_KINDS = frozenset(spec.kind for spec in DRAIN.alerts)


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
    hourly = summary_width(width, round(sensor.interval_s * 1000))
    label = f"level {practice.level_sensor}"
    if hourly is None:
        raw = stored_points(store, site.site.id, practice.level_sensor, start_ms, end_ms, usable)
        level = Series(label, bucketed(raw, width, statistics.fmean), interval_ms=width)
        band_text = ""
    else:
        width = hourly
        hours = store.hour_summaries(site.site.id, practice.level_sensor, start_ms, end_ms)
        points, band = hourly_buckets(hours, width, _HOURLY["mean"])
        level = Series(label, points, interval_ms=width, band=band)
        band_text = BAND_TEXT
    kind = practice.type.replace("_", " ")
    return Chart(
        f"Water level {practice.id} ({kind})",
        unit,
        [level],
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
            f"{_drain_limit_text(site, practice)}{band_text}"
        ),
    )


def _drain_limit_text(site: SiteConfig, practice: InfiltrationPractice) -> str:
    """The drain-time limit the site's packs set for the practice's type, with its citation
    (a Lake Lure trench has none: saying so, not borrowing another town's section)."""
    rule = site_rules(site).get(f"drain.limit_h.{practice.type}")
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
    warn, clean = trap_fractions(site_rules(site), trap)
    rules = site_rules(site)
    _, warn_source = rulemath.warn_fraction(
        trap.warn_fraction, rules.require("sediment.warn_fraction")
    )
    clean_cite = rules.require("sediment.cleanout_fraction").cite()
    width = bucket_width(start_ms, end_ms, round(sensor.interval_s * 1000))
    hourly = summary_width(width, round(sensor.interval_s * 1000))
    label = f"filled ({trap.depth_sensor})"

    def percent(depth: float) -> float:
        return 100.0 * geometry.fraction_lost(to_metres(depth, sensor.unit))

    if hourly is None:
        raw = stored_points(store, site.site.id, trap.depth_sensor, start_ms, end_ms, usable)
        filled = [(t, percent(v)) for t, v in raw]
        series = Series(label, bucketed(filled, width, statistics.fmean), interval_ms=width)
        how, band_text = "Share of", ""
    else:
        # The share is not linear in the depth: each hour's median depth is mapped (exact
        # for an hourly sensor, one reading an hour), the hours averaged by their counts.
        width = hourly
        hours = store.hour_summaries(site.site.id, trap.depth_sensor, start_ms, end_ms)
        points, band = hourly_buckets(
            hours,
            width,
            lambda group: math.fsum(percent(h.mid) * h.n for h in group) / sum(h.n for h in group),
            percent,
        )
        series = Series(label, points, interval_ms=width, band=band)
        how, band_text = f"Mean per {_dur(width)} of each hour's median share of", BAND_TEXT
    return Chart(
        f"Sediment trap {trap.id}: storage lost",
        "% of design storage",
        [series],
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
            f"{how} the design storage volume filled, from {trap.depth_sensor}'s sediment "
            f"depth and the trap's geometry. Warning at {warn * 100:g} % ({warn_source}); "
            f"cleanout due at {clean * 100:g} % ({clean_cite}).{band_text}"
        ),
    )


def _turbidity(
    site: SiteConfig, store: SqlStore, pair: Any, start: int, end: int, _alerts: Sequence[Alert]
) -> Chart:
    return turbidity_chart(site, store, pair, start, end)


def _rain(
    site: SiteConfig, store: SqlStore, gauge: Any, start: int, end: int, _alerts: Sequence[Alert]
) -> Chart:
    return rain_chart(site, store, gauge, start, end)


def _level(
    site: SiteConfig, store: SqlStore, practice: Any, start: int, end: int, alerts: Sequence[Alert]
) -> Chart:
    return level_chart(site, store, practice, start, end, drain_deadlines(site, practice, alerts))


def _trap(
    site: SiteConfig, store: SqlStore, trap: Any, start: int, end: int, _alerts: Sequence[Alert]
) -> Chart:
    return trap_chart(site, store, trap, start, end)


# The console's finer charts, by the description whose panel they draw in more detail
# (the limit the detector computes per bucket, the drain deadlines, a trap's volume
# from its stage-storage table). Every other description's panel is drawn as it is.
FINER_CHARTS: dict[str, Finer] = {
    TURBIDITY.key: _turbidity,
    RAIN.key: _rain,
    DRAIN.key: _level,
    SEDIMENT.key: _trap,
}
