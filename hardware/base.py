"""The one interface every sensor driver speaks: ``read()`` returns a :class:`Sample`.

Why one small interface: the edge agent samples, stores and publishes readings
without knowing whether they came from a GPIO pin, an ADC, a Modbus probe or a
recording. A driver either returns a sample (possibly flagged, e.g. a 4-20 mA
loop below 3.6 mA is ``sensor_fault``) or raises :class:`SensorReadError` when
there is no number to report at all (a Modbus timeout): a reading must be a
finite number, so "no value" is an exception, never a NaN.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from siltwatch.schema import QualityFlag

StateCommit = Callable[[sqlite3.Connection], None]


class SensorReadError(Exception):
    """The sensor gave no usable number this time (timeout, garbage, exception response)."""


@dataclass(frozen=True)
class Sample:
    """One driver measurement before it becomes a wire reading.

    ``raw`` is the uncalibrated quantity the driver measured (volts, mA, tips,
    register value); ``value`` is in ``unit`` after calibration.

    ``commit`` is for drivers with state that must change exactly when the
    reading is stored (the rain gauge marks its tips as reported). The agent
    runs it inside the same SQLite transaction that stores the reading, so a
    power cut either keeps both or neither: no tip is lost or counted twice.
    """

    value: float
    unit: str
    raw: float | None = None
    quality: frozenset[QualityFlag] = field(default_factory=frozenset)
    commit: StateCommit | None = None

    def flagged(self, *flags: QualityFlag) -> Sample:
        """The same sample with extra quality flags."""
        return Sample(self.value, self.unit, self.raw, self.quality | set(flags), self.commit)


@runtime_checkable
class Driver(Protocol):
    """A sensor the agent can sample. ``close()`` releases pins, buses and sockets."""

    def read(self) -> Sample: ...

    def close(self) -> None: ...
