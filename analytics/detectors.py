"""Which detectors a site gets: one line per detection, built from its config.

Each detection module exposes ``build(site, ctx) -> list[Detector]``. Adding a
detection is adding a line here. Roles beyond detecting are declared by the
detectors themselves and collected by the engine: the quality screen
(``Detector.screen``, provided by :class:`analytics.health.SensorHealth`) and
the daily rain record (``Detector.rain_days``). Detectors that need each
other's results subscribe to typed events (``Detector.handles``), so no
wiring between them is done here.
"""

from __future__ import annotations

from analytics import drain, health, inspections, sediment, turbidity
from analytics.detector import Context, Detector
from siltwatch.config import SiteConfig


def build_detectors(site: SiteConfig, ctx: Context) -> list[Detector]:
    detectors: list[Detector] = []
    detectors += health.build(site, ctx)  # sensor health: offline timers and the quality screen
    detectors += turbidity.build(site, ctx)  # turbidity contrast per pair (Lake George §148-9 B)
    detectors += drain.build(site, ctx)  # infiltration drain time (Lake George §148-11 I(3))
    detectors += sediment.build(site, ctx)  # sediment-trap capacity (Lake George §148-10 A)
    detectors += inspections.build(site, ctx)  # rain, storms, inspection duties (NCG01 III §A)
    return detectors
