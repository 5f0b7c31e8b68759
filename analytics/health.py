"""Sensor health: the quality screen every reading passes, and offline detection.

One object, :class:`SensorHealth`, plays two parts:

* the engine's *screen* (declared by ``SensorHealth.screen``, which the engine
  collects from its detectors): called with every reading, in
  event-time order per sensor, before any detector sees it. It adds quality
  flags and never holds a reading back (a screen that waited for the next
  reading would break the engine's ordering guarantee), so every test here is
  *causal*: it looks only at the reading and the ones before it;
* a *detector* (``build``) that owns one timer per sensor for
  offline detection (a detector, because only detectors get timers).

What it flags, and when a person is told (``data_quality`` / ``sensor_offline``):

| check | sensors | flag | alert |
|---|---|---|---|
| outside ``min_value``/``max_value`` (config) or physically impossible (turbidity < -5 or > 4000 NTU, negative rain) | all / per kind | ``out_of_range`` | ``data_quality`` after 5 consecutive bad readings (edge ``sensor_fault`` counts too); resolves at the first good one |
| stuck: the identical value for >= 60 readings spanning >= 2 h | turbidity | ``flatline`` (from the 60th reading on) | ``data_quality`` at once: a frozen probe must be visited; resolves when the value moves |
| spike: departs from the median of the previous 15 readings *and* from the previous reading by more than ``max(20 NTU, 6 sigma)`` (sigma = 1.4826 MAD of those 15) | turbidity | ``spike`` | none: a spike is a mark, not a problem |
| offline: no reading for ``health.offline_after_intervals`` (5) × the sensor's interval | all, from their first reading | | ``sensor_offline``; resolves when data resumes |

Why only turbidity gets the spike and flatline checks: rain is bursty and sits at
zero for days; a basin level or a sediment depth legitimately holds still for
days and legitimately jumps (a storm fills a basin, a cleanout empties a trap).
A causal screen cannot tell those jumps from outliers, and the drain, sediment
and rain detectors drop spike-flagged readings, so flagging them would hide
exactly the events those detectors exist for. Which flags each detector
honours is one shared policy, :mod:`analytics.quality`.

Why a spike is a *soft* flag for turbidity: without lookahead the screen cannot
know whether a jump is isolated; at 15-minute data every real plume starts
with readings that look like spikes. The turbidity contrast therefore keeps
spike-flagged readings in its median windows (a median over the window *is*
the isolation test, made with hindsight: one or two outliers cannot move it)
and counts them in its evidence, so they never drive an alert silently.
Readings with a hard flag (:data:`analytics.quality.HARD_FLAGS`) are never
used by it, nor by the spike test here (:func:`analytics.quality.usable_in_median`).

Offline detection keeps one outstanding timer per sensor at
``last reading + k × interval``; when it fires it checks whether data came
(timers cannot be cancelled). A backfill beyond the allowed lateness is
processed late by the engine: its first reading closes the episode at
``max(opened_at, its time)`` with ``data_resumed_at`` and ``gap_s``, and the
next check is placed ``k × interval`` after the data already processed, so a
backfill that arrives in several batches cannot re-open the episode.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Any

from analytics.detector import Context, Detector, Screen
from analytics.events import SensorReading
from analytics.quality import usable_in_median
from analytics.robust import MAD_TO_SIGMA, CountWindow, mad_of_sorted, median_of_sorted
from analytics.timers import Tag
from analytics.timeutil import MS_PER_H, MS_PER_S, iso
from siltwatch.config import SiteConfig
from siltwatch.detections import sensor_health
from siltwatch.schema import QualityFlag
from siltwatch.sensorkinds import sensor_kind
from siltwatch.timefmt import duration, local_time
from siltwatch.vocabulary import Severity

NAME = "health"
OFFLINE = sensor_health.SENSOR_OFFLINE.kind
DATA_QUALITY = sensor_health.DATA_QUALITY.kind

OUT_OF_RANGE = QualityFlag.OUT_OF_RANGE.value
SENSOR_FAULT = QualityFlag.SENSOR_FAULT.value
SPIKE = QualityFlag.SPIKE.value
FLATLINE = QualityFlag.FLATLINE.value

_FLAG_OOR = frozenset({OUT_OF_RANGE})
_FLAG_SPIKE = frozenset({SPIKE})
_FLAG_FLAT = frozenset({FLATLINE})
_BAD = frozenset({OUT_OF_RANGE, SENSOR_FAULT})


BAD_RUN_ALERT = 5  # consecutive out-of-range/faulted readings before a person is told


@dataclass(frozen=True, slots=True)
class SpikeRule:
    """When one reading is a spike (debris on the probe), not a change in the water."""

    history: int  # previous readings the median is taken over
    floor: float  # never a spike below this deviation (sensor unit)
    sigmas: float  # ... nor below this many robust standard deviations
    min_history: int  # no judgement before this many previous readings

    def is_spike(self, value: float, prev: float, ordered: list[float]) -> bool:
        """Whether ``value`` stands out from the sorted history ``ordered`` (its median) and
        from the reading before it, ``prev``, by more than the floor and than ``sigmas``
        robust standard deviations (MAD). The one test: the screen applies it reading by
        reading, the batch path (analytics/batch.py) where a jump makes it possible."""
        centre = median_of_sorted(ordered)
        dev = abs(value - centre)
        if dev <= self.floor:
            return False
        sigma = MAD_TO_SIGMA * mad_of_sorted(ordered, centre)
        threshold = max(self.floor, self.sigmas * sigma)
        return dev > threshold and abs(value - prev) > threshold


@dataclass(frozen=True, slots=True)
class FlatlineRule:
    readings: int
    min_span_ms: int


SPIKE_RULES: dict[str, SpikeRule] = {"turbidity": SpikeRule(15, 20.0, 6.0, 5)}
# The USGS Pope Brook record holds the identical value at the probe's floor for
# up to 40 readings (10 h at 15 min) in clean water: 60 readings and 2 h clear it.
FLATLINE_RULES: dict[str, FlatlineRule] = {"turbidity": FlatlineRule(60, 2 * MS_PER_H)}


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass(slots=True)
class SensorState:
    """Everything the screen remembers about one sensor (plain data: snapshotted)."""

    sensor: str
    kind: str
    unit: str
    station: str
    interval_s: float
    offline_ms: int
    lo: float
    hi: float
    lo_source: str
    hi_source: str
    spike: SpikeRule | None
    flat: FlatlineRule | None
    history: CountWindow | None
    last_t: int | None = None
    due: int | None = None
    offline: bool = False
    prev: float | None = None
    flat_value: float | None = None
    flat_count: int = 0
    flat_start: int = 0
    bad_run: int = 0
    bad_since: int = 0
    bad_flags: frozenset[str] = frozenset()
    problems: dict[str, int] = field(default_factory=dict)  # problem -> since (ms)
    counts: dict[str, int] = field(default_factory=dict)  # flag -> readings flagged here


class SensorHealth(Detector):
    """The quality screen and the offline watch for every sensor of a site."""

    name = NAME

    def __init__(self, site: SiteConfig, ctx: Context) -> None:
        k = ctx.rules.require("health.offline_after_intervals")
        self.offline_after = float(k.value)
        self.offline_rule = k.cite()
        self.site_name = site.site.name or site.site.id
        stations = site.station_of()
        self._states: dict[str, SensorState] = {}
        for sid, sensor in site.sensors().items():
            # Physical sanity: the kind's plausible band (siltwatch/sensorkinds/), in the
            # sensor's unit; the sensor's configured min/max narrow it.
            kind = sensor_kind(sensor.kind)
            band = kind.plausible if kind is not None else None
            phys_lo, phys_hi = band or (float("-inf"), float("inf"))
            lo, lo_src = phys_lo, f"physical limit for {sensor.kind}"
            hi, hi_src = phys_hi, f"physical limit for {sensor.kind}"
            if sensor.min_value is not None and sensor.min_value > lo:
                lo, lo_src = sensor.min_value, "the sensor's configured min_value"
            if sensor.max_value is not None and sensor.max_value < hi:
                hi, hi_src = sensor.max_value, "the sensor's configured max_value"
            spike = SPIKE_RULES.get(sensor.kind)
            self._states[sid] = SensorState(
                sensor=sid,
                kind=sensor.kind,
                unit=sensor.unit,
                station=stations.get(sid, ""),
                interval_s=sensor.interval_s,
                offline_ms=round(self.offline_after * sensor.interval_s * MS_PER_S),
                lo=lo,
                hi=hi,
                lo_source=lo_src,
                hi_source=hi_src,
                spike=spike,
                flat=FLATLINE_RULES.get(sensor.kind),
                history=None if spike is None else CountWindow(spike.history),
            )

    # --- the screen ---------------------------------------------------------------

    def screen(self) -> Screen:
        """This detector is the site's quality screen (the same object: one snapshot, one state)."""
        return self

    def __call__(self, r: SensorReading, ctx: Context) -> tuple[SensorReading, ...]:
        st = self._states.get(r.sensor)
        if st is None:
            return (r,)
        t = r.t
        if st.offline:
            self._resume(st, t, ctx)
        st.last_t = t
        if st.due is None:
            self._arm(st, t, ctx)

        value = r.value
        flags = r.flags
        added: frozenset[str] | None = None
        if value < st.lo or value > st.hi:
            added = _FLAG_OOR
        if added is not None or (flags and not flags.isdisjoint(_BAD)):
            if st.bad_run == 0:
                st.bad_since = t
                st.bad_flags = frozenset()
            st.bad_run += 1
            st.bad_flags = st.bad_flags | (added or frozenset()) | (flags & _BAD)
            if st.bad_run == BAD_RUN_ALERT:
                self._problem_on(st, "out_of_range", st.bad_since, t, value, ctx)
        elif st.bad_run:
            st.bad_run = 0
            if "out_of_range" in st.problems:
                self._problem_off(st, "out_of_range", t, value, ctx)

        flat = st.flat
        if flat is not None:
            if value == st.flat_value:
                st.flat_count += 1
                if st.flat_count >= flat.readings and t - st.flat_start >= flat.min_span_ms:
                    added = _FLAG_FLAT if added is None else added | _FLAG_FLAT
                    if "flatline" not in st.problems:
                        self._problem_on(st, "flatline", st.flat_start, t, value, ctx)
            else:
                st.flat_value = value
                st.flat_count = 1
                st.flat_start = t
                if "flatline" in st.problems:
                    self._problem_off(st, "flatline", t, value, ctx)

        history = st.history
        if history is not None and added is None and usable_in_median(flags):
            rule = st.spike
            prev = st.prev
            # Cheap test first: a reading continuous with the previous one is no spike.
            if rule is not None and prev is not None and abs(value - prev) > rule.floor:
                ordered = history.sorted
                if len(ordered) >= rule.min_history and rule.is_spike(value, prev, ordered):
                    added = _FLAG_SPIKE
            order, ordered = history.order, history.sorted  # CountWindow.add, inlined
            if len(order) == history.size:
                del ordered[bisect_left(ordered, order.popleft())]
            order.append(value)
            insort(ordered, value)
            st.prev = value

        if added is None:
            return (r,)
        for flag in added:
            st.counts[flag] = st.counts.get(flag, 0) + 1
        return (SensorReading(r.sensor, t, value, r.seq, flags | added),)

    # --- offline ------------------------------------------------------------------

    def _arm(self, st: SensorState, t: int, ctx: Context) -> None:
        """Schedule the next offline check k intervals after the data already processed.

        In order, that is after this reading. For a late reading (a backfill
        beyond the allowed lateness) the rest of the data is already further on:
        the check goes k intervals after *that*, so the remainder of the
        backfill has time to arrive before the sensor is judged silent again.
        """
        base = t
        processed = ctx.processed_to
        if processed is not None and processed > base:
            base = processed
        st.due = base + st.offline_ms
        ctx.schedule(self, st.due, st.sensor)

    def on_timer(self, at: int, tag: Tag, ctx: Context) -> None:
        st = self._states.get(tag) if isinstance(tag, str) else None  # the tag: the sensor id
        if st is None or st.due != at:
            return
        st.due = None
        last = st.last_t
        if last is None:
            return
        if last + st.offline_ms > at:
            # Data came since this check was set: check again k intervals after it.
            st.due = last + st.offline_ms
            ctx.schedule(self, st.due, st.sensor)
            return
        if st.offline:
            return
        st.offline = True
        site = self.site_name
        ctx.alerts.open(
            OFFLINE,
            st.sensor,
            at,
            Severity.WARNING,
            rule=self.offline_rule,
            message=(
                f"Sensor {st.sensor} (station {st.station}, {site}) has sent no reading since "
                f"{local_time(last, ctx.zone)}: {duration((at - last) / 1000)}, "
                f"{self.offline_after:g} × its {st.interval_s:g} s interval "
                f"({self.offline_rule}). Check the station's power, link and outbox; "
                "detections that use this sensor cannot see the site meanwhile."
            ),
            evidence={
                "sensor": st.sensor,
                "station": st.station,
                "last_reading_at": iso(last),
                "interval_s": st.interval_s,
                "offline_after_s": round(st.offline_ms / MS_PER_S, 3),
            },
        )

    def _resume(self, st: SensorState, t: int, ctx: Context) -> None:
        """The first reading after an offline episode closes it, never re-opens it."""
        st.offline = False
        ep = ctx.alerts.get_open(OFFLINE, st.sensor)
        if ep is None:
            return
        last = st.last_t if st.last_t is not None else t
        gap = t - last
        evidence = dict(ep.evidence)
        evidence["data_resumed_at"] = iso(t)
        evidence["gap_s"] = round(gap / MS_PER_S, 3)
        late = t < ep.opened_at
        ctx.alerts.resolve(
            OFFLINE,
            st.sensor,
            t,
            message=(
                f"Sensor {st.sensor} (station {st.station}, {self.site_name}) "
                f"{'backfilled data from' if late else 'resumed at'} "
                f"{local_time(t, ctx.zone)} after a gap of {duration(gap / 1000)} "
                f"since {local_time(last, ctx.zone)} ({self.offline_rule})."
            ),
            evidence=evidence,
        )

    # --- data quality -------------------------------------------------------------

    def _problem_text(self, st: SensorState, ctx: Context, value: float) -> tuple[str, str]:
        """(message, rule) describing the sensor's active problems."""
        parts: list[str] = []
        rules: list[str] = []
        for problem in sorted(st.problems):
            since = local_time(st.problems[problem], ctx.zone)
            if problem == "flatline":
                parts.append(
                    f"reads exactly {st.flat_value:g} {st.unit} since {since} "
                    f"({st.flat_count} identical readings): the probe is frozen or fouled — "
                    "visit and clean or replace it"
                )
                rules.append("siltwatch sensor health: flatline")
            else:
                what = " and ".join(sorted(st.bad_flags)) or OUT_OF_RANGE
                parts.append(
                    f"has sent {st.bad_run} consecutive {what.replace('_', ' ')} readings since "
                    f"{since} (latest {value:g} {st.unit}; range {st.lo:g} to {st.hi:g} from "
                    f"{st.lo_source} / {st.hi_source}): check the probe, wiring and calibration"
                )
                rules.append("siltwatch sensor health: range")
        message = (
            f"Sensor {st.sensor} (station {st.station}, {self.site_name}) " + "; ".join(parts) + "."
        )
        return message, "; ".join(rules)

    def _evidence(self, st: SensorState, value: float) -> dict[str, Any]:
        ev: dict[str, Any] = {
            "sensor": st.sensor,
            "station": st.station,
            "problems": {p: iso(since) for p, since in sorted(st.problems.items())},
            "latest_value": round(value, 4),
            "unit": st.unit,
        }
        if "flatline" in st.problems:
            ev["stuck_value"] = st.flat_value
            ev["identical_readings"] = st.flat_count
        if "out_of_range" in st.problems:
            ev["bad_readings"] = st.bad_run
            ev["bad_flags"] = sorted(st.bad_flags)
            ev["range"] = [_finite_or_none(st.lo), _finite_or_none(st.hi)]
            ev["range_from"] = [st.lo_source, st.hi_source]
        return ev

    def _problem_on(
        self, st: SensorState, problem: str, since: int, t: int, value: float, ctx: Context
    ) -> None:
        st.problems[problem] = since
        message, rule = self._problem_text(st, ctx, value)
        ctx.alerts.open(
            DATA_QUALITY,
            st.sensor,
            t,
            Severity.WARNING,
            rule=rule,
            message=message,
            evidence=self._evidence(st, value),
        )

    def _problem_off(
        self, st: SensorState, problem: str, t: int, value: float, ctx: Context
    ) -> None:
        ended = {problem: st.problems.pop(problem)}
        if st.problems:
            message, rule = self._problem_text(st, ctx, value)
            ctx.alerts.update(
                DATA_QUALITY,
                st.sensor,
                t,
                message=message,
                rule=rule,
                evidence=self._evidence(st, value),
            )
            return
        ep = ctx.alerts.get_open(DATA_QUALITY, st.sensor)
        evidence = dict(ep.evidence) if ep is not None else {}
        evidence["cleared_at"] = iso(t)
        evidence["cleared_value"] = round(value, 4)
        evidence["ended"] = {p: iso(since) for p, since in ended.items()}
        before = ep.message if ep is not None else f"Sensor {st.sensor}: {problem}."
        ctx.alerts.resolve(
            DATA_QUALITY,
            st.sensor,
            t,
            message=(
                f"{before} Resolved: it reads plausibly again at {local_time(t, ctx.zone)} "
                f"({value:g} {st.unit}), {duration((t - ended[problem]) / 1000)} after the "
                f"{problem.replace('_', ' ')} began."
            ),
            evidence=evidence,
        )

    # --- introspection for dashboards and tests -------------------------------------

    def sensor_state(self, sensor: str) -> SensorState | None:
        """What the screen remembers about ``sensor`` (the batch path plans from it and
        brings it up to date as the quiet readings it skips would have)."""
        return self._states.get(sensor)

    def flag_counts(self, sensor: str) -> dict[str, int]:
        """How many readings of ``sensor`` this screen flagged, by flag."""
        st = self._states.get(sensor)
        return {} if st is None else dict(sorted(st.counts.items()))


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    return [SensorHealth(site, ctx)]
