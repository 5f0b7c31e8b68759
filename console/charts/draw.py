"""Draws a console chart (console/charts/model.py ``Chart``) with matplotlib: SVG for pages, PNG for email.

Why matplotlib: it is maintained, installs from PyPI as wheels (no system
library), runs without a display (the Agg canvas), needs no JavaScript or CDN,
and draws the same figure as SVG and as PNG. So the console's page, the
inspector's PDF and the alert email draw one chart with one piece of code,
and what was hand-made before (tick spacing, text metrics, a 3x5-pixel digit
font) is the library's.

What is decided here, so that a chart is readable at the size it is shown:

* a chart is drawn at the width it is displayed (the console draws a wide and
  a phone-width variant, :func:`chart_html`), with text of :data:`TEXT_PX` px,
  so no page scales it down to unreadable text;
* time ticks are the site's local wall-clock times
  (:func:`console.charts.model.time_ticks`), as many as fit beside each other;
* labels are never drawn on the lines: series, reference lines (a limit with
  its value), markers and the alert episode are named in a legend under the plot;
* the alert episode is shaded; every point (at most :data:`HOVER_POINTS` per
  series, peaks kept) carries an SVG ``<title>`` that a browser shows on hover.

The SVG is post-processed (ElementTree) so that a page, a test or a script can
find its parts: the root carries ``data-chart``, ``data-ymin``/``data-ymax``
and ``data-plot`` (the plot area's x, y, width, height); each series is a
``<g class="series" data-series=...>``, each reference line a
``<g class="refline" data-value=...>``, tick labels ``<text class="xtick"
data-t=...>``. Deterministic: the same chart gives the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import threading
import xml.etree.ElementTree as ET
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")  # no display, and never a GUI backend picked up from the environment

import itertools

from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from console.charts.model import (
    EMPTY_TEXT,
    Chart,
    Point,
    Series,
    downsample,
    in_window,
    sampling_interval,
    series_color,
    split_at_gaps,
    tick_text,
    time_ticks,
    value_axis,
    zone_names,
)

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.typing import LineStyleType


SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

TEXT_PX = 12.0  # every text on a chart, at the size it is drawn (CSS px; titles larger)
TITLE_PX = 13.0
FONT = ["DejaVu Sans", "Arial", "Helvetica", "sans-serif"]
LEGEND_ROW_PX = 18
TICK_SPACING_PX = 82  # room for one time label ("Mon 05-04" at 12 px) and a gap
HOVER_POINTS = 120  # hover targets per series at most (the highest point of each group)
HOVER_SPACING_PX = 6  # and no closer than this: a pointer cannot tell them apart
DASHED = (0.0, (6.0, 4.0))  # reference lines and limit series
DOTTED = (0.0, (4.0, 3.0))  # markers (an instant)
EPISODE_FILL = "#c62828"
EPISODE_ALPHA = 0.10
EPISODE_LABEL = "alert episode"
BAND_ALPHA = 0.2  # a series' band of lowest-to-highest readings (model.py ``Series.band``)

# Sizes the console and the report draw at: wide fits a 1400 px page's half row,
# narrow a 390 px phone; both keep their text at TEXT_PX (never scaled down).
WIDE = (540, 270)
NARROW = (340, 270)
EPISODE_WIDE = (760, 280)  # the alert page's one plot, across its card on a laptop
EMAIL = (440, 250)  # the email's PNG, shown at this width (it scales down on a phone)
EMAIL_SCALE = 2  # pixels per CSS px in the PNG: sharp on a phone's screen


def _rc() -> dict[Any, Any]:
    return {
        "font.family": "sans-serif",
        "font.sans-serif": FONT,
        "font.size": TEXT_PX,
        "svg.fonttype": "none",  # text stays text: selectable, searchable, measurable
        "text.parse_math": False,  # a "$" in a sensor's name is a dollar sign
        "axes.unicode_minus": False,
        "path.simplify": False,  # the caller already reduced the points (peaks kept)
    }


# matplotlib's settings (rcParams) are process-wide and rc_context swaps them: the console's
# request threads and the email worker draw one chart at a time (a chart takes milliseconds).
_DRAWING = threading.Lock()


# The last drawings, by what was drawn: a page shown again over the same window, or the
# report's HTML and then its PDF, draw nothing twice (a drawing costs tens of ms).
_DRAWN: OrderedDict[bytes, str] = OrderedDict()
DRAWN_KEEP = 64


def svg_text(chart: Chart, width: int = 720, height: int = 220) -> str:
    """The chart as a standalone ``<svg>`` element, ``width`` x ``height`` CSS px."""
    key = hashlib.sha256(repr((chart, width, height)).encode()).digest()
    with _DRAWING:
        if key in _DRAWN:
            _DRAWN.move_to_end(key)
            return _DRAWN[key]
    text = _draw_svg(chart, width, height)
    with _DRAWING:
        _DRAWN[key] = text
        while len(_DRAWN) > DRAWN_KEEP:
            _DRAWN.popitem(last=False)
    return text


def _draw_svg(chart: Chart, width: int, height: int) -> str:
    with _DRAWING, matplotlib.rc_context({**_rc(), "svg.hashsalt": f"{chart.id}:{width}x{height}"}):
        fig, parts = _figure(chart, width, height)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return _finish_svg(buf.getvalue(), chart, parts)


def png_bytes(
    chart: Chart, width: int = EMAIL[0], height: int = EMAIL[1], scale: int = EMAIL_SCALE
) -> bytes:
    """The chart as a PNG of ``width * scale`` x ``height * scale`` pixels (8-bit RGBA)."""
    with _DRAWING, matplotlib.rc_context(_rc()):
        fig, _parts = _figure(chart, width, height, hover=False)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=72 * scale, metadata={"Software": None})
    return buf.getvalue()


def chart_html(chart: Chart, wide: tuple[int, int] = WIDE) -> str:
    """The chart for a console page: a wide and a phone-width drawing, one shown at a
    time by the page's CSS (``.chart-wide``/``.chart-narrow``), so its text is never
    scaled below 11 px. ``wide``: the wide drawing's size (default: half a row)."""
    return (
        f'<div class="chart-wide">{svg_text(chart, *wide)}</div>'
        f'<div class="chart-narrow">{svg_text(chart, *NARROW)}</div>'
    )


# --- the figure ---------------------------------------------------------------------------


class _Parts:
    """What the SVG post-processing needs to know about the drawn artists, by gid."""

    def __init__(self) -> None:
        self.series: dict[str, str] = {}  # gid -> series label
        self.hover: dict[str, list[str]] = {}  # gid -> one title per drawn hover point
        self.reflines: dict[str, tuple[str, float]] = {}  # gid -> (label, value)
        self.markers: dict[str, tuple[str, int]] = {}  # gid -> (label, at ms)
        self.xticks: dict[str, int] = {}  # gid -> tick time (ms)
        self.texts: dict[str, str] = {}  # gid -> class (title, unit, time-zone, empty)
        self.episodes: list[str] = []
        self.ymin = 0.0
        self.ymax = 1.0
        self.plot = (0.0, 0.0, 1.0, 1.0)  # x, y (from the top), width, height in CSS px


def _figure(chart: Chart, width: int, height: int, *, hover: bool = True) -> tuple[Figure, _Parts]:
    parts = _Parts()
    start, end = chart.start_ms, max(chart.end_ms, chart.start_ms + 1)
    visible = [in_window(s, start, end) for s in chart.series]
    lo, hi, ticks = value_axis(chart, visible)
    parts.ymin, parts.ymax = lo, hi

    handles = _legend_handles(chart)
    cols = _legend_columns(handles, width)
    rows = math.ceil(len(handles) / cols) if handles else 0
    total_h = height + max(rows - 1, 0) * LEGEND_ROW_PX
    fig = Figure(figsize=(width / 72, total_h / 72), dpi=72)
    # Fixed margins in px (a layout engine would cost a second drawing): the value axis'
    # labels and the unit on the left; ticks, the zone line and the legend below.
    tick_texts = [tick_text(v, ticks) for v in ticks]
    left = 8 + TEXT_PX * 1.2 + 6 + max(len(t) for t in tick_texts) * TEXT_PX * 0.64 + 8
    right = 14.0
    top = TITLE_PX * 1.3 + 12
    # A unit longer than the plot is high ("% of design storage") goes above the plot.
    unit_above = len(chart.unit) * TEXT_PX * 0.62 > height * 0.5
    if unit_above:
        top += TEXT_PX * 1.4
    bottom = 8 + rows * LEGEND_ROW_PX + TEXT_PX * 1.3 + 6 + TEXT_PX * 1.3 + 8
    plot_w, plot_h = width - left - right, max(total_h - top - bottom, 20)
    parts.plot = (left, top, plot_w, plot_h)
    ax = fig.add_axes(
        (left / width, (total_h - top - plot_h) / total_h, plot_w / width, plot_h / total_h)
    )
    title = fig.text(
        8 / width, 1 - 6 / total_h, chart.title, fontsize=TITLE_PX, fontweight="bold",
        ha="left", va="top",
    )  # fmt: skip
    _gid(title, "text-title", parts.texts, "chart-title")
    if unit_above:
        unit = fig.text(8 / width, 1 - (top - 4) / total_h, chart.unit, ha="left", va="bottom")
    else:
        unit = fig.text(
            4 / width, (total_h - top - plot_h / 2) / total_h, chart.unit, rotation=90,
            ha="center", va="top", rotation_mode="anchor",
        )  # fmt: skip
    _gid(unit, "text-unit", parts.texts, "unit")

    ax.set_xlim(start, end)
    ax.set_ylim(lo, hi)
    ax.set_yticks(ticks, tick_texts)
    ax.grid(True, color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.patch.set_gid("plot-area")

    xt = time_ticks(start, end, chart.zone, max(int(plot_w // TICK_SPACING_PX), 2))
    ax.set_xticks([t for t, _ in xt], [label for _, label in xt])
    for (t, label), text in zip(xt, ax.get_xticklabels(), strict=True):
        _gid(text, f"xtick-{t}", parts.texts, "xtick")
        # A label at an end of the axis would run off the figure: it ends (or starts) at its tick.
        x_px = left + (t - start) * plot_w / (end - start)
        half = len(label) * TEXT_PX * 0.62 / 2
        if x_px + half > width - 2:
            text.set_horizontalalignment("right")
        elif x_px - half < 2:
            text.set_horizontalalignment("left")
        parts.xticks[f"xtick-{t}"] = t
    zone = fig.text(
        1 - right / width, (8 + rows * LEGEND_ROW_PX + TEXT_PX * 0.3) / total_h,
        f"local time ({zone_names(start, end, chart.zone)}){_days_if_unlabelled(xt, start, end, chart.zone)}", color="#555555", ha="right",
        va="bottom",
    )  # fmt: skip
    _gid(zone, "text-time-zone", parts.texts, "time-zone")

    for n, (lo_ms, hi_ms) in enumerate(chart.episodes):
        a, b = max(lo_ms, start), min(hi_ms, end)
        if a < b:
            span = ax.axvspan(a, b, color=EPISODE_FILL, alpha=EPISODE_ALPHA, linewidth=0)
            span.set_gid(f"episode-{n}")
            parts.episodes.append(f"episode-{n}")

    if not any(visible):
        empty = ax.text(
            0.5, 0.5, EMPTY_TEXT, transform=ax.transAxes, ha="center", va="center",
            color="#616161",
        )  # fmt: skip
        _gid(empty, "text-empty", parts.texts, "empty")
    for i, (series, points) in enumerate(zip(chart.series, visible, strict=True)):
        _draw_series(ax, series, points, series_color(series, i), i, plot_w, chart, parts, hover)
    for j, line in enumerate(chart.lines):
        art = ax.axhline(line.value, color=line.color, linewidth=1.6, linestyle=DASHED)
        art.set_gid(f"refline-{j}")
        parts.reflines[f"refline-{j}"] = (line.label, line.value)
    for k, marker in enumerate(chart.markers):
        if start <= marker.at_ms <= end:
            art = ax.axvline(marker.at_ms, color=marker.color, linewidth=1.4, linestyle=DOTTED)
            art.set_gid(f"marker-{k}")
            parts.markers[f"marker-{k}"] = (marker.label, marker.at_ms)

    if handles:
        fig.legend(
            handles=handles, loc="lower left", bbox_to_anchor=(2 / width, 2 / total_h),
            ncols=cols, frameon=False, handlelength=1.8, columnspacing=1.2,
            borderaxespad=0.0, borderpad=0.2, labelspacing=0.25,
        )  # fmt: skip
    return fig, parts


def chart_ymin(parts: _Parts) -> float:
    return parts.ymin


def _days_if_unlabelled(
    ticks: Sequence[tuple[int, str]], start: int, end: int, zone: tzinfo
) -> str:
    """The window's day(s) when no tick names one (a window within a day shows only hours)."""
    if any("-" in label for _, label in ticks):
        return ""
    first = datetime.fromtimestamp(start / 1000, tz=zone).strftime("%a %Y-%m-%d")
    last = datetime.fromtimestamp(end / 1000, tz=zone).strftime("%a %Y-%m-%d")
    return f", {first}" if first == last else f", {first} – {last}"


def _gid(artist: Artist, gid: str, texts: dict[str, str], cls: str) -> None:
    artist.set_gid(gid)
    texts[gid] = cls


def _legend_handles(chart: Chart) -> list[Artist]:
    handles: list[Artist] = []
    for i, s in enumerate(chart.series):
        color = series_color(s, i)
        if s.style == "bars":
            handles.append(Patch(facecolor=color, alpha=0.75, label=s.label))
        else:
            style: LineStyleType = DASHED if s.dashed else "-"
            handles.append(Line2D([], [], color=color, linewidth=2, linestyle=style, label=s.label))
    for line in chart.lines:
        handles.append(
            Line2D([], [], color=line.color, linewidth=1.6, linestyle=DASHED, label=line.label)
        )
    for m in chart.markers:
        if chart.start_ms <= m.at_ms <= chart.end_ms:
            handles.append(
                Line2D([], [], color=m.color, linewidth=1.4, linestyle=DOTTED, label=m.label)
            )
    if any(max(a, chart.start_ms) < min(b, chart.end_ms) for a, b in chart.episodes):
        handles.append(Patch(facecolor=EPISODE_FILL, alpha=EPISODE_ALPHA * 2, label=EPISODE_LABEL))
    return handles


def _legend_columns(handles: Sequence[Artist], width: int) -> int:
    """As many columns as the longest label lets fit across the figure (at least one)."""
    if not handles:
        return 1
    longest = max(len(str(h.get_label())) for h in handles)
    item_px = 30 + longest * TEXT_PX * 0.6
    return max(1, min(len(handles), int((width - 10) // item_px)))


def _draw_series(
    ax: Axes,
    series: Series,
    points: Sequence[Point],
    color: str,
    i: int,
    plot_w: float,
    chart: Chart,
    parts: _Parts,
    hover: bool,
) -> None:
    if not points:
        return
    gid = f"series-{i}"
    parts.series[gid] = series.label
    interval = series.interval_ms or sampling_interval(points)
    columns = max(int(plot_w), 1)
    if series.style == "bars":
        bars = _bar_columns(points, interval, chart.start_ms, chart.end_ms, columns)
        base = max(chart_ymin(parts), 0.0)
        boxes = PolyCollection(
            [[(a, base), (a, v), (a + w, v), (a + w, base)] for a, w, v in bars],
            facecolors=color, alpha=0.75, linewidths=0,
        )  # fmt: skip
        boxes.set_gid(gid)
        ax.add_collection(boxes, autolim=False)
        shown = [(round(a + w / 2), v) for a, w, v in bars]
    else:
        if series.band:
            _draw_band(ax, series, interval, color, chart, f"{gid}-band")
        xs: list[float] = []
        ys: list[float] = []
        for run in split_at_gaps(points, interval):
            drawn = downsample(chart.start_ms, chart.end_ms, columns, run)
            if series.style == "step":
                drawn = [q for a, b in itertools.pairwise(drawn) for q in (a, (b[0], a[1]))] + [
                    drawn[-1]
                ]
            if xs:
                xs.append(math.nan)
                ys.append(math.nan)
            xs += [t for t, _ in drawn]
            ys += [v for _, v in drawn]
        style: LineStyleType = DASHED if series.dashed else "-"
        (line,) = ax.plot(xs, ys, color=color, linewidth=1.8, linestyle=style)
        line.set_gid(gid)
        single = [(xs[k], ys[k]) for k in range(len(xs)) if _alone(xs, k)]
        if single:
            dots = ax.scatter([t for t, _ in single], [v for _, v in single], s=9, color=color)
            dots.set_gid(f"{gid}-dots")
        shown = list(points)
    if hover:
        targets = _hover_targets(shown, min(HOVER_POINTS, int(plot_w // HOVER_SPACING_PX)))
        dots = ax.scatter(
            [t for t, _ in targets], [v for _, v in targets], s=64, color=color, alpha=0.0,
            linewidths=0,
        )  # fmt: skip
        dots.set_gid(f"hover-{i}")
        parts.hover[f"hover-{i}"] = [
            f"{_when(t, chart.zone)}  {series.label}: {_value(v)} {chart.unit}" for t, v in targets
        ]


def _draw_band(ax: Axes, series: Series, interval: int, color: str, chart: Chart, gid: str) -> None:
    """The buckets' lowest-to-highest readings as one shaded shape per run of the line
    (broken at the line's gaps), behind the line: a plume's peak stays in sight."""
    inside = [b for b in series.band if chart.start_ms <= b[0] <= chart.end_ms]
    shapes = []
    for run in split_at_gaps([(t, lo) for t, lo, _ in inside], interval):
        first, last = run[0][0], run[-1][0]
        part = [b for b in inside if first <= b[0] <= last]
        shapes.append([(t, lo) for t, lo, _ in part] + [(t, hi) for t, _, hi in reversed(part)])
    band = PolyCollection(shapes, facecolors=color, alpha=BAND_ALPHA, linewidths=0)
    band.set_gid(gid)
    ax.add_collection(band, autolim=False)


def _alone(xs: Sequence[float], k: int) -> bool:
    """Whether point ``k`` has no neighbour in its run (a line would not show it)."""
    if math.isnan(xs[k]):
        return False
    before = math.isnan(xs[k - 1]) if k > 0 else True
    after = math.isnan(xs[k + 1]) if k + 1 < len(xs) else True
    return before and after


def _bar_columns(
    points: Sequence[Point], interval: int, start: int, end: int, columns: int
) -> list[tuple[float, float, float]]:
    """(left edge ms, width ms, value) per bar; a bar covers the interval ending at its
    time, clipped to the window; bars narrower than a pixel column keep the column's highest."""
    per_col = max((end - start) / columns, 1.0)
    by_col: dict[int, tuple[float, float, float]] = {}
    for t, v in points:
        a, b = max(t - interval, start), min(t, end)
        if b <= a:
            continue
        key = int((a - start) // per_col)
        if key in by_col and by_col[key][2] >= v:
            continue
        by_col[key] = (float(a), float(b - a), v)
    return list(by_col.values())


def _hover_targets(points: Sequence[Point], limit: int) -> list[Point]:
    """At most ``limit`` points: all of them, or the highest of each consecutive group."""
    if len(points) <= limit:
        return list(points)
    size = math.ceil(len(points) / limit)
    return [max(points[k : k + size], key=lambda p: p[1]) for k in range(0, len(points), size)]


def _when(t: int, zone: tzinfo) -> str:
    return datetime.fromtimestamp(t / 1000, tz=zone).strftime("%a %Y-%m-%d %H:%M %Z")


def _value(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


# --- the SVG, made findable ---------------------------------------------------------------


def _q(tag: str) -> str:
    return f"{{{SVG_NS}}}{tag}"


def _finish_svg(raw: str, chart: Chart, parts: _Parts) -> str:
    root = ET.fromstring(raw)
    width = root.get("width", "0").removesuffix("pt")
    height = root.get("height", "0").removesuffix("pt")
    for child in list(root):
        if child.tag == _q("metadata"):
            root.remove(child)
    cid = chart.id
    keep = {"viewBox", "version"}
    for key in list(root.attrib):
        if key not in keep:
            del root.attrib[key]
    root.attrib.update(
        {
            "class": "chart",
            "data-chart": cid,
            "width": _px(width),
            "height": _px(height),
            "role": "img",
            "aria-labelledby": f"{cid}-title",
            "data-ymin": repr(parts.ymin),
            "data-ymax": repr(parts.ymax),
            "data-plot": " ".join(f"{v:.2f}" for v in parts.plot),
            "font-family": ", ".join(FONT),
        }
    )
    title = ET.Element(_q("title"), {"id": f"{cid}-title"})
    title.text = chart.title
    root.insert(0, title)
    if chart.description:
        desc = ET.Element(_q("desc"))
        desc.text = chart.description
        root.insert(1, desc)
    for group in root.iter(_q("g")):
        gid = group.get("id")
        if gid is None:
            continue
        if gid in parts.series:
            _mark(group, {"class": "series", "data-series": parts.series[gid]})
        elif gid in parts.hover:
            # Invisible but painted (so it takes the pointer): one style for the group.
            _mark(group, {"class": "hover", "style": "fill: #000000; fill-opacity: 0"})
            for use, text in zip(group.iter(_q("use")), parts.hover[gid], strict=False):
                use.attrib.pop("style", None)
                tip = ET.SubElement(use, _q("title"))
                tip.text = text
        elif gid in parts.reflines:
            label, value = parts.reflines[gid]
            _mark(group, {"class": "refline", "data-label": label, "data-value": repr(value)})
        elif gid in parts.markers:
            label, at = parts.markers[gid]
            _mark(group, {"class": "marker", "data-label": label, "data-at": str(at)})
        elif gid in parts.episodes:
            _mark(group, {"class": "episode"})
        elif gid == "plot-area":
            _mark(group, {"class": "plot"})
        elif gid in parts.texts:
            cls = parts.texts[gid]
            attrs = {"class": cls}
            if gid in parts.xticks:
                attrs["data-t"] = str(parts.xticks[gid])
            for drawn in group.iter(_q("text")):
                drawn.attrib.update(attrs)
            del group.attrib["id"]
        elif gid.startswith("series-") and gid.endswith("-dots"):
            _mark(group, {"class": "dots"})
        elif gid.startswith("series-") and gid.endswith("-band"):
            _mark(group, {"class": "band"})
    for element in root.iter():
        for key in _COORDINATES:
            coord = element.get(key)
            if coord is not None:
                element.set(key, _DECIMALS.sub(r"\1", coord))
    return ET.tostring(root, encoding="unicode")


# Coordinates to a tenth of a pixel: finer cannot be seen, and it halves the page's bytes.
_COORDINATES = ("d", "x", "y", "transform")
_DECIMALS = re.compile(r"(\d\.\d)\d+")


def _mark(group: ET.Element, attrs: dict[str, str]) -> None:
    del group.attrib["id"]  # ids would repeat across the charts of one page
    group.attrib.update(attrs)


def _px(value: str) -> str:
    return f"{float(value):g}"
