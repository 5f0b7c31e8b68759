"""A restart's or rebuild's stored history on the batch path (issue 24).

:meth:`analytics.engine.Engine.catch_up` feeds the engine the store's history
in chunks sorted by event time. Row by row that is the per-reading path: every
reading pushed on the heap, screened and handed to its detectors one call at a
time. A year of a site is over a million such calls, which is why a rebuild
after a site change took several times a ``replay`` of the same year.

A chunk from the store is exactly what the batch path (analytics/batch.py)
is made for: readings in (time, sensor) order, all after what the engine has
processed. :func:`take_chunk` does what ``catch_up`` does with one chunk (the
intake checks, the station progress, then processing everything up to
``limit``) with the batch path's :func:`~analytics.batch.release`, which gives
the per-reading path's effects exactly (tests/analytics/test_batch_path.py
holds it to that). The engine of a catch-up is live (its station clocks came
from the store), which is why ``feed_columns`` would refuse it; the catch-up
sets the release limit itself, so the per-station watermark plays no part.

Whatever the batch path cannot take exactly is left to ``catch_up``'s own loop,
before anything is changed: a chunk with a flagged reading (flags steer the
quality screen), data at or before what was processed, readings waiting in the
buffer with flags or sequence numbers, a value that is not finite, a screen
the batch path does not know, or a chunk too small to be worth the arrays.

No I/O, no clock: the readings come with their times.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from analytics.batch import (
    _buffered_readings,
    _in_order,
    _name_ranks,
    _progress,
    _push_back,
    _take_buffered,
    release,
)
from analytics.batch_columns import numpy_available
from analytics.events import SensorReading
from analytics.health import SensorHealth

if TYPE_CHECKING:
    from analytics.engine import Engine

MIN_CHUNK = 256  # below this the per-reading loop is as quick as building the arrays


def _batch_allowed(engine: Engine) -> bool:
    """The batch path's own conditions, except that the engine may be live."""
    if not engine.batch or not numpy_available():
        return False
    screen = engine._screen
    return screen is None or (
        type(screen) is SensorHealth and engine.detectors.get(screen.name) is screen
    )


def take_chunk(engine: Engine, chunk: Sequence[SensorReading], limit: int) -> bool:
    """``catch_up``'s work for one chunk, on the batch path; False: nothing was changed
    and the chunk must go row by row."""
    if len(chunk) < MIN_CHUNK or not _batch_allowed(engine):
        return False
    if any(r.flags for r in chunk):
        return False
    import numpy as np

    names = list(engine._by_sensor)
    index = {name: i for i, name in enumerate(names)}
    s_all = np.fromiter((index.get(r.sensor, -1) for r in chunk), np.int64, len(chunk))
    t_all = np.fromiter((r.t for r in chunk), np.int64, len(chunk))
    v_all = np.fromiter((r.value for r in chunk), np.float64, len(chunk))
    known = s_all >= 0
    kt, kv, ks = t_all[known], v_all[known], s_all[known]
    if not bool(np.isfinite(kv).all()):
        return False
    released = engine._released_to
    if released is not None and len(kt) and int(kt.min()) <= released:
        return False  # catch_up counts those as duplicates, one by one
    held = _buffered_readings(engine)
    if held is None:
        return False

    # From here on the engine changes, as catch_up's loop would change it.
    stats = engine.stats
    stats.readings_in += len(chunk)
    unknown = len(chunk) - int(known.sum())
    stats.unknown_sensor += unknown  # (catch_up counts them, not by name)
    _take_buffered(engine, held)
    n_held = len(held)
    h_t = np.array([r.t for r in held], dtype=np.int64)
    h_v = np.array([r.value for r in held], dtype=np.float64)
    h_s = np.array([index[r.sensor] for r in held], dtype=np.int64)
    all_t = np.concatenate([h_t, kt])
    all_v = np.concatenate([h_v, kv])
    all_s = np.concatenate([h_s, ks])
    arrival = np.arange(len(all_t))  # what was buffered first: it came first
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
    if released is not None and limit <= released:
        _push_back(engine, names, all_t, all_v, all_s)  # nothing may be processed yet
        return True
    cut = int(np.searchsorted(all_t, limit, side="right"))
    release(engine, names, all_s[:cut], all_t[:cut], all_v[:cut], limit)
    _push_back(engine, names, all_t[cut:], all_v[cut:], all_s[cut:])
    return True
