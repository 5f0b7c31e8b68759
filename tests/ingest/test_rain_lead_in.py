"""A rain record of a date range, replayed from a bounded lead-in, is the whole history's.

ingest/rain_lead_in.py replays the gauges only from the start of a quiet
stretch before the range. On generated rain (storms of every length, drizzle,
gaps in the data, flagged and impossible readings, rain across midnight and
across the range's start) the daily rain log of ``siltwatch records`` and the
report's rain rows and storms from any day on are the ones the whole history
gives; the lead-in is bounded when the weather allows it, and is the whole
history when it never stops raining.
"""

from __future__ import annotations

import random
import tempfile
from datetime import date, datetime, time, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.events import SensorReading
from analytics.timeutil import MS_PER_MIN
from console.report.document import Period, rain_record, rain_rows, storm_rows
from ingest.outputs.records import daily_rain
from ingest.rain_lead_in import MAX_LEAD_IN_MS, gauge_readings, lead_in_start, quiet_ms
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site

SITE = load_site(Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml")
SID = SITE.site.id
ZONE = SITE.site.zone
FIRST_DAY = date(2026, 3, 1)
T0 = round(datetime.combine(FIRST_DAY, time(0), ZONE).timestamp() * 1000)
EVERY = 5 * MS_PER_MIN


def rain(seed: int, days: int, storms: int) -> list[SensorReading]:
    """A 5-minute gauge: dry, with storms (some long, some drizzle), a data gap, a few
    flagged and impossible readings."""
    rng = random.Random(seed)
    n = days * 288
    depth = [0.0] * n
    for _ in range(storms):
        start, length = rng.randrange(n), rng.choice([3, 12, 60, 200, 500])
        for i in range(start, min(n, start + length)):
            if rng.random() < 0.7:
                depth[i] = round(rng.choice([0.01, 0.01, 0.02, 0.05]), 2)
    gap = rng.randrange(n)
    out = []
    for i, d in enumerate(depth):
        if gap <= i < gap + rng.choice([0, 30, 400]):
            continue
        flags: frozenset[str] = frozenset()
        if rng.random() < 0.002:
            flags = frozenset({"sensor_fault"})
        if rng.random() < 0.001:
            d = -1.0
        out.append(SensorReading("rain-1", T0 + (i + 1) * EVERY, d, None, flags))
    return out


def stored(readings: list[SensorReading], folder: Path) -> SqliteStore:
    store = SqliteStore(folder / "rain.sqlite3")
    store.add_readings(SID, [("basin-1", r) for r in readings], 0)
    return store


def midnight(day: date) -> int:
    return round(datetime.combine(day, time(0), ZONE).timestamp() * 1000)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    storms=st.sampled_from([2, 6, 15]),
    firsts=st.lists(st.integers(0, 29), min_size=3, max_size=3),
)
def test_the_records_from_any_day_are_the_whole_historys(
    seed: int, storms: int, firsts: list[int]
) -> None:
    readings = rain(seed, 30, storms)
    with tempfile.TemporaryDirectory() as folder:
        store = stored(readings, Path(folder))
        try:
            whole_log = daily_rain(store, SITE)
            whole_days, whole_storms = rain_record(SITE, store)
            for offset in firsts:
                first = FIRST_DAY + timedelta(days=offset)
                last = first + timedelta(days=6)
                start_ms = midnight(first)
                period = Period.of(SITE, first, last)
                log = daily_rain(store, SITE, start_ms, period.end_ms)
                assert [r for r in log if first <= r.day <= last] == [
                    r for r in whole_log if first <= r.day <= last
                ], f"seed={seed} from {first}"
                days, storms_seen = rain_record(SITE, store, start_ms, period.end_ms)
                assert rain_rows(SITE, days, period) == rain_rows(SITE, whole_days, period)
                assert storm_rows(SITE, storms_seen, [], period) == storm_rows(
                    SITE, whole_storms, [], period
                ), f"seed={seed} from {first}"
        finally:
            store.close()


def test_the_lead_in_is_bounded_when_it_stops_raining(tmp_path: Path) -> None:
    # Dry for 40 days but for one 10-hour storm across the range's first midnight.
    start_ms = midnight(FIRST_DAY + timedelta(days=32))
    storm = (start_ms - 7 * 3_600_000, start_ms + 3 * 3_600_000)
    readings = [
        SensorReading(r.sensor, r.t, 0.02 if storm[0] < r.t <= storm[1] else 0.0)
        for r in rain(7, 40, 0)
    ]
    store = stored(readings, tmp_path)
    try:
        since = lead_in_start(SITE, store, start_ms)
        assert since is not None
        assert since + quiet_ms(SITE) <= storm[0], "the storm reaching into the range is whole"
        assert start_ms - since <= 2 * 86_400_000, "a day or two, not the whole history"
        period = Period.of(SITE, FIRST_DAY + timedelta(days=32), FIRST_DAY + timedelta(days=33))
        needed = gauge_readings(SITE, store, start_ms, period.end_ms)
        # From the quiet day before the storm's first midnight to a quiet day after the
        # range: 5 days of 5-minute readings, not the 40 stored.
        assert len(needed) <= 5 * 288 + 1, "days, not the whole history"
        assert needed[-1].t >= storm[1] + quiet_ms(SITE), "the storm after the range is whole"
        _days, storms = rain_record(SITE, store, period.start_ms, period.end_ms)
        (row,) = storm_rows(SITE, storms, [], period)
        assert row.depth == "2.40 in", "120 readings of 0.02 in: the whole storm"
        assert storm_rows(SITE, storms, [], period) == storm_rows(
            SITE, rain_record(SITE, store)[1], [], period
        )
    finally:
        store.close()


def test_without_a_quiet_stretch_the_whole_history_is_replayed(tmp_path: Path) -> None:
    drizzle = [
        SensorReading("rain-1", T0 + i * EVERY, 0.01 if i % 60 == 0 else 0.0)
        for i in range(1, (MAX_LEAD_IN_MS // EVERY) + 40 * 288)
    ]
    store = stored(drizzle, tmp_path)
    try:
        start_ms = drizzle[-1].t - 86_400_000
        assert lead_in_start(SITE, store, start_ms) is None
        assert len(gauge_readings(SITE, store, start_ms)) == len(drizzle)
        assert len(gauge_readings(SITE, store, start_ms, start_ms + 3_600_000)) == len(drizzle)
    finally:
        store.close()
