"""Sediment-depth sensors in traps and ponds: what the 50 % cleanout rule reads.

A length, with the envelope every length kind has (:func:`~siltwatch.sensorkinds.base.length_kind`).
"""

from __future__ import annotations

from siltwatch.sensorkinds.base import length_kind

KIND = length_kind("sediment_depth", "a sediment depth")
