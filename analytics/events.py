"""What goes into the engine and what comes out of it.

Inputs are readings (already converted to the engine's time base),
inspection records, station reports and site-log entries; outputs are alert and
duty events. These are plain frozen dataclasses: cheap to create in the hot
path and trivially snapshotted.
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
    """An inspection recorded at ``t``; ``duty`` None completes every open inspection duty.

    The optional fields are what an inspection record must hold besides who
    and when (e.g. Lake Lure 96.05(B)(17)(a),(b): the inspector's affiliation,
    address and telephone, the signature, significant deviations from the plan,
    corrective actions taken and their completion); None when not recorded.
    """

    t: int
    inspector: str
    duty: str | None = None
    affiliation: str | None = None
    address: str | None = None
    phone: str | None = None
    signed: bool | None = None
    deviations: str | None = None  # significant deviations from the approved plan
    corrective_actions: str | None = None  # what was done, and when it was completed
    # Practices the record found needing work (the field desk's checklist): each opens a
    # corrective action (analytics/corrective_actions.py).
    findings: tuple[str, ...] = ()


# The record fields of an Inspection after ``duty``, in declaration order.
INSPECTION_RECORD_FIELDS = (
    "affiliation",
    "address",
    "phone",
    "signed",
    "deviations",
    "corrective_actions",
)


@dataclass(frozen=True, slots=True)
class SiteLogEntry:
    """What people did on the site at ``t``: one row of the site log.

    ``event`` is a :class:`siltwatch.vocabulary.SiteEvent` value; ``area`` the
    site area it concerns (None for the site-wide events: milestones, notices,
    corrective actions); ``by`` who recorded it; ``detail`` the milestone a
    ``milestone`` or ``notice`` row names, the alert id and what was done for a
    ``corrective_action``, free text otherwise ("" when none).

    An entry is ordered with the readings by ``t`` and handed to every
    detector's ``on_site_log``, but never moves event time: people are not
    clocks, and an ``inactive`` row is dated at the last day of work on purpose,
    days back.
    """

    t: int  # event time, epoch ms UTC
    event: str
    area: str | None
    by: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class StationReport:
    """What a station said about itself (its retained status, or its MQTT last will).

    Health detections (a station offline, a low battery, a nearly full disk, a
    growing backlog, a clock not synced) are about the station, not about any
    sensor, so a report is an input of its own, ordered with the readings by
    ``t`` and handed to every detector's ``on_status``.

    ``timed`` says whether ``t`` is the station's own time. A last will is
    written when the station connects and published by the broker when it
    vanishes, so it carries no time; ingest then uses the arrival time. A time
    ingest cannot trust (ahead of the arrival by more than the clock-skew bound)
    is replaced by the arrival time too, so one bad clock moves nothing; ``timed``
    is then False as well. A detector judging how long a station has been
    offline should know which kind of time it has.

    The health fields are None when the station did not report them (an offline
    status reports none).
    """

    station: str
    t: int  # event time, epoch ms UTC (the arrival time when ``timed`` is False)
    state: Literal["online", "offline"]
    battery_v: float | None = None
    cpu_temp_c: float | None = None
    disk_free_mb: float | None = None
    backlog: int | None = None  # readings waiting in the station's outbox
    dropped: int | None = None  # readings evicted because the outbox cap was reached
    quarantined: int | None = None  # readings the broker refused, kept aside
    clock_synced: bool | None = None
    clock_offset_s: float | None = None
    timed: bool = True

    def health(self) -> dict[str, float | int | bool]:
        """The health fields the station reported (None ones left out), by name."""
        return {
            name: value
            for name in STATION_HEALTH_FIELDS
            if (value := getattr(self, name)) is not None
        }


# The health fields of a StationReport, in declaration order (siltwatch.schema.StationHealth).
STATION_HEALTH_FIELDS = (
    "battery_v",
    "cpu_temp_c",
    "disk_free_mb",
    "backlog",
    "dropped",
    "quarantined",
    "clock_synced",
    "clock_offset_s",
)


AlertEventType = Literal["opened", "escalated", "resolved"]
# "extended": the duty's deadline moved later (DutyBook.extend: Lake Lure 96.03 rain days).
DutyEventType = Literal["created", "completed", "overdue", "extended"]


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
class DesignStormExceeded(DetectorEvent):
    """A gauge's 24-hour rain reached one of the site's design storms (``[[design_storms]]``).

    Published by the rain detector (analytics/rain.py) at ``at``, the end of the
    interval whose rain made the depth of the 24 h ``(window_start, at]`` reach
    ``depth_mm``; once per design storm and storm (``storm``, the storm id
    ``<gauge>@<start of rain, UTC>``), bigger design storms after smaller ones.
    Lake George §148-11 I(3)(c)[1],[2] and Lake Lure 96.08(A) design the controls
    for these storms, so what the practices do after one is not what they are
    designed to do: the drain-time and sediment-trap detectors say so.
    """

    gauge: str
    storm: str
    name: str  # the design storm's name, as the site file gives it ("10-year 24-hour")
    depth_mm: float  # the design storm's 24-hour depth
    depth_24h_mm: float  # the rain of the 24 h ending at ``at``
    window_start: int
    unit: str  # the gauge's unit, for the words
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
