"""Station health telemetry, published in the retained status message.

Why: a station that is quietly dying (battery sagging, SD card filling, a
backlog growing, the clock wrong) must be visible on the dashboard before it
loses data. Every probe is optional: a field is ``None`` where the Pi has no
such sensor (no battery divider wired, no thermal zone in a container).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from edge.clock import ClockSync
from siltwatch.schema import StationHealth

log = logging.getLogger(__name__)


def cpu_temp_c(zone: Path) -> float | None:
    """The SoC temperature from sysfs (millidegrees C), or None where absent."""
    try:
        return int(zone.read_text().strip()) / 1000.0
    except (OSError, ValueError):
        return None


def disk_free_mb(path: Path) -> float | None:
    """Free space on the file system holding ``path`` (the outbox's SD card)."""
    probe = path if path.exists() else path.parent
    try:
        return shutil.disk_usage(probe).free / 1e6
    except OSError:
        return None


@dataclass
class HealthProbe:
    outbox_path: Path
    thermal_zone: Path
    clock_sync: ClockSync
    battery_v: Callable[[], float | None]

    def collect(self, backlog: int, dropped: int, quarantined: int = 0) -> StationHealth:
        sync = self.clock_sync.state()
        return StationHealth(
            battery_v=self.battery_v(),
            cpu_temp_c=cpu_temp_c(self.thermal_zone),
            disk_free_mb=disk_free_mb(self.outbox_path),
            backlog=backlog,
            dropped=dropped,
            quarantined=quarantined,
            clock_synced=sync.synced,
            clock_offset_s=sync.offset_s,
        )
