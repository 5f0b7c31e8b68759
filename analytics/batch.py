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
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from analytics.batch_columns import ReadingColumns, numpy_available
from analytics.events import SensorReading
from analytics.health import FLATLINE, OUT_OF_RANGE, SPIKE, SensorHealth, _SensorState
from analytics.inspections import InspectionDetector
from analytics.robust import median_of_sorted
from analytics.turbidity import UPSTREAM_HORIZON_MS, TurbidityContrast
from siltwatch.rulemath import (
    NO_INCREASE_TOLERANCE_FRACTION,
    NO_INCREASE_TOLERANCE_NTU,
)
from siltwatch.rulemath import LimitRule as _RuleMathLimit

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from analytics.engine import Engine

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

_READING = 0  # analytics.engine's kind of a reading in the buffer


class BatchDiverged(RuntimeError):
    """A real call did not do what the plan said it would: a bug, never data."""


def usable_here(engine: Engine) -> bool:
    """Whether the engine may take the batch path at all (a replay, numpy at hand)."""
    if not engine.batch or engine._live or not numpy_available():
        return False
    screen = engine._screen
    return screen is None or (
        type(screen) is SensorHealth and engine.detectors.get(screen.name) is screen
    )


# --- intake ----------------------------------------------------------------------------


def feed_columns(engine: Engine, block: ReadingColumns) -> bool:
    """``engine.feed(block)``, on arrays; False (nothing changed) when it must be row-wise."""
    if not usable_here(engine):
        return False
    import numpy as np

    names = list(engine._by_sensor)
    index = {name: i for i, name in enumerate(names)}
    to_engine = np.array([index.get(name, -1) for name in block.names], dtype=np.int64)
    code = np.asarray(block.code, dtype=np.int64)
    t = np.asarray(block.t, dtype=np.int64)
    value = np.asarray(block.value, dtype=np.float64)
    sidx = to_engine[code] if len(code) else np.zeros(0, np.int64)
    known = sidx >= 0
    kt, kv, ks = t[known], value[known], sidx[known]
    if not bool(np.isfinite(kv).all()):
        return False
    released = engine._released_to
    if released is not None and len(kt) and int(kt.min()) <= released:
        return False  # late data: the per-reading path handles it where it falls
    held = _buffered_readings(engine)
    if held is None:
        return False
    last = engine._last_sensor_t
    if last and len(kt):
        floor = np.array([last.get(name, np.iinfo(np.int64).min) for name in names], np.int64)
        if bool((kt <= floor[ks]).any()):
            return False

    # From here on the engine changes: the per-reading path's bookkeeping, on arrays.
    stats = engine.stats
    stats.readings_in += len(t)
    if not bool(known.all()):
        _count_unknown(engine, block, code[~known])
    _take_buffered(engine, held)
    n_held = len(held)
    h_t = np.array([r.t for r in held], dtype=np.int64)
    h_v = np.array([r.value for r in held], dtype=np.float64)
    h_s = np.array([index[r.sensor] for r in held], dtype=np.int64)
    all_t = np.concatenate([h_t, kt])
    all_v = np.concatenate([h_v, kv])
    all_s = np.concatenate([h_s, ks])
    arrival = np.arange(len(all_t))  # buffered readings first: they were fed first
    rank = _name_ranks(names)
    if not _in_order(all_t, rank[all_s]):
        order = np.lexsort((arrival, rank[all_s], all_t))
        all_t, all_v, all_s, arrival = all_t[order], all_v[order], all_s[order], arrival[order]
    keep = np.ones(len(all_t), dtype=bool)
    if len(all_t) > 1:
        keep[1:] = (all_t[1:] != all_t[:-1]) | (all_s[1:] != all_s[:-1])
    stats.duplicates += int((~keep).sum())
    all_t, all_v, all_s, arrival = all_t[keep], all_v[keep], all_s[keep], arrival[keep]
    fresh = arrival >= n_held
    _progress(engine, names, all_t[fresh], all_s[fresh], arrival[fresh])

    wm = engine.watermark
    if wm is None:
        _push_back(engine, names, all_t, all_v, all_s)
        return True
    cut = int(np.searchsorted(all_t, wm, side="right"))
    release(engine, names, all_s[:cut], all_t[:cut], all_v[:cut], wm)
    _push_back(engine, names, all_t[cut:], all_v[cut:], all_s[cut:])
    return True


def release_buffered(engine: Engine, limit: int) -> bool:
    """``engine._run_until(limit)`` with its buffered readings as a batch (False: not done)."""
    if not usable_here(engine) or len(engine._buffered_keys) < MIN_BUFFERED:
        return False
    import numpy as np

    held = _buffered_readings(engine)
    if held is None:
        return False
    released = engine._released_to
    if released is not None and any(r.t <= released for r in held):
        return False
    names = list(engine._by_sensor)
    index = {name: i for i, name in enumerate(names)}
    _take_buffered(engine, held)
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


def _buffered_readings(engine: Engine) -> list[SensorReading] | None:
    """The readings waiting in the buffer, or None if one carries flags or a sequence number."""
    held: list[SensorReading] = []
    for entry in engine._buffer:
        if entry[1] == _READING:
            r = entry[3]
            if r.flags or r.seq is not None:
                return None
            held.append(r)
    return held


def _take_buffered(engine: Engine, held: list[SensorReading]) -> None:
    if not held:
        return
    engine._buffer = [e for e in engine._buffer if e[1] != _READING]
    heapq.heapify(engine._buffer)
    engine._buffered_keys.clear()


def _push_back(engine: Engine, names: list[str], t: Ints, v: Floats, s: Ints) -> None:
    """Readings beyond the watermark wait in the buffer, as ``feed`` leaves them."""
    buffer, keys = engine._buffer, engine._buffered_keys
    for sensor_i, ti, vi in zip(s.tolist(), t.tolist(), v.tolist(), strict=True):
        name = names[sensor_i]
        keys.add((name, ti))
        heapq.heappush(buffer, (ti, _READING, name, SensorReading(name, ti, vi)))


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


def _count_unknown(engine: Engine, block: ReadingColumns, codes: Ints) -> None:
    import numpy as np

    stats = engine.stats
    stats.unknown_sensor += len(codes)
    uniq, first, counts = np.unique(codes, return_index=True, return_counts=True)
    for i in np.argsort(first, kind="stable").tolist():
        name = block.names[int(uniq[i])]
        stats.unknown_sensors[name] = stats.unknown_sensors.get(name, 0) + int(counts[i])


def _progress(engine: Engine, names: list[str], t: Ints, s: Ints, arrival: Ints) -> None:
    """``Engine._progress`` for every fresh reading: the replay watermark, station clocks."""
    import numpy as np

    from analytics.engine import StationClock

    if not len(t):
        return
    top = int(t.max())
    if engine._max_seen is None or top > engine._max_seen:
        engine._max_seen = top
    station_of = engine._station_of
    stations = sorted({st for st in station_of.values()})
    number = {st: k for k, st in enumerate(stations)}
    of_sensor = np.array([number.get(station_of.get(name, ""), -1) for name in names], np.int64)
    code = of_sensor[s]
    mine = code >= 0
    code, t, arrival = code[mine], t[mine], arrival[mine]
    if not len(code):
        return
    latest = np.full(len(stations), np.iinfo(np.int64).min)
    np.maximum.at(latest, code, t)
    first = np.full(len(stations), np.iinfo(np.int64).max)
    np.minimum.at(first, code, arrival)
    present = np.flatnonzero(first < np.iinfo(np.int64).max)
    for k in present[np.argsort(first[present], kind="stable")].tolist():  # new ones in feed order
        station, newest = stations[k], int(latest[k])
        clock = engine._stations.get(station)
        if clock is None:
            engine._stations[station] = StationClock(newest, None)
        elif clock.progress is None or newest > clock.progress:
            clock.progress = newest


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
        self.st: _SensorState | None = None
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

    def __init__(self, s: _Sensor, st: _SensorState) -> None:
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


def _idle(det: TurbidityContrast) -> bool:
    """Nothing in progress: a judgeable reading under the limit changes nothing but windows."""
    return (
        not det.open
        and det.exceed_since is None
        and det.blind_since is None
        and not det.blind_open
        and det.clear_since is None
        and det.peak is None
    )


# --- the merge -------------------------------------------------------------------------


def release(engine: Engine, names: list[str], s: Ints, t: Ints, v: Floats, limit: int) -> None:
    """Process readings (sorted by time then sensor id, unique, all after ``processed_to``)
    with everything else buffered and every timer up to ``limit``, as ``_run_until`` does."""
    batch = _Batch(engine, names, s, t, v, limit)
    engine._hold = batch.hold
    try:
        batch.run()
        batch.finish()
    finally:
        engine._hold = None
    if engine._released_to is None or limit > engine._released_to:
        engine._released_to = limit


SensorEvent = tuple[tuple[Any, ...], int, int, int, int, int]
"""(key, seq, version, sensor, kind 0 row / 1 offline check, row index or time)."""


class _Batch:
    def __init__(
        self, engine: Engine, names: list[str], s: Ints, t: Ints, v: Floats, limit: int
    ) -> None:
        import numpy as np

        self.engine = engine
        self.limit = limit
        self.n = len(t)
        self.real_calls = 0
        self.seq = 0
        self.events: list[SensorEvent] = []
        screen = engine._screen
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
        timers_of: dict[str, list[int]] = {}
        if health is not None:
            for at, name, tag in engine._timers:
                if name == self.hname:
                    timers_of.setdefault(tag, []).append(at)
        pairs: dict[str, TurbidityContrast] = {}
        for sensor in self.sensors:
            for det in engine._by_sensor.get(sensor.name, ()):
                if type(det) is TurbidityContrast:
                    pairs[det.name] = det
                elif type(det) is not InspectionDetector:
                    sensor.batch = False
            if health is not None:
                st = health._states.get(sensor.name)
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
            if type(det) is InspectionDetector and det.started_at is None:
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
        engine = self.engine
        engine._timer_keys.discard(key)
        engine._timers.remove(key)
        heapq.heapify(engine._timers)

    # --- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        engine = self.engine
        ctx = engine.ctx
        buffer, timers = engine._buffer, engine._timers
        events, sensors = self.events, self.sensors
        limit = self.limit
        detectors = engine.detectors
        from analytics.engine import _DELIVERY

        for sensor in sensors:
            self._schedule(sensor)
        while True:
            while events and events[0][2] != sensors[events[0][3]].version:
                heapq.heappop(events)
            best: tuple[Any, ...] | None = events[0][0] if events else None
            source = 0
            if buffer and buffer[0][0] <= limit:
                b = buffer[0]
                input_key: tuple[Any, ...] = (b[0], 0, b[1], b[2])
                if best is None or input_key < best:
                    best, source = input_key, 1
            if timers and timers[0][0] <= limit:
                tm = timers[0]
                timer_key: tuple[Any, ...] = (tm[0], 1, tm[1], tm[2])
                if best is None or timer_key < best:
                    best, source = timer_key, 2
            if best is None:
                return
            if source == 1:
                _t, kind, _tie, payload = heapq.heappop(buffer)
                if kind == _READING:
                    raise BatchDiverged("a reading was left in the buffer")
                method = _DELIVERY[kind]
                for det in detectors.values():
                    getattr(det, method)(payload, ctx)
            elif source == 2:
                at, name, tag = heapq.heappop(timers)
                engine._timer_keys.discard((at, name, tag))
                engine.stats.timers_fired += 1
                detectors[name].on_timer(at, tag, ctx)
            else:
                event = heapq.heappop(events)
                i, kind, where = event[3], event[4], event[5]
                if kind == 0:
                    self._real_row(sensors[i], where)
                else:
                    self._offline_check(sensors[i], where)

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
                    busy = any(not _idle(p.det) for p in sensor.down_pairs)
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

    def hold(self, name: str, at: int, tag: str) -> bool:
        """Engine.schedule during the batch: a batched sensor's offline check stays here."""
        if name != self.hname:
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
        screen = engine._screen
        screened = (reading,) if screen is None else tuple(screen(reading, engine.ctx))
        if plan is not None and (len(screened) != 1 or screened[0].flags != plan.added(j)):
            raise BatchDiverged(f"the screen flagged {name} at {t} otherwise than planned")
        ctx = engine.ctx
        by_sensor = engine._by_sensor
        for checked in screened:
            for det in by_sensor.get(checked.sensor, ()):
                det.on_reading(checked, ctx)
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
        last = engine._last_sensor_t
        for sensor in sorted(self.sensors, key=lambda x: int(x.pos[0])):
            last[sensor.name] = sensor.times[-1]
        engine.stats.readings_processed += self.n - self.real_calls
        for sensor in self.sensors:
            st = sensor.st
            if sensor.batch and sensor.chain and st is not None and st.due is not None:
                key = (st.due, self.hname, sensor.name)
                if key not in engine._timer_keys:
                    engine._timer_keys.add(key)
                    heapq.heappush(engine._timers, key)


__all__ = [
    "BatchDiverged",
    "ReadingColumns",
    "feed_columns",
    "release",
    "release_buffered",
    "usable_here",
]
