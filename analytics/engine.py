"""The event-time engine: readings in any order in, the same alerts out.

Modelled on h11: a state machine you feed events, which returns events. The
engine buffers inputs and releases them in event-time order once a
*watermark* — the latest event time seen minus the allowed lateness — has
passed them. Anything that arrives within the allowed lateness is therefore
processed exactly as if it had arrived in order, so detections are a function
of the data, not of arrival order or speed (design.md, "Detections are
functions of event-time data").

Input later than that is still used where it can be without reordering
history: a reading newer than everything already processed for its sensor is
processed at once (a station backfilling after an outage); an older one is
counted in ``stats.late_dropped`` — never silently — and left to the store.
Exact duplicates (same sensor and event time) are dropped and counted.

Everything is deterministic and free of I/O and wall-clock reads; the whole
state can be snapshotted to bytes and restored.
"""

from __future__ import annotations

import hashlib
import heapq
import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from analytics.detector import Context, Detector, TimerQueue
from analytics.episodes import AlertBook, DutyBook
from analytics.events import EngineEvent, Inspection, SensorReading
from analytics.timeutil import MS_PER_S
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert, Duty

SNAPSHOT_VERSION = 1
DEFAULT_ALLOWED_LATENESS_S = 900.0

# Order of kinds at one instant: readings first, then inspections.
_READING = 0
_INSPECTION = 1

Screen = Callable[[SensorReading, Context], Iterable[SensorReading]]


@dataclass
class EngineStats:
    """Counters a person can read: nothing the engine refuses goes uncounted."""

    readings_in: int = 0
    readings_processed: int = 0
    duplicates: int = 0
    late_processed: int = 0
    late_dropped: int = 0
    unknown_sensor: int = 0
    inspections: int = 0
    timers_fired: int = 0
    unknown_sensors: dict[str, int] = field(default_factory=dict)


class DetectorFactory:
    """Builds the detectors for a site; analytics.detectors provides the default."""

    def __call__(self, site: SiteConfig, ctx: Context) -> list[Detector]:  # pragma: no cover
        raise NotImplementedError


class Engine(TimerQueue):
    """Feed readings and inspections; read alert and duty events back."""

    def __init__(
        self,
        site: SiteConfig,
        *,
        allowed_lateness_s: float = DEFAULT_ALLOWED_LATENESS_S,
        detectors: list[Detector] | None = None,
        screen: Screen | None = None,
    ) -> None:
        self.site = site
        self.allowed_lateness_ms = round(allowed_lateness_s * MS_PER_S)
        self.ctx = Context(
            site=site,
            rules=site.rules(),
            alerts=AlertBook(site.site.id),
            duties=DutyBook(site.site.id),
            _engine=self,
        )
        if detectors is None:
            from analytics.detectors import build_detectors, build_screen

            detectors = build_detectors(site, self.ctx)
            if screen is None:
                screen = build_screen(site, self.ctx, detectors)
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
        self._buffer: list[tuple[int, int, str, Any]] = []
        self._buffered_keys: set[tuple[str, int]] = set()
        self._timers: list[tuple[int, str, str]] = []
        self._timer_keys: set[tuple[int, str, str]] = set()
        self._last_sensor_t: dict[str, int] = {}
        self._max_seen: int | None = None
        self._released_to: int | None = None  # everything with t <= this has been processed
        self._finished = False

    def _rebuild(self) -> None:
        """Hot-path lookups derived from the detectors (not part of the snapshot)."""
        self._sensor_set = frozenset(self._by_sensor)

    # --- TimerQueue -------------------------------------------------------------

    def schedule(self, detector_name: str, at: int, tag: str) -> None:
        key = (at, detector_name, tag)
        if key not in self._timer_keys:
            self._timer_keys.add(key)
            heapq.heappush(self._timers, key)

    def processed_to(self) -> int | None:
        return self._released_to

    # --- input ------------------------------------------------------------------

    @property
    def watermark(self) -> int | None:
        """Event time up to which input is final: latest seen minus the allowed lateness."""
        if self._max_seen is None:
            return None
        return self._max_seen - self.allowed_lateness_ms

    def feed(self, readings: Iterable[SensorReading]) -> list[EngineEvent]:
        """Accept readings (any order, duplicates allowed); return the events they caused."""
        stats = self.stats
        for r in readings:
            stats.readings_in += 1
            if r.sensor not in self._sensor_set:
                stats.unknown_sensor += 1
                stats.unknown_sensors[r.sensor] = stats.unknown_sensors.get(r.sensor, 0) + 1
                continue
            key = (r.sensor, r.t)
            if key in self._buffered_keys:
                stats.duplicates += 1
                continue
            last = self._last_sensor_t.get(r.sensor)
            if last is not None and r.t <= last:
                # Already processed this sensor past r.t: a duplicate or too late to use.
                if r.t == last:
                    stats.duplicates += 1
                else:
                    stats.late_dropped += 1
                continue
            if self._released_to is not None and r.t <= self._released_to:
                # Late, but newer than anything processed for this sensor: use it now.
                stats.late_processed += 1
                self._process_reading(r)
                continue
            self._buffered_keys.add(key)
            heapq.heappush(self._buffer, (r.t, _READING, r.sensor, r))
            if self._max_seen is None or r.t > self._max_seen:
                self._max_seen = r.t
        wm = self.watermark
        if wm is not None:
            self._run_until(wm)
        return self._drain()

    def feed_inspection(self, inspection: Inspection) -> list[EngineEvent]:
        """Record an inspection; it is ordered with the readings by its event time."""
        self.stats.inspections += 1
        heapq.heappush(
            self._buffer,
            (
                inspection.t,
                _INSPECTION,
                f"{inspection.inspector}|{inspection.duty or ''}",
                inspection,
            ),
        )
        if self._max_seen is None or inspection.t > self._max_seen:
            self._max_seen = inspection.t
        wm = self.watermark
        if wm is not None:
            self._run_until(wm)
        return self._drain()

    def advance_to(self, t: int) -> list[EngineEvent]:
        """Declare that event time has reached ``t`` (a heartbeat when no data comes).

        The live service calls this from its clock so that an offline sensor or an
        overdue duty is noticed without new readings; the analytics themselves
        still read no clock.
        """
        if self._max_seen is None or t > self._max_seen:
            self._max_seen = t
        wm = self.watermark
        if wm is not None:
            self._run_until(wm)
        return self._drain()

    def finish(self, end: int | None = None) -> list[EngineEvent]:
        """Process everything buffered and fire timers up to ``end`` (default: the last input)."""
        if end is None:
            end = self._max_seen
        if end is not None:
            self._run_until(end)
            if not self._finished:
                self._finished = True
                for det in self.detectors.values():
                    det.on_finish(end, self.ctx)
        return self._drain()

    # --- processing -------------------------------------------------------------

    def _run_until(self, limit: int) -> None:
        buffer, timers = self._buffer, self._timers
        while True:
            next_input = buffer[0][0] if buffer and buffer[0][0] <= limit else None
            if (
                timers
                and timers[0][0] <= limit
                and (next_input is None or timers[0][0] < next_input)
            ):
                at, name, tag = heapq.heappop(timers)
                self._timer_keys.discard((at, name, tag))
                self.stats.timers_fired += 1
                self.detectors[name].on_timer(at, tag, self.ctx)
                continue
            if next_input is None:
                break
            t, kind, _key, payload = heapq.heappop(buffer)
            if kind == _READING:
                self._buffered_keys.discard((payload.sensor, t))
                self._process_reading(payload)
            else:
                for det in self.detectors.values():
                    det.on_inspection(payload, self.ctx)
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

    # --- snapshot / restore -----------------------------------------------------

    @staticmethod
    def _fingerprint(site: SiteConfig) -> str:
        return hashlib.sha256(site.model_dump_json().encode()).hexdigest()

    def snapshot(self) -> bytes:
        """The whole engine state as bytes; the ingest service persists it.

        Pickle is used because the state is ours and stays on the machine that
        wrote it: a snapshot is a trusted local file, never something received.
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("site", "ctx", "_sensor_set")}
        state["_books"] = (self.ctx.alerts, self.ctx.duties)
        return pickle.dumps((SNAPSHOT_VERSION, self._fingerprint(self.site), state), protocol=5)

    @classmethod
    def restore(cls, site: SiteConfig, blob: bytes) -> Engine:
        """An engine that continues exactly where the snapshotted one stopped."""
        version, fingerprint, state = pickle.loads(blob)
        if version != SNAPSHOT_VERSION:
            raise ValueError(f"engine snapshot version {version} is not {SNAPSHOT_VERSION}")
        if fingerprint != cls._fingerprint(site):
            raise ValueError(
                "the site configuration changed since this snapshot was taken; "
                "replay from the store instead of restoring"
            )
        engine = cls.__new__(cls)
        alerts, duties = state.pop("_books")
        engine.__dict__.update(state)
        engine.site = site
        engine.ctx = Context(
            site=site, rules=site.rules(), alerts=alerts, duties=duties, _engine=engine
        )
        engine._rebuild()
        return engine
