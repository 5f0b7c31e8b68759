"""Which detectors a site gets: one line per detection, built from its config.

Each detection module exposes ``build(site, ctx) -> list[Detector]``. Adding a
detection is adding a line here.
"""

from __future__ import annotations

from analytics import drain, health, inspections, sediment, turbidity
from analytics.detector import Context, Detector
from analytics.engine import Screen
from siltwatch.config import SiteConfig


def build_detectors(site: SiteConfig, ctx: Context) -> list[Detector]:
    detectors: list[Detector] = []
    detectors += health.build(site, ctx)  # sensor health: offline timers (and the screen below)
    detectors += turbidity.build(site, ctx)  # turbidity contrast per pair (Lake George §148-9 B)
    detectors += drain.build(site, ctx)  # infiltration drain time (Lake George §148-11 I(3))
    detectors += sediment.build(site, ctx)  # sediment-trap capacity (Lake George §148-10 A)
    detectors += inspections.build(site, ctx)  # rain, storms, inspection duties (NCG01 III §A)
    return detectors


def build_screen(site: SiteConfig, ctx: Context, detectors: list[Detector]) -> Screen | None:
    """The quality screen every reading passes before the detectors see it.

    None means pass-through. A screen must be a picklable object (a class
    instance, not a closure): it is part of the engine's snapshot.
    """
    return health.screen_of(detectors)  # range, flatline, spike flags (analytics/health.py)
