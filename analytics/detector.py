"""The detector protocol: how a detection plugs into the engine.

A detector is a small state machine. The engine calls it, in event-time order,
with the readings of the sensors it declares, with the timers it scheduled and
with inspections; the detector opens and resolves alert episodes and creates
duties through the :class:`Context`. It never sees arrival order, never reads
a clock and never does I/O — which is what makes replay, backfill and live
operation give the same alerts.

Ordering guarantee: a timer scheduled for time ``d`` fires after every reading
and inspection with ``t <= d`` and before any with ``t > d``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from analytics.episodes import AlertBook, DutyBook
from analytics.events import Inspection, SensorReading
from siltwatch.config import SiteConfig
from siltwatch.rulepacks import Rules


@dataclass
class Context:
    """What a detector may touch: the books, the site, its rules, and the timer queue."""

    site: SiteConfig
    rules: Rules
    alerts: AlertBook
    duties: DutyBook
    _engine: TimerQueue

    @property
    def zone(self) -> ZoneInfo:
        return self.site.site.zone

    def schedule(self, detector: Detector, at: int, tag: str = "") -> None:
        """Call ``detector.on_timer(at, tag, ctx)`` once event time reaches ``at``.

        Timers cannot be cancelled: a detector checks, when one fires, whether
        it still matters (cheaper than cancellation, and trivially snapshotted).
        """
        self._engine.schedule(detector.name, at, tag)

    @property
    def processed_to(self) -> int | None:
        """Event time up to which every input in order has been processed (None at the start).

        A reading with ``t`` at or below it is being processed late: a backfill
        beyond the allowed lateness, which the engine uses at once instead of in
        order. A detector that schedules a deadline from such a reading can tell
        that the deadline may already lie behind the rest of the data.
        """
        return self._engine.processed_to()


class TimerQueue:
    """Implemented by the engine; declared here to keep the import direction one-way."""

    def schedule(self, detector_name: str, at: int, tag: str) -> None:
        raise NotImplementedError

    def processed_to(self) -> int | None:
        raise NotImplementedError


class Detector:
    """Base class: override what you need. ``name`` must be unique within a site."""

    name: str = ""

    def sensors(self) -> Iterable[str]:
        """The sensor ids whose readings this detector consumes."""
        return ()

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        """A reading of one of ``sensors()``, in event-time order per sensor and across sensors.

        ``reading.flags`` carries the quality flags set by the edge and by the
        health stage; a flagged reading must never silently drive a regulatory alert.
        """

    def on_timer(self, at: int, tag: str, ctx: Context) -> None:
        """A timer this detector scheduled has come due."""

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        """An inspection was recorded at ``inspection.t``."""

    def on_finish(self, end: int, ctx: Context) -> None:
        """The run ends at ``end`` (the last reading's time in a replay)."""
