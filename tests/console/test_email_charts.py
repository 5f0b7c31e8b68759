"""The email's plot comes from the store: the console's chart of the alert's subject,
over the episode shaded, drawn as a phone-sized PNG by the console's own charting code."""

from __future__ import annotations

from pathlib import Path

from alerts.pngchart import MAX_WIDTH, render_png
from console.charts.draw import svg_text
from console.charts.email import AlertCharts, alert_chart, episode_window
from console.charts.model import PALETTE
from ingest.store.sqlite import SqliteStore
from siltwatch.schema import Alert
from tests.console.app_world import SID, SITE, week_store
from tests.pngread import colours, decode

HOUR_MS = 3_600_000


def _first(db: Path, kind: str) -> Alert:
    store = SqliteStore(db)
    try:
        return next(a for a in store.alerts(SID) if a.kind == kind)
    finally:
        store.close()


def test_the_plume_email_plots_both_probes_over_the_episode(tmp_path: Path) -> None:
    db = week_store(tmp_path)
    plume = _first(db, "turbidity_contrast")
    data = AlertCharts({SID: SITE}, db)(SID, plume)
    assert data is not None
    labels = [label for label, _ in data.series]
    assert any(label.startswith("upstream") for label in labels)
    assert any(label.startswith("downstream") for label in labels)
    start, end = episode_window(plume)
    opened = round(plume.opened_at.timestamp() * 1000)
    assert start == opened - 6 * HOUR_MS and end > opened
    for _label, points in data.series:
        assert points and all(start <= t <= end for t, _ in points)
    # the peak of the plume is in what is drawn (170.6 NTU downstream)
    down = next(points for label, points in data.series if label.startswith("downstream"))
    assert max(v for _, v in down) > 150
    width, _height, rows, _ = decode(render_png(data))
    assert data.shown_size()[0] <= MAX_WIDTH and width == 2 * data.width  # sharp on a phone
    drawn = colours(rows)
    assert _rgb(PALETTE[0]) in drawn and _rgb(PALETTE[1]) in drawn  # upstream, downstream


def _rgb(color: str) -> tuple[int, int, int]:
    return (int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16))


def test_the_alert_chart_shades_the_episode(tmp_path: Path) -> None:
    db = week_store(tmp_path)
    plume = _first(db, "turbidity_contrast")
    store = SqliteStore(db)
    try:
        chart = alert_chart(SITE, store, plume)
    finally:
        store.close()
    assert chart is not None
    opened = round(plume.opened_at.timestamp() * 1000)
    ((start, end),) = chart.episodes
    assert start == opened and end > start
    assert 'class="episode"' in svg_text(chart)


def test_a_trap_alert_plots_the_fill_and_an_unknown_site_gets_none(tmp_path: Path) -> None:
    db = week_store(tmp_path)
    trap = _first(db, "sediment_capacity")
    charts = AlertCharts({SID: SITE}, db)
    data = charts(SID, trap)
    assert data is not None and data.has_data()
    assert [value for _label, value in data.ref_lines]  # the warning and cleanout lines
    assert charts("no-such-site", trap) is None
