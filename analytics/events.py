"""What goes into the engine and what comes out of it.

Inputs are readings (already converted to the engine's time base) and
inspection records; outputs are alert and duty events. These are plain frozen
dataclasses: cheap to create in the hot path and trivially snapshotted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Literal

from siltwatch.schema import Alert, Duty


@dataclass(frozen=True, slots=True)
class SensorReading:
    """One reading in event time: ``value`` in the sensor's declared unit."""

    sensor: str
    t: int  # event time, epoch ms UTC
    value: float
    seq: int | None = None
    flags: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Inspection:
    """An inspection recorded at ``t``; ``duty`` None completes every open inspection duty."""

    t: int
    inspector: str
    duty: str | None = None


AlertEventType = Literal["opened", "escalated", "resolved"]
DutyEventType = Literal["created", "completed", "overdue"]


@dataclass(frozen=True, slots=True)
class AlertEvent:
    """An alert episode changed in a way a person must hear about.

    ``at`` is the event time of the change; ``alert`` the episode as it is after it.
    Evidence refreshes inside an episode are not events: they would page the
    officer forty times for one plume.
    """

    type: AlertEventType
    at: int
    alert: Alert


@dataclass(frozen=True, slots=True)
class DutyEvent:
    type: DutyEventType
    at: int
    duty: Duty


EngineEvent = AlertEvent | DutyEvent


class DetectorEvent:
    """Base of the typed events detectors publish to each other through the engine.

    A detector publishes one with :meth:`analytics.detector.Context.publish` at
    event time ``at`` (the time it is processing); the engine hands it at once,
    synchronously, to every detector whose ``handles`` names its type, in
    detector order. These events are never engine output and never engine
    state: subscribers keep what they need in their own state.
    """

    __slots__ = ()
    at: int


@dataclass(frozen=True, slots=True)
class RainDay:
    """One local day of one rain gauge's daily record, in the gauge's unit.

    NCG01 Part III §A item 1 ("read and record the rain gauge daily"): what
    :meth:`analytics.engine.Engine.rain_log` returns and the replay writes.
    """

    day: date
    gauge: str
    depth: float
    unit: str
    readings: int
    excluded: int
