"""The pH range detector: a warning once a pH probe reads outside its range for 30 min.

One module of analytics/ (dropped into its search path by tests/ph/registered.py).
"""

from __future__ import annotations

from analytics.detector import Context, Detector
from analytics.events import SensorReading
from analytics.timeutil import MS_PER_MIN, iso
from siltwatch.config import SiteConfig
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity
from tests.ph.detections.ph_range import HIGH, LOW, PH_RANGE, SUSTAIN_MIN


class PhRange(Detector):
    """One probe: since when it reads outside LOW..HIGH, and whether that is an alert yet."""

    def __init__(self, sensor: str, site_name: str) -> None:
        self.name = f"ph_range:{sensor}"
        self.sensor = sensor
        self.site_name = site_name
        self.outside_since: int | None = None

    def sensors(self) -> list[str]:
        return [self.sensor]

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        if reading.flags:
            return  # a flagged reading never drives an alert
        ph = reading.value
        evidence = {"sensor": self.sensor, "ph": ph, "low": LOW, "high": HIGH}
        if LOW <= ph <= HIGH:
            self.outside_since = None
            if ctx.alerts.is_open(PH_RANGE.kind, self.sensor):
                message = f"pH at {self.site_name} back in range: {ph:g} at {self.sensor}."
                ctx.alerts.resolve(PH_RANGE.kind, self.sensor, reading.t, message=message)
            return
        if self.outside_since is None:
            self.outside_since = reading.t
        if reading.t - self.outside_since < SUSTAIN_MIN * MS_PER_MIN:
            return
        if not ctx.alerts.is_open(PH_RANGE.kind, self.sensor):
            since = local_time(self.outside_since, ctx.zone)
            ctx.alerts.open(
                PH_RANGE.kind,
                self.sensor,
                reading.t,
                Severity.WARNING,
                rule=f"pH {LOW:g}-{HIGH:g} (test)",
                message=(
                    f"pH {ph:g} at {self.sensor} ({self.site_name}) outside {LOW:g}-{HIGH:g} "
                    f"since {since}. Check the discharge for concrete washout or lime."
                ),
                evidence={**evidence, "outside_since": iso(self.outside_since)},
            )


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    name = site.site.name or site.site.id
    return [PhRange(s.id, name) for s in site.sensors().values() if s.kind == "ph"]
