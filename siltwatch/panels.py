"""What a Grafana panel shows, as data: its series over sensors and the lines the rules draw.

Detections (siltwatch/detections/) and sensor kinds (siltwatch/sensorkinds/) describe
their panels with these; dashboards/build.py turns them into Grafana JSON and the
console (console/charts/plots.py) draws the ones it has no finer chart for. It
imports nothing of siltwatch, so both registries can stand on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Color = str  # a Grafana colour name


@dataclass(frozen=True)
class Series:
    """One line or bar series of a panel, over one sensor.

    ``expression`` draws a reference line computed from the per-interval median
    (``{x}``), e.g. a limit relative to the upstream background; ``rolling_h``
    the total of the last hours (the storm rule's window). Reference series are
    drawn dashed red; ``right_axis`` series as a line on the right axis.
    ``reference=False`` makes an ``expression`` the measured series itself (a trap's
    depth as the share of its storage lost), drawn as the panel's data.
    """

    sensor: str
    alias: str
    aggregate: Literal["median", "mean", "sum"] = "mean"
    fill: Literal["null", "0"] = "null"
    expression: str | None = None
    rolling_h: int | None = None
    right_axis: bool = False
    reference: bool = True


@dataclass(frozen=True)
class Panel:
    """One time-series panel: its series and the threshold lines the rules draw."""

    title: str
    unit: str  # the sensor's unit ("NTU", "m", "in")
    description: str
    series: tuple[Series, ...]
    thresholds: tuple[tuple[float | None, Color], ...] = ()  # (value, colour); first is the base
    interval_s: float | None = None  # at least this per point (a detector's window)
    bars: bool = False


def level_panel(
    title: str, unit: str, description: str, mean: Series, lines: tuple[tuple[float, Color], ...]
) -> Panel:
    """A sensor's mean level with the dashed lines its rule draws (design and drained
    levels, warning and cleanout depths), green below the first."""
    return Panel(title, unit, description, (mean,), ((None, "green"), *lines))
