"""Sediment-trap storage: how much of the design volume lies below a sediment surface.

The arithmetic (trapezoid volume, stage-storage interpolation, the fraction of
design capacity lost and its inverse) lives in siltwatch/rulemath.py, where the
dashboards' trap lines use it too. This module keeps the analytics name of the
class a sediment detector holds, because engine snapshots rebuild only classes
defined in analytics modules (analytics/statecodec.py).
"""

from __future__ import annotations

from siltwatch import rulemath
from siltwatch.rulemath import interpolate_storage, trapezoid_volume

__all__ = ["TrapGeometry", "interpolate_storage", "trapezoid_volume"]


class TrapGeometry(rulemath.TrapGeometry):
    """:class:`siltwatch.rulemath.TrapGeometry` under an analytics name, for snapshots."""
