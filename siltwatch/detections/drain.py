"""Infiltration drain time: a practice still holding water past its limit after a storm.

Lake George §148-11 I(3) (and the packs' drain-down limits per practice type):
an infiltration practice must drain within its limit; standing water past it
means the practice is clogged or undersized. The detector (analytics/drain.py)
follows each fill from its peak and also forecasts, from the recession, a
practice that will not drain in time (a siltwatch warning, not a breach).
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING

from siltwatch import rulemath
from siltwatch.detections.base import (
    Dashboard,
    Description,
    Evidence,
    Section,
    diagnostic,
    regulatory,
    short_number,
)
from siltwatch.panels import Panel, Series, level_panel
from siltwatch.rulekeys import number
from siltwatch.units import from_metres

if TYPE_CHECKING:
    from siltwatch.rules import Rules
    from siltwatch.sitemodel import InfiltrationPractice, SiteConfig

PRACTICE_TYPES = (
    "infiltration_basin",
    "infiltration_trench",
    "dry_well",
    "porous_pavement",
    "vegetated_depression",
)


class DrainEvidence(Evidence):
    practice: str
    hours_since_peak: float
    limit_h: float | None


def _amount(ev: DrainEvidence, _zone: tzinfo) -> str:
    hours, limit_h = short_number(ev.hours_since_peak, 0), short_number(ev.limit_h, 0)
    if hours and limit_h:
        return f"not drained {hours} h after peak (limit {limit_h} h)"
    return ""


# subject: the practice (both): the drain-time limit passed undrained, or it will not drain in time
DRAIN_TIME = regulatory("drain_time", "drain time", DrainEvidence, _amount)
DRAIN_TIME_FORECAST = diagnostic(
    "drain_time_forecast", "drain time forecast", DrainEvidence, _amount
)


def practice_levels(site: SiteConfig, practice: InfiltrationPractice) -> tuple[float, float, str]:
    """(design level, design level + tolerance, unit) in the level sensor's unit."""
    unit = site.sensor(practice.level_sensor).unit
    design_m = practice.design_level_metres()
    design = from_metres(design_m, unit)
    drained = from_metres(rulemath.drained_level_m(design_m, practice.tolerance_metres()), unit)
    return round(design, 6), round(drained, 6), unit


def _panel(site: SiteConfig, _rules: Rules, practice: InfiltrationPractice) -> Panel:
    design, drained, unit = practice_levels(site, practice)
    return level_panel(
        f"Water level {practice.id} ({practice.type.replace('_', ' ')})",
        unit,
        f"Mean level of {practice.level_sensor}. Dashed lines: the design level "
        f"({design:g} {unit}) and design level + tolerance ({drained:g} {unit}), "
        "below which the practice counts as drained.",
        Series(practice.level_sensor, "level"),
        ((design, "blue"), (drained, "orange")),
    )


DESCRIPTION = Description(
    key="drain",
    order=20,
    alerts=(DRAIN_TIME, DRAIN_TIME_FORECAST),
    rule_keys=tuple(number(f"drain.limit_h.{t}") for t in PRACTICE_TYPES),
    section=Section(
        "infiltration_practices",
        "practice",
        sensor_refs=(("level_sensor", "water_level"),),
        officer_label="drain-time",
    ),
    dashboard=Dashboard("Infiltration practices", 30, _panel),
)
