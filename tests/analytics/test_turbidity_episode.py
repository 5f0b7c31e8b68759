"""Turbidity's episode as one state machine (analytics/turbidity.py ``TRANSITIONS``).

The table is the whole machine: these tests walk a plume through the real
engine and read the states it passes, check that the table names only the
moves the detector makes, and that a snapshot taken mid-episode restores the
state enum and the peak as themselves (analytics/statecodec.py ``$enum``).
"""

from __future__ import annotations

import json
import zlib

import pytest

from analytics import statecodec
from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.turbidity import TRANSITIONS, Episode, Peak, Signal, TurbidityContrast
from siltwatch.config import SiteConfig
from tests.analytics.turbidity_helpers import level, minute, pair_site, series


def ny_site() -> SiteConfig:
    """Lake George's pack with a 25 NTU contrast proxy (a NY site sets a numeric limit)."""
    return pair_site(packs=("ny-lake-george",), limit={"over_background_ntu": 25})


def pair_of(engine: Engine) -> TurbidityContrast:
    det = engine.detectors["turbidity.outfall-a"]
    assert isinstance(det, TurbidityContrast)
    return det


def plume() -> list[SensorReading]:
    """Upstream 10 NTU for 4 h; downstream 60 NTU from minute 60 to 159 (see test_turbidity)."""
    up = series("turb-up", 0, level(10.0, 240))
    down = series("turb-down", 0, level(10.0, 60) + level(60.0, 100) + level(10.0, 80))
    return sorted(up + down, key=lambda r: (r.t, r.sensor))


def states_through(readings: list[SensorReading]) -> list[tuple[int, Episode]]:
    """(minute, state) each time the pair's episode state changes, fed one reading at a time."""
    engine = Engine(ny_site(), allowed_lateness_s=0)
    seen: list[tuple[int, Episode]] = []
    for r in readings:
        engine.feed([r])
        state = pair_of(engine).episode
        if not seen or seen[-1][1] is not state:
            seen.append((round((r.t - minute(0)) / 60_000), state))
    return seen


def test_a_plume_walks_idle_exceeding_open_clearing_idle() -> None:
    walked = [state for _m, state in states_through(plume())]
    assert walked == [
        Episode.IDLE,
        Episode.EXCEEDING,
        Episode.OPEN,
        Episode.CLEARING,
        Episode.IDLE,
    ]
    minutes = dict((state, m) for m, state in states_through(plume()) if state is not Episode.IDLE)
    assert minutes[Episode.EXCEEDING] == 67  # the median moves (test_turbidity's arithmetic)
    assert minutes[Episode.OPEN] == 97  # sustained 30 minutes
    assert minutes[Episode.CLEARING] == 167


def test_the_table_is_a_function_of_every_state_and_the_signals_it_may_meet() -> None:
    open_signals = {Signal.STIRRED, Signal.CALM, Signal.BLIND}
    shut_signals = {Signal.OVER, Signal.WITHIN, Signal.BLIND}
    expected = (
        {(Episode.IDLE, s) for s in shut_signals}
        | {(Episode.EXCEEDING, s) for s in shut_signals | {Signal.SUSTAINED}}
        | {(Episode.OPEN, s) for s in open_signals}
        | {(Episode.CLEARING, s) for s in open_signals | {Signal.CALM_HELD}}
    )
    assert set(TRANSITIONS) == expected
    # Only a sustained run opens an episode; only a held calm closes one.
    opened = (Episode.OPEN, Episode.CLEARING)
    opening = [k for k, v in TRANSITIONS.items() if k[0] not in opened and v in opened]
    assert opening == [(Episode.EXCEEDING, Signal.SUSTAINED)]
    closing = [k for k, v in TRANSITIONS.items() if k[0] in opened and v not in opened]
    assert closing == [(Episode.CLEARING, Signal.CALM_HELD)]


def test_a_move_the_table_does_not_name_is_a_bug_not_a_silent_pass() -> None:
    engine = Engine(ny_site())
    det = pair_of(engine)
    with pytest.raises(KeyError):
        det._step(Signal.CALM_HELD)  # from IDLE: nothing to resolve


@pytest.mark.parametrize("stop_min", [80, 120, 170])
def test_a_snapshot_mid_episode_restores_the_state_and_the_peak(stop_min: int) -> None:
    readings = plume()
    head = [r for r in readings if r.t <= minute(stop_min)]
    tail = [r for r in readings if r.t > minute(stop_min)]
    whole = Engine(ny_site())
    whole.feed(readings)
    whole.finish()
    first = Engine(ny_site())
    first.feed(head)
    before = pair_of(first)
    restored = Engine.restore(first.site, first.snapshot())
    after = pair_of(restored)
    assert after.episode is before.episode  # the member itself, not its text
    assert isinstance(after.episode, Episode)
    assert after.peak == before.peak
    assert after.peak is None or isinstance(after.peak, Peak)
    restored.feed(tail)
    restored.finish()
    assert restored.alerts() == whole.alerts()


def test_an_enum_the_snapshot_does_not_know_is_refused() -> None:
    header = {"version": 0}
    blob = statecodec.encode_state({"x": Episode.OPEN}, header=header, skip=frozenset())
    _header, encoded = statecodec.read_header(blob)
    assert statecodec.decode_state(encoded) == {"x": Episode.OPEN}
    bad = json.loads(json.dumps(encoded).replace('"open"', '"ajar"'))  # a value it lacks
    with pytest.raises(statecodec.SnapshotError):
        statecodec.decode_state(bad)


def test_a_version_6_snapshot_is_refused_so_the_engine_is_rebuilt_from_the_store() -> None:
    """Version 6 wrote the episode as flags and the peak as a 4-tuple: not readable now."""
    engine = Engine(ny_site())
    engine.feed(plume()[:200])
    doc = json.loads(zlib.decompress(engine.snapshot()))
    doc["version"] = 6
    with pytest.raises(statecodec.SnapshotError, match="version 6 is not 7"):
        Engine.restore(engine.site, zlib.compress(json.dumps(doc).encode()))
