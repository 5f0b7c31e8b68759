"""Water-level sensors in infiltration practices: what the drain-time rule reads.

Impossible beyond 1,000 m either way: practices and traps are a few metres deep
and level sensors have ranges of metres to tens of metres; a kilometre of water
is not a basin. Negative values are allowed (a level below the design datum).
"""

from __future__ import annotations

from siltwatch.sensorkinds.base import SensorKind
from siltwatch.units import LENGTH_UNITS, to_metres

KIND = SensorKind(
    key="water_level",
    what="a water level",
    units={unit: to_metres(1.0, unit) for unit in LENGTH_UNITS},
    base_unit="m",
    low=-1000.0,
    high=1000.0,
)
