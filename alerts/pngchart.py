"""The alert email's inline plot, as the email channel receives it: a drawn PNG and its data.

The chart provider (``chart_for`` of the email channel; in the service,
console/charts/email.py) draws the PNG with the console's own charting code
(console/charts/draw.py, matplotlib), so the email shows the chart the console
and the report show: the same medians, limit lines, shaded alert episode,
local-time axis and legend. This module only carries it, so that ``alerts/``
imports without the server extra (no plotting library here): a station or a
notifier-only install renders texts and emails, just without a plot.

The PNG is drawn at ``scale`` pixels per CSS pixel and shown at ``width`` x
``height`` CSS px (at most :data:`MAX_WIDTH`, so it fits a phone's mail
client, which scales it down further with ``max-width: 100%``).
"""

from __future__ import annotations

from dataclasses import dataclass

Point = tuple[int, float]  # (t in epoch ms, value)

MAX_WIDTH = 600  # CSS px: the widest an email's image should be shown


@dataclass(frozen=True)
class ChartData:
    """What the email shows for one alert: the drawn PNG (``png``, shown at ``width`` x
    ``height`` CSS px) and the plotted data it was drawn from (the HTML's time span and
    the tests read those)."""

    title: str
    unit: str
    series: tuple[tuple[str, tuple[Point, ...]], ...]
    ref_lines: tuple[tuple[str, float], ...] = ()
    marks: tuple[tuple[str, int], ...] = ()  # (label, t ms): vertical dotted lines
    png: bytes = b""
    width: int = 0
    height: int = 0

    def has_data(self) -> bool:
        """Whether there is a drawn plot with at least one point to show."""
        return bool(self.png) and any(len(points) >= 1 for _, points in self.series)

    def shown_size(self) -> tuple[int, int]:
        """The image's size in the email (CSS px), at most :data:`MAX_WIDTH` wide."""
        if self.width <= MAX_WIDTH:
            return self.width, self.height
        return MAX_WIDTH, round(self.height * MAX_WIDTH / self.width)


def render_png(chart: ChartData) -> bytes:
    """The PNG to attach: the one the chart provider drew."""
    return chart.png
