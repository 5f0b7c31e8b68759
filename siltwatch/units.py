"""Units siltwatch accepts, and conversions to the internal SI units.

Sensors declare their unit; configuration keys carry theirs in their name
(``design_level_ft``). Inside the analytics every length is in metres and every
rain depth in millimetres, so a rule never compares feet with metres.
"""

from __future__ import annotations

from typing import Literal

LengthUnit = Literal["ft", "m", "in", "mm"]

_TO_METRES: dict[str, float] = {"m": 1.0, "ft": 0.3048, "in": 0.0254, "mm": 0.001}

# The lengths a level or depth sensor may read in; which units fit which kind of
# sensor is each kind's own (siltwatch/sensorkinds/).
LENGTH_UNITS: tuple[LengthUnit, ...] = ("ft", "m", "in", "mm")


def to_metres(value: float, unit: str) -> float:
    """A length in ``unit`` as metres; KeyError for a unit that is not a length."""
    return value * _TO_METRES[unit]


def from_metres(value: float, unit: str) -> float:
    return value / _TO_METRES[unit]


def to_mm(value: float, unit: str) -> float:
    """A rain depth in ``unit`` as millimetres (1 in = 25.4 mm exactly)."""
    return value * _TO_METRES[unit] * 1000.0


def mm_to(value: float, unit: str) -> float:
    return value / (_TO_METRES[unit] * 1000.0)


def volume_to_m3(value: float, length_unit: str) -> float:
    """A volume given in cubic ``length_unit`` as cubic metres."""
    return value * _TO_METRES[length_unit] ** 3
