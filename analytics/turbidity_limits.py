"""Turbidity limits: the downstream level the law allows, given the upstream background.

The arithmetic lives in siltwatch/rulemath.py (the dashboards draw the same
limits, and may import only siltwatch); the table of shapes is there. This
module keeps the analytics name of the class a turbidity detector holds,
because engine snapshots rebuild only classes defined in analytics modules
(analytics/statecodec.py).
"""

from __future__ import annotations

from siltwatch import rulemath
from siltwatch.rulemath import (
    NO_INCREASE_TOLERANCE_FRACTION,
    NO_INCREASE_TOLERANCE_NTU,
    Limit,
    allowed_level,
    no_increase_tolerance,
)

__all__ = [
    "NO_INCREASE_TOLERANCE_FRACTION",
    "NO_INCREASE_TOLERANCE_NTU",
    "Limit",
    "LimitRule",
    "allowed_level",
    "no_increase_tolerance",
]


class LimitRule(rulemath.LimitRule):
    """:class:`siltwatch.rulemath.LimitRule` under an analytics name, for snapshots."""

    __slots__ = ()
