"""The event-time engine: readings in any order in, the same alerts out.

Modelled on h11: a state machine you feed events, which returns events. The
engine buffers inputs and releases them in event-time order once a
*watermark* has passed them. Anything that arrives before the watermark
passes it is processed exactly as if it had arrived in order, so detections
are a function of the data, not of arrival order or speed (design.md,
"Detections are functions of event-time data").

Where the watermark comes from depends on how the engine is fed:

* **replay** (``feed`` without an arrival time): the latest event time seen
  minus the allowed lateness;
* **live** (``feed(..., received_at=...)``, the ingest service): *per
  station*. Each station's progress is the latest trustworthy event time it
  sent; the site's watermark is the slowest *active* station's progress minus
  the allowed lateness. A station silent (in arrival time) for longer than
  ``station_idle_s`` stops holding the site back, so a dead station is
  handled as silent (its sensors go offline) instead of freezing time, and
  stations that publish at different speeds (a backlog catching up) never
  make each other look offline. When every station is silent, event time
  runs on from the latest data at the pace of the service's clock
  (``advance_clock``), so silence and overdue duties are still noticed.

Inspections, station reports and site-log entries (``feed_inspection``,
``feed_status``, ``feed_site_log``) are ordered with the readings by their
event time but never move a live watermark: people are not clocks, and a
station's report is about the station, not a measurement of time passing (a
last will carries no time at all). Station reports and site-log entries do not
move the replay watermark either (an ``inactive`` row is dated days back on
purpose); an inspection in a replay does, as it always has.

One bad clock changes nothing else (design.md, "One bad input changes nothing
else"): a reading whose time cannot be trusted — flagged ``clock_unsynced``
by the edge or ``clock_ahead`` by ingest (ahead of its arrival by more than
the skew bound) — never moves any watermark. A ``clock_ahead`` reading is not
placed in time at all (it stays in the store with its flag); an unsynced one
is processed where it falls, and the detectors do not use it as evidence.

Input later than the watermark is still used where it can be without
reordering history (a reading newer than everything processed for its sensor
is processed at once); an older one is counted in ``stats.late_dropped``.
Either way ``late_from`` records the earliest such event time, so the live
service, which keeps every reading in its store, can rebuild the affected
history in order (``catch_up``) — one long outage must not hide a plume.

Everything is deterministic and free of I/O and wall-clock reads (arrival
times come in with the data); the whole state can be snapshotted to typed
JSON (analytics/statecodec.py) and restored.

Two paths, one answer: readings that arrive in order in a replay
(``feed_columns``, and ``finish`` with a full buffer) may take the batch path
(analytics/batch.py), which does the per-reading checks on arrays and calls
the screen and the detectors only where something may happen; late data, a
live engine, or anything else it cannot take exactly goes through ``feed``.
The batch path keeps nothing of its own between calls (no numpy in a
snapshot), and tests/analytics/test_batch_path.py holds it to the per-reading
path byte for byte.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from analytics import batch as batch_path
from analytics import batch_catch_up, statecodec
from analytics.batch_columns import ReadingColumns
from analytics.detector import Context, Detector, Screen, TimerQueue
from analytics.detectors import build_detectors
from analytics.episodes import AlertBook, DutyBook
from analytics.events import (
    INSPECTION_RECORD_FIELDS,
    STATION_HEALTH_FIELDS,
    DetectorEvent,
    EngineEvent,
    Inspection,
    RainDay,
    SensorReading,
    SiteLogEntry,
    StationReport,
)
from analytics.timeutil import MS_PER_S
from siltwatch.applicability import applicable_rules
from siltwatch.config import SiteConfig
from siltwatch.counters import Counters
from siltwatch.schema import Alert, Duty, QualityFlag

# 3: storms reach the duties as engine events (no stored sink)
# 4: station reports (feed_status): a third input kind in the buffer, EngineStats.statuses
# 5: site-log entries (feed_site_log): a fourth input kind, EngineStats.site_log; the
#    inspection record fields (Inspection.affiliation ... corrective_actions)
# 6: the law's site-log clocks (issue 21): stabilization's idle, cleared and cover state,
#    the inspection detector's routine span (RoutineLife) and cadences, applicable rules
SNAPSHOT_VERSION = 6
DEFAULT_ALLOWED_LATENESS_S = 900.0

CLOCK_AHEAD = QualityFlag.CLOCK_AHEAD.value
TOO_OLD = QualityFlag.TOO_OLD.value
BEFORE_SITE_START = QualityFlag.BEFORE_SITE_START.value
# Flags that say the reading's *time* cannot be trusted: such a reading never
# moves a watermark (a clock ten years ahead must not end the world).
UNTRUSTED_TIME = frozenset(
    {QualityFlag.CLOCK_UNSYNCED.value, CLOCK_AHEAD, TOO_OLD, BEFORE_SITE_START}
)
# Readings stored (the store is the truth) but not judged: a time far ahead of its
# arrival, so far before it (a 1970 date) that it would rebuild all history, or before
# the site's work began (no rule of the site applied then: a bench test, a reset clock).
NOT_JUDGED = frozenset({CLOCK_AHEAD, TOO_OLD, BEFORE_SITE_START})

# Order of kinds at one instant: readings first, then inspections, then station reports,
# then site-log entries.
_READING = 0
_INSPECTION = 1
_STATUS = 2
_SITE_LOG = 3

# The detector method each input kind but readings is handed to (every detector, in order).
_DELIVERY = {
    _INSPECTION: "on_inspection",
    _STATUS: "on_status",
    _SITE_LOG: "on_site_log",
}

BufferEntry = tuple[int, int, str, Any]
"""(t, kind, key, payload): the key makes ties deterministic (see ``_run_until``)."""


class EngineStats(Counters):
    """Counters a person can read: nothing the engine refuses goes uncounted."""

    readings_in: int
    readings_processed: int
    duplicates: int
    late_processed: int
    late_dropped: int
    unknown_sensor: int
    inspections: int
    statuses: int  # station reports fed (feed_status, catch_up)
    site_log: int  # site-log entries fed (feed_site_log, catch_up)
    timers_fired: int
    untrusted_time: int
    unknown_sensors: dict[str, int]


@dataclass
class StationClock:
    """How far one station has got: its latest trustworthy event time and when it arrived.

    ``progress`` None: a configured station not heard from yet. While it is
    expected (within the idle time of the service's start) it holds the
    watermark, so the first station to flush a backlog cannot make the
    others' data late.
    """

    progress: int | None
    last_arrival: int | None = None


statecodec.allow(EngineStats)
statecodec.allow(StationClock)

# Engine attributes rebuilt from the site configuration, never written to a snapshot.
_DERIVED = frozenset(
    {
        "site",
        "ctx",
        "_sensor_set",
        "_station_of",
        "detectors",
        "_by_sensor",
        "_subscribers",
        "batch",
        "_hold",
    }
)


class Engine(TimerQueue):
    """Feed readings, inspections, station reports and site-log entries; read events back."""

    def __init__(
        self,
        site: SiteConfig,
        *,
        allowed_lateness_s: float = DEFAULT_ALLOWED_LATENESS_S,
        station_idle_s: float | None = None,
        detectors: list[Detector] | None = None,
        screen: Screen | None = None,
        batch: bool = True,
    ) -> None:
        """``station_idle_s``: how long (arrival time) a station may be silent and still
        hold the site's watermark back; default: the allowed lateness.

        ``batch``: readings fed in order in a replay may take the batch path
        (analytics/batch.py: the same effects, column-wise); False keeps every
        reading on the per-reading path (the batch path's tests compare the two).
        """
        self.batch = batch
        self.site = site
        self.allowed_lateness_ms = round(allowed_lateness_s * MS_PER_S)
        self.station_idle_ms = (
            self.allowed_lateness_ms if station_idle_s is None else round(station_idle_s * MS_PER_S)
        )
        self.ctx = Context(
            site=site,
            rules=applicable_rules(site),
            alerts=AlertBook(site.site.id),
            duties=DutyBook(site.site.id),
            _engine=self,
        )
        if detectors is None:
            detectors = build_detectors(site, self.ctx)
        if screen is None:
            screens = [s for s in (det.screen() for det in detectors) if s is not None]
            if len(screens) > 1:
                raise ValueError("more than one detector provides the quality screen")
            screen = screens[0] if screens else None
        self.detectors: dict[str, Detector] = {}
        for det in detectors:
            if det.name in self.detectors:
                raise ValueError(f"two detectors are named {det.name!r}")
            self.detectors[det.name] = det
        self._screen = screen
        self._by_sensor: dict[str, list[Detector]] = {s: [] for s in site.sensors()}
        for det in detectors:
            for sensor in det.sensors():
                self._by_sensor.setdefault(sensor, []).append(det)
        self._rebuild()
        self.stats = EngineStats()
        # (t, kind, key, payload) — key makes ties deterministic.
        self._buffer: list[BufferEntry] = []
        self._buffered_keys: set[tuple[str, int]] = set()
        self._timers: list[tuple[int, str, str]] = []
        self._timer_keys: set[tuple[int, str, str]] = set()
        self._last_sensor_t: dict[str, int] = {}
        self._max_seen: int | None = None
        self._released_to: int | None = None  # everything with t <= this has been processed
        self._finished = False
        self._live = False  # fed with arrival times: per-station watermarks
        self._stations: dict[str, StationClock] = {}
        self._now: int | None = None  # latest arrival time known (the service's clock)
        self._floor: int | None = None  # event time declared reached by advance_to
        self.late_from: int | None = None  # earliest event time that arrived too late

    def _rebuild(self) -> None:
        """Hot-path lookups derived from the detectors (not part of the snapshot)."""
        self._sensor_set = frozenset(self._by_sensor)
        self._station_of = self.site.station_of()
        # Event type -> its subscribers in detector order (filled as types are published).
        self._subscribers: dict[type[DetectorEvent], list[Detector]] = {}
        # While a batch runs: keeps the offline checks it walks itself out of the heap.
        self._hold: Callable[[str, int, str], bool] | None = None

    # --- TimerQueue -------------------------------------------------------------

    def schedule(self, detector_name: str, at: int, tag: str) -> None:
        if self._hold is not None and self._hold(detector_name, at, tag):
            return
        key = (at, detector_name, tag)
        if key not in self._timer_keys:
            self._timer_keys.add(key)
            heapq.heappush(self._timers, key)

    def processed_to(self) -> int | None:
        return self._released_to

    def publish(self, event: DetectorEvent) -> None:
        """Deliver a detector's event now to the detectors that handle its type, in order."""
        kind = type(event)
        subscribers = self._subscribers.get(kind)
        if subscribers is None:
            subscribers = self._subscribers[kind] = [
                det for det in self.detectors.values() if issubclass(kind, det.handles)
            ]
        for det in subscribers:
            det.on_event(event, self.ctx)

    @property
    def clock(self) -> int | None:
        """The latest arrival time the engine was told of (live), or None."""
        return self._now

    # --- input ------------------------------------------------------------------

    @property
    def watermark(self) -> int | None:
        """Event time up to which input is final (see the module docstring)."""
        lateness = self.allowed_lateness_ms
        base: int | None
        if not self._live:
            base = None if self._max_seen is None else self._max_seen - lateness
        else:
            base = self._station_watermark()
        if self._floor is not None:
            floor = self._floor - lateness
            base = floor if base is None else max(base, floor)
        return base

    def _station_watermark(self) -> int | None:
        """The slowest active station's progress minus the lateness (live mode)."""
        lateness, now = self.allowed_lateness_ms, self._now
        active: list[int | None] = []
        silent: list[tuple[int, int]] = []
        for c in self._stations.values():
            if c.last_arrival is None:
                continue
            if now is None or now - c.last_arrival <= self.station_idle_ms:
                active.append(c.progress)
            elif c.progress is not None:
                silent.append((c.progress, c.last_arrival))
        if active:
            if any(p is None for p in active):
                return None  # a station is expected but has not spoken yet
            return min(p for p in active if p is not None) - lateness
        if silent and now is not None:
            # Every station silent: event time runs on from the latest data at the
            # pace of the service's clock, so silence and deadlines are noticed.
            return max(p + (now - arrived) for p, arrived in silent) - lateness
        return None

    def expect_stations(self, stations: Iterable[str], now: int) -> None:
        """Stations of the site not heard from yet: wait for them (up to the idle time)."""
        self.advance_clock_to(now)
        for station in stations:
            if station not in self._stations:
                self._stations[station] = StationClock(None, now)

    def _note_late(self, t: int) -> None:
        if self.late_from is None or t < self.late_from:
            self.late_from = t

    def feed(
        self, readings: Iterable[SensorReading], received_at: int | None = None
    ) -> list[EngineEvent]:
        """Accept readings (any order, duplicates allowed); return the events they caused.

        ``received_at`` (epoch ms, the service's clock when they arrived) switches
        the engine to per-station watermarks; a replay leaves it out.
        """
        stats = self.stats
        if received_at is not None:
            self._live = True
            if self._now is None or received_at > self._now:
                self._now = received_at
        # The hot loop of the per-reading path: everything it looks up, looked up once.
        # (``_released_to`` does not move while readings are taken; ``_max_seen`` is
        # written back at the end, as ``_progress`` would have left it.)
        sensor_set, buffered, last_of = self._sensor_set, self._buffered_keys, self._last_sensor_t
        buffer, released, push = self._buffer, self._released_to, heapq.heappush
        station_of, stations, max_seen = self._station_of, self._stations, self._max_seen
        taken = 0
        try:
            for r in readings:
                taken += 1
                sensor, t = r.sensor, r.t
                if sensor not in sensor_set:
                    stats.unknown_sensor += 1
                    stats.unknown_sensors[sensor] = stats.unknown_sensors.get(sensor, 0) + 1
                    continue
                flags = r.flags
                if flags and not flags.isdisjoint(NOT_JUDGED):
                    stats.untrusted_time += 1
                    continue
                key = (sensor, t)
                if key in buffered:
                    stats.duplicates += 1
                    continue
                last = last_of.get(sensor)
                if last is not None and t <= last:
                    # Already processed this sensor past t: a duplicate or too late to use.
                    if t == last:
                        stats.duplicates += 1
                    else:
                        stats.late_dropped += 1
                        self._note_late(t)
                    continue
                if released is not None and t <= released:
                    # Late, but newer than anything processed for this sensor: use it now.
                    stats.late_processed += 1
                    self._note_late(t)
                    self._process_reading(r)
                    continue
                buffered.add(key)
                push(buffer, (t, _READING, sensor, r))
                if flags and not flags.isdisjoint(UNTRUSTED_TIME):
                    stats.untrusted_time += 1
                    continue
                # _progress, inlined: a trustworthy reading moves its station forward.
                if max_seen is None or t > max_seen:
                    max_seen = t
                station = station_of.get(sensor)
                if station is None:
                    continue
                clock = stations.get(station)
                if clock is None:
                    stations[station] = StationClock(t, received_at)
                    continue
                if clock.progress is None or t > clock.progress:
                    clock.progress = t
                if received_at is not None and (
                    clock.last_arrival is None or received_at > clock.last_arrival
                ):
                    clock.last_arrival = received_at
        finally:
            stats.readings_in += taken
            self._max_seen = max_seen
        wm = self.watermark
        if wm is not None:
            self._run_until(wm)
        return self._drain()

    def feed_columns(self, readings: ReadingColumns) -> list[EngineEvent]:
        """``feed(readings)`` for readings as columns (a replay's recording): the same effects.

        Readings that arrive in order take the batch path (analytics/batch.py):
        the per-reading checks on arrays, and the screen and the detectors
        called only where something may happen. Late or out-of-order data, a
        live engine, or anything else the batch path cannot take exactly goes
        through :meth:`feed`, one reading at a time.
        """
        if not batch_path.feed_columns(self, readings):
            return self.feed(readings)
        return self._drain()

    def _progress(self, r: SensorReading, received_at: int | None) -> None:
        """A trustworthy reading moves its station (and the replay watermark) forward."""
        if self._max_seen is None or r.t > self._max_seen:
            self._max_seen = r.t
        station = self._station_of.get(r.sensor)
        if station is None:
            return
        clock = self._stations.get(station)
        if clock is None:
            self._stations[station] = StationClock(r.t, received_at)
            return
        if clock.progress is None or r.t > clock.progress:
            clock.progress = r.t
        if received_at is not None and (
            clock.last_arrival is None or received_at > clock.last_arrival
        ):
            clock.last_arrival = received_at

    def feed_inspection(
        self, inspection: Inspection, received_at: int | None = None
    ) -> list[EngineEvent]:
        """Record an inspection; it is ordered with the readings by its event time.

        Live (``received_at`` given), an inspection never moves the watermark:
        people are not clocks, and a mistyped date must not end the day early.
        In a replay it moves the replay watermark as a reading does.
        """
        self.stats.inspections += 1
        return self._feed_input(self._inspection_entry(inspection), received_at, replay_clock=True)

    def feed_status(
        self, report: StationReport, received_at: int | None = None
    ) -> list[EngineEvent]:
        """Record a station's report; it is ordered with the readings by its event time.

        Delivered, once the watermark passes ``report.t``, to every detector's
        ``on_status`` in detector order (after the readings and inspections of
        the same instant). A report never moves a watermark, live or in a
        replay: its time is the station's own clock, or, for a last will, only
        when it arrived — one bad clock must not end the day for everyone. Live
        (``received_at`` given), the arrival still advances the service's clock,
        as any message does. A report at or before what was already processed
        is used at once and its time noted in ``late_from`` (the live service
        rebuilds from its store instead of feeding it).
        """
        self.stats.statuses += 1
        return self._feed_input(self._status_entry(report), received_at, replay_clock=False)

    def feed_site_log(
        self, entry: SiteLogEntry, received_at: int | None = None
    ) -> list[EngineEvent]:
        """Record a site-log entry; it is ordered with the readings by its event time.

        Delivered, once the watermark passes ``entry.t``, to every detector's
        ``on_site_log`` in detector order (after the readings, inspections and
        station reports of the same instant). An entry never moves a watermark,
        live or in a replay: people are not clocks, and an ``inactive`` row is
        dated at the last day of work, days back, on purpose. Live, the arrival
        still advances the service's clock. An entry at or before what was
        already processed is used at once and its time noted in ``late_from``
        (the live service rebuilds from its store instead of feeding it).
        """
        self.stats.site_log += 1
        return self._feed_input(self._site_log_entry(entry), received_at, replay_clock=False)

    def _feed_input(
        self, entry: BufferEntry, received_at: int | None, *, replay_clock: bool
    ) -> list[EngineEvent]:
        """Buffer one input that is not a reading and release what the watermark allows.

        ``replay_clock``: in a replay (no ``received_at``) its time moves the
        replay watermark (inspections do; reports and site-log entries never).
        """
        t = entry[0]
        if self._released_to is not None and t <= self._released_to:
            self._note_late(t)
        heapq.heappush(self._buffer, entry)
        if received_at is not None:
            self._live = True
            if self._now is None or received_at > self._now:
                self._now = received_at
        elif replay_clock and (self._max_seen is None or t > self._max_seen):
            self._max_seen = t
        wm = self.watermark
        if wm is not None:
            self._run_until(wm)
        return self._drain()

    # Buffer entries: the key holds every field, so equal keys mean equal inputs (a tie
    # never compares the payloads, and the order never depends on arrival).

    @staticmethod
    def _inspection_entry(inspection: Inspection) -> BufferEntry:
        key = f"{inspection.inspector}|{inspection.duty or ''}"
        record = [getattr(inspection, name) for name in INSPECTION_RECORD_FIELDS]
        if any(value is not None for value in record):
            # After a NUL, so inspections without record fields keep their order.
            key += "\0" + json.dumps(record)
        return (inspection.t, _INSPECTION, key, inspection)

    @staticmethod
    def _status_entry(report: StationReport) -> BufferEntry:
        health = ",".join(repr(getattr(report, name)) for name in STATION_HEALTH_FIELDS)
        return (
            report.t,
            _STATUS,
            f"{report.station}|{report.state}|{int(report.timed)}|{health}",
            report,
        )

    @staticmethod
    def _site_log_entry(entry: SiteLogEntry) -> BufferEntry:
        key = json.dumps([entry.event, entry.area or "", entry.by, entry.detail])
        return (entry.t, _SITE_LOG, key, entry)

    def advance_clock(self, now: int) -> list[EngineEvent]:
        """The service's clock says it is ``now`` (arrival time): a heartbeat.

        Stations silent for longer than ``station_idle_s`` stop holding the
        watermark; with every station silent, event time follows this clock,
        so an offline site and an overdue duty are noticed without new data.
        """
        self._live = True
        if self._now is None or now > self._now:
            self._now = now
        wm = self.watermark
        if wm is not None:
            self._run_until(wm)
        return self._drain()

    def advance_clock_to(self, now: int) -> None:
        """Set the service's clock without processing anything (before a catch-up)."""
        self._live = True
        if self._now is None or now > self._now:
            self._now = now

    def adopt_clock(self, other: Engine) -> None:
        """Take over another engine's station progress and clock (a rebuild replacing it)."""
        for station, clock in other._stations.items():
            if clock.progress is None:
                self._stations.setdefault(station, StationClock(None, clock.last_arrival))
            else:
                self.set_station_clock(station, clock.progress, clock.last_arrival)
        if other._now is not None:
            self.advance_clock_to(other._now)
        if other._floor is not None and (self._floor is None or other._floor > self._floor):
            self._floor = other._floor

    def set_station_clock(self, station: str, progress: int, last_arrival: int | None) -> None:
        """Restore one station's progress (from the store, after a rebuild or restart)."""
        self._live = True
        clock = self._stations.get(station)
        if clock is None:
            self._stations[station] = StationClock(progress, last_arrival)
            return
        clock.progress = progress if clock.progress is None else max(clock.progress, progress)
        if last_arrival is not None:
            clock.last_arrival = max(clock.last_arrival or last_arrival, last_arrival)
        if self._now is None or (last_arrival is not None and last_arrival > self._now):
            self._now = last_arrival

    def catch_up(
        self,
        readings: Iterable[Sequence[SensorReading]],
        inspections: Iterable[Inspection],
        until: int,
        statuses: Iterable[StationReport] = (),
        site_log: Iterable[SiteLogEntry] = (),
    ) -> list[EngineEvent]:
        """Process stored history in event-time order up to ``until`` (a restart or rebuild).

        ``readings`` comes in chunks sorted by event time (the store reads them
        so), all later than what this engine already processed; so do
        ``inspections``, ``statuses`` (station reports) and ``site_log``. Each
        chunk is released up to just before its last time, so memory holds one
        chunk; what lies beyond ``until`` stays buffered for the live stream.
        """
        for ins in inspections:
            self.stats.inspections += 1
            heapq.heappush(self._buffer, self._inspection_entry(ins))
        for report in statuses:
            self.stats.statuses += 1
            heapq.heappush(self._buffer, self._status_entry(report))
        for entry in site_log:
            self.stats.site_log += 1
            heapq.heappush(self._buffer, self._site_log_entry(entry))
        events: list[EngineEvent] = []
        for chunk in readings:
            if not chunk:
                continue
            if batch_catch_up.take_chunk(self, chunk, min(until, chunk[-1].t - 1)):
                events += self._drain()  # the batch path took it (analytics/batch_catch_up.py)
                continue
            for r in chunk:
                self.stats.readings_in += 1
                if r.sensor not in self._sensor_set:
                    self.stats.unknown_sensor += 1
                    continue
                if r.flags and not r.flags.isdisjoint(NOT_JUDGED):
                    self.stats.untrusted_time += 1
                    continue
                key = (r.sensor, r.t)
                if key in self._buffered_keys or (
                    self._released_to is not None and r.t <= self._released_to
                ):
                    self.stats.duplicates += 1
                    continue
                self._buffered_keys.add(key)
                heapq.heappush(self._buffer, (r.t, _READING, r.sensor, r))
                if not (r.flags and not r.flags.isdisjoint(UNTRUSTED_TIME)):
                    self._progress(r, None)
            self._run_until(min(until, chunk[-1].t - 1))
            events += self._drain()
        self._run_until(until)
        return events + self._drain()

    def advance_to(self, t: int) -> list[EngineEvent]:
        """Declare that event time has reached ``t`` (a heartbeat when no data comes).

        The live service calls this from its clock so that an offline sensor or an
        overdue duty is noticed without new readings; the analytics themselves
        still read no clock.
        """
        if self._floor is None or t > self._floor:
            self._floor = t
        wm = self.watermark
        if wm is not None:
            self._run_until(wm)
        return self._drain()

    def forget_closed(self) -> None:
        """Drop resolved episodes and completed duties (the live service keeps them in its store).

        Nothing a detector does looks at a closed episode or a completed duty
        again, so the snapshot stays the size of what is open, not of history.
        """
        alerts, duties = self.ctx.alerts, self.ctx.duties
        alerts.episodes = [ep for ep in alerts.episodes if ep.resolved_at is None]
        duties.records = {k: r for k, r in duties.records.items() if r.completed_at is None}

    def finish(self, end: int | None = None) -> list[EngineEvent]:
        """Process everything buffered and fire timers up to ``end`` (default: the last input)."""
        if end is None:
            end = self._max_seen
        if end is not None:
            if not batch_path.release_buffered(self, end):
                self._run_until(end)
            if not self._finished:
                self._finished = True
                for det in self.detectors.values():
                    det.on_finish(end, self.ctx)
        return self._drain()

    # --- processing -------------------------------------------------------------

    def _run_until(self, limit: int) -> None:
        buffer, timers = self._buffer, self._timers
        pop, detectors, ctx, stats = heapq.heappop, self.detectors, self.ctx, self.stats
        screen, by_sensor, last_of = self._screen, self._by_sensor, self._last_sensor_t
        buffered = self._buffered_keys
        while True:
            next_input = buffer[0][0] if buffer and buffer[0][0] <= limit else None
            if (
                timers
                and timers[0][0] <= limit
                and (next_input is None or timers[0][0] < next_input)
            ):
                at, name, tag = pop(timers)
                self._timer_keys.discard((at, name, tag))
                stats.timers_fired += 1
                detectors[name].on_timer(at, tag, ctx)
                continue
            if next_input is None:
                break
            t, kind, _key, payload = pop(buffer)
            if kind == _READING:
                # _process_reading, inlined (the per-reading path's hot loop).
                sensor = payload.sensor
                buffered.discard((sensor, t))
                last_of[sensor] = t
                stats.readings_processed += 1
                if screen is None:
                    for det in by_sensor.get(sensor, ()):
                        det.on_reading(payload, ctx)
                    continue
                for checked in screen(payload, ctx):
                    for det in by_sensor.get(checked.sensor, ()):
                        det.on_reading(checked, ctx)
                continue
            method = _DELIVERY[kind]
            for det in detectors.values():
                getattr(det, method)(payload, ctx)
        if self._released_to is None or limit > self._released_to:
            self._released_to = limit

    def _process_reading(self, r: SensorReading) -> None:
        self._last_sensor_t[r.sensor] = r.t
        self.stats.readings_processed += 1
        screened: Iterable[SensorReading] = (
            (r,) if self._screen is None else self._screen(r, self.ctx)
        )
        for checked in screened:
            for det in self._by_sensor.get(checked.sensor, ()):
                det.on_reading(checked, self.ctx)

    def _drain(self) -> list[EngineEvent]:
        events = self.ctx.alerts.pending + self.ctx.duties.pending
        self.ctx.alerts.pending = []
        self.ctx.duties.pending = []
        events.sort(key=lambda e: e.at)
        return events

    # --- results ----------------------------------------------------------------

    def alerts(self) -> list[Alert]:
        return self.ctx.alerts.alerts()

    def duties(self) -> list[Duty]:
        return self.ctx.duties.duties()

    def rain_log(self) -> list[RainDay]:
        """The site's daily rain record: every detector's ``rain_days``, in detector order."""
        return [day for det in self.detectors.values() for day in det.rain_days()]

    # --- snapshot / restore -----------------------------------------------------

    @staticmethod
    def fingerprint(site: SiteConfig) -> str:
        """What the engine's state depends on: the site without its contacts and pacing.

        A changed phone number changes who hears an alert, not what was found,
        so it does not force a rebuild.
        """
        data = site.model_dump(mode="json", exclude={"contacts", "notifications"})
        text = repr(sorted(data.items()))
        return hashlib.sha256(text.encode()).hexdigest()

    def snapshot(self) -> bytes:
        """The whole engine state as typed, versioned JSON (analytics/statecodec.py)."""
        return self._snapshot(self.__dict__)

    def snapshot_processed(self) -> bytes:
        """The state up to ``processed_to``, without the inputs still waiting.

        For a caller that keeps every input in a store (the live service): the
        waiting readings, inspections, station reports and site-log entries are
        re-read from it after a restore (``catch_up`` from ``processed_to``), so
        writing them again in every snapshot — thousands while a backlog drains
        — would only cost time.
        """
        state = dict(self.__dict__)
        state["_buffer"] = []
        state["_buffered_keys"] = set()
        return self._snapshot(state)

    def _snapshot(self, fields: dict[str, Any]) -> bytes:
        state = {k: v for k, v in fields.items() if k not in _DERIVED}
        state["_books"] = (self.ctx.alerts, self.ctx.duties)
        state["_detectors"] = self.detectors
        header = {
            "version": SNAPSHOT_VERSION,
            "fingerprint": self.fingerprint(self.site),
            "processed_to": self._released_to,
        }
        return statecodec.encode_state(state, header=header, skip=frozenset())

    @staticmethod
    def snapshot_header(blob: bytes) -> dict[str, Any]:
        """The snapshot's version, fingerprint and ``processed_to`` without decoding the state."""
        header, _state = statecodec.read_header(blob)
        return header

    @classmethod
    def restore(cls, site: SiteConfig, blob: bytes) -> Engine:
        """An engine that continues exactly where the snapshotted one stopped.

        Raises :class:`~analytics.statecodec.SnapshotError` (a ValueError) when the
        blob is not a snapshot of this release for this site configuration; the
        caller then rebuilds from the store.
        """
        header, encoded = statecodec.read_header(blob)
        if header.get("version") != SNAPSHOT_VERSION:
            raise statecodec.SnapshotError(
                f"engine snapshot version {header.get('version')!r} is not {SNAPSHOT_VERSION}"
            )
        if header.get("fingerprint") != cls.fingerprint(site):
            raise statecodec.SnapshotError(
                "the site configuration changed since this snapshot was taken"
            )
        state = statecodec.decode_state(encoded)
        books = state.pop("_books", None)
        detectors = state.pop("_detectors", None)
        if (
            not isinstance(books, tuple)
            or len(books) != 2
            or not isinstance(books[0], AlertBook)
            or not isinstance(books[1], DutyBook)
            or not isinstance(detectors, dict)
            or not all(isinstance(d, Detector) for d in detectors.values())
        ):
            raise statecodec.SnapshotError("snapshot lacks the alert/duty books or detectors")
        fresh = cls(site)
        if set(detectors) != set(fresh.detectors):
            raise statecodec.SnapshotError("snapshot detectors do not match the site")
        unknown = set(state) - set(fresh.__dict__)
        if unknown:
            raise statecodec.SnapshotError(f"snapshot has unknown engine fields {sorted(unknown)}")
        fresh.__dict__.update(state)
        fresh.ctx.alerts, fresh.ctx.duties = books
        fresh.detectors = detectors
        by_sensor: dict[str, list[Detector]] = {s: [] for s in site.sensors()}
        for det in detectors.values():
            for sensor in det.sensors():
                by_sensor.setdefault(sensor, []).append(det)
        fresh._by_sensor = by_sensor
        fresh._rebuild()
        return fresh
