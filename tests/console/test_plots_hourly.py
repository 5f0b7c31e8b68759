"""Long windows are drawn from the hourly summaries (ingest/store/summaries.py), short ones from
the readings, and a spike the aggregate smooths away stays visible in the band.

A site's charts cost what they show: a window whose bucket spans an hour or more
(console/charts/plots.py ``summary_width``) reads one summary per sensor-hour and
the readings of at most the two partial hours at its edges, not every reading of
the window; a finer window is drawn from the readings exactly as before.
"""

from __future__ import annotations

import math
import statistics
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from analytics.events import SensorReading
from console.charts.draw import svg_text
from console.charts.model import MS_PER_H, Chart
from console.charts.plots import (
    bucket_width,
    bucketed,
    interval_sums,
    level_chart,
    rain_chart,
    running_total,
    site_charts,
    stored_points,
    summary_width,
    trap_chart,
    turbidity_chart,
)
from ingest.store.from_url import open_store
from ingest.store.queries import SqlStore
from siltwatch.rulepacks import site_rules
from tests.conftest import BACKENDS
from tests.console.app_world import SID, SITE

SVG = "{http://www.w3.org/2000/svg}"
MIN = 60_000
DAY = 86_400_000
T0 = 1_746_057_600_000  # 2025-05-01T00:00Z
DAYS = 40
SPIKE_AT = T0 + 20 * DAY + 7 * MS_PER_H + 20 * MIN  # one ten-minute reading of a plume
PAIR = SITE.turbidity_pairs[0]
PRACTICE = SITE.infiltration_practices[0]
TRAP = SITE.sediment_traps[0]
GAUGE = SITE.rain_gauges[0]
WINDOW = round(site_rules(SITE).number("turbidity.window_s") * 1000)  # the detector's


def _value(sensor: str, t: int) -> float:
    if sensor == GAUGE.sensor:  # tips of 0.01 in, on the hour and the half hour
        return round(0.01 * ((t // (30 * MIN)) % 4), 2)
    if sensor == PAIR.downstream and t == SPIKE_AT:
        return 400.0
    phase = math.sin((t - T0) / DAY * 2 * math.pi)
    return round(6.0 + 2.0 * phase + (1.0 if sensor == PAIR.downstream else 0.0), 2)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[SqlStore]:
    """40 days of the example site: both probes every 10 min, the basin level and the trap's
    depth every 30 min (fewer readings than the site sends, the same shapes)."""
    db = request.getfixturevalue("sqlite_path") if request.param == "sqlite" else None
    url = str(db) if db is not None else str(request.getfixturevalue("postgres_url"))
    s = open_store(url)
    station = SITE.station_of()
    every = {
        GAUGE.sensor: 30,
        PAIR.upstream: 10,
        PAIR.downstream: 10,
        PRACTICE.level_sensor: 30,
        TRAP.depth_sensor: 30,
    }
    rows = [
        (station[sensor], SensorReading(sensor, t, _value(sensor, t), None, frozenset()))
        for t in range(T0, T0 + DAYS * DAY, 10 * MIN)
        for sensor, minutes in every.items()
        if (t - T0) % (minutes * MIN) == 0
    ]
    s.add_readings(SID, rows, T0 + DAYS * DAY)
    yield s
    s.close()


class Counting:
    """The store, counting the readings its range reads return."""

    def __init__(self, store: SqlStore) -> None:
        self.rows = 0
        self.inner = store.sensor_points

        def sensor_points(
            site: str, sensor: str, start: int, end: int
        ) -> list[tuple[int, float, str]]:
            got = self.inner(site, sensor, start, end)
            self.rows += len(got)
            return got

        store.sensor_points = sensor_points  # type: ignore[method-assign]


def _series(
    chart: Chart, label_start: str
) -> tuple[list[tuple[int, float]], list[tuple[int, float, float]]]:
    (s,) = [s for s in chart.series if s.label.startswith(label_start)]
    return list(s.points), list(s.band)


def test_a_long_window_reads_hour_summaries_and_keeps_the_spike_in_its_band(
    store: SqlStore,
) -> None:
    # Not on hour boundaries: the edge hours are read from their readings.
    start, end = T0 + 5 * MIN, T0 + (DAYS - 1) * DAY + 37 * MIN
    width = summary_width(bucket_width(start, end, WINDOW), MIN)
    assert width == 2 * MS_PER_H  # 39 days over 640 columns: 88 min, drawn per 2 h
    raw = stored_points(store, SID, PAIR.downstream, start, end, lambda _flags: True)
    counting = Counting(store)
    chart = turbidity_chart(SITE, store, PAIR, start, end)
    assert counting.rows <= 2 * 6 * 2  # at most the two edge hours of the two probes
    down, band = _series(chart, "downstream")
    # The line: per 2 h, the median of the hours' medians, computed here from the readings.
    hours: dict[int, list[float]] = {}
    for t, v in raw:
        hours.setdefault(t // MS_PER_H, []).append(v)
    expected: dict[int, list[float]] = {}
    for h, vs in sorted(hours.items()):
        expected.setdefault(h * MS_PER_H // width, []).append(statistics.median(vs))
    assert down == [(k * width + width // 2, statistics.median(ms)) for k, ms in expected.items()]
    # The spike does not move the line, but the band reaches it.
    at = SPIKE_AT // width * width + width // 2
    assert dict(down)[at] < 20
    assert {t: (lo, hi) for t, lo, hi in band}[at][1] == 400.0
    assert max(hi for _, _, hi in band) == 400.0
    root = ET.fromstring(svg_text(chart))
    assert float(root.get("data-ymax", "0")) >= 400.0
    assert len([g for g in root.iter(f"{SVG}g") if g.get("class") == "band"]) == 2
    assert "Medians per 2 h of hourly medians" in chart.description
    assert "shaded band" in chart.description


def test_a_weeks_window_is_drawn_from_the_readings_as_before(store: SqlStore) -> None:
    start, end = T0 + 20 * DAY, T0 + 27 * DAY
    width = bucket_width(start, end, WINDOW)
    assert summary_width(width, MIN) is None
    chart = turbidity_chart(SITE, store, PAIR, start, end)
    down, band = _series(chart, "downstream")
    raw = stored_points(store, SID, PAIR.downstream, start, end, lambda _flags: True)
    assert down == bucketed(raw, width, statistics.median)
    assert band == []
    assert max(v for _, v in down) == 400.0  # a 16-min bucket with one reading is the spike
    root = ET.fromstring(svg_text(chart))
    assert not [g for g in root.iter(f"{SVG}g") if g.get("class") == "band"]


def test_level_and_trap_means_from_hours_equal_the_readings_means(store: SqlStore) -> None:
    start, end = T0, T0 + DAYS * DAY - 1
    level, _ = _series(level_chart(SITE, store, PRACTICE, start, end), "level")
    raw = stored_points(store, SID, PRACTICE.level_sensor, start, end, lambda _flags: True)
    width = 2 * MS_PER_H
    assert [t for t, _ in level] == [t for t, _ in bucketed(raw, width, statistics.fmean)]
    for (_, got), (_, want) in zip(level, bucketed(raw, width, statistics.fmean), strict=True):
        assert math.isclose(got, want, rel_tol=1e-12)
    trap, trap_band = _series(trap_chart(SITE, store, TRAP, start, end), "filled")
    assert len(trap) == len(trap_band) == DAYS * 12
    assert all(lo <= v <= hi for (_, v), (_, lo, hi) in zip(trap, trap_band, strict=True))


def test_the_site_page_charts_of_92_days_read_no_more_than_their_edges(store: SqlStore) -> None:
    end = T0 + DAYS * DAY + 3 * MIN
    counting = Counting(store)
    charts = site_charts(SITE, store, end - 92 * DAY, end)
    assert {c.id for c in charts} >= {f"turbidity-{PAIR.id}", f"level-{PRACTICE.id}"}
    assert counting.rows <= 2 * 6 * 5  # two edge hours of five sensors


def test_long_rain_sums_from_hours_equal_the_readings_sums(store: SqlStore) -> None:
    """A reading on the hour is the rain of the hour before, as the readings are summed."""
    start, end = T0 + DAY + 17 * MIN, T0 + (DAYS - 1) * DAY
    chart = rain_chart(SITE, store, GAUGE, start, end)
    raw = stored_points(store, SID, GAUGE.sensor, start - 24 * MS_PER_H, end, lambda _f: True)
    bars, rolling = (list(s.points) for s in chart.series)
    bar_w = 3 * MS_PER_H  # 38 days: at most 400 bars of 3 h
    want_bars = [(t, v) for t, v in interval_sums(raw, bar_w) if t > start]
    want_rolling = running_total(interval_sums(raw, MS_PER_H), 24)
    for got, want in ((bars, want_bars), (rolling, want_rolling)):
        assert [t for t, _ in got] == [t for t, _ in want]
        assert all(
            math.isclose(a, b, abs_tol=1e-9) for (_, a), (_, b) in zip(got, want, strict=True)
        )
    assert max(v for _, v in bars) > 0
