"""The wire schema: what crosses MQTT between edge stations, ingest and consumers.

Every payload is JSON, versioned (``v``), and validated with pydantic on both
ends, so a station and the ingest service can never disagree silently about a
field. The JSON Schemas exported by ``siltwatch schema --out DIR`` are the
documentation integrators read (docs/wire-format.md).

Times are event times in UTC: the moment a sensor measured, not the moment a
message arrived. Ingest deduplicates on (sensor, event time); the per-sensor
``seq`` is the station's own order, kept as a record (the edge agent keeps it
on disk so it survives reboots; an outbox reset starts it again, and those new
readings must not be taken for resends).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from siltwatch.maintenance import maintained_practice, parse_schedule
from siltwatch.plans import parse_plan_approved
from siltwatch.timefmt import utc_iso
from siltwatch.vocabulary import Milestone, Severity, SiteEvent

SCHEMA_VERSION = 1
TOPIC_ROOT = "siltwatch/v1"

_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_ID_RE = re.compile(_ID_PATTERN)


def _utc(value: datetime) -> datetime:
    """Event times must carry a zone: a naive time from a Pi is a bug, not UTC."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("time must carry a UTC offset or 'Z' (naive times are ambiguous)")
    try:
        return value.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:00-05:00 is in the year 10000 in UTC
        raise ValueError(
            f"time {value.isoformat()} cannot be converted to UTC (it falls outside years 1..9999)"
        ) from None


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
Identifier = Annotated[str, Field(pattern=_ID_PATTERN)]

# Event times a station or an inspector can send: a Pi whose clock was never set
# reads 1970, never earlier; 2200 is far beyond any plausible clock error, and
# keeps every time well inside what epoch milliseconds and databases hold.
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(2200, 1, 1, tzinfo=UTC)


def _iso_text(value: object) -> object:
    """A wire time is an ISO 8601 string (from JSON) or a datetime (built in Python).

    pydantic's lax parsing would also take a number or a digit string as Unix
    seconds: on the wire that is a bug or an attack, not a time.
    """
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueError(
            f"time must be an ISO 8601 string such as 2026-05-04T13:00:00Z, "
            f"not a JSON {_json_kind(value)}"
        )
    try:
        return datetime.fromisoformat(value)
    except (ValueError, OverflowError):
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise ValueError(
            f"{shown!r} is not an ISO 8601 time (expected e.g. 2026-05-04T13:00:00Z)"
        ) from None


def _in_range(value: datetime) -> datetime:
    if not EARLIEST_TIME <= value < LATEST_TIME:
        raise ValueError(
            f"time {iso_utc(value)} is outside 1970-01-01T00:00:00Z .. 2200-01-01T00:00:00Z"
        )
    return value


WireTime = Annotated[
    datetime,
    BeforeValidator(_iso_text),
    AfterValidator(_utc),
    AfterValidator(_in_range),
    Field(description="ISO 8601 with 'Z' or an offset, between 1970 and 2200"),
]
"""An event time on the wire: ISO 8601 text with a zone, converted to UTC, in 1970..2200."""


def _json_kind(value: object) -> str:
    """The JSON type of a parsed value, as a person calls it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _exact_int(value: object) -> object:
    """``true`` is not 1 and ``1.0`` is not 1 on the wire (pydantic's Literal takes both)."""
    if type(value) is not int:
        raise ValueError(f"must be the integer 1, not a JSON {_json_kind(value)}")
    return value


Version = Annotated[Literal[1], BeforeValidator(_exact_int)]
# Numbers on the wire are JSON numbers: no "12.5" strings, no true/false.
StrictNumber = Annotated[float, Field(strict=True)]


class QualityFlag(StrEnum):
    """Why a reading should not be trusted blindly; set by the edge or by ingest."""

    CLOCK_UNSYNCED = "clock_unsynced"  # taken before NTP sync: the time may be wrong
    CLOCK_AHEAD = "clock_ahead"  # set by ingest: event time ahead of arrival beyond the skew bound
    TOO_OLD = "too_old"  # set by ingest: dated further back than any station keeps readings
    BEFORE_SITE_START = "before_site_start"  # set by ingest: dated before the site's [site] start
    OUT_OF_RANGE = "out_of_range"  # outside the sensor's physical or configured range
    SENSOR_FAULT = "sensor_fault"  # the driver reported an error state
    UNCALIBRATED = "uncalibrated"  # no calibration on file for this probe
    SPIKE = "spike"  # isolated outlier against its neighbours
    FLATLINE = "flatline"  # stuck value
    BACKFILLED = "backfilled"  # sent from the outbox after an outage
    SIMULATED = "simulated"  # produced by the simulated driver


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("value must be a finite number (NaN and infinity are not readings)")
    return value


class ReadingItem(_Payload):
    """One measurement inside a batch: the station and site come from the batch."""

    sensor: Identifier
    time: WireTime
    seq: int = Field(
        ge=0,
        lt=2**63,
        strict=True,
        description="per-sensor sequence number; survives reboots (a 64-bit signed integer)",
    )
    value: Annotated[StrictNumber, AfterValidator(_finite)]
    unit: str = Field(
        min_length=1, max_length=16, description="must be the sensor's declared unit (e.g. NTU)"
    )
    raw: StrictNumber | None = Field(default=None, description="the uncalibrated driver value")
    quality: list[QualityFlag] = Field(default_factory=list)


class Reading(ReadingItem):
    """A single reading, published on ``siltwatch/v1/{site}/{station}/{sensor}/reading``."""

    v: Version = 1
    type: Literal["reading"] = "reading"
    site: Identifier
    station: Identifier


class ReadingBatch(_Payload):
    """Many readings of one station: the outbox flush after an outage, oldest first.

    Published on the topic of the first reading's sensor (a station may only
    publish under its own topics), so ingest accepts a batch on any of the
    station's reading topics.
    """

    v: Version = 1
    type: Literal["batch"] = "batch"
    site: Identifier
    station: Identifier
    readings: list[ReadingItem] = Field(min_length=1, max_length=10_000)

    def expand(self) -> list[Reading]:
        """The batch as individual readings, in the order sent."""
        return [
            Reading(site=self.site, station=self.station, **item.model_dump())
            for item in self.readings
        ]


class HeldReadings(_Payload):
    """What a station still holds of one sensor (its outbox, sent or not): the service
    asks only for what is there, and records as lost what is not (docs/wire-format.md)."""

    sensor: Identifier
    oldest_seq: int = Field(ge=0, strict=True, description="oldest sequence number held")
    oldest_time: WireTime | None = Field(default=None, description="that reading's time")
    next_seq: int = Field(
        ge=0, strict=True, description="the next sequence number: how many were ever taken"
    )


class StationHealth(_Payload):
    battery_v: StrictNumber | None = None
    cpu_temp_c: StrictNumber | None = None
    disk_free_mb: StrictNumber | None = None
    backlog: int | None = Field(
        default=None, ge=0, strict=True, description="readings waiting in the outbox"
    )
    dropped: int | None = Field(
        default=None,
        ge=0,
        strict=True,
        description="readings evicted because the outbox cap was reached",
    )
    quarantined: int | None = Field(
        default=None,
        ge=0,
        strict=True,
        description="readings the broker refused (e.g. ACL), kept aside for recovery",
    )
    clock_synced: bool | None = Field(default=None, strict=True)
    clock_offset_s: StrictNumber | None = None
    retention_s: StrictNumber | None = Field(
        default=None, description="how long sent readings are kept for a resend request"
    )
    held: list[HeldReadings] | None = Field(
        default=None, max_length=1_000, description="per sensor, the readings still held"
    )


class StationStatus(_Payload):
    """Retained on ``siltwatch/v1/{site}/{station}/status``; the last will says offline."""

    v: Version = 1
    type: Literal["status"] = "status"
    site: Identifier
    station: Identifier
    state: Literal["online", "offline"]
    time: WireTime | None = None
    firmware: str | None = None
    config_version: str | None = None
    health: StationHealth | None = None


class ResendRequest(_Payload):
    """The ingest service asks one station to publish a sensor's readings ``seq_from`` ..
    ``seq_to`` (inclusive) again, on ``siltwatch/v1/{site}/{station}/cmd/resend``.

    Why: a broker may lose readings it acknowledged (Mosquitto 2.0.11 keeps nothing
    for a session connected when it stops), so the station keeps what it sent for a
    retention window and the service, which sees the gap in the sequence numbers,
    fetches it back. The station answers with the readings (on their usual topics;
    ingest dedupes) and with a status whose ``health.held`` says what it still has.
    """

    v: Version = 1
    type: Literal["resend"] = "resend"
    site: Identifier
    station: Identifier
    sensor: Identifier
    seq_from: int = Field(ge=0, strict=True)
    seq_to: int = Field(ge=0, strict=True)
    request: str = Field(min_length=1, max_length=200, description="the request's id")

    @model_validator(mode="after")
    def _ordered(self) -> ResendRequest:
        if self.seq_to < self.seq_from:
            raise ValueError(f"seq_to {self.seq_to} is before seq_from {self.seq_from}")
        return self


class InspectionRecord(_Payload):
    """An inspection recorded in the field, on ``siltwatch/v1/{site}/inspections``.

    ``duty`` empty means a full site inspection: it completes every inspection
    duty open at ``time`` (docs/replay-contract.md).
    """

    v: Version = 1
    type: Literal["inspection"] = "inspection"
    site: Identifier
    time: WireTime
    inspector: str = Field(min_length=1, max_length=200)
    duty: str | None = None
    notes: str | None = None
    # What an inspection record holds besides who and when (e.g. Lake Lure
    # 96.05(B)(17)(a),(b)); all optional, absent when not recorded.
    affiliation: str | None = Field(
        default=None, max_length=200, description="the inspector's firm or agency"
    )
    address: str | None = Field(default=None, max_length=500, description="the inspector's")
    phone: str | None = Field(default=None, max_length=50, description="the inspector's")
    signed: bool | None = Field(
        default=None, strict=True, description="the inspector signed the record"
    )
    deviations: str | None = Field(
        default=None, max_length=4000, description="significant deviations from the plan"
    )
    corrective_actions: str | None = Field(
        default=None,
        max_length=4000,
        description="corrective actions taken, and when they were completed",
    )

    findings: list[Identifier] | None = Field(
        default=None,
        max_length=200,
        description="practices the inspection found needing work (not installed, not "
        "functioning, needing maintenance or deviating from the plan): each opens a "
        "corrective action",
    )

    @field_validator("duty", "affiliation", "address", "phone", "deviations", "corrective_actions")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None


SITE_LOG_BY_MAX = 200  # characters of a site-log entry's ``by``
SITE_LOG_DETAIL_MAX = 1000  # characters of its ``detail``


def site_log_problem(
    event: SiteEvent, area: str | None, detail: str | None
) -> tuple[str, str] | None:
    """What is wrong with a site-log entry's area or detail for its event, as (field, why).

    The one statement of the rules (docs/replay-contract.md, the site log): an
    area event names its area, a site-wide one names none (a ``violation`` may
    name one or not); a ``milestone`` or ``notice`` names a
    :class:`~siltwatch.vocabulary.Milestone`; a ``certification`` names the
    contractor; a ``violation`` and a
    ``violation_corrected`` name the violation (:func:`parse_violation`,
    :func:`parse_violation_corrected`). Whether the area is one of the site's is
    the site's check (ingest, the replay's CSV). None when the entry is well formed.
    """
    if event.needs_area and not area:
        return "area", f"event {event.value!r} names the area it concerns; none given"
    if not event.takes_area and area:
        return "area", (
            f"event {event.value!r} is about the whole site and names no area; got {area!r}"
        )
    if event in (SiteEvent.MILESTONE, SiteEvent.NOTICE) and detail not in _MILESTONES:
        return "detail", (
            f"event {event.value!r} names a milestone, one of {', '.join(_MILESTONES)}; "
            + ("none given" if not detail else f"got {detail[:60]!r}")
        )
    if event == SiteEvent.CERTIFICATION and not (detail or "").strip():
        return "detail", (
            "event 'certification' names the contractor who signed (name and firm); none given"
        )
    if event == SiteEvent.ON_SITE and not (detail or "").strip():
        return "detail", (
            "event 'on_site' names who was on site (the applicant, developer or their "
            "representative); none given"
        )
    try:
        if event == SiteEvent.VIOLATION:
            parse_violation(detail)
        elif event == SiteEvent.VIOLATION_CORRECTED:
            parse_violation_corrected(detail)
        elif event == SiteEvent.PLAN_APPROVED:
            parse_plan_approved(detail)
        elif event == SiteEvent.MAINTENANCE_SCHEDULED:
            parse_schedule(detail)
        elif event == SiteEvent.MAINTAINED:
            maintained_practice(detail)
    except ValueError as exc:
        return "detail", str(exc)
    return None


_MILESTONES = tuple(m.value for m in Milestone)


@dataclass(frozen=True)
class ViolationNotice:
    """A ``violation`` row's detail: ``<id> [remedy by YYYY-MM-DD] <what was found>``."""

    id: str  # the town's number for it, or one the site gives it (e.g. NOV-2026-03)
    remedy_by: date | None  # the last day of the remedy schedule, when the notice sets one
    text: str  # what was found and what must be done (may be empty)


_VIOLATION_FORMAT = (
    "its id, optionally 'remedy by YYYY-MM-DD', then what was found "
    "(e.g. 'NOV-2026-03 remedy by 2026-06-20 silt fence down at outfall A')"
)
_REMEDY_BY = re.compile(r"remedy\s+by\b\s*(\S*)\s*(.*)", re.IGNORECASE | re.DOTALL)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _violation_id(event: str, text: str) -> str:
    if not _ID_RE.match(text):
        raise ValueError(
            f"event {event!r}: the violation id {text[:60]!r} must be 1 to 64 letters, digits, "
            "'.', '_' or '-', starting with a letter or digit (e.g. NOV-2026-03)"
        )
    return text


def parse_violation(detail: str | None) -> ViolationNotice:
    """A ``violation`` row's detail, or ValueError saying, for people, what is wrong."""
    parts = (detail or "").split(maxsplit=1)
    if not parts:
        raise ValueError(f"event 'violation' names the violation: {_VIOLATION_FORMAT}; none given")
    vid = _violation_id("violation", parts[0])
    rest = parts[1].strip() if len(parts) > 1 else ""
    remedy = _REMEDY_BY.match(rest)
    if remedy is None:
        return ViolationNotice(vid, None, rest)
    day_text, text = remedy.group(1), remedy.group(2).strip()
    try:
        if not _ISO_DATE.fullmatch(day_text):
            raise ValueError
        day = date.fromisoformat(day_text)
    except ValueError:
        raise ValueError(
            "event 'violation': 'remedy by' takes the remedy schedule's last day as "
            "YYYY-MM-DD (e.g. 2026-06-20); "
            + (f"got {day_text[:30]!r}" if day_text else "no date given")
        ) from None
    return ViolationNotice(vid, day, text)


def parse_violation_corrected(detail: str | None) -> str:
    """A ``violation_corrected`` row's violation id (free text may follow it)."""
    parts = (detail or "").split(maxsplit=1)
    if not parts:
        raise ValueError(
            "event 'violation_corrected' names the violation the town accepted as corrected "
            "(its id, as in its 'violation' row); none given"
        )
    return _violation_id("violation_corrected", parts[0])


class SiteLogRecord(_Payload):
    """What people did on the site, on ``siltwatch/v1/{site}/log`` (``siltwatch log``).

    One row of the site log (docs/replay-contract.md): an area event
    (``disturbed``, ``cleared``, ``graded``, ``active``, ``inactive``,
    ``temporary_cover``, ``permanent_cover``) names its ``area``; a
    ``milestone`` or ``notice`` names no area and has a milestone as its
    ``detail``; a ``corrective_action`` names no area, its ``detail`` the
    alert id and what was done; a ``violation`` may name an area, its
    ``detail`` the violation id, optionally ``remedy by YYYY-MM-DD``, then what
    was found; a ``violation_corrected`` names no area, its ``detail`` the
    violation id.
    """

    v: Version = 1
    type: Literal["site_log"] = "site_log"
    site: Identifier
    time: WireTime
    event: SiteEvent
    area: Identifier | None = Field(
        default=None, validate_default=True, description="an area id of the site"
    )
    by: str = Field(min_length=1, max_length=SITE_LOG_BY_MAX, description="who recorded it")
    detail: str | None = Field(default=None, max_length=SITE_LOG_DETAIL_MAX, validate_default=True)

    @field_validator("area")
    @classmethod
    def _area_for_event(cls, value: str | None, info: ValidationInfo) -> str | None:
        event = info.data.get("event")
        if isinstance(event, SiteEvent):
            problem = site_log_problem(event, value, None)
            if problem is not None and problem[0] == "area":
                raise ValueError(problem[1])
        return value

    @field_validator("detail")
    @classmethod
    def _detail_for_event(cls, value: str | None, info: ValidationInfo) -> str | None:
        value = value or None
        event = info.data.get("event")
        if isinstance(event, SiteEvent):
            problem = site_log_problem(event, info.data.get("area"), value)
            if problem is not None and problem[0] == "detail":
                raise ValueError(problem[1])
        return value


# Severity (info < warning < critical) and the kinds/reasons: siltwatch/vocabulary.py.
# On the wire a severity is one of its strings; the JSON Schema spells the values
# inline, as it did when Severity was a Literal (docs/schema is unchanged).
WireSeverity = Annotated[
    Severity,
    WithJsonSchema({"enum": [s.value for s in Severity], "title": "Severity", "type": "string"}),
]


class Escalation(_Payload):
    at: UtcDatetime
    severity: WireSeverity


class Alert(_Payload):
    """One alert episode: the fields of the replay contract's ALERTS.jsonl.

    Published (with ``site``) on ``siltwatch/v1/{site}/alerts`` for other consumers.
    """

    id: str
    kind: str
    subject: str
    severity: WireSeverity
    escalations: list[Escalation]
    opened_at: UtcDatetime
    resolved_at: UtcDatetime | None
    rule: str
    message: str
    evidence: dict[str, Any]


class Duty(_Payload):
    """One duty (an inspection to make by a deadline): a line of DUTIES.jsonl."""

    id: str
    kind: str
    reason: str
    subject: str
    created_at: UtcDatetime
    due_at: UtcDatetime
    completed_at: UtcDatetime | None
    rule: str


class AlertMessage(Alert):
    """An alert as published on MQTT: the contract fields plus the site and version."""

    v: Version = 1
    type: Literal["alert"] = "alert"
    site: Identifier


# --- topics -----------------------------------------------------------------


def _check_id(kind: str, value: str) -> str:
    if not _ID_RE.match(value):
        raise ValueError(f"{kind} id {value!r} is not a valid topic level (expected {_ID_PATTERN})")
    return value


def reading_topic(site: str, station: str, sensor: str) -> str:
    return (
        f"{TOPIC_ROOT}/{_check_id('site', site)}/{_check_id('station', station)}/"
        f"{_check_id('sensor', sensor)}/reading"
    )


def status_topic(site: str, station: str) -> str:
    return f"{TOPIC_ROOT}/{_check_id('site', site)}/{_check_id('station', station)}/status"


def inspections_topic(site: str) -> str:
    return f"{TOPIC_ROOT}/{_check_id('site', site)}/inspections"


def site_log_topic(site: str) -> str:
    """Where the site log's entries are published (``siltwatch log``; ingest subscribes)."""
    return f"{TOPIC_ROOT}/{_check_id('site', site)}/log"


def alerts_topic(site: str) -> str:
    return f"{TOPIC_ROOT}/{_check_id('site', site)}/alerts"


def alert_episode_topic(site: str, alert_id: str) -> str:
    """One alert episode's own topic under the site's alerts topic: its retained message
    is the episode as it stands (ingest/mqtt/alert_topic.py; docs/wire-format.md)."""
    return f"{alerts_topic(site)}/{_check_id('alert', alert_id)}"


def readings_subscription(site: str = "+") -> str:
    """The filter ingest subscribes with: every reading of one site (or all sites)."""
    return f"{TOPIC_ROOT}/{site}/+/+/reading"


def statuses_subscription(site: str = "+") -> str:
    """Every station's retained status (and last will) of one site (or all sites)."""
    return f"{TOPIC_ROOT}/{site}/+/status"


def site_subscription(site: str) -> str:
    """The filter for everything published under one site (what ``siltwatch record`` takes)."""
    return f"{TOPIC_ROOT}/{site}/#"


def resend_topic(site: str, station: str) -> str:
    """Only the ingest service writes it, only that station reads it (siltwatch broker-acl)."""
    return f"{TOPIC_ROOT}/{_check_id('site', site)}/{_check_id('station', station)}/cmd/resend"


def ingest_owner_topic(site: str) -> str:
    """Retained by the ingest service that owns ``site``'s subscription (its lease)."""
    return f"{TOPIC_ROOT}/{site}/ingest/owner"


class TopicParts(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Literal["reading", "status", "inspections", "alerts", "log"]
    site: str
    station: str | None = None
    sensor: str | None = None


def _shown(text: str, limit: int = 100) -> str:
    """``text`` quoted for a message, cut at ``limit`` characters (a topic may be 64 KiB)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def parse_topic(topic: str) -> TopicParts:
    """Split a siltwatch topic into its parts; ValueError names what is wrong."""
    prefix = TOPIC_ROOT + "/"
    if not topic.startswith(prefix):
        raise ValueError(f"topic {_shown(topic)} is not under {TOPIC_ROOT}/")
    parts = topic[len(prefix) :].split("/")
    for part in parts:
        if not part:
            raise ValueError(f"topic {_shown(topic)} has an empty level")
    if len(parts) == 4 and parts[3] == "reading":
        return TopicParts(kind="reading", site=parts[0], station=parts[1], sensor=parts[2])
    if len(parts) == 3 and parts[2] == "status":
        return TopicParts(kind="status", site=parts[0], station=parts[1])
    if len(parts) == 2 and parts[1] in _SITE_TOPICS:
        return TopicParts(kind=_SITE_TOPICS[parts[1]], site=parts[0])
    raise ValueError(
        f"topic {_shown(topic)} matches none of .../{{site}}/{{station}}/{{sensor}}/reading, "
        ".../{site}/{station}/status, .../{site}/inspections, .../{site}/alerts, "
        ".../{site}/log"
    )


# The site-wide topics' last level -> their kind.
_SITE_TOPICS: dict[str, Literal["inspections", "alerts", "log"]] = {
    "inspections": "inspections",
    "alerts": "alerts",
    "log": "log",
}


WIRE_MODELS: dict[str, type[BaseModel]] = {
    "reading": Reading,
    "batch": ReadingBatch,
    "status": StationStatus,
    "inspection": InspectionRecord,
    "site_log": SiteLogRecord,
    "alert": AlertMessage,
    "resend": ResendRequest,
}


def iso_utc(value: datetime) -> str:
    """ISO 8601 with ``Z``: the one time format siltwatch writes everywhere."""
    return utc_iso(value)
