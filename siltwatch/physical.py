"""What a reading of each sensor kind can never be: one table, used wherever values come in.

These are *impossible* values, not suspicious ones. A reading outside them is
not a measurement of water at all (a parsing bug, a corrupted outbox row, a
hostile publisher sending ``1e308``), so ingest refuses the message with a
reason. Values that are merely implausible for a site (a turbidity of 5000 NTU,
a reading outside a sensor's configured ``min_value``/``max_value``) are stored
and *flagged* by analytics/health.py in a narrower band; that flagging is a
separate, softer judgement and stays there.

Where each number comes from (they are deliberately generous envelopes, chosen
so that no real reading is ever refused; none is an instrument specification):

* **turbidity, -50 .. 10,000 NTU (FNU alike).** Field turbidity probes measure
  up to about 1,000-4,000 NTU; the muddiest construction runoff is in the low
  thousands. 10,000 leaves headroom above both, so a real plume is always
  stored. Slightly negative readings are real (a probe's zero offset drifts a
  few NTU in clear water); -50 is far beyond any offset.
* **rain, 0 .. 300 mm per reading.** A reading is the depth that fell during
  its interval (a few minutes). The world's record rainfall in under an hour is
  about 305 mm (Holt, Missouri, 1947: 12 in in 42 minutes, a WMO-listed
  extreme), so 300 mm in one reading is beyond any rain on record at the
  intervals stations report. A depth that fell cannot be negative.
* **water level and sediment depth, |value| <= 1,000 m.** Practices and traps
  are a few metres deep and level sensors have ranges of metres to tens of
  metres; a kilometre of water is not a basin. Negative values are allowed
  (a level below the design datum).

Bounds are in a base unit per kind (NTU, mm of rain, metres); a reading is
converted from its unit (siltwatch/units.py) before it is compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from siltwatch.units import UNITS_BY_KIND, to_metres, to_mm

Family = Literal["turbidity", "rain_depth", "length"]


@dataclass(frozen=True, slots=True)
class PhysicalBounds:
    """One sensor kind: which units it is read in and what it can never read."""

    kind: str
    family: Family
    units: tuple[str, ...]
    base_unit: str
    low: float
    high: float
    what: str  # the quantity, as a person says it

    def to_base(self, value: float, unit: str) -> float:
        """``value`` in ``unit`` as the base unit; KeyError for a unit of another kind."""
        if unit not in self.units:
            raise KeyError(unit)
        if self.family == "turbidity":
            return value  # NTU and FNU share one scale
        if self.family == "rain_depth":
            return to_mm(value, unit)
        return to_metres(value, unit)

    def problem(self, value: float, unit: str) -> str | None:
        """Why ``value`` (in ``unit``) is impossible for this kind, or None when it is possible.

        Never raises: a unit of another kind or a non-finite value is a problem too.
        """
        if unit not in self.units:
            return (
                f"{unit!r} is not a unit of a {self.kind} sensor "
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


PHYSICAL_BOUNDS: dict[str, PhysicalBounds] = {
    "turbidity": PhysicalBounds(
        "turbidity", "turbidity", UNITS_BY_KIND["turbidity"], "NTU", -50.0, 10_000.0, "turbidity"
    ),
    "rain": PhysicalBounds(
        "rain", "rain_depth", UNITS_BY_KIND["rain"], "mm", 0.0, 300.0, "rain fallen in one reading"
    ),
    "water_level": PhysicalBounds(
        "water_level", "length", UNITS_BY_KIND["water_level"], "m", -1000.0, 1000.0, "a water level"
    ),
    "sediment_depth": PhysicalBounds(
        "sediment_depth",
        "length",
        UNITS_BY_KIND["sediment_depth"],
        "m",
        -1000.0,
        1000.0,
        "a sediment depth",
    ),
}


def impossible(kind: str, value: float, unit: str) -> str | None:
    """Why a reading of a ``kind`` sensor is physically impossible, or None; never raises."""
    bounds = PHYSICAL_BOUNDS.get(kind)
    if bounds is None:
        return f"no physical bounds are known for sensor kind {kind!r}"
    return bounds.problem(value, unit)
