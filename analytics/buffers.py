"""Buffers from the site log (kinds, citations and the reading of the law:
siltwatch/detections/buffers.py).

Which areas lie inside a buffer is fixed by the site file, so it is decided once
when the detector is built; the site log then says when ground in one of them
was opened, and when it was restored (permanent cover).
"""

from __future__ import annotations

from dataclasses import dataclass

from analytics.detector import Context, Detector
from analytics.events import SiteLogEntry
from analytics.timeutil import iso
from siltwatch.config import Area, SiteConfig
from siltwatch.detections.buffers import BUFFER_DISTURBED
from siltwatch.rulepacks import Rules
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity, SiteEvent

OPENING = frozenset({SiteEvent.DISTURBED, SiteEvent.CLEARED, SiteEvent.GRADED})
TROUT = frozenset({"trout_stream", "trout_lake"})


@dataclass(frozen=True)
class Buffer:
    """The buffer one area lies in: its kind, width and citation."""

    kind: str  # "no_removal" or "trout"
    width_ft: float
    cite: str
    words: str  # what the law keeps there


def inside(area: Area, site: SiteConfig, rules: Rules) -> Buffer | None:
    """The buffer ``area`` lies in, if any (the Lake George strip is checked first)."""
    if area.buffer_exception:
        return None
    strip = rules.get("buffer.no_removal_ft")
    if strip is not None and area.distance_to_water_ft <= float(strip.value):
        words = "no vegetation may be removed within it"
        return Buffer("no_removal", float(strip.value), strip.cite(), words)
    trout = rules.get("buffer.trout_ft")
    if trout is not None and area.distance_to_water_ft < float(trout.value):
        waters = site.receiving_waters
        if area.nearest_water is not None:
            waters = [w for w in waters if w.id == area.nearest_water]
        if any(w.water_class in TROUT for w in waters):
            words = "trout waters keep an undisturbed buffer zone that wide"
            return Buffer("trout", float(trout.value), trout.cite(), words)
    return None


class BufferDetector(Detector):
    """Ground opened in the areas that lie inside a buffer."""

    name = "buffers"

    def __init__(self, site: SiteConfig, buffers: dict[str, Buffer]) -> None:
        self.site_name = site.site.name or site.site.id
        self.distance = {a.id: a.distance_to_water_ft for a in site.areas}
        self.buffers = buffers  # area id -> the buffer it lies in
        self.open: set[str] = set()  # areas with an open alert

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        area = entry.area
        if area is None or area not in self.buffers:
            return
        if entry.event in OPENING and area not in self.open:
            self._open(area, entry, ctx)
        elif entry.event == SiteEvent.PERMANENT_COVER and area in self.open:
            self.open.discard(area)
            message = (
                f"Buffer restored at {self.site_name}: area {area} has permanent ground cover "
                f"from {local_time(entry.t, ctx.zone)} (recorded by {entry.by}); "
                f"{self.buffers[area].cite}."
            )
            ctx.alerts.resolve(BUFFER_DISTURBED.kind, area, entry.t, message=message)

    def _open(self, area: str, entry: SiteLogEntry, ctx: Context) -> None:
        buffer, distance = self.buffers[area], self.distance[area]
        self.open.add(area)
        message = (
            f"Buffer disturbed at {self.site_name}: area {area} was {entry.event} on "
            f"{local_time(entry.t, ctx.zone)} (recorded by {entry.by}); it lies "
            f"{distance:g} ft from the water, inside the {buffer.width_ft:g}-ft buffer, and "
            f"under {buffer.cite} {buffer.words}. Stop work in the buffer, stabilize it and "
            "replant it; record permanent_cover for the area when it is restored."
        )
        evidence = {
            "area": area,
            "event": entry.event,
            "distance_to_water_ft": distance,
            "buffer_ft": buffer.width_ft,
            "buffer": buffer.kind,
            "at": iso(entry.t),
            "by": entry.by,
        }
        ctx.alerts.open(
            BUFFER_DISTURBED.kind,
            area,
            entry.t,
            Severity.CRITICAL,
            rule=buffer.cite,
            message=message,
            evidence=evidence,
        )


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """A detector when some area of the site lies inside a buffer its packs keep."""
    buffers = {a.id: b for a in site.areas if (b := inside(a, site, ctx.rules)) is not None}
    return [BufferDetector(site, buffers)] if buffers else []
