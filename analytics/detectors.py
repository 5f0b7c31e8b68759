"""Which detectors a site gets: every described detection's, in its order.

The descriptions (siltwatch/detections/, one module per detection kind) name
the analytics module whose ``build(site, ctx) -> list[Detector]`` makes a
site's detectors; nothing here changes when a detection is added. Roles beyond
detecting are declared by the detectors themselves and collected by the
engine: the quality screen (``Detector.screen``, provided by
:class:`analytics.health.SensorHealth`, whose description comes first) and the
daily rain record (``Detector.rain_days``). Detectors that need each other's
results subscribe to typed events (``Detector.handles``), so no wiring between
them is done here either.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from analytics.detector import Context, Detector
from siltwatch.config import SiteConfig
from siltwatch.detections import descriptions

Build = Callable[[SiteConfig, Context], list[Detector]]


def build_detectors(site: SiteConfig, ctx: Context) -> list[Detector]:
    detectors: list[Detector] = []
    for description in descriptions():
        module = importlib.import_module(description.engine_module)
        build = cast(Build, module.build)
        detectors += build(site, ctx)
    return detectors
