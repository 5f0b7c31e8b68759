"""Sensor health: a sensor gone silent, and readings that cannot be true.

siltwatch's own diagnostics (no ordinance names them), raised so that a dead or
lying probe is never mistaken for a clean site: every detection that uses the
sensor is blind meanwhile. The officer never hears them; the site's people do.
Its detector (analytics/health.py) is also the quality screen every reading
passes first, which is why it is built first.
"""

from __future__ import annotations

from siltwatch.detections.base import Description, Evidence, diagnostic
from siltwatch.rulekeys import number


class OfflineEvidence(Evidence):
    sensor: str
    station: str
    last_reading_at: str


class DataQualityEvidence(Evidence):
    """A sensor's problems (health) or a pair that cannot be judged (turbidity): they
    share the kind, so what either may write is optional."""

    sensor: str | None = None
    pair: str | None = None


SENSOR_OFFLINE = diagnostic("sensor_offline", "sensor offline", OfflineEvidence)
DATA_QUALITY = diagnostic("data_quality", "data quality", DataQualityEvidence)

DESCRIPTION = Description(
    key="sensor_health",
    order=0,
    engine_module="analytics.health",
    alerts=(SENSOR_OFFLINE, DATA_QUALITY),
    rule_keys=(number("health.offline_after_intervals"),),
)
