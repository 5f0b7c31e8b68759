"""Write the scripted-storm recordings shipped in examples/ (deterministic: seeded).

Run ``python examples/make_recordings.py`` to regenerate them. Each recording is
a week of one reference site around one storm, with the things a real week
has: sensor noise, a 2-minute debris spike that must NOT alert, a plume that
must, a basin that drains too slowly, a sediment trap pushed past 50 % of its
design capacity and then cleaned out, and a field inspection.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
Row = tuple[datetime, str, float]


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _bump(t: float, start: float, peak: float, end: float) -> float:
    """0 before start, rising to 1 at peak, falling to 0 at end (hours)."""
    if t <= start or t >= end:
        return 0.0
    if t <= peak:
        return math.sin(0.5 * math.pi * (t - start) / (peak - start)) ** 2
    return math.cos(0.5 * math.pi * (t - peak) / (end - peak)) ** 2


def _series(
    rows: list[Row],
    sensor: str,
    start: datetime,
    hours: float,
    step_s: int,
    f: Callable[[float], float],
) -> None:
    n = int(hours * 3600 / step_s)
    for i in range(n + 1):
        t = start + timedelta(seconds=i * step_s)
        rows.append((t, sensor, f(i * step_s / 3600.0)))


def _rain(
    rows: list[Row],
    sensor: str,
    start: datetime,
    hours: float,
    step_s: int,
    tip: float,
    storms: list[tuple[float, float, float]],
    rng: random.Random,
) -> None:
    """Tipping-bucket depth per interval: storms are (start h, end h, total depth)."""
    n = int(hours * 3600 / step_s)
    carry = 0.0
    for i in range(n + 1):
        h = i * step_s / 3600.0
        depth = 0.0
        for s, e, total in storms:
            if s <= h < e:
                # triangular hyetograph peaking at a third of the storm
                mid = s + (e - s) / 3
                w = (h - s) / (mid - s) if h < mid else (e - h) / (e - mid)
                depth += total * 2 / (e - s) * w * step_s / 3600.0
        carry += depth * rng.uniform(0.9, 1.1)
        tips = math.floor(carry / tip + 1e-9)
        carry -= tips * tip
        rows.append((start + timedelta(seconds=i * step_s), sensor, round(tips * tip, 4)))


def _turbidity_pair(
    rows: list[Row],
    sensors: tuple[str, str],
    start: datetime,
    hours: float,
    up: Callable[[float], float],
    down: Callable[[float], float],
) -> None:
    """The upstream and downstream probes (NTU) every minute."""
    _series(rows, sensors[0], start, hours, 60, lambda h: round(up(h), 2))
    _series(rows, sensors[1], start, hours, 60, lambda h: round(down(h), 2))


def _fill_and_drain(h: float, rise: float, full: float, peak: float, drain_per_h: float) -> float:
    """A practice's water level at hour ``h``: empty until ``rise``, filling evenly to
    ``peak`` at ``full``, then falling ``drain_per_h`` an hour until empty."""
    if h < rise:
        return 0.0
    if h < full:
        return peak * (h - rise) / (full - rise)
    return max(0.0, peak - drain_per_h * (h - full))


def _practice_level(
    rows: list[Row],
    sensor: str,
    start: datetime,
    hours: float,
    fill: tuple[float, float, float, float],
    noise: Callable[[], float],
    digits: int,
) -> None:
    """A practice's level gauge every 5 minutes: ``fill`` is :func:`_fill_and_drain`'s
    (rise, full, peak, drain_per_h), ``noise`` the gauge's."""
    _series(
        rows,
        sensor,
        start,
        hours,
        300,
        lambda h: round(_fill_and_drain(h, *fill) + noise(), digits),
    )


def lake_george(rng: random.Random) -> tuple[list[Row], list[tuple[str, str, str]]]:
    """Route 9N, Lake George NY: a 1.3 in storm on Tue 2026-05-05 afternoon (local)."""
    start = datetime(2026, 5, 4, 4, 0, tzinfo=UTC)  # Mon 00:00 EDT
    hours = 7 * 24.0
    storm = (34.0, 40.0)  # Tue 10:00-16:00 EDT
    rows: list[Row] = []
    _rain(rows, "rain-1", start, hours, 300, 0.01, [(storm[0], storm[1], 1.3)], rng)

    def up(h: float) -> float:
        return 8.0 + 22.0 * _bump(h, storm[0] + 1, storm[0] + 4, storm[1] + 6) + rng.gauss(0, 0.4)

    def down(h: float) -> float:
        plume = 140.0 * _bump(h, storm[0] + 1.5, storm[0] + 4.5, storm[1] + 7)
        spike = 420.0 if 80.0 <= h < 80.0 + 2 / 60 else 0.0  # debris on the probe, 2 minutes
        return (
            9.0
            + 22.0 * _bump(h, storm[0] + 1, storm[0] + 4, storm[1] + 6)
            + plume
            + spike
            + rng.gauss(0, 0.5)
        )

    _turbidity_pair(rows, ("turb-up", "turb-down"), start, hours, up, down)
    # ~150 h to drain: over 5 days
    basin = (storm[0] + 1, storm[0] + 5, 2.4, 0.016)
    _practice_level(rows, "lvl-basin-a", start, hours, basin, lambda: rng.gauss(0, 0.005), 3)

    def sediment(h: float) -> float:
        if h >= 150.0:  # cleanout on Sunday
            depth = 0.3
        else:
            depth = 1.5 + 0.55 * min(1.0, max(0.0, (h - storm[0]) / (storm[1] - storm[0] + 2)))
        return round(depth + rng.gauss(0, 0.01), 3)

    _series(rows, "sed-trap-1", start, hours, 3600, sediment)
    inspections = [("2026-05-06T09:30:00-04:00", "Dana Ruiz", "")]
    return rows, inspections


def lake_lure(rng: random.Random) -> tuple[list[Row], list[tuple[str, str, str]]]:
    """Memorial Highway, Lake Lure NC: a 30 mm storm ending Friday 2026-05-08 evening (local)."""
    start = datetime(2026, 5, 4, 4, 0, tzinfo=UTC)  # Mon 00:00 EDT
    hours = 7 * 24.0
    storm = (104.0, 115.0)  # Fri 08:00-19:00 EDT
    rows: list[Row] = []
    _rain(
        rows,
        "rain-yard",
        start,
        hours,
        300,
        0.2,
        [(2.0, 3.0, 3.0), (storm[0], storm[1], 30.0)],
        rng,
    )

    def up(h: float) -> float:
        return 4.0 + 6.0 * _bump(h, storm[0] + 2, storm[0] + 6, storm[1] + 4) + rng.gauss(0, 0.3)

    def down(h: float) -> float:
        plume = 45.0 * _bump(h, storm[0] + 2.5, storm[0] + 6.5, storm[1] + 5)
        return up(h) + 1.0 + plume + rng.gauss(0, 0.3)

    _turbidity_pair(rows, ("turb-cove-up", "turb-cove-down"), start, hours, up, down)
    # 50 h: inside the 72 h override
    trench = (storm[0] + 2, storm[0] + 8, 0.6, 0.012)
    _practice_level(rows, "lvl-trench", start, hours, trench, lambda: rng.gauss(0, 0.002), 4)

    def sediment(h: float) -> float:
        depth = 0.5 + 0.27 * min(1.0, max(0.0, (h - storm[0]) / (storm[1] - storm[0])))
        return round(depth + rng.gauss(0, 0.003), 4)

    _series(rows, "sed-basin", start, hours, 3600, sediment)
    inspections = [("2026-05-05T10:00:00-04:00", "Jo Whitaker", "")]
    return rows, inspections


def write(name: str, rows: list[Row], inspections: list[tuple[str, str, str]]) -> None:
    rows.sort(key=lambda r: (r[0], r[1]))
    with (HERE / f"{name}-storm.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["time", "sensor", "value"])
        for t, sensor, value in rows:
            w.writerow([_iso(t), sensor, value])
    with (HERE / f"{name}-inspections.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["time", "inspector", "duty"])
        w.writerows(inspections)


def main() -> None:
    write("lake-george", *lake_george(random.Random(148)))
    write("lake-lure", *lake_lure(random.Random(96)))


if __name__ == "__main__":
    main()
