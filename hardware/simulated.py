"""Simulated sensors: a synthetic storm, or a recording played back.

Why: the demo, the outage test and the benchmark need stations without
hardware, and a developer needs to replay a real storm through the whole
agent. Every simulated sample carries the ``simulated`` quality flag so a
simulated number can never pass for a measurement downstream.

- ``mode = "storm"``: a deterministic storm in the driver's clock: a triangular
  hyetograph (rain intensity rising to ``peak`` at mid-storm), turbidity and
  water level that follow the rain with a lag and recede exponentially after
  it, sediment depth that accumulates with rain. Small seeded noise on top.
- ``mode = "recording"``: rows of a CSV ``time,sensor,value`` for this sensor,
  in file order, one per read (looping if asked).
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hardware.base import Sample, SensorReadError
from siltwatch.schema import QualityFlag

Quantity = Literal["rain_mm", "turbidity_ntu", "level_m", "sediment_mm", "battery_v"]
_UNITS: dict[str, str] = {
    "rain_mm": "mm",
    "turbidity_ntu": "NTU",
    "level_m": "m",
    "sediment_mm": "mm",
    "battery_v": "V",
}


class SimulatedParams(BaseModel):
    """Driver parameters (``kind = "simulated"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["simulated"] = "simulated"
    mode: Literal["storm", "recording"] = "storm"
    quantity: Quantity = "turbidity_ntu"
    baseline: float = 5.0
    peak: float = Field(default=200.0, description="peak value (rain: mm/h intensity)")
    storm_start: datetime | None = Field(default=None, description="default: driver start")
    storm_duration_s: float = Field(default=3600.0, gt=0)
    recession_s: float = Field(default=7200.0, gt=0)
    noise: float = Field(default=0.0, ge=0, description="standard deviation of added noise")
    seed: int = 0
    recording: Path | None = None
    sensor: str | None = Field(default=None, description="recording: which sensor's rows")
    loop: bool = False

    @model_validator(mode="after")
    def _recording_needs_file(self) -> SimulatedParams:
        if self.mode == "recording" and (self.recording is None or self.sensor is None):
            raise ValueError("mode 'recording' needs 'recording' (CSV path) and 'sensor'")
        return self


def storm_intensity(elapsed_s: float, duration_s: float, peak: float) -> float:
    """Triangular hyetograph: 0 at start and end, ``peak`` at mid-storm."""
    if elapsed_s <= 0 or elapsed_s >= duration_s:
        return 0.0
    half = duration_s / 2
    return peak * (elapsed_s / half if elapsed_s <= half else (duration_s - elapsed_s) / half)


def storm_response(elapsed_s: float, duration_s: float, recession_s: float) -> float:
    """0..1 response of turbidity/level: rises through the storm, recedes after it."""
    if elapsed_s <= 0:
        return 0.0
    if elapsed_s <= duration_s:
        return math.sin(math.pi / 2 * elapsed_s / duration_s)
    return math.exp(-(elapsed_s - duration_s) / recession_s)


class SyntheticStorm:
    """A storm as a function of the driver's clock (so a fast simulated clock speeds it up)."""

    def __init__(self, params: SimulatedParams, now: Callable[[], datetime]) -> None:
        self.params = params
        self._now = now
        self._start = params.storm_start or now()
        self._last = now()
        self._rng = random.Random(params.seed)
        self._sediment = params.baseline

    def read(self) -> Sample:
        p = self.params
        now = self._now()
        elapsed = (now - self._start).total_seconds()
        flags = frozenset({QualityFlag.SIMULATED})
        if p.quantity in ("rain_mm", "sediment_mm"):
            # depth of rain since the last read: intensity (mm/h) at the midpoint * hours
            before = (self._last - self._start).total_seconds()
            hours = max(0.0, elapsed - before) / 3600
            rain = storm_intensity((elapsed + before) / 2, p.storm_duration_s, p.peak) * hours
            self._last = now
            if p.quantity == "rain_mm":
                return Sample(rain, "mm", rain, flags)
            self._sediment += rain * 0.5  # mm of sediment per mm of rain, for the demo
            return Sample(self._sediment, "mm", self._sediment, flags)
        level = storm_response(elapsed, p.storm_duration_s, p.recession_s)
        value = p.baseline + (p.peak - p.baseline) * level
        if p.noise:
            value += self._rng.gauss(0.0, p.noise)
        return Sample(value, _UNITS[p.quantity], value, flags)

    def close(self) -> None:
        pass


class RecordingPlayer:
    """Plays one sensor's values from a ``time,sensor,value`` CSV, one row per read."""

    def __init__(self, params: SimulatedParams, unit: str) -> None:
        assert params.recording is not None and params.sensor is not None
        self.params = params
        self.unit = unit
        with params.recording.open(newline="", encoding="utf-8") as fh:
            self.values = [
                float(row["value"]) for row in csv.DictReader(fh) if row["sensor"] == params.sensor
            ]
        if not self.values:
            raise ValueError(f"{params.recording}: no rows for sensor {params.sensor!r}")
        self._next = 0

    def read(self) -> Sample:
        if self._next >= len(self.values):
            if not self.params.loop:
                raise SensorReadError(f"recording {self.params.recording} is exhausted")
            self._next = 0
        value = self.values[self._next]
        self._next += 1
        return Sample(value, self.unit, value, frozenset({QualityFlag.SIMULATED}))

    def close(self) -> None:
        pass
