"""The small plot of an alert email: the console's chart of the alert's subject, as a PNG's data.

The email channel (alerts/mail.py) asks ``chart_for(site, alert)`` when it
renders a message; this answers from the store with the same chart the
console's site page draws (console/charts/plots.py) — the same medians, limits,
design levels and trap lines — so the email, the console and the report
cannot disagree. The window is the episode: from six hours before it opened
to an hour after it last changed (or resolved), with the episode shaded. The
PNG is drawn here (console/charts/draw.py, matplotlib) at a phone-friendly size
with a local-time axis and its legend, so alerts/ needs no plotting library.
The alert page's episode plot is :func:`alert_chart` too.

The delivery worker renders in its own thread, so each answer opens its own
read connection to the store and closes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from alerts.pngchart import ChartData
from console.charts.draw import EMAIL, EMAIL_SCALE, png_bytes
from console.charts.model import Chart
from console.charts.plots import (
    episode_span,
    subject_chart,
)
from ingest.store.from_url import open_store
from ingest.store.queries import SqlStore, StoreError
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert

BEFORE_MS = 6 * 3_600_000
AFTER_MS = 3_600_000


def _ms(value: datetime) -> int:
    return round(value.timestamp() * 1000)


def episode_window(alert: Alert) -> tuple[int, int]:
    """Six hours before the episode opened to an hour after its last change."""
    opened = _ms(alert.opened_at)
    changes = [opened] + [_ms(e.at) for e in alert.escalations]
    if alert.resolved_at is not None:
        changes.append(_ms(alert.resolved_at))
    return opened - BEFORE_MS, max(changes) + AFTER_MS


def to_chart_data(chart: Chart) -> ChartData | None:
    """A console chart as the PNG renderer's input; None when nothing was measured."""
    inside = [
        (s.label, tuple(p for p in s.points if chart.start_ms <= p[0] <= chart.end_ms))
        for s in chart.series
    ]
    if not any(points for _, points in inside):
        return None
    width, height = EMAIL
    return ChartData(
        title=chart.title,
        unit=chart.unit,
        series=tuple(inside),
        ref_lines=tuple((line.label, line.value) for line in chart.lines),
        marks=tuple((m.label, m.at_ms) for m in chart.markers),
        png=png_bytes(chart, width, height, EMAIL_SCALE),
        width=width,
        height=height,
    )


def alert_chart(site: SiteConfig, store: SqlStore, alert: Alert) -> Chart | None:
    """The chart of the alert's subject over its episode (:func:`episode_window`), the
    episode shaded; None when the subject has no chart (a duty, a station)."""
    start, end = episode_window(alert)
    chart = subject_chart(site, store, alert.subject, start, end)
    if chart is None:
        return None
    return replace(chart, episodes=(episode_span(alert, end),))


class AlertCharts:
    """``chart_for`` of the email channel, over the store ``db`` (a SQLite path or a
    PostgreSQL URL)."""

    def __init__(self, sites: Mapping[str, SiteConfig], db: Path | str) -> None:
        self.sites = dict(sites)
        self.db = db

    def __call__(self, site_id: str, alert: Alert) -> ChartData | None:
        site = self.sites.get(site_id)
        if site is None:
            return None
        try:
            store = open_store(self.db)
        except StoreError:
            return None  # the email goes without its plot rather than not at all
        try:
            chart = alert_chart(site, store, alert)
        finally:
            store.close()
        return None if chart is None else to_chart_data(chart)
