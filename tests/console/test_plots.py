"""The console's charts (console/charts/plots.py, drawn by console/charts/draw.py), as a browser,
a PDF or an email shows them.

Pure: a chart is built from numbers and its SVG is parsed as XML, so each test
reads what would be drawn (the line, the limit line's height, the tick labels
in the site's local time, the shaded episode, the hover titles) rather than how
it was computed.
"""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from console.charts.draw import TEXT_PX, png_bytes, svg_text
from console.charts.model import GAP_INTERVALS, Chart, Marker, RefLine, Series, nice_ticks
from tests.pngread import colours, decode

SVG = "{http://www.w3.org/2000/svg}"
NEW_YORK = ZoneInfo("America/New_York")
MIN = 60_000
H = 3_600_000


def ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def parse(chart: Chart, width: int = 720, height: int = 220) -> ET.Element:
    return ET.fromstring(svg_text(chart, width, height))


def path_runs(d: str) -> list[list[tuple[float, float]]]:
    """A path's ``d`` as its runs of (x, y): a new run at each move ("M")."""
    runs: list[list[tuple[float, float]]] = []
    for cmd, x, y in re.findall(r"([ML])\s*(-?[\d.]+)\s+(-?[\d.]+)", d):
        if cmd == "M":
            runs.append([])
        runs[-1].append((float(x), float(y)))
    return runs


def group(root: ET.Element, cls: str, label: str | None = None) -> ET.Element:
    return next(
        g
        for g in root.iter(f"{SVG}g")
        if g.get("class") == cls
        and (label is None or label in (g.get("data-series"), g.get("data-label")))
    )


def polylines(root: ET.Element, label: str) -> list[list[tuple[float, float]]]:
    """The drawn runs of one series, as pixel coordinates."""
    return [
        run
        for p in group(root, "series", label).iter(f"{SVG}path")
        for run in path_runs(p.get("d") or "")
    ]


def plot_area(root: ET.Element) -> tuple[float, float, float, float]:
    x, y, w, h = (float(v) for v in (root.get("data-plot") or "").split())
    return x, y, w, h


def y_of(root: ET.Element, value: float) -> float:
    """Where ``value`` belongs on the chart's value axis (its data-ymin/data-ymax)."""
    _x, top, _w, height = plot_area(root)
    lo, hi = float(root.get("data-ymin") or 0), float(root.get("data-ymax") or 0)
    return top + (hi - value) * height / (hi - lo)


def simple_chart(**kwargs: object) -> Chart:
    start = ms("2026-05-05T00:00:00+00:00")
    points = [(start + i * 10 * MIN, float(i * 10)) for i in range(11)]  # 0..100 over 100 min
    defaults: dict[str, object] = {
        "title": "Turbidity outfall-a: upstream vs downstream",
        "unit": "NTU",
        "series": [Series("downstream", points, interval_ms=10 * MIN)],
        "lines": [RefLine("limit 50 NTU", 50.0)],
        "start_ms": start,
        "end_ms": start + 100 * MIN,
        "id": "turbidity-outfall-a",
    }
    defaults.update(kwargs)
    return Chart(**defaults)  # type: ignore[arg-type]


def test_a_chart_is_an_svg_with_its_id_title_and_unit() -> None:
    root = parse(simple_chart())
    assert root.tag == f"{SVG}svg"
    assert root.get("data-chart") == "turbidity-outfall-a"
    assert root.findtext(f"{SVG}title") == "Turbidity outfall-a: upstream vs downstream"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "Turbidity outfall-a: upstream vs downstream" in texts  # drawn, not only named
    assert "NTU" in texts
    assert "downstream" in texts and "limit 50 NTU" in texts  # the legend


def test_the_series_is_one_polyline_through_every_point_left_to_right() -> None:
    root = parse(simple_chart())
    (run,) = polylines(root, "downstream")
    assert len(run) == 11
    xs = [x for x, _ in run]
    assert xs == sorted(xs)
    x0, _top, width, _h = plot_area(root)
    assert math.isclose(xs[0], x0, abs_tol=0.1) and math.isclose(xs[-1], x0 + width, abs_tol=0.1)
    # 0 NTU at the bottom of its value, 100 NTU at the top of its value
    assert math.isclose(run[0][1], y_of(root, 0.0), abs_tol=0.1)
    assert math.isclose(run[-1][1], y_of(root, 100.0), abs_tol=0.1)


def test_the_limit_line_is_drawn_dashed_at_its_value() -> None:
    root = parse(simple_chart())
    refline = group(root, "refline", "limit 50 NTU")
    assert refline.get("data-value") == "50.0"
    path = next(refline.iter(f"{SVG}path"))
    ((left, y1), (right, y2)) = path_runs(path.get("d") or "")[0]
    assert y1 == y2 and math.isclose(y1, y_of(root, 50.0), abs_tol=0.1)
    x0, _top, width, _h = plot_area(root)
    assert math.isclose(left, x0, abs_tol=0.1) and math.isclose(right, x0 + width, abs_tol=0.1)
    assert "stroke-dasharray" in (path.get("style") or "")
    # and halfway up the 0..100 axis: the series and the line share one scale
    (run,) = polylines(root, "downstream")
    assert math.isclose(y1, run[5][1], abs_tol=0.1)  # the 50 NTU point
    # labelled in the legend, not on the line
    assert "limit 50 NTU" in [t.text for t in root.iter(f"{SVG}text")]


def test_a_limit_above_every_reading_still_fits_on_the_axis() -> None:
    root = parse(simple_chart(lines=[RefLine("limit 250 NTU", 250.0)]))
    assert float(root.get("data-ymax") or 0) >= 250.0


def tick_labels(root: ET.Element) -> dict[int, str]:
    return {
        int(t.get("data-t") or 0): t.text or ""
        for t in root.iter(f"{SVG}text")
        if t.get("class") == "xtick"
    }


def test_time_ticks_are_the_sites_local_time_with_its_zone() -> None:
    start = ms("2026-05-05T04:00:00+00:00")  # local midnight in New York (EDT, UTC-4)
    chart = simple_chart(
        series=[Series("level", [(start + i * H, 1.0) for i in range(25)])],
        lines=[],
        start_ms=start,
        end_ms=start + 24 * H,
        zone=NEW_YORK,
    )
    root = parse(chart)
    ticks = tick_labels(root)
    assert ticks[start] == "Tue 05-05"  # local midnight, not 00:00 UTC
    assert ticks[ms("2026-05-05T10:00:00+00:00")] == "06:00"
    assert ms("2026-05-05T00:00:00+00:00") not in ticks
    zone = next(t.text for t in root.iter(f"{SVG}text") if t.get("class") == "time-zone")
    assert zone == "local time (EDT)"


def test_ticks_follow_the_wall_clock_across_a_dst_change() -> None:
    start = ms("2026-03-06T05:00:00+00:00")  # Fri 00:00 EST
    end = ms("2026-03-10T04:00:00+00:00")  # Tue 00:00 EDT
    chart = simple_chart(series=[], lines=[], start_ms=start, end_ms=end, zone=NEW_YORK)
    root = parse(chart)
    ticks = tick_labels(root)
    assert ticks[ms("2026-03-08T05:00:00+00:00")] == "Sun 03-08"  # midnight EST
    assert ticks[ms("2026-03-09T04:00:00+00:00")] == "Mon 03-09"  # midnight EDT, an hour earlier
    zone = next(t.text for t in root.iter(f"{SVG}text") if t.get("class") == "time-zone")
    assert zone == "local time (EST/EDT)"


def test_hostile_labels_are_escaped_not_markup() -> None:
    evil = '<script>alert("x")</script> & "Co"'
    chart = simple_chart(
        title=evil,
        unit="<b>NTU</b>",
        series=[Series('"/><image href="x', [(ms("2026-05-05T00:10:00+00:00"), 1.0)])],
        lines=[RefLine("</text><script>", 1.0)],
        markers=[Marker("a < b & c", ms("2026-05-05T00:20:00+00:00"))],
        id='x" onload="alert(1)',
    )
    text = svg_text(chart)
    assert "<script" not in text and "<image" not in text and "<b>" not in text
    root = ET.fromstring(text)  # still well-formed
    assert root.get("data-chart") == 'x" onload="alert(1)'
    assert root.get("onload") is None
    assert root.findtext(f"{SVG}title") == evil
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "<b>NTU</b>" in texts and "a < b & c" in texts


def test_a_long_window_is_reduced_to_min_and_max_per_pixel_column() -> None:
    start = ms("2026-04-01T00:00:00+00:00")
    n = 100_000
    points = [(start + i * 30_000, 10.0 + math.sin(i / 50)) for i in range(n)]
    points[77_777] = (points[77_777][0], 480.0)  # one plume peak among 100 000 readings
    chart = simple_chart(
        series=[Series("downstream", points, interval_ms=30_000)],
        lines=[],
        start_ms=start,
        end_ms=start + n * 30_000,
    )
    text = svg_text(chart)
    root = ET.fromstring(text)
    (run,) = polylines(root, "downstream")
    _x, _y, width, _h = plot_area(root)
    assert len(run) <= 2 * width + 2
    assert len(text) < 100_000  # a 35-day window of 30 s readings stays small
    peak_y = min(y for _, y in run)
    assert math.isclose(peak_y, y_of(root, 480.0), abs_tol=0.1)  # the peak survives


def test_a_gap_of_more_than_three_intervals_splits_the_line() -> None:
    start = ms("2026-05-05T00:00:00+00:00")
    before = [(start + i * MIN, 5.0) for i in range(60)]
    after = [(start + 120 * MIN + i * MIN, 6.0) for i in range(60)]  # an hour without readings
    one_missing = [p for i, p in enumerate(before) if i != 30]  # a single lost reading
    chart = simple_chart(
        series=[Series("down", before + after, interval_ms=MIN), Series("up", one_missing)],
        lines=[],
        start_ms=start,
        end_ms=start + 180 * MIN,
    )
    root = parse(chart)
    assert [len(run) for run in polylines(root, "down")] == [60, 60]
    assert len(polylines(root, "up")) == 1  # 2 intervals apart is not a gap
    assert GAP_INTERVALS == 3


def test_an_empty_window_says_so() -> None:
    root = parse(simple_chart(series=[Series("downstream", [])], lines=[]))
    texts = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "empty"]
    assert texts == ["no readings in this window"]
    assert not [g for g in root.iter(f"{SVG}g") if g.get("class") == "series"]


def test_bars_cover_the_interval_ending_at_their_time() -> None:
    start = ms("2026-05-05T00:00:00+00:00")
    bars = [(start + (i + 1) * H, 0.1 * (i + 1)) for i in range(4)]
    chart = simple_chart(
        series=[Series("rain per 1 h", bars, "bars", interval_ms=H)],
        lines=[],
        start_ms=start,
        end_ms=start + 4 * H,
    )
    root = parse(chart)
    rects = [path_runs(p.get("d") or "")[0] for p in group(root, "series").iter(f"{SVG}path")]
    assert len(rects) == 4
    x0, _top, width, _h = plot_area(root)
    first_x = min(x for x, _ in rects[0])
    assert math.isclose(
        first_x, x0, abs_tol=0.1
    )  # the first hour's bar starts at the window's start
    assert math.isclose(max(x for x, _ in rects[0]), x0 + width / 4, abs_tol=0.1)
    assert float(root.get("data-ymin") or 1) == 0.0  # bars stand on zero
    assert max(y for x, y in rects[0]) == max(y for x, y in rects[3])  # one base line


def test_a_dry_rain_axis_starts_at_zero_and_goes_up() -> None:
    start = ms("2026-05-05T00:00:00+00:00")
    dry = [(start + (i + 1) * H, 0.0) for i in range(4)]
    root = parse(
        simple_chart(
            series=[Series("rain per 1 h", dry, "bars", interval_ms=H)],
            lines=[],
            start_ms=start,
            end_ms=start + 4 * H,
        )
    )
    assert float(root.get("data-ymin") or -1) == 0.0 and float(root.get("data-ymax") or 0) > 0
    assert nice_ticks(0.0, 0.0)[0] == 0.0  # never "-1.0 in" below a dry gauge


def test_a_marker_is_a_vertical_line_at_its_time() -> None:
    start = ms("2026-05-05T00:00:00+00:00")
    at = start + 50 * MIN
    root = parse(simple_chart(markers=[Marker("drain deadline", at)]))
    marker = group(root, "marker", "drain deadline")
    ((x1, _y1), (x2, _y2)) = path_runs(next(marker.iter(f"{SVG}path")).get("d") or "")[0]
    x0, _top, width, _h = plot_area(root)
    assert x1 == x2 and math.isclose(x1, x0 + width / 2, abs_tol=0.1)
    assert marker.get("data-at") == str(at)
    assert "drain deadline" in [t.text for t in root.iter(f"{SVG}text")]  # the legend


def test_the_alert_episode_is_shaded_and_named() -> None:
    start = ms("2026-05-05T00:00:00+00:00")
    root = parse(simple_chart(episodes=[(start + 20 * MIN, start + 60 * MIN)]))
    shade = path_runs(next(group(root, "episode").iter(f"{SVG}path")).get("d") or "")[0]
    x0, _top, width, _h = plot_area(root)
    xs = sorted({round(x, 1) for x, _ in shade})
    assert math.isclose(xs[0], x0 + width * 0.2, abs_tol=0.1)
    assert math.isclose(xs[-1], x0 + width * 0.6, abs_tol=0.1)
    assert "alert episode" in [t.text for t in root.iter(f"{SVG}text")]


def test_every_point_has_a_hover_title_with_its_local_time_and_value() -> None:
    chart = simple_chart(zone=NEW_YORK)
    root = parse(chart)
    hover = group(root, "hover")
    titles = [t.text for t in hover.iter(f"{SVG}title")]
    assert len(titles) == 11
    assert titles[5] == "Mon 2026-05-04 20:50 EDT  downstream: 50 NTU"


def test_text_is_drawn_at_12_px_at_every_size_and_ticks_do_not_collide() -> None:
    start = ms("2026-05-01T04:00:00+00:00")
    week = simple_chart(
        series=[Series("level", [(start + i * H, float(i % 7)) for i in range(7 * 24)])],
        start_ms=start,
        end_ms=start + 7 * 24 * H,
        zone=NEW_YORK,
    )
    for width in (340, 540, 720):
        root = parse(week, width, 270)
        for text in root.iter(f"{SVG}text"):
            size = re.search(r"font-size: ([\d.]+)px", text.get("style") or "")
            assert size is not None and float(size.group(1)) >= TEXT_PX, text.text
        xs = sorted(
            float(t.get("x") or 0) for t in root.iter(f"{SVG}text") if t.get("class") == "xtick"
        )
        assert len(xs) >= 2
        # "Mon 05-04" at 12 px is about 65 px wide: centres at least that far apart
        assert min(b - a for a, b in itertools.pairwise(xs)) >= 70, (width, xs)


def test_the_email_png_is_a_phone_sized_picture_of_the_same_chart() -> None:
    png = png_bytes(simple_chart(), 440, 250, 2)
    width, height, rows, _ = decode(png)
    assert (width, height) == (880, 500)
    drawn = colours(rows)
    assert (0x15, 0x65, 0xC0) in drawn  # the series' blue
    assert (0xC6, 0x28, 0x28) in drawn  # the limit's red


def test_the_same_chart_gives_the_same_bytes() -> None:
    assert svg_text(simple_chart()) == svg_text(simple_chart())


def test_a_window_within_one_day_names_its_day_beside_the_zone() -> None:
    root = parse(simple_chart(zone=NEW_YORK))  # 2026-05-04 20:00 .. 21:40 EDT: ticks are hours
    ticks = tick_labels(root)
    assert ticks and all(":" in label for label in ticks.values())
    zone = next(t.text for t in root.iter(f"{SVG}text") if t.get("class") == "time-zone")
    assert zone == "local time (EDT), Mon 2026-05-04"


def test_charts_drawn_at_once_from_several_threads_are_each_drawn_as_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The console's request threads and the email worker draw at the same time; matplotlib's
    settings are process-wide, so each drawing must still come out as it does alone."""
    from concurrent.futures import ThreadPoolExecutor

    from console.charts import draw as chart_draw

    monkeypatch.setattr(chart_draw, "DRAWN_KEEP", 0)  # every call draws: none kept

    charts = [simple_chart(id=f"chart-{i}", title=f"Chart {i}") for i in range(4)]
    alone = [svg_text(c, 340, 250) for c in charts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda c: svg_text(c, 340, 250), charts * 4))
    assert together == alone * 4


def test_a_chart_drawn_again_is_not_drawn_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    from console.charts import draw as chart_draw

    drawn: list[str] = []
    real = chart_draw._draw_svg

    def counting(chart: Chart, width: int, height: int) -> str:
        drawn.append(chart.id)
        return real(chart, width, height)

    monkeypatch.setattr(chart_draw, "_draw_svg", counting)
    first = svg_text(simple_chart(id="drawn-once"), 340, 250)
    assert svg_text(simple_chart(id="drawn-once"), 340, 250) == first
    assert svg_text(simple_chart(id="drawn-once", lines=[]), 340, 250) != first  # other data: drawn
    assert drawn == ["drawn-once", "drawn-once"]


def test_a_level_chart_cites_the_sites_own_drain_rule_or_says_there_is_none() -> None:
    from console.charts.plots import _drain_limit_text
    from siltwatch.config import load_site
    from tests.console.app_world import EXAMPLES

    george = load_site(EXAMPLES / "lake-george-site.toml")
    lure = load_site(EXAMPLES / "lake-lure-site.toml")
    assert _drain_limit_text(george, george.infiltration_practices[0]) == (
        "a deadline is the peak plus 120 h (Lake George §148-11 I(3))."
    )
    text = _drain_limit_text(lure, lure.infiltration_practices[0])
    assert "Lake George" not in text and "no rule pack of this site sets" in text
