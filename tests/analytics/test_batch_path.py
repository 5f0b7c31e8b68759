"""One answer either way: the engine's batch path and its per-reading path agree, byte for byte.

The batch path (analytics/batch.py) takes readings as columns and calls the
screen and the detectors only where something may happen. These properties
hold it to the per-reading path on generated data:

* ALERTS.jsonl and DUTIES.jsonl text, the engine's counters and its whole
  state (the snapshot, the timer heap taken as the set it is) are identical;
* with late readings (beyond the allowed lateness: used where they can be, or
  dropped), duplicates (re-sent much later too), chunk boundaries anywhere
  (inside a plume, a sustain run, a calm spell, a gap), sensor gaps (offline
  episodes), impossible values and frozen probes (data-quality episodes),
  debris spikes, plumes that hover at the limit, timestamps that jitter;
* on sites with several pairs (a shared upstream probe, no travel time with
  either id order, the packs' and the sites' limit shapes), and on the
  property site of tests/analytics/strategies.py (rain, level and sediment
  sensors whose readings always take the per-reading path);
* with the windows always rebuilt from the arrays, or always moved by their
  own methods (the two ways the batch path brings them up to date);
* through a snapshot and restore in the middle of a batched run.

No test here times anything: the speed is measured by benchmarks/replay.py.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from analytics import batch
from analytics.batch_columns import ReadingColumns
from analytics.engine import Engine
from analytics.events import Inspection, SensorReading, StationReport
from analytics.timers import Tag
from analytics.timeutil import MS_PER_MIN, MS_PER_S
from ingest.recordings.csv_rows import read_csv_rows
from ingest.recordings.formats import read_inspections, read_site_log
from ingest.recordings.replay import replay_site
from siltwatch.config import SiteConfig, load_site
from tests.analytics.strategies import (
    CUTS,
    PROPERTY_SETTINGS,
    SEEDS,
    Recording,
    recordings,
    sensor_spans,
)
from tests.analytics.turbidity_helpers import T0

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
LATENESS_S = 600.0
LATENESS_MS = round(LATENESS_S * MS_PER_S)


# --- running both paths ----------------------------------------------------------------


def outputs(engine: Engine) -> tuple[str, str]:
    """ALERTS.jsonl and DUTIES.jsonl as the replay writes them."""
    alerts = "".join(a.model_dump_json() + "\n" for a in engine.alerts())
    duties = "".join(d.model_dump_json() + "\n" for d in engine.duties())
    return alerts, duties


def state(engine: Engine) -> tuple[dict[str, Any], list[tuple[int, str, Tag]]]:
    """The snapshot as JSON, and the timers as a sorted list: the heap's layout depends on
    the order of its pushes and pops, what it holds does not."""
    doc: dict[str, Any] = json.loads(zlib.decompress(engine.snapshot()))
    items = doc["state"]["$dict"]
    doc["state"]["$dict"] = [item for item in items if item[0] not in ("_timers", "_timer_keys")]
    assert set(engine._timers) == engine._timer_keys
    return doc, sorted(engine._timers)


def run(
    site: SiteConfig,
    parts: Sequence[Sequence[SensorReading]],
    end: int,
    *,
    batched: bool,
    restore_at: int | None = None,
) -> Engine:
    """Feed the parts (columns on the batch path, lists on the other), finish at ``end``."""
    engine = Engine(site, allowed_lateness_s=LATENESS_S, batch=batched)
    for k, part in enumerate(parts):
        if restore_at == k:
            engine = Engine.restore(site, engine.snapshot())
        if batched:
            engine.feed_columns(ReadingColumns.from_readings(part))
        else:
            engine.feed(part)
    engine.finish(end)
    return engine


def assert_one_answer(
    site: SiteConfig,
    parts: Sequence[Sequence[SensorReading]],
    end: int,
    plan: str,
    *,
    generated: bool = True,
) -> Engine:
    slow = run(site, parts, end, batched=False)
    fast = run(site, parts, end, batched=True)
    assert outputs(fast) == outputs(slow), plan
    assert fast.stats == slow.stats, plan
    assert state(fast) == state(slow), plan
    if generated:
        label(slow)
    return slow


def label(engine: Engine) -> None:
    """Hypothesis statistics (pytest --hypothesis-show-statistics) show what was exercised."""
    alerts, _ = outputs(engine)
    for kind in ("turbidity_contrast", "sensor_offline", "data_quality"):
        if f'"kind":"{kind}"' in alerts:
            event(f"has {kind}")
    if '"severity":"critical"' in alerts:
        event("has a critical episode")
    stats = engine.stats
    if stats.late_processed:
        event("late readings used")
    if stats.late_dropped:
        event("late readings dropped")
    if stats.duplicates:
        event("duplicates")


def deliveries(
    readings: Sequence[SensorReading],
    seed: int,
    duplicates: int,
    late: int,
    backfill: tuple[int, int] | None = None,
) -> list[SensorReading]:
    """The readings as a broker might deliver them: each delayed by less than the lateness,
    ``late`` of them by up to four times it (late data, dropped), ``duplicates`` copies
    (some with another value: the first one fed wins) re-sent up to three times the
    lateness on, and ``backfill`` (start, minutes): from ``start`` on, one sensor's
    readings arrive that many minutes plus twice the lateness late, in order (a station
    catching up after an outage: late data the engine uses where it falls)."""
    rng = random.Random(seed)
    timed = [(r.t + rng.randrange(LATENESS_MS), i, r) for i, r in enumerate(readings)]
    n = len(timed)
    if readings:
        for k in rng.sample(range(n), min(late, n)):
            _, i, r = timed[k]
            timed[k] = (r.t + rng.randrange(LATENESS_MS, 4 * LATENESS_MS), i, r)
        if backfill is not None:
            sensor = rng.choice(sorted({r.sensor for r in readings}))
            start = readings[0].t + backfill[0] * MS_PER_MIN
            delay = backfill[1] * MS_PER_MIN + 2 * LATENESS_MS
            for k, (_, i, r) in enumerate(timed):
                if r.sensor == sensor and r.t >= start:
                    timed[k] = (r.t + delay, i, r)
        for k in range(duplicates):
            r = rng.choice(readings)
            if rng.random() < 0.5:
                r = SensorReading(r.sensor, r.t, r.value + 1.0)
            timed.append((r.t + rng.randrange(3 * LATENESS_MS), n + k, r))
    timed.sort(key=lambda item: (item[0], item[1]))
    return [r for _, _, r in timed]


def chunked(
    items: list[SensorReading], seed: int, sizes: Sequence[int]
) -> list[list[SensorReading]]:
    """Feed calls of random sizes (so chunk boundaries fall anywhere in an episode)."""
    rng = random.Random(seed)
    out: list[list[SensorReading]] = []
    i = 0
    while i < len(items):
        size = rng.choice(sizes)
        out.append(items[i : i + size])
        i += size
    return out


# How many quiet readings the batch path moves the windows over by their own methods
# before it rebuilds them from the arrays: never, always, or its own choice.
SYNC_MODES = {"rebuilt": 0, "stepped": 10**9, "mixed": batch.INCREMENTAL}


# --- generated multi-pair sites ----------------------------------------------------------

LIMITS: dict[str, dict[str, Any]] = {
    "ny-25-over": {"packs": ["ny-lake-george"], "limit": {"over_background_ntu": 25}},
    "ny-cap-30": {"packs": ["ny-lake-george"], "limit": {"max_ntu": 30}},
    "ny-pct-20": {"packs": ["ny-lake-george"], "limit": {"over_background_pct": 20}},
    "ny-wa-knee": {
        "packs": ["ny-lake-george"],
        "limit": {
            "over_background_ntu": 5,
            "over_background_pct": 10,
            "pct_above_background_ntu": 50,
        },
    },
    "nc-stream": {"packs": ["nc-ncg01", "nc-lake-lure"], "limit": None},  # 50 NTU, no increase
}

# (upstream, downstream) ids: the first pair's upstream sorts before its downstream,
# the second's after (at one instant the engine takes readings in id order), and the
# third shares the first's upstream probe.
PAIR_IDS = (("a-up", "b-down"), ("z-up", "c-down"), ("a-up", "d-down"))


def multi_pair_site(
    limits: str, pairs: int, travel: Sequence[int], window_s: int | None, sustain_s: int | None
) -> SiteConfig:
    shape = LIMITS[limits]
    used = PAIR_IDS[:pairs]
    sensors = sorted({s for pair in used for s in pair})
    turbidity_pairs: list[dict[str, Any]] = []
    for k, (up, down) in enumerate(used):
        pair: dict[str, Any] = {
            "id": f"outfall-{k}",
            "upstream": up,
            "downstream": down,
            "receiving_water": "brook",
            "travel_time_s": travel[k],
        }
        if shape["limit"] is not None:
            pair["limit"] = shape["limit"]
        if window_s is not None:
            pair["window_s"] = window_s
        if sustain_s is not None:
            pair["sustain_s"] = sustain_s
        turbidity_pairs.append(pair)
    return SiteConfig.model_validate(
        {
            "site": {
                "id": "batch-site",
                "name": "Batch site",
                "timezone": "America/New_York",
                "rule_packs": shape["packs"],
            },
            "receiving_waters": [{"id": "brook", "name": "Brook", "class": "stream"}],
            "stations": [
                {
                    "id": f"st-{s}",
                    "sensors": [{"id": s, "kind": "turbidity", "unit": "NTU", "interval_s": 60}],
                }
                for s in sensors
            ],
            "turbidity_pairs": turbidity_pairs,
        }
    )


@st.composite
def multi_pair_recordings(draw: st.DrawFn) -> Recording:
    limits = draw(st.sampled_from(sorted(LIMITS)))
    pairs = draw(st.integers(min_value=1, max_value=3))
    travel = draw(st.lists(st.sampled_from([0, 60, 90, 120]), min_size=3, max_size=3))
    window_s = draw(st.sampled_from([None, 300, 600]))
    sustain_s = draw(st.sampled_from([None, 0, 300, 1200]))
    site = multi_pair_site(limits, pairs, travel, window_s, sustain_s)
    minutes = draw(st.integers(min_value=60, max_value=330))
    seed = draw(SEEDS)
    background = draw(st.floats(min_value=0.5, max_value=80.0))
    jitter_s = draw(st.sampled_from([0, 0, 7, 45]))  # irregular timestamps (seconds)
    minute = st.integers(min_value=0, max_value=minutes - 1)
    sensors = sorted(site.sensors())
    # Plumes sized around the limit: near it, just over, far over.
    downstream = sorted(s for s in sensors if "down" in s)
    # Plumes mostly below the outfalls, sized anywhere, or hovering at a limit.
    plumes = draw(
        st.lists(
            st.tuples(
                st.sampled_from(downstream) | st.sampled_from(sensors),
                minute,
                st.integers(min_value=2, max_value=150),
                st.floats(min_value=0.5, max_value=400.0)
                | st.sampled_from([5.0, 24.0, 24.9, 25.0, 25.1, 26.0, 30.0, 48.9, 50.0, 51.0]),
            ),
            max_size=4,
        )
    )
    debris = draw(st.lists(st.tuples(st.sampled_from(sensors), minute), max_size=5))
    gaps = draw(st.lists(sensor_spans(sensors, minute, 2, 90), max_size=3))
    faults = draw(st.lists(sensor_spans(sensors, minute, 1, 40), max_size=2))
    stuck = draw(st.none() | sensor_spans(sensors, minute, 50, 200))
    rng = random.Random(seed)
    offset = {s: rng.randrange(0, 60) * MS_PER_S if jitter_s else 0 for s in sensors}
    out: list[SensorReading] = []
    frozen: dict[str, float] = {}
    for m in range(minutes):
        for s in sensors:
            if any(g == s and a <= m < a + n for g, a, n in gaps):
                continue
            value = background + (1.0 if "down" in s else 0.0) + rng.gauss(0.0, 0.4)
            for p, start, length, amplitude in plumes:
                if p == s and start <= m < start + length:
                    value += amplitude
            if (s, m) in debris:
                value += rng.uniform(200.0, 900.0)
            if stuck is not None and stuck[0] == s and stuck[1] <= m < stuck[1] + stuck[2]:
                value = frozen.setdefault(s, round(value, 2))
            if any(f == s and a <= m < a + n for f, a, n in faults):
                value = -20.0
            jitter = rng.randrange(-jitter_s, jitter_s + 1) * MS_PER_S if jitter_s else 0
            t = T0 + m * MS_PER_MIN + offset[s] + jitter
            out.append(SensorReading(s, t, round(value, 2)))
    out.sort(key=lambda r: (r.t, r.sensor))
    plan = (
        f"{limits} pairs={pairs} travel={travel} window={window_s} sustain={sustain_s} "
        f"minutes={minutes} seed={seed} bg={background:.2f} jitter={jitter_s} plumes={plumes} "
        f"debris={debris} gaps={gaps} faults={faults} stuck={stuck}"
    )
    return Recording(site, out, out[-1].t if out else T0, plan)


# --- the properties -------------------------------------------------------------------------


@settings(PROPERTY_SETTINGS, max_examples=80)
@given(
    rec=multi_pair_recordings(),
    seed=SEEDS,
    duplicates=st.integers(min_value=0, max_value=20),
    late=st.sampled_from([0, 0, 1, 5]),
    backfill=st.none() | st.tuples(st.integers(0, 200), st.integers(1, 60)),
    sizes=st.sampled_from([(100_000,), (40, 250), (61, 997, 3000), (500,)]),
)
def test_batch_and_per_reading_paths_give_one_answer_on_multi_pair_sites(
    rec: Recording,
    seed: int,
    duplicates: int,
    late: int,
    backfill: tuple[int, int] | None,
    sizes: tuple[int, ...],
) -> None:
    delivered = deliveries(rec.readings, seed, duplicates, late, backfill)
    parts = chunked(delivered, seed + 1, sizes)
    assert_one_answer(rec.site, parts, rec.end, rec.plan)


@PROPERTY_SETTINGS
@given(
    rec=recordings(),
    seed=SEEDS,
    duplicates=st.integers(min_value=0, max_value=20),
    late=st.sampled_from([0, 3]),
    sizes=st.sampled_from([(100_000,), (50, 400), (777,)]),
)
def test_batch_and_per_reading_paths_give_one_answer_with_rain_level_and_sediment(
    rec: Recording, seed: int, duplicates: int, late: int, sizes: tuple[int, ...]
) -> None:
    parts = chunked(deliveries(rec.readings, seed, duplicates, late), seed + 1, sizes)
    assert_one_answer(rec.site, parts, rec.end, rec.plan)


@settings(PROPERTY_SETTINGS, max_examples=20)
@given(
    mode=st.sampled_from(sorted(SYNC_MODES)),
    rec=multi_pair_recordings(),
    seed=SEEDS,
)
def test_either_way_of_moving_the_windows_gives_the_same_answer(
    mode: str, rec: Recording, seed: int
) -> None:
    parts = chunked(deliveries(rec.readings, seed, 3, 1), seed + 1, (150, 1500))
    with patch.object(batch, "INCREMENTAL", SYNC_MODES[mode]):
        assert_one_answer(rec.site, parts, rec.end, f"{mode}: {rec.plan}")


@settings(PROPERTY_SETTINGS, max_examples=20)
@given(rec=multi_pair_recordings(), seed=SEEDS, cut=CUTS)
def test_a_snapshot_in_the_middle_of_a_batched_run_changes_nothing(
    rec: Recording, seed: int, cut: float
) -> None:
    parts = chunked(deliveries(rec.readings, seed, 2, 0), seed + 1, (120, 700))
    at = round(cut * len(parts))
    slow = run(rec.site, parts, rec.end, batched=False)
    fast = run(rec.site, parts, rec.end, batched=True, restore_at=at)
    assert outputs(fast) == outputs(slow), rec.plan
    assert state(fast) == state(slow), rec.plan


# --- the examples, and the replay's own entry points -------------------------------------------


def example(name: str) -> tuple[SiteConfig, list[SensorReading]]:
    site = load_site(EXAMPLES / f"{name}-site.toml")
    readings = read_csv_rows(EXAMPLES / f"{name}-storm.csv", site.sensors())
    return site, sorted(readings, key=lambda r: (r.t, r.sensor))


@pytest.mark.parametrize("name", ["lake-george", "lake-lure"])
@pytest.mark.parametrize("size", [997, 10_000, 100_000])
def test_the_example_recordings_give_one_answer(name: str, size: int) -> None:
    site, readings = example(name)
    parts = [readings[i : i + size] for i in range(0, len(readings), size)]
    assert_one_answer(site, parts, readings[-1].t, f"{name} in parts of {size}", generated=False)


@pytest.mark.parametrize("name", ["lake-george", "lake-lure"])
def test_replay_site_either_way_with_inspections_station_reports_and_the_site_log(
    name: str,
) -> None:
    """The other inputs wait in the engine's buffer and are handed over inside a batch."""
    site, readings = example(name)
    inspections = read_inspections(EXAMPLES / f"{name}-inspections.csv")
    log = read_site_log(EXAMPLES / f"{name}-site-log.csv", [a.id for a in site.areas])
    start, end = readings[0].t, readings[-1].t
    rng = random.Random(name)
    stations = [station.id for station in site.stations]
    for _ in range(12):  # inspections at any minute, some at a reading's very instant
        t = rng.randrange(start, end) // MS_PER_MIN * MS_PER_MIN + rng.choice([0, 0, 1])
        inspections.append(Inspection(t, "Pat Doe", None))
    statuses = []
    for k in range(20):
        t = rng.randrange(start, end) // MS_PER_MIN * MS_PER_MIN
        station = rng.choice(stations)
        if k % 5 == 4:
            statuses.append(StationReport(station, t, "offline"))
        else:
            statuses.append(StationReport(station, t, "online", battery_v=rng.uniform(10.5, 13.0)))
    fast = replay_site(
        site,
        ReadingColumns.from_readings(readings),
        inspections,
        statuses=statuses,
        site_log=log,
        keep_engine=True,
    )
    slow = replay_site(
        site, readings, inspections, statuses=statuses, site_log=log, batch=False, keep_engine=True
    )
    assert fast.alerts_jsonl() == slow.alerts_jsonl()
    assert fast.duties_jsonl() == slow.duties_jsonl()
    assert fast.stats == slow.stats
    assert fast.engine is not None and slow.engine is not None
    assert state(fast.engine) == state(slow.engine)


def test_what_the_batch_path_cannot_take_goes_through_feed() -> None:
    """Late data, a live engine: the same answer, through the per-reading path."""
    site, readings = example("lake-george")
    head, tail = readings[:5000], readings[5000:8000]
    live = Engine(site, allowed_lateness_s=LATENESS_S)
    live.feed(head[:10], received_at=head[9].t)
    assert not batch.feed_columns(live, ReadingColumns.from_readings(head[10:]))
    replay = Engine(site, allowed_lateness_s=LATENESS_S)
    replay.feed_columns(ReadingColumns.from_readings(tail))
    late = ReadingColumns.from_readings(head[-50:])  # before what was processed
    assert not batch.feed_columns(replay, late)
    before = replay.stats.late_dropped + replay.stats.late_processed
    replay.feed_columns(late)
    assert replay.stats.late_dropped + replay.stats.late_processed == before + 50


def test_unknown_sensors_are_counted_in_feed_order() -> None:
    site, readings = example("lake-lure")
    strays = [SensorReading("nobody", r.t, 1.0) for r in readings[:3]] + [
        SensorReading("ghost", readings[0].t, 2.0)
    ]
    mixed = readings[:500] + strays + readings[500:2000]
    slow = run(site, [mixed], readings[1999].t, batched=False)
    fast = run(site, [mixed], readings[1999].t, batched=True)
    assert fast.stats == slow.stats
    assert list(fast.stats.unknown_sensors) == ["nobody", "ghost"]


def test_columns_are_a_sequence_of_the_same_readings() -> None:
    _, readings = example("lake-george")
    some = readings[:300]
    columns = ReadingColumns.from_readings(some)
    assert len(columns) == 300
    assert list(columns) == some
    assert columns[7] == some[7]
    assert list(columns[10:20]) == some[10:20]
    shuffled = list(reversed(some))
    assert list(ReadingColumns.from_readings(shuffled).sorted_by_time()) == sorted(
        shuffled, key=lambda r: (r.t, r.sensor)
    )
    with pytest.raises(ValueError, match="flags"):
        ReadingColumns.from_readings([SensorReading("x", 1, 1.0, flags=frozenset({"spike"}))])
