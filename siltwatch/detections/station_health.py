"""Station health: the edge station itself, from the status it publishes.

Every station's agent publishes a retained status (siltwatch/schema.py,
``StationStatus``) with its battery, free disk, outbox backlog and clock sync,
and its MQTT last will says ``offline`` when the link dies. A station going
dark blinds every detection that uses its sensors, so the site's people are
told *why* before a plume goes unseen: offline (the will, or silence), a
battery below its level, the disk nearly full (the outbox has nowhere to keep
readings), a backlog that has grown for an hour (the link cannot keep up), a
clock that is not synced (every time it stamps is suspect). siltwatch's own
diagnostics: no ordinance names them, so the officer never hears them.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import Description, Evidence, diagnostic, short_number
from siltwatch.rulekeys import NON_NEGATIVE, number


class StationEvidence(Evidence):
    """What every station-health alert says: which station, as of which status."""

    station: str
    status_at: str


class OfflineEvidence(StationEvidence):
    why: str  # "last will" | "silence" | what the station said


class BatteryEvidence(StationEvidence):
    battery_v: float
    low_v: float


class DiskEvidence(StationEvidence):
    disk_free_mb: float
    min_mb: float


class BacklogEvidence(StationEvidence):
    backlog: int
    backlog_before: int


class ClockEvidence(StationEvidence):
    clock_offset_s: float | None = None


def _offline(ev: OfflineEvidence, _zone: tzinfo) -> str:
    return f"offline ({ev.why})"


def _battery(ev: BatteryEvidence, _zone: tzinfo) -> str:
    return f"battery {short_number(ev.battery_v, 2)} V (low at {ev.low_v:g} V)"


def _disk(ev: DiskEvidence, _zone: tzinfo) -> str:
    return f"{short_number(ev.disk_free_mb, 0)} MB free (minimum {ev.min_mb:g} MB)"


def _backlog(ev: BacklogEvidence, _zone: tzinfo) -> str:
    return f"backlog {ev.backlog_before} → {ev.backlog} readings"


def _clock(ev: ClockEvidence, _zone: tzinfo) -> str:
    off = ev.clock_offset_s
    return "clock not synced" if off is None else f"clock off by {short_number(off)} s"


# The kinds station health raises; subject: the station.
STATION_OFFLINE = diagnostic("station_offline", "station offline", OfflineEvidence, _offline)
BATTERY_LOW = diagnostic("station_battery_low", "station battery low", BatteryEvidence, _battery)
DISK_LOW = diagnostic("station_disk_low", "station disk nearly full", DiskEvidence, _disk)
BACKLOG_GROWING = diagnostic(
    "station_backlog_growing", "station backlog growing", BacklogEvidence, _backlog
)
CLOCK_UNSYNCED = diagnostic(
    "station_clock_unsynced", "station clock not synced", ClockEvidence, _clock
)

DESCRIPTION = Description(
    key="station_health",
    order=5,
    alerts=(STATION_OFFLINE, BATTERY_LOW, DISK_LOW, BACKLOG_GROWING, CLOCK_UNSYNCED),
    rule_keys=(
        number("station.status_silence_s"),
        number("station.battery_low_v", NON_NEGATIVE),
        number("station.disk_free_min_mb", NON_NEGATIVE),
        number("station.backlog_growth_h"),
        number("station.clock_offset_max_s"),
    ),
)
