"""The simulated drivers: a storm that rises and recedes, and recording playback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hardware.base import SensorReadError
from hardware.simulated import RecordingPlayer, SimulatedParams, SyntheticStorm
from siltwatch.schema import QualityFlag

T0 = datetime(2026, 5, 1, tzinfo=UTC)


class Now:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> datetime:
        return self.t


def test_turbidity_rises_through_the_storm_and_recedes_after() -> None:
    now = Now()
    params = SimulatedParams(
        quantity="turbidity_ntu", baseline=5, peak=205, storm_duration_s=3600, recession_s=1800
    )
    storm = SyntheticStorm(params, now)
    values = []
    for minutes in (0, 30, 60, 120, 360):
        now.t = T0 + timedelta(minutes=minutes)
        values.append(storm.read().value)
    assert values[0] == 5.0
    assert values[0] < values[1] < values[2] == pytest.approx(205.0)
    assert values[2] > values[3] > values[4] > 5.0
    assert storm.read().quality == frozenset({QualityFlag.SIMULATED})


def test_rain_depth_over_the_storm_is_the_hyetograph_area() -> None:
    now = Now()
    storm = SyntheticStorm(
        SimulatedParams(quantity="rain_mm", peak=20.0, storm_duration_s=3600), now
    )
    total = 0.0
    for _ in range(120):
        now.t += timedelta(seconds=60)
        total += storm.read().value
    assert total == pytest.approx(10.0, rel=0.01)  # triangle: 1 h * 20 mm/h / 2


def test_recording_plays_rows_of_its_sensor_in_order(tmp_path: Path) -> None:
    csv = tmp_path / "rec.csv"
    csv.write_text(
        "time,sensor,value\n2026-05-01T00:00:00Z,up,1.5\n"
        "2026-05-01T00:00:00Z,down,9\n2026-05-01T00:01:00Z,up,2.5\n"
    )
    params = SimulatedParams(mode="recording", recording=csv, sensor="up")
    player = RecordingPlayer(params, "NTU")
    assert [player.read().value for _ in range(2)] == [1.5, 2.5]
    with pytest.raises(SensorReadError, match="exhausted"):
        player.read()
    looping = RecordingPlayer(params.model_copy(update={"loop": True}), "NTU")
    assert [looping.read().value for _ in range(3)] == [1.5, 2.5, 1.5]
