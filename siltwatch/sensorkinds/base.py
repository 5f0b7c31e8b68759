"""What a kind of sensor is, said once: its units, what it can never read, its plot.

A *sensor kind* (:class:`SensorKind`) is to a siltwatch sensor what Home
Assistant's ``SensorDeviceClass`` with its row of ``DEVICE_CLASS_UNITS`` is to an
entity: one record of everything the rest of the system needs to know about the
quantity, so that the site file's checks (siltwatch/config.py), ingest's refusal
of impossible values (ingest/decode.py), the quality screen's plausible band
(analytics/health.py), the console and the Grafana dashboards loop over the kinds
instead of keeping tables keyed by kind strings.

Bounds are in the kind's base unit (NTU, mm of rain, metres); a reading is
converted from its declared unit with the kind's own factors before it is
compared. The *impossible* bounds are generous envelopes chosen so that no real
reading is ever refused (a parsing bug, a corrupted outbox row or a hostile
``1e308`` is); the *plausible* band is the softer judgement that flags a reading
but stores it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from siltwatch.panels import Panel, Series
from siltwatch.units import LENGTH_UNITS, to_metres

Aggregate = Literal["median", "mean", "sum"]


@dataclass(frozen=True)
class Plot:
    """How a sensor of the kind is drawn on its own (a sensor no detection charts).

    ``aggregate`` is what one point of a long window stands for (a depth that fell
    adds up, a level is averaged); ``bars`` draws each interval as a bar.
    """

    aggregate: Aggregate = "mean"
    bars: bool = False


@dataclass(frozen=True)
class SensorKind:
    """One kind of sensor: the site file's ``kind``, its units and its bounds.

    ``units`` maps each unit a sensor of the kind may declare to the factor that
    turns a value in it into ``base_unit`` (the first unit is the usual one);
    ``low``..``high`` (base unit) is what a reading can never lie outside;
    ``plausible`` (None: no band) the band, in the sensor's own unit, outside which analytics/health.py
    flags a reading as out of range; ``sensor_keys`` the keys of a
    ``[[stations.sensors]]`` table that only a sensor of this kind may set.
    """

    key: str  # the site file's ``kind``
    what: str  # the quantity, as a person says it ("a water level")
    units: Mapping[str, float]
    base_unit: str
    low: float
    high: float
    plausible: tuple[float, float] | None = None
    sensor_keys: tuple[str, ...] = ()
    plot: Plot = field(default_factory=Plot)

    def unit_names(self) -> tuple[str, ...]:
        return tuple(self.units)

    def to_base(self, value: float, unit: str) -> float:
        """``value`` in ``unit`` as the base unit; KeyError for a unit of another kind."""
        return value * self.units[unit]

    def unit_problem(self, unit: str) -> str | None:
        """Why ``unit`` does not fit a sensor of this kind, or None."""
        if unit in self.units:
            return None
        return (
            f"unit {unit!r} does not fit a {self.key} sensor "
            f"(expected one of {', '.join(self.units)})"
        )

    def problem(self, value: float, unit: str) -> str | None:
        """Why ``value`` (in ``unit``) is impossible for this kind, or None when it is possible.

        Never raises: a unit of another kind or a non-finite value is a problem too.
        """
        if unit not in self.units:
            return (
                f"{unit!r} is not a unit of a {self.key} sensor "
                f"(expected one of {', '.join(self.units)})"
            )
        if not math.isfinite(value):
            return f"{value!r} is not a finite number"
        base = self.to_base(value, unit)
        if self.low <= base <= self.high and math.isfinite(base):
            return None
        shown = f"{value:g} {unit}"
        if unit != self.base_unit:
            shown += f" = {base:g} {self.base_unit}"
        return (
            f"{shown}, impossible for {self.what} "
            f"(possible: {self.low:g} .. {self.high:g} {self.base_unit})"
        )

    def panel(self, sensor: str, unit: str, interval_s: float) -> Panel:
        """The sensor's own panel: its readings, aggregated as the kind adds up, in its unit."""
        how = "Total" if self.plot.aggregate == "sum" else self.plot.aggregate.capitalize()
        return Panel(
            title=f"{sensor}: {self.what}",
            unit=unit,
            description=f"{how} of {sensor} ({self.what}, {unit}) per interval.",
            series=(Series(sensor, sensor, self.plot.aggregate),),
            interval_s=interval_s,
            bars=self.plot.bars,
        )


def length_kind(key: str, what: str) -> SensorKind:
    """A kind that reads a length (a level, a depth) in any length unit, in metres inside.

    Impossible beyond 1,000 m either way: practices and traps are a few metres deep
    and level sensors have ranges of metres to tens of metres; a kilometre of water
    is not a basin. Negative values are allowed (a level below the design datum).
    """
    units: dict[str, float] = {unit: to_metres(1.0, unit) for unit in LENGTH_UNITS}
    return SensorKind(key=key, what=what, units=units, base_unit="m", low=-1000.0, high=1000.0)
