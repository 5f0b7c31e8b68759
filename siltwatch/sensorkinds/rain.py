"""Rain gauges: a reading is the depth that fell during its interval (tipping buckets).

Impossible outside 0 .. 300 mm per reading. The world's record rainfall in
under an hour is about 305 mm (Holt, Missouri, 1947: 12 in in 42 minutes, a
WMO-listed extreme), so 300 mm in one reading is beyond any rain on record at
the intervals stations report. A depth that fell cannot be negative, which is
also the plausible band's only edge. A rain sensor may say how deep one tip of
its bucket is (``tip_in`` or ``tip_mm``; 0.01 in per tip on US gauges, Campbell
TE525 manual).
"""

from __future__ import annotations

from siltwatch.sensorkinds.base import Plot, SensorKind
from siltwatch.units import to_mm

KIND = SensorKind(
    key="rain",
    what="rain fallen in one reading",
    units={"in": to_mm(1.0, "in"), "mm": 1.0},
    base_unit="mm",
    low=0.0,
    high=300.0,
    plausible=(0.0, float("inf")),
    sensor_keys=("tip_in", "tip_mm"),
    plot=Plot("sum", bars=True),
)
