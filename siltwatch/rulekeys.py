"""What a rule-pack key is: its name, its JSON types and, for numbers, its range.

The ground's lowest floor for the law as data: detections declare the keys
they read (siltwatch/detections/), the packs are checked against them
(siltwatch/rulepacks.py) and the officials' title is one (siltwatch/officials.py).
It imports nothing of siltwatch, so every one of those may import it.
"""

from __future__ import annotations

from dataclasses import dataclass

_NUMBER: tuple[type, ...] = (int, float)
# (lowest, whether the lowest itself is allowed, highest or None)
Range = tuple[float, bool, float | None]
POSITIVE: Range = (0.0, False, None)
NON_NEGATIVE: Range = (0.0, True, None)
FRACTION: Range = (0.0, False, 1.0)
UNIT_INTERVAL: Range = (0.0, True, 1.0)


@dataclass(frozen=True)
class RuleKey:
    """A rule-pack key a detection reads: its JSON types and, for numbers, its range.

    A duration, cadence or interval of 0 or less would make a duty due at once
    or a check never run; a fraction above 1 is never reached. A pack or site
    override outside the range is refused rather than left to switch a rule off
    quietly (siltwatch/rulepacks.py).
    """

    name: str
    types: tuple[type, ...] = _NUMBER
    range: Range | None = None


def number(name: str, range_: Range | None = POSITIVE) -> RuleKey:
    return RuleKey(name, _NUMBER, range_)


def flag(name: str) -> RuleKey:
    return RuleKey(name, (bool,))
