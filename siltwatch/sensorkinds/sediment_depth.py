"""Sediment-depth sensors in traps and ponds: what the 50 % cleanout rule reads.

The same envelope as a water level (siltwatch/sensorkinds/water_level.py): beyond
1,000 m either way is no trap.
"""

from __future__ import annotations

from siltwatch.sensorkinds.base import SensorKind
from siltwatch.units import LENGTH_UNITS, to_metres

KIND = SensorKind(
    key="sediment_depth",
    what="a sediment depth",
    units={unit: to_metres(1.0, unit) for unit in LENGTH_UNITS},
    base_unit="m",
    low=-1000.0,
    high=1000.0,
)
