"""The detector protocol: how a detection plugs into the engine.

A detector is a small state machine. The engine calls it, in event-time order,
with the readings of the sensors it declares, with the timers it scheduled,
with inspections, with the stations' own reports and with the site log (what
people did on the site); the detector opens and resolves alert episodes and
creates duties through the :class:`Context`. It never sees arrival order, never
reads a clock and never does I/O — which is what makes replay, backfill and
live operation give the same alerts.

Ordering guarantee: a timer scheduled for time ``d`` fires after every reading,
inspection, station report and site-log entry with ``t <= d`` and before any
with ``t > d``; at one instant readings come first, then inspections, then
station reports, then site-log entries.

Detectors talk to each other only through typed events
(:class:`~analytics.events.DetectorEvent`): one publishes with
``ctx.publish(event)``, and every detector whose ``handles`` names the event's
type (or a base of it) gets ``on_event(event, ctx)`` at once, synchronously
and in detector order — so events arrive in event-time order, interleaved
deterministically with everything else. Who listens is derived from the
detectors' classes, never stored in a snapshot.

Roles a detector may play besides detecting are declared by hooks the engine
collects: ``screen()`` (the quality screen every reading passes),
``rain_days()`` (its part of the site's daily rain record) and
``quiet_reading()`` (what the batch path may leave out of its readings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar
from zoneinfo import ZoneInfo

from analytics.episodes import AlertBook, DutyBook
from analytics.events import (
    DetectorEvent,
    Inspection,
    RainDay,
    SensorReading,
    SiteLogEntry,
    StationReport,
)
from analytics.timers import Tag
from siltwatch.config import SiteConfig
from siltwatch.rulepacks import Rules

# The quality screen: every reading passes it, in event-time order, before any detector.
Screen = Callable[[SensorReading, "Context"], Iterable[SensorReading]]


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

    def schedule(self, detector: Detector, at: int, tag: Tag = "") -> None:
        """Call ``detector.on_timer(at, tag, ctx)`` once event time reaches ``at``.

        ``tag``: the subject's id, or a typed tag (analytics/timers.py).

        Timers cannot be cancelled: a detector checks, when one fires, whether
        it still matters (cheaper than cancellation, and trivially snapshotted).
        """
        self._engine.schedule(detector.name, at, tag)

    def publish(self, event: DetectorEvent) -> None:
        """Hand ``event`` to every detector that ``handles`` its type, now, in detector order.

        ``event.at`` is the event time being processed; delivery is synchronous,
        so a subscriber sees it before anything later in event time.
        """
        self._engine.publish(event)

    @property
    def processed_to(self) -> int | None:
        """Event time up to which every input in order has been processed (None at the start).

        A reading with ``t`` at or below it is being processed late: a backfill
        beyond the allowed lateness, which the engine uses at once instead of in
        order. A detector that schedules a deadline from such a reading can tell
        that the deadline may already lie behind the rest of the data.
        """
        return self._engine.processed_to()


class QuietReading(Enum):
    """What a *quiet* reading does to a detector: one at which nothing can happen.

    The engine's batch path (analytics/batch.py) calls a detector only where
    something may happen, and asks each detector of a sensor, through
    :meth:`Detector.quiet_reading`, what it may leave out.
    """

    CALL = "call"
    """Every reading may change something: the batch path calls the detector with each."""
    NOTHING = "nothing"
    """A reading changes nothing once the detector has started (its clock runs)."""
    STARTS_CLOCK = "starts_clock"
    """The first reading starts the detector's clock: that one is a call, the rest NOTHING."""
    MOVES_WINDOWS = "moves_windows"
    """A quiet reading only slides the detector's median windows, which the batch path
    plans and moves itself from arrays (a turbidity pair, analytics/turbidity.py)."""


class TimerQueue:
    """Implemented by the engine; declared here to keep the import direction one-way."""

    def schedule(self, detector_name: str, at: int, tag: Tag) -> None:
        raise NotImplementedError

    def processed_to(self) -> int | None:
        raise NotImplementedError

    def publish(self, event: DetectorEvent) -> None:
        raise NotImplementedError


class Detector:
    """Base class: override what you need. ``name`` must be unique within a site."""

    name: str = ""
    # The event types (and their subclasses) this detector's ``on_event`` receives.
    handles: ClassVar[tuple[type[DetectorEvent], ...]] = ()

    def sensors(self) -> Iterable[str]:
        """The sensor ids whose readings this detector consumes."""
        return ()

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        """A reading of one of ``sensors()``, in event-time order per sensor and across sensors.

        ``reading.flags`` carries the quality flags set by the edge and by the
        health stage; a flagged reading must never silently drive a regulatory alert.
        """

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        """A timer this detector scheduled has come due."""

    def on_inspection(self, inspection: Inspection, ctx: Context) -> None:
        """An inspection was recorded at ``inspection.t``."""

    def on_status(self, report: StationReport, ctx: Context) -> None:
        """A station reported its state and health at ``report.t`` (every detector gets it).

        Reports of every station come here, and a report may name a station the
        site configuration does not (a capture replay does not check): the
        detector decides what it means, and must not fail on it. When
        ``report.timed`` is False, ``t`` is when the report arrived (a last will,
        or a station clock ingest could not trust), not when the station wrote it.
        Reports never move event time, so nothing a station's clock says can
        make another station look late.
        """

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        """People recorded what they did on the site at ``entry.t`` (every detector gets it).

        ``entry.event`` is a :class:`~siltwatch.vocabulary.SiteEvent` value and
        ``entry.area`` an area of the site for the events that need one (ingest
        and the replay's CSV reader check both against the site; a capture
        replayed without a site's areas may still name an unknown one): the
        detector decides what it means, and must not fail on it. Entries never
        move event time — an ``inactive`` row is dated at the last day of work,
        days back on purpose — so one arriving after its time has been processed
        is late data: the live service rebuilds the history with it in order.
        """

    def on_finish(self, end: int, ctx: Context) -> None:
        """The run ends at ``end`` (the last reading's time in a replay)."""

    def on_event(self, event: DetectorEvent, ctx: Context) -> None:
        """Another detector published ``event`` (of a type in ``handles``) at ``event.at``."""

    # --- roles the engine collects ------------------------------------------------

    def screen(self) -> Screen | None:
        """The quality screen this detector provides (at most one per site), or None.

        The screen is called with every reading before any detector sees it; it
        must be part of the detector's state (the detector itself, typically),
        because the engine snapshots it with the detectors.
        """
        return None

    def rain_days(self) -> Sequence[RainDay]:
        """This detector's part of the site's daily rain record (NCG01 Part III §A item 1)."""
        return ()

    def quiet_reading(self) -> QuietReading:
        """What a reading at which nothing happens does to this detector (the batch path's
        question, analytics/batch.py); by default it must be called with every reading."""
        return QuietReading.CALL
