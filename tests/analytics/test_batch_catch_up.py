"""A catch-up (a restart, a rebuild) gives one answer on the batch path and row by row.

``Engine.catch_up`` hands each chunk of stored history to the batch path
(analytics/batch.py, ``take_chunk``) when it can. These properties hold it to the
per-reading loop on generated data, as the store delivers it (unique (sensor,
time) rows in (time, sensor) order, in chunks of any size): the events the
catch-up returns (what the service stores and dispatches), ALERTS/DUTIES after
the finish, the counters and the engine's whole state — with station clocks
restored from the store (a live engine), flagged readings among them (those
chunks go row by row), a snapshot taken between two catch-ups, inspections,
station reports and the site log of the example week.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics import batch
from analytics.batch_columns import ReadingColumns
from analytics.engine import Engine
from analytics.events import EngineEvent, Inspection, SensorReading, SiteLogEntry, StationReport
from ingest.recordings.csv_rows import read_csv_rows
from ingest.recordings.formats import read_inspections, read_site_log
from siltwatch.config import SiteConfig, load_site
from tests.analytics.strategies import CUTS, PROPERTY_SETTINGS, SEEDS, Recording, recordings
from tests.analytics.test_batch_path import (
    LATENESS_MS,
    LATENESS_S,
    multi_pair_recordings,
    outputs,
    state,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def stored(readings: Sequence[SensorReading], seed: int, flagged: int) -> list[SensorReading]:
    """The readings as the store returns them: one per (sensor, time), in (time, sensor)
    order; ``flagged`` of them carry a quality flag from the station."""
    rng = random.Random(seed)
    unique = {(r.sensor, r.t): r for r in reversed(readings)}
    out = sorted(unique.values(), key=lambda r: (r.t, r.sensor))
    for k in rng.sample(range(len(out)), min(flagged, len(out))):
        r = out[k]
        out[k] = SensorReading(r.sensor, r.t, r.value, 7, frozenset({"backfilled"}))
    return out


def chunks(
    readings: list[SensorReading], size: int, columns: bool = False
) -> list[Sequence[SensorReading]]:
    """``columns``: as the store's column reader gives them (``reading_columns_after``):
    a chunk without flags as :class:`ReadingColumns`, one with a flagged reading as readings."""
    out: list[Sequence[SensorReading]] = []
    for i in range(0, len(readings), size):
        chunk = readings[i : i + size]
        plain = columns and not any(r.flags for r in chunk)
        out.append(ReadingColumns.from_readings(chunk) if plain else chunk)
    return out


def caught_up(
    site: SiteConfig,
    readings: list[SensorReading],
    size: int,
    *,
    batched: bool,
    columns: bool = False,
    cut: float | None = None,
    inspections: Sequence[Inspection] = (),
    statuses: Sequence[StationReport] = (),
    site_log: Sequence[SiteLogEntry] = (),
) -> tuple[Engine, list[EngineEvent]]:
    """A service's start: station clocks from the store, then the history caught up to the
    live watermark (in two catch-ups around a snapshot when ``cut``), then the finish."""
    end = readings[-1].t
    engine = Engine(site, allowed_lateness_s=LATENESS_S, batch=batched)
    for station in site.stations:
        ts = [r.t for r in readings if site.station_of().get(r.sensor) == station.id]
        if ts:
            engine.set_station_clock(station.id, max(ts), end + 1000)
    until = end - LATENESS_MS
    events: list[EngineEvent] = []
    if cut is not None:
        mid = readings[round(cut * (len(readings) - 1))].t
        first = [r for r in readings if r.t <= mid]
        events += engine.catch_up(
            chunks(first, size, columns),
            [i for i in inspections if i.t <= mid],
            min(mid, until),
            [s for s in statuses if s.t <= mid],
            [e for e in site_log if e.t <= mid],
        )
        engine = Engine.restore(site, engine.snapshot())
        engine.batch = batched
        after = engine.processed_to()
        readings = [r for r in readings if after is None or r.t > after]
        inspections = [i for i in inspections if after is None or i.t > after]
        statuses = [s for s in statuses if after is None or s.t > after]
        site_log = [e for e in site_log if after is None or e.t > after]
    events += engine.catch_up(
        chunks(readings, size, columns), inspections, until, statuses, site_log
    )
    events += engine.finish(end)
    return engine, events


def assert_one_answer(
    slow: tuple[Engine, list[EngineEvent]], fast: tuple[Engine, list[EngineEvent]], plan: str
) -> None:
    assert [repr(e) for e in fast[1]] == [repr(e) for e in slow[1]], plan
    assert outputs(fast[0]) == outputs(slow[0]), plan
    assert fast[0].stats == slow[0].stats, plan
    assert state(fast[0]) == state(slow[0]), plan


@settings(PROPERTY_SETTINGS, max_examples=40)
@given(
    rec=multi_pair_recordings(),
    seed=SEEDS,
    flagged=st.sampled_from([0, 0, 1, 3]),
    size=st.sampled_from([300, 997, 5000, 100_000]),
    cut=st.none() | CUTS,
    columns=st.booleans(),
)
def test_a_catch_up_gives_one_answer_either_way_on_multi_pair_sites(
    rec: Recording, seed: int, flagged: int, size: int, cut: float | None, columns: bool
) -> None:
    readings = stored(rec.readings, seed, flagged)
    slow = caught_up(rec.site, readings, size, batched=False, cut=cut)
    fast = caught_up(rec.site, readings, size, batched=True, columns=columns, cut=cut)
    plan = f"size={size} flagged={flagged} cut={cut} columns={columns} {rec.plan}"
    assert_one_answer(slow, fast, plan)


@settings(PROPERTY_SETTINGS, max_examples=20)
@given(
    rec=recordings(),
    seed=SEEDS,
    size=st.sampled_from([300, 2000, 100_000]),
    columns=st.booleans(),
)
def test_a_catch_up_gives_one_answer_either_way_with_rain_level_and_sediment(
    rec: Recording, seed: int, size: int, columns: bool
) -> None:
    readings = stored(rec.readings, seed, 0)
    slow = caught_up(rec.site, readings, size, batched=False)
    fast = caught_up(rec.site, readings, size, batched=True, columns=columns)
    assert_one_answer(slow, fast, f"size={size} columns={columns} {rec.plan}")


@pytest.mark.parametrize("name", ["lake-george", "lake-lure"])
@pytest.mark.parametrize(("size", "cut", "columns"), [(20_000, None, True), (997, 0.4, False)])
def test_the_example_weeks_with_their_records_give_one_answer(
    name: str, size: int, cut: float | None, columns: bool
) -> None:
    site = load_site(EXAMPLES / f"{name}-site.toml")
    readings = stored(read_csv_rows(EXAMPLES / f"{name}-storm.csv", site.sensors()), 1, 0)
    inspections = sorted(read_inspections(EXAMPLES / f"{name}-inspections.csv"), key=lambda i: i.t)
    site_log = read_site_log(EXAMPLES / f"{name}-site-log.csv", [a.id for a in site.areas])
    station = site.stations[0].id
    statuses = [
        StationReport(station, readings[len(readings) // 3].t, "online", battery_v=12.1),
        StationReport(station, readings[len(readings) // 2].t, "offline", timed=False),
    ]
    runs = [
        caught_up(
            site,
            readings,
            size,
            batched=batched,
            columns=columns and batched,
            cut=cut,
            inspections=inspections,
            statuses=statuses,
            site_log=sorted(site_log, key=lambda e: e.t),
        )
        for batched in (False, True)
    ]
    assert runs[0][0].alerts(), "the week raises alerts: the comparison is not empty"
    assert_one_answer(runs[0], runs[1], f"{name} size={size} cut={cut}")


def test_the_batch_path_takes_plain_chunks_and_leaves_flagged_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = load_site(EXAMPLES / "lake-george-site.toml")
    readings = stored(read_csv_rows(EXAMPLES / "lake-george-storm.csv", site.sensors()), 2, 1)
    taken: list[bool] = []
    real = batch.take_chunk

    def spy(engine: Engine, chunk: Sequence[SensorReading], limit: int) -> bool:
        taken.append(real(engine, chunk, limit))
        return taken[-1]

    monkeypatch.setattr(batch, "take_chunk", spy)
    for columns in (False, True):
        taken.clear()
        caught_up(site, readings, 5000, batched=True, columns=columns)
        assert taken.count(False) == 1, "the one chunk with a flagged reading goes row by row"
        assert taken.count(True) == len(taken) - 1 > 0
