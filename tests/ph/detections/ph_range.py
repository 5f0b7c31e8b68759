"""pH outside its range for 30 minutes: a test's detection, as a new one would be described.

One module of siltwatch/detections/ (dropped into its search path by
tests/ph/registered.py). It has no section of its own: it watches every sensor of
kind ``ph``, so the site file needs nothing but the sensor.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import Description, Evidence, diagnostic, short_number

LOW, HIGH = 6.5, 8.5  # pH: a common surface-water criterion range (a test's numbers)
SUSTAIN_MIN = 30


class PhEvidence(Evidence):
    sensor: str
    ph: float
    low: float
    high: float


def amount(ev: PhEvidence, _zone: tzinfo) -> str:
    return f"pH {short_number(ev.ph)} outside {ev.low:g}-{ev.high:g}"


PH_RANGE = diagnostic("ph_range", "pH out of range", PhEvidence, amount)

DESCRIPTION = Description(
    key="ph_range",
    order=26,
    alerts=(PH_RANGE,),
    engine_module="analytics.ph_detector",
)
