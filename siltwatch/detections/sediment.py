"""Sediment-trap capacity: clean out before a trap has lost half its storage.

Lake George §148-10 A: remove sediment at 50 % loss of design capacity (the
packs' ``sediment.cleanout_fraction``). The detector (analytics/sediment.py)
turns the depth probe's readings into the fraction of design *volume* lost
(siltwatch/rulemath.py), warns at the warn fraction and escalates at cleanout.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING

from siltwatch import rulemath
from siltwatch.detections.base import Dashboard, Description, Evidence, Section, regulatory
from siltwatch.panels import Panel, Series, level_panel
from siltwatch.rulekeys import FRACTION, number
from siltwatch.units import from_metres, to_metres

if TYPE_CHECKING:
    from siltwatch.rules import Rules
    from siltwatch.sitemodel import SedimentTrap, SiteConfig


class SedimentEvidence(Evidence):
    fraction_lost: float
    cleanout_fraction: float


def _amount(ev: SedimentEvidence, _zone: tzinfo) -> str:
    return (
        f"{ev.fraction_lost * 100:.0f}% of storage lost "
        f"(clean out at {ev.cleanout_fraction * 100:.0f}%)"
    )


SEDIMENT_CAPACITY = regulatory(
    "sediment_capacity", "sediment-trap capacity", SedimentEvidence, _amount
)


def depth_at_fraction(site: SiteConfig, trap: SedimentTrap, fraction: float) -> float:
    """The sediment depth, in the depth sensor's unit, at which ``fraction`` of the
    design storage is lost — by volume, as the law counts capacity: a trap widens
    upward, so half its volume lies well above half its depth."""
    unit = site.sensor(trap.depth_sensor).unit
    depth_m = rulemath.TrapGeometry.of(site, trap).depth_at_fraction(fraction)
    return round(from_metres(depth_m, unit), 4)


def trap_fractions(rules: Rules, trap: SedimentTrap) -> tuple[float, float]:
    """(warn fraction, cleanout fraction) for a trap: its own warn level, else the packs'."""
    warn, _source = rulemath.warn_fraction(
        trap.warn_fraction, rules.require("sediment.warn_fraction")
    )
    return warn, rules.number("sediment.cleanout_fraction")


def storage_lost_pct(site: SiteConfig, trap: SedimentTrap) -> str | None:
    """The share of the design storage lost (%) as an expression of the sediment depth
    ``{x}`` in the sensor's unit, for a trap given by its shape (the volume below ``h`` of
    a trapezoidal basin, rulemath.trapezoid_volume, over the design volume); None for a
    stage-storage table, which an expression cannot interpolate."""
    if trap.shape is None:
        return None
    geometry = rulemath.TrapGeometry.of(site, trap)
    length, width, z, _depth = trap.shape.metres()
    k = to_metres(1.0, site.sensor(trap.depth_sensor).unit)  # sensor unit -> m
    scale = 100.0 / geometry.design_volume_m3
    a = scale * length * width * k
    b = scale * z * (length + width) * k * k
    c = scale * (4.0 / 3.0) * z * z * k**3
    return f"{a!r} * {{x}} + {b!r} * {{x}} * {{x}} + {c!r} * {{x}} * {{x}} * {{x}}"


def _panel(site: SiteConfig, rules: Rules, trap: SedimentTrap) -> Panel:
    unit = site.sensor(trap.depth_sensor).unit
    warn, clean = trap_fractions(rules, trap)
    share = storage_lost_pct(site, trap)
    if share is not None:
        # As the console draws it (console/charts/plots.py trap_chart): volume, not depth.
        return level_panel(
            f"Sediment trap {trap.id}: storage lost",
            "%",
            f"Share of the design storage volume filled, from {trap.depth_sensor}'s sediment "
            f"depth and the trap's shape. Dashed lines: {warn:.0%} (warning) and {clean:.0%} "
            f"(cleanout due, {rules.require('sediment.cleanout_fraction').cite()}).",
            Series(trap.depth_sensor, "storage lost", expression=share, reference=False),
            ((warn * 100, "orange"), (clean * 100, "red")),
        )
    warn_d = depth_at_fraction(site, trap, warn)
    clean_d = depth_at_fraction(site, trap, clean)
    return level_panel(
        f"Sediment depth {trap.id}",
        unit,
        f"Mean depth of {trap.depth_sensor}. Dashed lines: the depths at which "
        f"{warn:.0%} ({warn_d:g} {unit}) and {clean:.0%} ({clean_d:g} {unit}) of the "
        "design storage volume is lost; cleanout is due at the second.",
        Series(trap.depth_sensor, "depth"),
        ((warn_d, "orange"), (clean_d, "red")),
    )


DESCRIPTION = Description(
    key="sediment",
    order=30,
    alerts=(SEDIMENT_CAPACITY,),
    rule_keys=(
        number("sediment.warn_fraction", FRACTION),
        number("sediment.cleanout_fraction", FRACTION),
    ),
    section=Section(
        "sediment_traps",
        "trap",
        sensor_refs=(("depth_sensor", "sediment_depth"),),
        officer_label="sediment-trap",
    ),
    dashboard=Dashboard("Sediment traps", 40, _panel),
)
