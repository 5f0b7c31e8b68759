"""The per-hour summaries (ingest/store/summaries.py) kept with the readings, on both backends.

Whatever order readings arrive in, in whatever commits, twice or late, the
kept summaries equal a computation from scratch over the stored readings and
over the readings as they first came; a window's summaries equal the window's
readings summarised; an older store gets them filled once on open.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.events import SensorReading
from ingest.store.from_url import is_postgres_url, open_store
from ingest.store.queries import SqlStore
from ingest.store.summaries import HOUR_MS, HourSummary, pick, summarise
from tests.ingest.conftest import BACKENDS

both = pytest.mark.parametrize("store_db", BACKENDS, indirect=True)
SENSORS = ("turb-up", "turb-down")
STATION = {"turb-up": "up-1", "turb-down": "down-1"}
H = HOUR_MS
FAR = 2**40
_sites = itertools.count()

# One reading: (sensor, minute from 0 to 4 h, value, flags). Values from a small set so
# that medians tie and readings repeat; flags: none, soft, hard, informational.
readings = st.lists(
    st.tuples(
        st.sampled_from(SENSORS),
        st.integers(0, 4 * 60),
        st.sampled_from([0.0, 1.5, 2.0, 7.25, -3.0, 180.0, math.inf]),
        st.sampled_from(
            [(), ("spike",), ("out_of_range",), ("backfilled",), ("spike", "backfilled")]
        ),
    ),
    max_size=60,
)


def _reading(sensor: str, minute: int, value: float, flags: tuple[str, ...]) -> SensorReading:
    return SensorReading(sensor, minute * 60_000, value, None, frozenset(flags))


def _fresh(points: list[SensorReading]) -> list[tuple[int, HourSummary]]:
    return summarise((r.t, r.value, r.flags) for r in points)


def _check_kept(store: SqlStore, site: str, came: list[SensorReading]) -> None:
    """Kept rows equal the stored readings summarised, and the readings as they first came."""
    first: dict[tuple[str, int], SensorReading] = {}
    for r in came:
        first.setdefault((r.sensor, r.t), r)
    for sensor in SENSORS:
        kept = store.stored_hours(site, sensor)
        assert kept == summarise(store.sensor_points(site, sensor, -FAR, FAR))
        assert kept == _fresh([r for (s, _), r in sorted(first.items()) if s == sensor])


@pytest.fixture
def one_store(store_db: str) -> Iterator[SqlStore]:
    s = open_store(store_db)
    yield s
    s.close()


@both
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batches=st.lists(readings, min_size=1, max_size=5),
    again=st.lists(st.integers(0, 10_000), max_size=6),
    grouped=st.booleans(),
    windows=st.lists(st.tuples(st.integers(-90, 300), st.integers(0, 300)), max_size=4),
)
def test_kept_summaries_equal_a_fresh_computation_whatever_the_order(
    one_store: SqlStore,
    batches: list[list[tuple[str, int, float, tuple[str, ...]]]],
    again: list[int],
    grouped: bool,
    windows: list[tuple[int, int]],
) -> None:
    store, site = one_store, f"site-{next(_sites)}"
    came = [_reading(*row) for batch in batches for row in batch]
    # Some readings are sent again later (a resend, with a changed value: the first stays).
    picked = [came[i % len(came)] for i in again] if came else []
    resent = [SensorReading(r.sensor, r.t, r.value + 1, None, frozenset()) for r in picked]
    commits = [[_reading(*row) for row in batch] for batch in batches] + [[r] for r in resent]
    for commit in commits:
        pairs = [(STATION[r.sensor], r) for r in commit]
        if grouped:  # a group commit: each reading its own message
            with store.transaction():
                store.insert_reading_groups(site, [([p], 5) for p in pairs])
        else:
            store.add_readings(site, pairs, 5)
    _check_kept(store, site, came + resent)
    for start_min, length_min in windows:
        start, end = (
            start_min * 60_000 + 30_000 * (start_min % 2),
            (start_min + length_min) * 60_000,
        )
        for sensor in SENSORS:
            for median in (False, True):
                fresh = pick(
                    summarise(store.sensor_points(site, sensor, start, end)), median=median
                )
                assert store.hour_summaries(site, sensor, start, end, median=median) == fresh


@both
def test_a_reading_sent_late_recomputes_its_hour_only(one_store: SqlStore) -> None:
    store, site = one_store, "late"
    store.add_readings(
        site, [("up-1", _reading("turb-up", m, float(m), ())) for m in range(0, 180, 10)], 1
    )
    before = store.stored_hours(site, "turb-up")
    store.add_readings(site, [("up-1", _reading("turb-up", 65, 900.0, ("backfilled",)))], 2)
    after = store.stored_hours(site, "turb-up")
    assert [s for _, s in after if s.hour != 1] == [s for _, s in before if s.hour != 1]
    (hour_1,) = [s for _, s in after if s.hour == 1]
    assert (hour_1.n, hour_1.lo, hour_1.hi, hour_1.mid) == (7, 60.0, 900.0, 90.0)


@both
def test_a_spike_counts_in_the_median_summary_only(one_store: SqlStore) -> None:
    store, site = one_store, "soft"
    rows = [_reading("turb-down", 1, 5.0, ()), _reading("turb-down", 2, 300.0, ("spike",))]
    store.add_readings(site, [("down-1", r) for r in rows], 1)
    (plain,) = store.hour_summaries(site, "turb-down", 0, H - 1)
    (median,) = store.hour_summaries(site, "turb-down", 0, H - 1, median=True)
    assert (plain.n, plain.hi) == (1, 5.0)
    assert (median.n, median.hi, median.mid) == (2, 300.0, 152.5)


@both
def test_a_store_from_before_the_summaries_fills_them_on_open(store_db: str) -> None:
    store = open_store(store_db)
    came = [
        _reading(s, m, float(m % 7), ("spike",) if m % 5 == 0 else ())
        for s in SENSORS
        for m in range(0, 600, 3)
    ]
    store.add_readings("old", [(STATION[r.sensor], r) for r in came], 1)
    # What siltwatch before schema v8 wrote: no reading_hours table.
    postgres = is_postgres_url(store_db)
    version = "UPDATE siltwatch_schema SET version = 7" if postgres else "PRAGMA user_version=7"
    with store.transaction():
        for statement in ("DROP TABLE reading_hours", version):
            store._execute(statement)
    store.close()
    store = open_store(store_db)
    try:
        _check_kept(store, "old", came)
        assert len(store.stored_hours("old", "turb-up")) == 20  # 10 hours, each with a spike
    finally:
        store.close()
