"""Small builders shared by the health, turbidity and property tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.timeutil import MS_PER_MIN, to_ms
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert

T0 = to_ms(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))


def minute(m: float) -> int:
    """Event time ``m`` minutes after T0."""
    return T0 + round(m * MS_PER_MIN)


def pair_site(
    *,
    packs: Sequence[str] = ("ny-lake-george",),
    water_class: str = "stream",
    limit: dict[str, float | bool] | None = None,
    interval_s: float = 60,
    window_s: float | None = None,
    sustain_s: float | None = None,
    travel_time_s: float = 0.0,
    up_extra: dict[str, Any] | None = None,
    down_extra: dict[str, Any] | None = None,
    rule_overrides: dict[str, Any] | None = None,
) -> SiteConfig:
    """A site with one turbidity pair (turb-up / turb-down) on a receiving water."""
    pair: dict[str, Any] = {
        "id": "outfall-a",
        "upstream": "turb-up",
        "downstream": "turb-down",
        "receiving_water": "brook",
        "travel_time_s": travel_time_s,
    }
    if limit is not None:
        pair["limit"] = limit
    if window_s is not None:
        pair["window_s"] = window_s
    if sustain_s is not None:
        pair["sustain_s"] = sustain_s
    up = {"id": "turb-up", "kind": "turbidity", "unit": "NTU", "interval_s": interval_s}
    down = {"id": "turb-down", "kind": "turbidity", "unit": "NTU", "interval_s": interval_s}
    up.update(up_extra or {})
    down.update(down_extra or {})
    return SiteConfig.model_validate(
        {
            "site": {
                "id": "test-site",
                "name": "Test site",
                "timezone": "America/New_York",
                "rule_packs": list(packs),
            },
            "receiving_waters": [{"id": "brook", "name": "Test Brook", "class": water_class}],
            "stations": [
                {"id": "up-1", "sensors": [up]},
                {"id": "down-1", "sensors": [down]},
            ],
            "turbidity_pairs": [pair],
            "rule_overrides": rule_overrides or {},
        }
    )


def jitter(i: int) -> float:
    """A deterministic wobble of 0.01 NTU: real probes never repeat a value exactly."""
    return 0.01 * (i % 2)


def series(
    sensor: str,
    start_min: float,
    values: Iterable[float],
    *,
    step_min: float = 1.0,
    wobble: bool = True,
) -> list[SensorReading]:
    """Readings of ``sensor`` every ``step_min`` minutes from ``start_min``."""
    out = []
    for i, v in enumerate(values):
        value = v + jitter(i) if wobble else v
        out.append(SensorReading(sensor, minute(start_min + i * step_min), value))
    return out


def level(value: float, minutes: int) -> list[float]:
    return [value] * minutes


def run(site: SiteConfig, readings: Iterable[SensorReading], end: int | None = None) -> Engine:
    """Feed ``readings`` in event-time order, finish, return the engine."""
    engine = Engine(site)
    engine.feed(sorted(readings, key=lambda r: (r.t, r.sensor)))
    engine.finish(end)
    return engine


def of_kind(engine: Engine, kind: str, subject: str | None = None) -> list[Alert]:
    return [
        a for a in engine.alerts() if a.kind == kind and (subject is None or a.subject == subject)
    ]


def at_min(value: datetime) -> float:
    """An alert time as minutes after T0 (for hand-computed expectations)."""
    return (to_ms(value) - T0) / MS_PER_MIN
