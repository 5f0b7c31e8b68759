"""A rule as detector state keeps it: its number and its citation, as plain values.

Detector state is snapshotted (analytics/statecodec.py), so a detector keeps
what it read from the site's packs (a ``siltwatch.rulepacks.RuleValue``) as
plain values: the number it counts with and the citation its alerts and duties
quote. The site-log detections (stabilization, post-construction, violations)
and the inspection cadences all keep rules this way, so the shape is declared
once, here.
"""

from __future__ import annotations

from dataclasses import dataclass

from siltwatch.rulepacks import RuleValue


@dataclass(frozen=True)
class Cited:
    """One rule's number and citation (None where the site's packs do not set it)."""

    value: float
    cite: str

    @classmethod
    def of(cls, rule: RuleValue | None) -> Cited | None:
        """The rule, or None when the packs do not set it (or set a flag false)."""
        if rule is None or rule.value is False:
            return None
        return cls(float(rule.value), rule.cite())

    @property
    def count(self) -> int:
        """The value as a whole number of years or days (at least one)."""
        return max(1, round(self.value))


@dataclass(frozen=True)
class CitedDays:
    """A whole number of days and the citation that sets it (an inspection cadence's)."""

    days: int
    cite: str
