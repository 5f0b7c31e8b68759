"""Water-level sensors in infiltration practices: what the drain-time rule reads.

A length, with the envelope every length kind has (:func:`~siltwatch.sensorkinds.base.length_kind`).
"""

from __future__ import annotations

from siltwatch.sensorkinds.base import length_kind

KIND = length_kind("water_level", "a water level")
