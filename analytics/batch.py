"""The engine's batch path: in-order readings (a replay) processed column-wise.

The per-reading path (:meth:`Engine.feed`, ``_run_until``) hands every reading
to the quality screen and to every detector of its sensor, one at a time, in
event-time order, interleaved with timers and the other inputs. For a replay
that is millions of Python calls that, nearly always, change nothing but a
rolling window. This module gives exactly the same calls' effects with far
fewer calls:

1. **Intake** (:func:`feed_columns`): the checks ``feed`` makes per reading
   (unknown sensor, duplicate, late), the station progress and the watermark,
   done on arrays. Anything the batch cannot take exactly — the engine fed
   live, a reading at or before what was processed (late data), a reading
   with flags or a sequence number waiting in the buffer, a value that is not
   finite, a screen that is not :class:`~analytics.health.SensorHealth` —
   falls back to ``feed`` for the whole block, before anything is changed.
2. **Plans**, per sensor and per turbidity pair, on arrays: what the screen
   will flag (out of range, flatline, spike — the spike test's median and MAD
   computed only where a reading jumps more than the floor), and, with the
   rolling medians of both probes (pandas' C rolling median), which
   downstream readings cannot be judged or come near the limit. A reading is
   **real** when something may happen at it: the screen flags it or changes a
   problem, the sensor was offline or has no offline check armed, a pair
   cannot judge it or finds it near or over the limit (within a relative
   1e-9), a pair is in any state but idle (an episode, a sustain run, a calm
   spell, blindness), the inspection clock has not started, or its sensor is
   read by a detector this module does not know (rain, levels, sediment: every
   reading of theirs is real). Every other reading is **quiet**: the screen
   returns it unflagged and the detectors only slide their windows.
3. **The merge** (:class:`_Batch`): real readings, timers, the buffered
   inspections / station reports / site-log entries, and the offline checks
   are processed in the engine's order — ``(t, kind, key)`` for inputs, a
   timer after every input at its time — through the very same detector
   methods. Before a real call the objects it touches are brought up to date
   (*synced*): the sensor's screen state and the windows of its pairs,
   rebuilt from the arrays, or, when only a few quiet readings lie between,
   by the windows' own ``push``/``add_latest``/``advance``. The offline check
   of a batched sensor (one timer, re-armed k intervals after the last
   reading each time it fires) is walked on the arrays; only a check that
   finds the sensor silent is a real call.

Exactness is the contract: a property test (tests/analytics/test_batch_path.py)
holds the batch path to the per-reading path, byte for byte, on generated data
with late readings, duplicates, gaps, faults and chunk boundaries inside
episodes; a real call whose screen result differs from the plan raises
:class:`BatchDiverged` instead of going on silently.

Nothing here is state: the engine, the detectors and their windows hold
everything between calls (snapshots never see numpy), and this module does no
I/O and reads no clock. numpy and pandas are imported when a batch runs
(the server extra); without them the engine takes the per-reading path.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Protocol

from analytics.batch_columns import ReadingColumns, numpy_available
from analytics.detector import Context, Detector, QuietReading, Screen
from analytics.events import SensorReading
from analytics.health import FLATLINE, OUT_OF_RANGE, SPIKE, SensorHealth, SensorState
from analytics.robust import median_of_sorted
from analytics.timers import Tag
from analytics.turbidity import UPSTREAM_HORIZON_MS, TurbidityContrast
from siltwatch.rulemath import (
    NO_INCREASE_TOLERANCE_FRACTION,
    NO_INCREASE_TOLERANCE_NTU,
)
from siltwatch.rulemath import LimitRule as _RuleMathLimit

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Bools = npt.NDArray[np.bool_]
    Ints = npt.NDArray[np.int64]
    Floats = npt.NDArray[np.float64]

# Quiet readings between two syncs up to which the windows are moved by their own
# methods; beyond, they are rebuilt from the arrays.
INCREMENTAL = 16
# A downstream reading within this relative distance of its limit is real.
MARGIN = 1e-9
# A buffer of at least this many readings is released as a batch by ``finish``.
MIN_BUFFERED = 64
# A catch-up chunk below this size goes row by row: as quick as building the arrays.
MIN_CHUNK = 256


class BatchDiverged(RuntimeError):
    """A real call did not do what the plan said it would: a bug, never data."""


class BatchStats(Protocol):
    """The engine's counters the batch path keeps as the per-reading path would."""

    readings_in: int
    readings_processed: int
    duplicates: int
    unknown_sensor: int
    unknown_sensors: dict[str, int]
    timers_fired: int


class BatchEngine(Protocol):
    """What the batch path reads and changes of the engine (analytics/engine.py offers it).

    The engine's own state stays the engine's: the batch path holds nothing
    between calls and touches the engine only through these methods, so this
    module imports nothing of the engine's (the import runs one way: engine ->
    batch).
    """

    batch: bool
    detectors: dict[str, Detector]
    ctx: Context

    @property
    def stats(self) -> BatchStats: ...
    @property
    def live(self) -> bool: ...
    @property
    def quality_screen(self) -> Screen | None: ...
    @property
    def watermark(self) -> int | None: ...
    def processed_to(self) -> int | None: ...
    def mark_processed_to(self, limit: int) -> None: ...
    def sensor_ids(self) -> list[str]: ...
    def station_of(self) -> dict[str, str]: ...
    def detectors_of(self, sensor: str) -> Sequence[Detector]: ...
    def last_reading_times(self) -> dict[str, int]: ...
    def set_last_reading_time(self, sensor: str, t: int) -> None: ...
    def buffered_reading_count(self) -> int: ...
    def buffered_readings(self) -> list[SensorReading]: ...
    def drop_buffered_readings(self) -> None: ...
    def buffer_readings(self, readings: Iterable[SensorReading]) -> None: ...
    def note_progress(self, newest: int, stations: Iterable[tuple[str, int]]) -> None: ...
    def timers_of(self, detector_name: str) -> list[tuple[int, Tag]]: ...
    def cancel_timer(self, at: int, detector_name: str, tag: Tag) -> None: ...
    def schedule(self, detector_name: str, at: int, tag: Tag) -> None: ...
    def hold_timers(self, hold: Callable[[str, int, Tag], bool] | None) -> None: ...
    def next_pending(self, limit: int) -> tuple[Any, ...] | None: ...
    def process_pending(self, key: tuple[Any, ...]) -> bool: ...
    def screen_reading(self, reading: SensorReading) -> tuple[SensorReading, ...]: ...
    def hand_over(self, checked: SensorReading) -> None: ...


def usable_here(engine: BatchEngine, *, live: bool = False) -> bool:
    """Whether the engine may take the batch path at all (numpy at hand, a screen it
    knows); ``live``: a catch-up, which sets its own release limit, may be live."""
    if not engine.batch or (engine.live and not live) or not numpy_available():
        return False
    screen = engine.quality_screen
    return screen is None or (
        type(screen) is SensorHealth and engine.detectors.get(screen.name) is screen
    )


# --- intake ----------------------------------------------------------------------------


class _Block:
    """One block of readings on its way in: known rows as arrays, and the engine's names."""

    def __init__(self, engine: BatchEngine, s: Ints, t: Ints, v: Floats) -> None:
        self.engine = engine
        self.names = engine.sensor_ids()
        self.index = {name: i for i, name in enumerate(self.names)}
        known = s >= 0
        self.known = known
        self.s, self.t, self.v = s[known], t[known], v[known]

    def takeable(self) -> list[SensorReading] | None:
        """The buffered readings to take with the block, or None (nothing changed) when the
        block must go row by row: a value not finite, data at or before what was
        processed, a buffered reading with flags or a sequence number."""
        import numpy as np

        if not bool(np.isfinite(self.v).all()):
            return None
        released = self.engine.processed_to()
        if released is not None and len(self.t) and int(self.t.min()) <= released:
            return None  # late data: the per-reading path handles it where it falls
        held = self.engine.buffered_readings()
        if any(r.flags or r.seq is not None for r in held):
            return None
        return held

    def merge(self, held: list[SensorReading]) -> tuple[Ints, Floats, Ints]:
        """Take the buffered readings out and merge them with the block: sorted by (time,
        sensor id), duplicates counted and dropped, the stations' progress noted."""
        import numpy as np

        engine, index, names = self.engine, self.index, self.names
        if held:
            engine.drop_buffered_readings()
        n_held = len(held)
        h_t = np.array([r.t for r in held], dtype=np.int64)
        h_v = np.array([r.value for r in held], dtype=np.float64)
        h_s = np.array([index[r.sensor] for r in held], dtype=np.int64)
        all_t = np.concatenate([h_t, self.t])
        all_v = np.concatenate([h_v, self.v])
        all_s = np.concatenate([h_s, self.s])
        arrival = np.arange(len(all_t))  # buffered readings first: they were fed first
        rank = _name_ranks(names)
        if not _in_order(all_t, rank[all_s]):
            order = np.lexsort((arrival, rank[all_s], all_t))
            all_t, all_v, all_s, arrival = all_t[order], all_v[order], all_s[order], arrival[order]
        keep = np.ones(len(all_t), dtype=bool)
        if len(all_t) > 1:
            keep[1:] = (all_t[1:] != all_t[:-1]) | (all_s[1:] != all_s[:-1])
        engine.stats.duplicates += int((~keep).sum())
        all_t, all_v, all_s, arrival = all_t[keep], all_v[keep], all_s[keep], arrival[keep]
        fresh = arrival >= n_held
        _progress(engine, names, all_t[fresh], all_s[fresh], arrival[fresh])
        return all_t, all_v, all_s

    def release(self, t: Ints, v: Floats, s: Ints, limit: int) -> None:
        """Process what lies at or before ``limit``; the rest waits in the buffer."""
        import numpy as np

        cut = int(np.searchsorted(t, limit, side="right"))
        release(self.engine, self.names, s[:cut], t[:cut], v[:cut], limit)
        _push_back(self.engine, self.names, t[cut:], v[cut:], s[cut:])


def feed_columns(engine: BatchEngine, block: ReadingColumns) -> bool:
    """``engine.feed(block)``, on arrays; False (nothing changed) when it must be row-wise."""
    if not usable_here(engine):
        return False
    import numpy as np

    index = {name: i for i, name in enumerate(engine.sensor_ids())}
    to_engine = np.array([index.get(name, -1) for name in block.names], dtype=np.int64)
    code = np.asarray(block.code, dtype=np.int64)
    sidx = to_engine[code] if len(code) else np.zeros(0, np.int64)
    rows = _Block(
        engine, sidx, np.asarray(block.t, dtype=np.int64), np.asarray(block.value, np.float64)
    )
    held = rows.takeable()
    if held is None:
        return False
    last = engine.last_reading_times()
    if last and len(rows.t):
        floor = np.array([last.get(name, np.iinfo(np.int64).min) for name in rows.names], np.int64)
        if bool((rows.t <= floor[rows.s]).any()):
            return False

    # From here on the engine changes: the per-reading path's bookkeeping, on arrays.
    engine.stats.readings_in += len(code)
    if not bool(rows.known.all()):
        _count_unknown(engine, block, code[~rows.known])
    all_t, all_v, all_s = rows.merge(held)
    wm = engine.watermark
    if wm is None:
        _push_back(engine, rows.names, all_t, all_v, all_s)
        return True
    rows.release(all_t, all_v, all_s, wm)
    return True


def take_chunk(engine: BatchEngine, chunk: Sequence[SensorReading], limit: int) -> bool:
    """``Engine.catch_up``'s work for one chunk of stored history (issue 24), on arrays;
    False: nothing was changed and the chunk must go row by row.

    A chunk from the store is what the batch path is made for: readings in
    (time, sensor) order, all after what the engine has processed. The engine
    of a catch-up is live (its station clocks came from the store), which is
    why ``feed_columns`` would refuse it; the catch-up sets the release limit
    itself, so the per-station watermark plays no part. A chunk with a flagged
    reading (flags steer the quality screen) or one too small to be worth the
    arrays goes row by row. A chunk the store read as :class:`ReadingColumns`
    (``reading_columns_after``: no flags) is taken as it is, no object built.
    """
    if len(chunk) < MIN_CHUNK or not usable_here(engine, live=True):
        return False
    import numpy as np

    index = {name: i for i, name in enumerate(engine.sensor_ids())}
    if isinstance(chunk, ReadingColumns):  # read from the store as columns: no flags
        to_engine = np.array([index.get(name, -1) for name in chunk.names], dtype=np.int64)
        rows = _Block(engine, to_engine[chunk.code], chunk.t, chunk.value)
    elif any(r.flags for r in chunk):
        return False
    else:
        rows = _Block(
            engine,
            np.fromiter((index.get(r.sensor, -1) for r in chunk), np.int64, len(chunk)),
            np.fromiter((r.t for r in chunk), np.int64, len(chunk)),
            np.fromiter((r.value for r in chunk), np.float64, len(chunk)),
        )
    held = rows.takeable()
    if held is None:
        return False

    # From here on the engine changes, as catch_up's loop would change it.
    stats = engine.stats
    stats.readings_in += len(chunk)
    stats.unknown_sensor += len(chunk) - int(rows.known.sum())  # (catch_up: not by name)
    all_t, all_v, all_s = rows.merge(held)
    released = engine.processed_to()
    if released is not None and limit <= released:
        _push_back(engine, rows.names, all_t, all_v, all_s)  # nothing may be processed yet
        return True
    rows.release(all_t, all_v, all_s, limit)
    return True


def release_buffered(engine: BatchEngine, limit: int) -> bool:
    """The engine's ``_run_until(limit)`` with its buffered readings as a batch (False: not done)."""
    if not usable_here(engine) or engine.buffered_reading_count() < MIN_BUFFERED:
        return False
    import numpy as np

    held = engine.buffered_readings()
    if any(r.flags or r.seq is not None for r in held):
        return False
    released = engine.processed_to()
    if released is not None and any(r.t <= released for r in held):
        return False
    names = engine.sensor_ids()
    index = {name: i for i, name in enumerate(names)}
    if held:
        engine.drop_buffered_readings()
    rank = _name_ranks(names)
    s = np.array([index[r.sensor] for r in held], dtype=np.int64)
    t = np.array([r.t for r in held], dtype=np.int64)
    v = np.array([r.value for r in held], dtype=np.float64)
    order = np.lexsort((rank[s], t))
    s, t, v = s[order], t[order], v[order]
    cut = int(np.searchsorted(t, limit, side="right"))
    release(engine, names, s[:cut], t[:cut], v[:cut], limit)
    _push_back(engine, names, t[cut:], v[cut:], s[cut:])
    return True


def _push_back(engine: BatchEngine, names: list[str], t: Ints, v: Floats, s: Ints) -> None:
    """Readings beyond the watermark wait in the buffer, as ``feed`` leaves them."""
    engine.buffer_readings(
        SensorReading(names[sensor_i], ti, vi)
        for sensor_i, ti, vi in zip(s.tolist(), t.tolist(), v.tolist(), strict=True)
    )


def _in_order(t: Ints, rank: Ints) -> bool:
    """Whether rows are already sorted by (time, sensor id rank), ties allowed."""
    import numpy as np

    if len(t) < 2:
        return True
    dt = np.diff(t)
    return bool(((dt > 0) | ((dt == 0) & (np.diff(rank) >= 0))).all())


def _name_ranks(names: list[str]) -> Ints:
    import numpy as np

    rank = np.empty(len(names), dtype=np.int64)
    for r, i in enumerate(sorted(range(len(names)), key=names.__getitem__)):
        rank[i] = r
    return rank


def _count_unknown(engine: BatchEngine, block: ReadingColumns, codes: Ints) -> None:
    import numpy as np

    stats = engine.stats
    stats.unknown_sensor += len(codes)
    uniq, first, counts = np.unique(codes, return_index=True, return_counts=True)
    for i in np.argsort(first, kind="stable").tolist():
        name = block.names[int(uniq[i])]
        stats.unknown_sensors[name] = stats.unknown_sensors.get(name, 0) + int(counts[i])


def _progress(engine: BatchEngine, names: list[str], t: Ints, s: Ints, arrival: Ints) -> None:
    """The engine's ``_progress`` for every fresh reading: the replay watermark, station clocks."""
    import numpy as np

    if not len(t):
        return
    top = int(t.max())
    station_of = engine.station_of()
    stations = sorted({st for st in station_of.values()})
    number = {st: k for k, st in enumerate(stations)}
    of_sensor = np.array([number.get(station_of.get(name, ""), -1) for name in names], np.int64)
    code = of_sensor[s]
    mine = code >= 0
    code, t, arrival = code[mine], t[mine], arrival[mine]
    if not len(code):
        engine.note_progress(top, ())
        return
    latest = np.full(len(stations), np.iinfo(np.int64).min)
    np.maximum.at(latest, code, t)
    first = np.full(len(stations), np.iinfo(np.int64).max)
    np.minimum.at(first, code, arrival)
    present = np.flatnonzero(first < np.iinfo(np.int64).max)
    new_first = present[np.argsort(first[present], kind="stable")].tolist()  # in feed order
    engine.note_progress(top, [(stations[k], int(latest[k])) for k in new_first])


# --- plans -----------------------------------------------------------------------------


class _Sensor:
    """One sensor's rows in this batch and what is known about them."""

    __slots__ = (
        "batch",
        "chain",
        "down_pairs",
        "health",
        "i",
        "name",
        "nxt",
        "pairs",
        "pos",
        "ptr",
        "real",
        "st",
        "t",
        "times",
        "v",
        "values",
        "version",
    )

    def __init__(self, i: int, name: str, pos: Ints, t: Ints, v: Floats) -> None:
        self.i = i
        self.name = name
        self.pos = pos  # global row indices (the batch's order)
        self.t = t
        self.v = v
        self.times: list[int] = t.tolist()
        self.values: list[float] = v.tolist()
        self.batch = True  # quiet rows possible
        self.chain = False  # the offline check is walked here
        self.nxt: list[int] | None = None  # last row within the offline delay of each row
        self.st: SensorState | None = None
        self.health: _HealthPlan | None = None
        self.pairs: list[_PairPlan] = []
        self.down_pairs: list[_PairPlan] = []
        self.real: list[int] = []  # local indices that are real whatever the state
        self.ptr = 0  # the first row not yet passed
        self.version = 0


class _HealthPlan:
    """What :meth:`SensorHealth.__call__` will do with each row of one sensor."""

    __slots__ = (
        "cur",
        "elig_cum",
        "elig_vals",
        "flags",
        "flat0",
        "grade",
        "history",
        "init_hist",
        "len0",
        "prev0",
        "run_start",
        "s",
        "st",
        "static_real",
    )

    def __init__(self, s: _Sensor, st: SensorState) -> None:
        import numpy as np

        self.s = s
        self.st = st
        self.cur = 0  # the screen's state reflects rows [0, cur)
        t, v = s.t, s.v
        n = len(t)
        steps = np.arange(n)
        oor = (v < st.lo) | (v > st.hi)
        flat = st.flat
        flat_flag = np.zeros(n, dtype=bool)
        flat_off = np.zeros(n, dtype=bool)
        self.flat0 = (st.flat_value, st.flat_count, st.flat_start)
        self.run_start: Ints | None = None
        if flat is not None and n:
            change = np.empty(n, dtype=bool)
            change[0] = not (st.flat_value is not None and s.values[0] == st.flat_value)
            np.not_equal(v[1:], v[:-1], out=change[1:])
            run_start = np.maximum.accumulate(np.where(change, steps, -1))
            count = np.where(run_start >= 0, steps - run_start + 1, st.flat_count + steps + 1)
            start_t = np.where(run_start >= 0, t[np.maximum(run_start, 0)], st.flat_start)
            flat_flag = ~change & (count >= flat.readings) & (t - start_t >= flat.min_span_ms)
            before = np.empty(n, dtype=bool)
            before[0] = "flatline" in st.problems
            before[1:] = flat_flag[:-1]
            flat_off = change & before
            self.run_start = run_start
        after_bad = np.zeros(n, dtype=bool)
        if n:
            before_bad = np.empty(n, dtype=bool)
            before_bad[0] = st.bad_run > 0
            before_bad[1:] = oor[:-1]
            after_bad = ~oor & before_bad
        eligible = ~oor & ~flat_flag  # what the spike test's history takes
        spike = np.zeros(n, dtype=bool)
        history = st.history
        self.history = history
        self.prev0 = st.prev
        self.init_hist: list[float] = [] if history is None else list(history.order)
        self.len0 = len0 = len(self.init_hist)
        self.elig_cum = np.concatenate([[0], np.cumsum(eligible)])
        at = np.flatnonzero(eligible)
        self.elig_vals: Floats = v[at]
        rule = st.spike
        if history is not None and rule is not None and len(at):
            ev = self.elig_vals
            prev = np.empty(len(at))
            prev[0] = np.nan if st.prev is None else st.prev
            prev[1:] = ev[:-1]
            with np.errstate(invalid="ignore"):
                jump = np.abs(ev - prev) > rule.floor
            held = np.minimum(history.size, len0 + np.arange(len(at)))
            size = history.size
            for k in np.flatnonzero(jump & (held >= rule.min_history)).tolist():
                e = len0 + k
                ordered = sorted(self.seen(max(0, e - size), e))
                value = float(ev[k])
                last = st.prev if k == 0 else float(ev[k - 1])
                if last is not None and rule.is_spike(value, last, ordered):
                    spike[at[k]] = True
        hard = oor | flat_flag
        self.grade = np.where(hard, 2, np.where(spike, 1, 0)).astype(np.int8)
        self.flags: dict[int, frozenset[str]] = {}
        for k in np.flatnonzero(hard | spike).tolist():
            if spike[k]:
                self.flags[k] = frozenset({SPIKE})
            else:
                self.flags[k] = frozenset(
                    ({OUT_OF_RANGE} if oor[k] else set()) | ({FLATLINE} if flat_flag[k] else set())
                )
        self.static_real = hard | spike | after_bad | flat_off

    def seen(self, lo: int, hi: int) -> list[float]:
        """The values the history has taken, [lo, hi): the initial ones, then this batch's."""
        len0 = self.len0
        head = self.init_hist[lo:hi] if lo < len0 else []
        tail: list[float] = self.elig_vals[max(0, lo - len0) : max(0, hi - len0)].tolist()
        return head + tail

    def added(self, k: int) -> frozenset[str]:
        return self.flags.get(k, frozenset())

    def sync(self, k: int) -> None:
        """Bring the screen's state to just after rows [0, k) (rows [cur, k) are quiet)."""
        cur = self.cur
        if k <= cur:
            return
        st = self.st
        s = self.s
        times, values = s.times, s.values
        history = self.history
        flat = st.flat is not None
        if k - cur <= INCREMENTAL:
            for i in range(cur, k):
                value = values[i]
                st.last_t = times[i]
                if flat:
                    if value == st.flat_value:
                        st.flat_count += 1
                    else:
                        st.flat_value = value
                        st.flat_count = 1
                        st.flat_start = times[i]
                if history is not None:
                    order, ordered = history.order, history.sorted
                    if len(order) == history.size:
                        del ordered[bisect_left(ordered, order.popleft())]
                    order.append(value)
                    ordered.insert(bisect_right(ordered, value), value)
                    st.prev = value
        else:
            st.last_t = times[k - 1]
            if flat and self.run_start is not None:
                start = int(self.run_start[k - 1])
                if start < 0:
                    value0, count0, start0 = self.flat0
                    st.flat_value, st.flat_count, st.flat_start = value0, count0 + k, start0
                else:
                    st.flat_value = values[start]
                    st.flat_count = k - start
                    st.flat_start = times[start]
            if history is not None:
                end = self.len0 + int(self.elig_cum[k])
                window = self.seen(max(0, end - history.size), end)
                history.order = deque(window)
                history.sorted = sorted(window)
                st.prev = window[-1] if end > self.len0 else self.prev0
        self.cur = k


class _PairPlan:
    """One turbidity pair: where its downstream readings are real, and its windows' sync."""

    __slots__ = (
        "cur",
        "d_g",
        "d_t",
        "d_v",
        "det",
        "down",
        "downs_before",
        "is_down",
        "local",
        "n_d0",
        "n_u0",
        "n_ue0",
        "pos",
        "u_g",
        "u_t",
        "u_v",
        "up",
        "up_to0",
    )

    def __init__(self, det: TurbidityContrast, up: _Sensor, down: _Sensor) -> None:
        import numpy as np

        self.det = det
        self.up = up
        self.down = down
        self.cur = 0  # pair rows [0, cur) (in ``pos`` order) are reflected in the windows
        uw, dw = det.up_win, det.down_win
        self.up_to0 = uw.to
        u0 = list(uw.entries) + list(uw.pending)
        self.n_ue0 = len(uw.entries)
        self.n_u0 = len(u0)
        d0 = list(dw.entries)
        self.n_d0 = len(d0)

        def grades(x: _Sensor) -> Any:
            return x.health.grade if x.health is not None else np.zeros(len(x.times), np.int8)

        # Every reading each window may hold: what it holds now, then this batch's.
        self.u_t: Ints = np.concatenate([np.array([x[0] for x in u0], np.int64), up.t])
        self.u_v: Floats = np.concatenate([np.array([x[1] for x in u0], np.float64), up.v])
        self.u_g = np.concatenate([np.array([x[2] for x in u0], np.int8), grades(up)])
        self.d_t: Ints = np.concatenate([np.array([x[0] for x in d0], np.int64), down.t])
        self.d_v: Floats = np.concatenate([np.array([x[1] for x in d0], np.float64), down.v])
        self.d_g = np.concatenate([np.array([x[2] for x in d0], np.int8), grades(down)])
        # The pair's rows in the engine's order: global positions, which side, local index.
        n_up, n_down = len(up.times), len(down.times)
        pos = np.concatenate([up.pos, down.pos])
        order = np.argsort(pos, kind="stable")
        is_down = np.concatenate([np.zeros(n_up, np.int64), np.ones(n_down, np.int64)])[order]
        self.pos: Ints = pos[order]
        self.is_down: list[int] = is_down.tolist()
        self.local: Ints = np.concatenate([np.arange(n_up), np.arange(n_down)])[order]
        self.downs_before = np.concatenate([[0], np.cumsum(is_down)])  # among rows [0, k)

    @staticmethod
    def usable(det: TurbidityContrast) -> bool:
        """The windows hold what this plan can rebuild (always, for a detector in use)."""
        uw, dw = det.up_win, det.down_win
        if det.up == det.down or det.travel_ms < 0 or det.window_ms <= 0 or dw.pending:
            return False
        if det.limit is not None and type(det.limit).allowed is not _RuleMathLimit.allowed:
            return False
        up_times = [x[0] for x in uw.entries] + [x[0] for x in uw.pending]
        down_times = [x[0] for x in dw.entries]
        return all(a < b for a, b in pairwise(up_times)) and all(
            a < b for a, b in pairwise(down_times)
        )

    def real_rows(self) -> Bools:
        """Downstream rows that cannot be judged or come near (or over) the limit."""
        import numpy as np

        det = self.det
        down = self.down
        n = len(down.times)
        if det.limit is None or n == 0:
            return np.ones(n, dtype=bool)
        span, travel = det.window_ms, det.travel_ms
        u_t, u_v, d_t, d_v = self.u_t, self.u_v, self.d_t, self.d_v
        u_ok = self.u_g <= 1
        d_ok = self.d_g <= 1
        t = down.t
        to = t - travel
        if self.up_to0 is not None:
            to = np.maximum(to, self.up_to0)
        # Same instant, no travel time: an upstream reading there comes after the
        # downstream one when its id sorts after it, so the window does not hold it.
        if travel == 0 and det.up > det.down:
            hi_u = np.searchsorted(u_t, to, side="left")
        else:
            hi_u = np.searchsorted(u_t, to, side="right")
        lo_u = np.searchsorted(u_t, to - span, side="right")
        cu = np.concatenate([[0], np.cumsum(u_ok)])
        up_count = cu[hi_u] - cu[lo_u]
        item = self.n_d0 + np.arange(n)
        lo_d = np.searchsorted(d_t, t - span, side="right")
        cd = np.concatenate([[0], np.cumsum(d_ok)])
        down_count = cd[item + 1] - cd[lo_d]
        blind = (up_count < det.up_need) | (down_count < det.down_need)
        dn = _rolling_median(d_t, d_v, d_ok, span)[item]
        bg = np.full(n, np.nan)
        if len(u_t):
            rolled_u = _rolling_median(u_t, u_v, u_ok, span)
            last = np.maximum(hi_u - 1, 0)
            # The window ending at the last upstream reading it holds is the same window
            # when it starts at the same reading.
            same = (hi_u > 0) & (np.searchsorted(u_t, u_t[last] - span, side="right") == lo_u)
            bg = np.where(same, rolled_u[last], np.nan)
            for k in np.flatnonzero(~same & ~blind).tolist():
                # Not the same (irregular timestamps): this window's median, directly.
                a, b = int(lo_u[k]), int(hi_u[k])
                bg[k] = median_of_sorted(sorted(u_v[a:b][u_ok[a:b]].tolist()))
        limit = _allowed(det.limit, bg)
        with np.errstate(invalid="ignore"):
            near = dn > limit - MARGIN * (1.0 + np.abs(limit) + np.abs(dn))
        real: Bools = blind | near
        return real

    def after_real(self, g: int) -> None:
        """A real call at global row ``g`` moved the windows themselves."""
        self.cur = int(self.pos.searchsorted(g)) + 1

    def sync(self, g: int) -> None:
        """Bring the windows to just before global row ``g`` (the rows between are quiet)."""
        end = int(self.pos.searchsorted(g))
        if end <= self.cur:
            return
        if end - self.cur <= INCREMENTAL:
            self._step(self.cur, end)
        else:
            self._rebuild(end)
        self.cur = end

    def _step(self, start: int, end: int) -> None:
        det = self.det
        uw, dw = det.up_win, det.down_win
        travel, horizon = det.travel_ms, det.travel_ms + det.window_ms + UPSTREAM_HORIZON_MS
        up, down = self.up, self.down
        for k in range(start, end):
            i = int(self.local[k])
            if self.is_down[k]:
                if down.health is not None and down.health.grade[i]:
                    raise BatchDiverged("a flagged downstream reading was taken as quiet")
                t = down.times[i]
                dw.add_latest(t, down.values[i], 0)
                uw.advance(t - travel)
            else:
                if up.health is not None and up.health.grade[i]:
                    raise BatchDiverged("a flagged upstream reading was taken as quiet")
                t = up.times[i]
                uw.push(t, up.values[i], 0)
                cutoff = t - horizon
                if uw.pending[0][0] < cutoff:
                    uw.drop_pending_before(cutoff)

    def _rebuild(self, end: int) -> None:
        """The windows as the rows [0, end) of the pair leave them (robust.TimeWindow)."""
        det = self.det
        uw, dw = det.up_win, det.down_win
        span, travel = det.window_ms, det.travel_ms
        k_down = int(self.downs_before[end])
        k_up = end - k_down
        u_t, u_v, u_g = self.u_t, self.u_v, self.u_g
        if k_down:
            t_a = self.down.times[k_down - 1]
            g_a = int(self.down.pos[k_down - 1])
            d_end = self.n_d0 + k_down
            lo = int(self.d_t[:d_end].searchsorted(t_a - span, side="right"))
            _fill(dw, self.d_t[lo:d_end], self.d_v[lo:d_end], self.d_g[lo:d_end])
            dw.to = t_a
            to = t_a - travel if self.up_to0 is None else max(self.up_to0, t_a - travel)
            pushed = self.n_u0 + int(self.up.pos.searchsorted(g_a))
            lo_u = int(u_t[:pushed].searchsorted(to - span, side="right"))
            hi_u = int(u_t[:pushed].searchsorted(to, side="right"))
            _fill(uw, u_t[lo_u:hi_u], u_v[lo_u:hi_u], u_g[lo_u:hi_u])
            uw.to = to
            p_lo = hi_u
        else:
            p_lo = self.n_ue0  # no advance in this batch: the entries are as they were
        p_hi = self.n_u0 + k_up
        if k_up:
            cutoff = self.up.times[k_up - 1] - travel - span - UPSTREAM_HORIZON_MS
            p_lo += int(u_t[p_lo:p_hi].searchsorted(cutoff))
        uw.pending = deque(
            zip(
                u_t[p_lo:p_hi].tolist(),
                u_v[p_lo:p_hi].tolist(),
                u_g[p_lo:p_hi].tolist(),
                strict=True,
            )
        )


def _fill(win: Any, t: Ints, v: Floats, g: Any) -> None:
    """A TimeWindow's entries, sorted values and counts, as pushes in time order leave them."""
    times, values, grades = t.tolist(), v.tolist(), g.tolist()
    win.entries = deque(zip(times, values, grades, strict=True))
    # insort after equal values, deletes of the first equal one: stable order of arrival.
    win.sorted = sorted(x for x, grade in zip(values, grades, strict=True) if grade != 2)
    win.n_soft = grades.count(1)
    win.n_hard = grades.count(2)


def _rolling_median(times: Ints, values: Floats, usable: Bools, span: int) -> Floats:
    """Median of the usable values in (t - span, t] at every t (pandas' C rolling median)."""
    import numpy as np
    import pandas as pd

    if not len(times):
        return np.zeros(0)
    series = pd.Series(
        np.where(usable, values, np.nan), index=pd.DatetimeIndex(times.astype("datetime64[ms]"))
    )
    rolled = series.rolling(pd.Timedelta(milliseconds=span), min_periods=1).median()
    out: Floats = rolled.to_numpy(dtype=np.float64)
    return out


def _allowed(rule: Any, bg: Floats) -> Floats:
    """``LimitRule.allowed`` on an array (siltwatch.rulemath; within MARGIN is enough)."""
    import numpy as np

    best = np.full(len(bg), np.inf)
    with np.errstate(invalid="ignore"):
        if rule.cap is not None:
            if rule.no_increase:
                tol = np.maximum(NO_INCREASE_TOLERANCE_NTU, NO_INCREASE_TOLERANCE_FRACTION * bg)
                best = np.where(bg > rule.cap, bg + tol, rule.cap)
            else:
                best[:] = rule.cap
        delta, pct, knee = rule.delta, rule.pct, rule.knee
        if knee is not None and delta is not None and pct is not None:
            term = np.where(bg <= knee, bg + delta, bg * (1.0 + pct / 100.0))
            best = np.minimum(best, term)
        else:
            if delta is not None:
                best = np.minimum(best, bg + delta)
            if pct is not None:
                best = np.minimum(best, bg + np.maximum(bg, 0.0) * pct / 100.0)
    return best


# --- the merge -------------------------------------------------------------------------


def release(engine: BatchEngine, names: list[str], s: Ints, t: Ints, v: Floats, limit: int) -> None:
    """Process readings (sorted by time then sensor id, unique, all after ``processed_to``)
    with everything else buffered and every timer up to ``limit``, as ``_run_until`` does."""
    batch = _Batch(engine, names, s, t, v, limit)
    engine.hold_timers(batch.hold)
    try:
        batch.run()
    finally:
        engine.hold_timers(None)
    batch.finish()
    engine.mark_processed_to(limit)


SensorEvent = tuple[tuple[Any, ...], int, int, int, int, int]
"""(key, seq, version, sensor, kind 0 row / 1 offline check, row index or time)."""


class _Batch:
    def __init__(
        self, engine: BatchEngine, names: list[str], s: Ints, t: Ints, v: Floats, limit: int
    ) -> None:
        import numpy as np

        self.engine = engine
        self.limit = limit
        self.n = len(t)
        self.real_calls = 0
        self.seq = 0
        self.events: list[SensorEvent] = []
        screen = engine.quality_screen
        self.health: SensorHealth | None = screen if isinstance(screen, SensorHealth) else None
        self.hname = self.health.name if self.health is not None else ""
        order = np.argsort(s, kind="stable")
        sorted_s = s[order]
        present, starts = np.unique(sorted_s, return_index=True)
        bounds = [*starts.tolist(), len(order)]
        self.sensors: list[_Sensor] = []
        self.by_name: dict[str, _Sensor] = {}
        for k, i in enumerate(present.tolist()):
            rows = order[bounds[k] : bounds[k + 1]]
            sensor = _Sensor(len(self.sensors), names[i], rows, t[rows], v[rows])
            self.sensors.append(sensor)
            self.by_name[sensor.name] = sensor
        self._plan()

    # --- which sensors can have quiet rows, and where their real rows are ---------------

    def _plan(self) -> None:
        import numpy as np

        engine, health = self.engine, self.health
        timers_of: dict[Tag, list[int]] = {}
        if health is not None:
            for at, tag in engine.timers_of(self.hname):
                timers_of.setdefault(tag, []).append(at)
        pairs: dict[str, TurbidityContrast] = {}
        for sensor in self.sensors:
            for det in engine.detectors_of(sensor.name):
                # What a quiet reading does to the detector (Detector.quiet_reading).
                role = det.quiet_reading()
                if role is QuietReading.MOVES_WINDOWS and isinstance(det, TurbidityContrast):
                    pairs[det.name] = det
                elif role is QuietReading.CALL:
                    sensor.batch = False
            if health is not None:
                st = health.sensor_state(sensor.name)
                sensor.st = st
                if st is None:
                    sensor.batch = False
                    continue
                due = timers_of.get(sensor.name, [])
                if (st.due is None and due) or (
                    st.due is not None and (due != [st.due] or st.offline)
                ):
                    sensor.batch = False
        usable = {name: _PairPlan.usable(det) for name, det in pairs.items()}
        changed = True
        while changed:  # a pair is batched only if both its probes are, and vice versa
            changed = False
            for name, det in pairs.items():
                up, down = self.by_name.get(det.up), self.by_name.get(det.down)
                ok = usable[name] and all(x is None or x.batch for x in (up, down))
                if not ok:
                    for x in (up, down):
                        if x is not None and x.batch:
                            x.batch = False
                            changed = True
        for sensor in self.sensors:
            if sensor.batch and sensor.st is not None:
                sensor.health = _HealthPlan(sensor, sensor.st)
        # Pairs whose both probes have rows here are planned; a pair with rows on one
        # side only still has its windows moved (its plan holds the other side empty).
        empty = np.zeros(0, dtype=np.int64)
        for det in pairs.values():
            up, down = self.by_name.get(det.up), self.by_name.get(det.down)
            if not all(x is None or x.batch for x in (up, down)):
                continue
            up_s = up or _Sensor(-1, det.up, empty, empty, np.zeros(0))
            down_s = down or _Sensor(-1, det.down, empty, empty, np.zeros(0))
            plan = _PairPlan(det, up_s, down_s)
            for x in (up, down):
                if x is not None:
                    x.pairs.append(plan)
            if down is not None:
                down.down_pairs.append(plan)
                down.real.extend(np.flatnonzero(plan.real_rows()).tolist())
        # The inspection clock starts at the first reading it is given: that one is real.
        for det in engine.detectors.values():
            if det.quiet_reading() is QuietReading.STARTS_CLOCK:
                watched = set(det.sensors())
                first = min(
                    (x for x in self.sensors if x.name in watched),
                    key=lambda x: x.pos[0],
                    default=None,
                )
                if first is not None:
                    first.real.append(0)
        for sensor in self.sensors:
            if not sensor.batch:
                continue
            if sensor.health is not None:
                sensor.real.extend(np.flatnonzero(sensor.health.static_real).tolist())
            sensor.real = sorted(set(sensor.real))
            sensor.chain = sensor.st is not None
            if sensor.st is not None and sensor.st.due is not None:
                # The offline check of a batched sensor is walked here, not in the heap.
                self._drop_timer((sensor.st.due, self.hname, sensor.name))
        self.last_t0 = {x.name: x.st.last_t if x.st is not None else None for x in self.sensors}

    def _drop_timer(self, key: tuple[int, str, str]) -> None:
        self.engine.cancel_timer(*key)

    # --- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        engine = self.engine
        events, sensors = self.events, self.sensors
        limit = self.limit
        for sensor in sensors:
            self._schedule(sensor)
        while True:
            while events and events[0][2] != sensors[events[0][3]].version:
                heapq.heappop(events)
            # The next of the batch's own events, the engine's buffered inputs and its
            # timers, in the engine's order (a tie goes to the batch's event).
            pending = engine.next_pending(limit)
            if events and (pending is None or not pending < events[0][0]):
                event = heapq.heappop(events)
                i, kind, where = event[3], event[4], event[5]
                if kind == 0:
                    self._real_row(sensors[i], where)
                else:
                    self._offline_check(sensors[i], where)
            elif pending is None:
                return
            elif not engine.process_pending(pending):
                raise BatchDiverged("a reading was left in the buffer")

    def _schedule(self, sensor: _Sensor) -> None:
        """Push the sensor's next real event: a real row, or an offline check that finds it silent."""
        sensor.version += 1
        j = sensor.ptr
        row: int | None = None
        if j < len(sensor.times):
            if not sensor.batch:
                row = j
            else:
                st = sensor.st
                busy = st is not None and (st.offline or st.due is None)
                if not busy:
                    busy = any(not p.det.idle() for p in sensor.down_pairs)
                if busy:
                    row = j
                else:
                    k = bisect_left(sensor.real, j)
                    row = sensor.real[k] if k < len(sensor.real) else None
        self.seq += 1
        if sensor.batch and sensor.chain:
            at = self._walk(sensor, None if row is None else sensor.times[row])
            if at is not None:
                check: tuple[Any, ...] = (at, 1, self.hname, sensor.name)
                heapq.heappush(self.events, (check, self.seq, sensor.version, sensor.i, 1, at))
                return
        if row is not None:
            key: tuple[Any, ...] = (sensor.times[row], 0, 0, sensor.name)
            heapq.heappush(self.events, (key, self.seq, sensor.version, sensor.i, 0, row))

    def _walk(self, sensor: _Sensor, until: int | None) -> int | None:
        """Fire the sensor's offline checks that find data (re-armed k intervals after the
        last reading) before ``until``; the time of one that finds it silent, or None."""
        st = sensor.st
        assert st is not None
        due = st.due
        limit = self.limit
        if due is None or due > limit or (until is not None and due >= until):
            return None
        off, times = st.offline_ms, sensor.times
        nxt = sensor.nxt
        if nxt is None:
            nxt = sensor.nxt = (sensor.t.searchsorted(sensor.t + off, side="right") - 1).tolist()
        last0 = self.last_t0[sensor.name]
        j = bisect_right(times, due) - 1  # the last reading the check at ``due`` sees
        fired = 0
        while True:
            last = times[j] if j >= 0 else last0
            if last is None or st.offline or last + off <= due:
                break  # a check that finds it silent (or finds nothing): a real call
            fired += 1
            due = last + off
            if due > limit or (until is not None and due >= until):
                st.due = due
                self.engine.stats.timers_fired += fired
                return None
            j = nxt[j] if j >= 0 else bisect_right(times, due) - 1
        st.due = due
        self.engine.stats.timers_fired += fired
        return due

    def hold(self, name: str, at: int, tag: Tag) -> bool:
        """Engine.schedule during the batch: a batched sensor's offline check stays here."""
        if name != self.hname or not isinstance(tag, str):
            return False
        sensor = self.by_name.get(tag)
        if sensor is None or not (sensor.batch and sensor.chain):
            return False
        if sensor.st is None or sensor.st.due != at:
            raise BatchDiverged(f"offline check of {tag} scheduled at {at}, not at its due time")
        return True

    def _real_row(self, sensor: _Sensor, j: int) -> None:
        engine = self.engine
        name, t, value, g = sensor.name, sensor.times[j], sensor.values[j], int(sensor.pos[j])
        plan = sensor.health
        if sensor.batch:
            if plan is not None:
                plan.sync(j)
            for pair in sensor.pairs:
                pair.sync(g)
        reading = SensorReading(name, t, value)
        engine.stats.readings_processed += 1
        screened = engine.screen_reading(reading)
        if plan is not None and (len(screened) != 1 or screened[0].flags != plan.added(j)):
            raise BatchDiverged(f"the screen flagged {name} at {t} otherwise than planned")
        for checked in screened:
            engine.hand_over(checked)
        if plan is not None:
            plan.cur = j + 1
        for pair in sensor.pairs:
            pair.after_real(g)
        sensor.ptr = j + 1
        self.real_calls += 1
        self._schedule(sensor)

    def _offline_check(self, sensor: _Sensor, at: int) -> None:
        health = self.health
        assert health is not None and sensor.health is not None
        k = bisect_right(sensor.times, at, sensor.ptr)
        sensor.health.sync(k)
        sensor.ptr = k
        self.engine.stats.timers_fired += 1
        health.on_timer(at, sensor.name, self.engine.ctx)
        self._schedule(sensor)

    # --- after the loop: every object as the last row left it ---------------------------

    def finish(self) -> None:
        engine = self.engine
        for sensor in self.sensors:
            if sensor.batch and sensor.chain and self._walk(sensor, None) is not None:
                raise BatchDiverged(f"an offline check of {sensor.name} was left behind")
            if sensor.health is not None:
                sensor.health.sync(len(sensor.times))
        done: set[int] = set()
        for sensor in self.sensors:
            for pair in sensor.pairs:
                if id(pair) not in done:
                    done.add(id(pair))
                    pair.sync(self.n)
        for sensor in sorted(self.sensors, key=lambda x: int(x.pos[0])):
            engine.set_last_reading_time(sensor.name, sensor.times[-1])
        engine.stats.readings_processed += self.n - self.real_calls
        for sensor in self.sensors:
            st = sensor.st
            if sensor.batch and sensor.chain and st is not None and st.due is not None:
                # The walked offline check goes back to the engine's heap (the batch's
                # hold on it has ended).
                engine.schedule(self.hname, st.due, sensor.name)


__all__ = [
    "BatchDiverged",
    "BatchEngine",
    "ReadingColumns",
    "feed_columns",
    "release",
    "release_buffered",
    "take_chunk",
    "usable_here",
]
