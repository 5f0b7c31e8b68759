"""One MQTT message -> what it carries, or why it is refused. Never raises.

``decode_message`` is the single door every message comes through (design
guide: "one bad input changes nothing else"). Whatever the bytes and the
topic, it returns either :class:`Decoded` (ready to store) or
:class:`Rejected` with a reason a person can act on. A reason starts with a
stable category before the first ``:`` (the service counts rejections by it):

=====================  ==========================================================
category               what is wrong
=====================  ==========================================================
``wrong topic``        not a siltwatch topic, another site's, or ids that do not
                       match the topic
``unknown station``    the topic's station is not in the site configuration
``unknown sensor``     a sensor that is not in the site, or not on the topic's station
``unknown area``       a site-log entry naming an area that is not in the site
``too large``          payload above :data:`MAX_PAYLOAD_BYTES`, or a number too long to read
``too deeply nested``  ``[``/``{`` nested deeper than :data:`MAX_DEPTH`
``not UTF-8``          bytes that are not UTF-8 text
``not JSON``           text that is not JSON (NaN and Infinity included)
``invalid payload``    JSON that does not fit the wire schema (strict types: a
                       number is a JSON number, ``true`` is not 1), names the field
``wrong unit``         a reading not in its sensor's declared unit
``impossible value``   a value no sensor of that kind can read (siltwatch/sensorkinds/)
``undecodable``        anything else (a bug in siltwatch: the message is still answered)
=====================  ==========================================================

The checks are ordered cheapest and most fundamental first: the topic, then
the size (before any parsing), the nesting depth (a linear scan of the bytes,
so a payload nested 100,000 deep is refused without recursion), UTF-8, JSON,
the wire schema, and last the site: sensors, units and physical bounds. A batch
is all or nothing: one bad reading refuses the whole batch, and the reason
says which one.

:func:`validate_payload` (the wire checks against the topic, without a site)
is shared with JSONL capture replay (ingest/recordings/formats.py ``parse_payload``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, overload

from pydantic import ValidationError

from analytics.events import (
    INSPECTION_RECORD_FIELDS,
    STATION_HEALTH_FIELDS,
    Inspection,
    SensorReading,
    SiteLogEntry,
    StationReport,
)
from analytics.timeutil import to_ms
from siltwatch.config import Sensor, SiteConfig
from siltwatch.schema import (
    AlertMessage,
    InspectionRecord,
    Reading,
    ReadingBatch,
    ReadingItem,
    SiteLogRecord,
    StationStatus,
    TopicParts,
    parse_topic,
)
from siltwatch.sensorkinds import impossible

MAX_PAYLOAD_BYTES = 4 * 1024 * 1024
"""The largest payload read (4 MiB), checked before parsing.

A full batch of 10,000 readings as the edge agent serialises it measures about
1.6 MB (short sensor ids, microsecond times, a value and a raw value at full
float precision, one quality flag) and about 3.6 MB at the worst the edge can
produce (64-character sensor ids, every quality flag on every reading); 4 MiB
holds both with room to spare.
"""

MAX_DEPTH = 32
"""The deepest ``[``/``{`` nesting read. A batch nests 3 levels (object, list of
readings, list of flags); an alert's evidence a few more."""

MAX_TOPIC_BYTES = 65_535  # an MQTT topic is a UTF-8 string of at most 65,535 bytes


@dataclass(frozen=True)
class Decoded:
    """What the message carries, ready to store."""

    topic: TopicParts
    readings: list[tuple[str, SensorReading]]  # (station, reading), in the order sent
    inspections: list[Inspection]
    status: StationStatus | None
    site_log: list[SiteLogEntry] = field(default_factory=list)  # on the site's log topic


@dataclass(frozen=True)
class Rejected:
    """Why the message is refused: ``"category: what is wrong and what was expected"``."""

    reason: str

    @property
    def category(self) -> str:
        return self.reason.split(":", 1)[0]


class Refusal(ValueError):
    """A message refused for a reason a person can act on.

    A ValueError whose text is the detail, so callers of ``parse_payload`` that
    catch ValueError keep working; ``reason`` puts the category in front.
    """

    def __init__(self, category: str, detail: str) -> None:
        super().__init__(detail)
        self.category = category
        self.detail = detail

    @property
    def reason(self) -> str:
        return f"{self.category}: {self.detail}"


@dataclass(frozen=True)
class WirePayload:
    """A parsed message checked against the wire schema and its topic (no site yet)."""

    items: list[ReadingItem]  # a single reading or a batch's readings, in the order sent
    batch: bool
    inspections: list[InspectionRecord]
    status: StationStatus | None
    site_log: list[SiteLogRecord] = field(default_factory=list)


# --- text for people -----------------------------------------------------------------


def _shown(text: str, limit: int = 60) -> str:
    """Quoted and cut: user text in a reason must stay short and printable."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def _number(value: int | float) -> str:
    if isinstance(value, int) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    return repr(value)


def _describe(value: object) -> str:
    """A parsed JSON value as a person would name it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, str):
        return f"the string {_shown(value, 40)}"
    if isinstance(value, list):
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


_TYPE_HINTS = {"float_type", "int_type", "bool_type", "int_parsing", "float_parsing"}


def _validation_detail(exc: ValidationError, what: str) -> str:
    errors = exc.errors(include_url=False)
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "(payload)"
    kind = first["type"]
    msg = first["msg"].removeprefix("Value error, ")
    if kind == "missing":
        text = f"field {where!r} is missing (it is required in a {what})"
    elif kind == "extra_forbidden":
        text = f"field {where!r} is not a field of a {what} (unknown fields are refused)"
    elif kind == "value_error":  # siltwatch's own checks name what they got
        text = f"field {where!r}: {msg}"
    else:
        given = first.get("input")
        text = f"field {where!r}: {msg}; got {_describe(given)}"
        if first["loc"][-1:] == ("seq",) and kind in ("less_than", "greater_than_equal"):
            text += " (seq is a 64-bit signed integer: 0 .. 2**63-1)"
        elif kind in _TYPE_HINTS and isinstance(given, str):
            text += " (a number must be a JSON number, not a string)"
        elif kind in _TYPE_HINTS and isinstance(given, bool):
            text += " (true/false is not a number)"
        elif kind == "int_type" and isinstance(given, float):
            text += " (a whole JSON number without a fraction or exponent)"
    if len(errors) > 1:
        n = len(errors) - 1
        text += f" (and {n} more problem{'s' if n > 1 else ''})"
    return text


# --- the wire checks (shared with capture replay) ------------------------------------


def _batch_size(data: dict[str, Any]) -> int:
    readings = data.get("readings")
    return len(readings) if isinstance(readings, list) else 0


def _in_batch(detail: str, index: int, size: int) -> str:
    return (
        f"{detail} (in 'readings.{index}', counting from 0; "
        f"the whole batch of {size} readings is refused)"
    )


def validate_payload(topic: str, parts: TopicParts, data: object) -> WirePayload:
    """Check a parsed payload against the wire schema and its topic.

    Raises :class:`Refusal` (a ValueError) or pydantic's ValidationError; the
    topic must already have been parsed into ``parts``.
    """
    if not isinstance(data, dict):
        raise Refusal("invalid payload", f"expected a JSON object, got {_describe(data)}")
    shown = topic if len(topic) <= 100 and topic.isprintable() else _shown(topic, 100)
    if parts.kind == "reading":
        if data.get("type") == "batch":
            batch = ReadingBatch.model_validate(data)
            if batch.site != parts.site or batch.station != parts.station:
                raise Refusal(
                    "wrong topic", f"batch for {batch.site}/{batch.station} published on {shown}"
                )
            return WirePayload(list(batch.readings), True, [], None)
        reading = Reading.model_validate(data)
        if (reading.site, reading.station, reading.sensor) != (
            parts.site,
            parts.station,
            parts.sensor,
        ):
            raise Refusal(
                "wrong topic",
                f"reading of {reading.site}/{reading.station}/{reading.sensor} published on {shown}",
            )
        return WirePayload([reading], False, [], None)
    if parts.kind == "inspections":
        rec = InspectionRecord.model_validate(data)
        if rec.site != parts.site:
            raise Refusal("wrong topic", f"inspection for site {rec.site!r} published on {shown}")
        return WirePayload([], False, [rec], None)
    if parts.kind == "status":
        status = StationStatus.model_validate(data)
        if (status.site, status.station) != (parts.site, parts.station):
            raise Refusal(
                "wrong topic", f"status of {status.site}/{status.station} published on {shown}"
            )
        return WirePayload([], False, [], status)
    if parts.kind == "log":
        entry = SiteLogRecord.model_validate(data)
        if entry.site != parts.site:
            raise Refusal(
                "wrong topic", f"site-log entry for site {entry.site!r} published on {shown}"
            )
        return WirePayload([], False, [], None, [entry])
    alert = AlertMessage.model_validate(data)
    if alert.site != parts.site:
        raise Refusal("wrong topic", f"alert for site {alert.site!r} published on {shown}")
    return WirePayload([], False, [], None)


def to_sensor_reading(item: ReadingItem) -> SensorReading:
    """A wire reading as the engine's input (time in epoch ms, flags as strings)."""
    return SensorReading(
        item.sensor, to_ms(item.time), item.value, item.seq, frozenset(map(str, item.quality))
    )


def to_inspection(rec: InspectionRecord) -> Inspection:
    fields = {name: getattr(rec, name) for name in INSPECTION_RECORD_FIELDS}
    findings = tuple(rec.findings or ())
    return Inspection(to_ms(rec.time), rec.inspector, rec.duty, **fields, findings=findings)


def to_site_log_entry(rec: SiteLogRecord) -> SiteLogEntry:
    """A wire site-log entry as the engine's input (time in epoch ms, no detail: "")."""
    return SiteLogEntry(to_ms(rec.time), rec.event.value, rec.area, rec.by, rec.detail or "")


def check_area(area: str | None, areas: list[str], site_id: str) -> None:
    """Refuse a site-log entry naming an area the site does not have (``unknown area``)."""
    if area is not None and area not in areas:
        raise Refusal(
            "unknown area",
            f"{_shown(area)} is not an area of site {site_id!r} (its areas: {_listed(areas)})",
        )


DEFAULT_MAX_CLOCK_SKEW_S = 300.0
"""How far ahead of its arrival an event time may be before it is distrusted (``serve``'s
``--max-clock-skew-s``)."""


@overload
def to_station_report(
    status: StationStatus, received_at: int, max_skew_ms: int | None = None
) -> StationReport: ...
@overload
def to_station_report(
    status: StationStatus, received_at: int | None, max_skew_ms: int | None = None
) -> StationReport | None: ...
def to_station_report(
    status: StationStatus, received_at: int | None, max_skew_ms: int | None = None
) -> StationReport | None:
    """A station status as the engine's input; None when it cannot be placed in time.

    ``t`` is the status's own time when it has one and it is not more than
    ``max_skew_ms`` ahead of ``received_at``; otherwise (a last will has no time;
    one bad clock must not move anything) it is ``received_at`` and ``timed`` is
    False. Without a time and without an arrival time (a capture recorded
    without a clock) there is no time to place it at: None.
    """
    if status.time is not None:
        t = to_ms(status.time)
        if received_at is None or max_skew_ms is None or t <= received_at + max_skew_ms:
            return _report(status, t, timed=True)
    if received_at is None:
        return None
    return _report(status, received_at, timed=False)


def _report(status: StationStatus, t: int, *, timed: bool) -> StationReport:
    # A report's health fields are the wire's StationHealth fields, by name.
    fields = set(STATION_HEALTH_FIELDS)  # the outbox's held ranges go to ingest/gaps.py only
    health = status.health.model_dump(include=fields) if status.health is not None else {}
    return StationReport(status.station, t, status.state, timed=timed, **health)


# --- bytes -> JSON ---------------------------------------------------------------------

# A JSON string, escapes included; an unterminated one runs to the end (so the scan
# stays linear whatever the quotes and backslashes).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_DEPTH_STEP = [0] * 256
for _b in b"[{":
    _DEPTH_STEP[_b] = 1
for _b in b"]}":
    _DEPTH_STEP[_b] = -1
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def nesting_depth(payload: bytes) -> int:
    """How deep ``[`` and ``{`` nest outside JSON strings: a linear scan, no recursion.

    Unbalanced input counts its unclosed brackets (``[[[`` is 3 deep), which is
    what a recursive parser would have to descend.
    """
    brackets = _STRING.sub(b"", payload).translate(None, _NOT_BRACKET)
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


def _no_constant(name: str) -> Any:
    raise Refusal("not JSON", f"{name} is not a JSON value (JSON numbers are finite)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Refusal(
            "impossible value",
            f"the number {_shown(text, 30)} is beyond the range of a 64-bit float (about 1.8e308)",
        )
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise Refusal(
                    "invalid payload",
                    f"key {_shown(key, 40)} appears twice in one object "
                    "(which one counts would be a guess; send each key once)",
                )
            seen.add(key)
    return out


def _lone_surrogate(value: object, path: str) -> str | None:
    """The path of the first string (or key) holding a lone UTF-16 surrogate, or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "(payload)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            found = _lone_surrogate(key, here) or _lone_surrogate(item, here)
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, f"{path}.{i}" if path else str(i))
            if found:
                return found
    return None


_OPENERS = (b"[", b"{")

# One decoder for every message: ``json.loads`` with hooks would build a new one each call.
_DECODER = json.JSONDecoder(
    parse_constant=_no_constant,
    parse_float=_finite_float,
    object_pairs_hook=_unique_keys,
)


def _may_nest_too_deep(payload: bytes) -> bool:
    """False when ``payload`` cannot nest deeper than :data:`MAX_DEPTH`.

    Nesting depth never exceeds the number of opening brackets (strings
    included), and counting bytes is far cheaper than :func:`nesting_depth`'s
    scan; a single reading holds one or two.
    """
    return sum(map(payload.count, _OPENERS)) > MAX_DEPTH


def parse_json(payload: bytes) -> Any:
    """Bytes -> a JSON value, refusing what is too large, too deep or not strict JSON."""
    size = len(payload)
    if size > MAX_PAYLOAD_BYTES:
        raise Refusal(
            "too large",
            f"the payload is {size:,} bytes; at most {MAX_PAYLOAD_BYTES:,} bytes are read "
            "(4 MiB: room for a batch of 10,000 readings)",
        )
    if not payload:
        raise Refusal("not JSON", "the payload is empty (expected a JSON object)")
    depth = nesting_depth(payload) if _may_nest_too_deep(payload) else 0
    if depth > MAX_DEPTH:
        raise Refusal(
            "too deeply nested",
            f"arrays/objects nest {depth:,} levels deep; at most {MAX_DEPTH} are read "
            "(a batch of readings nests 3)",
        )
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = payload[exc.start : exc.start + 1].hex()
        raise Refusal(
            "not UTF-8",
            f"byte 0x{bad} at position {exc.start} is not UTF-8 ({exc.reason}); "
            "payloads are UTF-8 JSON text",
        ) from None
    if text.startswith("\ufeff"):
        raise Refusal(
            "not JSON", "the payload starts with a byte-order mark (send UTF-8 without it)"
        )
    try:
        data = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise Refusal(
            "not JSON", f"{exc.msg} (line {exc.lineno}, column {exc.colno}, char {exc.pos})"
        ) from None
    except Refusal:
        raise
    except ValueError as exc:  # an integer beyond int_max_str_digits (4300 digits)
        if "digits" in str(exc):
            raise Refusal(
                "too large", "a number has more than 4300 digits; no reading needs that many"
            ) from None
        raise Refusal("not JSON", str(exc)) from None
    if _SURROGATE_ESCAPE.search(text):
        where = _lone_surrogate(data, "")
        if where is not None:
            raise Refusal(
                "invalid payload",
                f"field {where!r}: holds a lone UTF-16 surrogate escape (e.g. \\ud800), "
                "which is not a character; strings must be valid Unicode",
            )
    return data


# --- the site checks -------------------------------------------------------------------


def _listed(ids: list[str], limit: int = 10) -> str:
    if not ids:
        return "none"
    head = ", ".join(ids[:limit])
    return head + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


@dataclass(frozen=True)
class _SiteIndex:
    site_id: str
    sensors: dict[str, Sensor]
    station_of: dict[str, str]
    station_sensors: dict[str, list[str]]
    # Topics that passed :func:`_check_topic`, with their parts: a station sends on
    # the same few topics all day, so each is parsed and checked once. Only
    # accepted topics are kept, and those are bounded by the site's sensors.
    topics: dict[str, TopicParts] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, site: SiteConfig) -> _SiteIndex:
        """The index of ``site``, built once per configuration object (it is frozen)."""
        cached = _INDEXES.get(id(site))
        if cached is not None and cached[0] is site:
            return cached[1]
        index = cls(
            site.site.id,
            site.sensors(),
            site.station_of(),
            {st.id: [s.id for s in st.sensors] for st in site.stations},
        )
        if len(_INDEXES) > 1_000:
            _INDEXES.clear()
        _INDEXES[id(site)] = (site, index)
        return index


_INDEXES: dict[int, tuple[SiteConfig, _SiteIndex]] = {}


_TOPICS_KEPT = 10_000  # a bound on _SiteIndex.topics, whatever the site's size


def _check_topic(topic: str, index: _SiteIndex) -> TopicParts:
    """The topic's parts, checked against the site; a topic seen before, from the cache."""
    parts = index.topics.get(topic) if isinstance(topic, str) else None
    if parts is None:
        parts = _check_new_topic(topic, index)
        if len(index.topics) < _TOPICS_KEPT:
            index.topics[topic] = parts
    return parts


def _check_new_topic(topic: str, index: _SiteIndex) -> TopicParts:
    if not isinstance(topic, str):
        raise Refusal("wrong topic", f"the topic is a {type(topic).__name__}, not text")
    if not topic:
        raise Refusal("wrong topic", "the topic is empty")
    try:
        size = len(topic.encode("utf-8"))
    except UnicodeEncodeError:
        raise Refusal("wrong topic", f"topic {_shown(topic, 100)} is not valid Unicode") from None
    if size > MAX_TOPIC_BYTES:
        raise Refusal(
            "wrong topic", f"the topic is {size:,} bytes; MQTT allows {MAX_TOPIC_BYTES:,}"
        )
    try:
        parts = parse_topic(topic)
    except ValueError as exc:
        raise Refusal("wrong topic", str(exc)) from None
    if parts.site != index.site_id:
        raise Refusal(
            "wrong topic",
            f"the topic is for site {_shown(parts.site)}; this service ingests {index.site_id!r}",
        )
    if parts.station is not None and parts.station not in index.station_sensors:
        raise Refusal(
            "unknown station",
            f"{_shown(parts.station)} is not a station of site {index.site_id!r} "
            f"(its stations: {_listed(list(index.station_sensors))})",
        )
    if parts.sensor is not None:
        _check_sensor(parts.sensor, parts.station or "", index, from_topic=True)
    return parts


def _check_sensor(sensor_id: str, station: str, index: _SiteIndex, *, from_topic: bool) -> Sensor:
    sensor = index.sensors.get(sensor_id)
    named = "the topic names sensor" if from_topic else "sensor"
    if sensor is None:
        raise Refusal(
            "unknown sensor",
            f"{named} {_shown(sensor_id)}, which is not a sensor of station {station!r} in the "
            f"site config (its sensors: {_listed(index.station_sensors.get(station, []))})",
        )
    owner = index.station_of[sensor_id]
    if owner != station:
        raise Refusal(
            "unknown sensor",
            f"{named} {sensor_id!r}, which belongs to station {owner!r}, not to station "
            f"{station!r} whose topic it came on",
        )
    return sensor


def _check_reading(item: ReadingItem, station: str, index: _SiteIndex) -> SensorReading:
    sensor = _check_sensor(item.sensor, station, index, from_topic=False)
    if item.unit != sensor.unit:
        raise Refusal(
            "wrong unit",
            f"sensor {item.sensor!r} is declared in {sensor.unit}, "
            f"the reading says {_shown(item.unit)}",
        )
    problem = impossible(sensor.kind, item.value, sensor.unit)
    if problem is not None:
        raise Refusal("impossible value", f"sensor {item.sensor!r} reads {problem}")
    try:
        return to_sensor_reading(item)
    except (OverflowError, ValueError) as exc:  # WireTime keeps times in range: defensive
        raise Refusal("impossible value", f"field 'time': {exc}") from None


_WHAT = {  # a topic kind's payload, as a reason names it
    "reading": "reading",
    "status": "station status",
    "inspections": "inspection",
    "alerts": "alert",
    "log": "site-log entry",
}


def _decode(topic: str, payload: bytes, site: SiteConfig) -> Decoded:
    index = _SiteIndex.of(site)
    parts = _check_topic(topic, index)
    if not isinstance(payload, bytes):
        payload = bytes(payload)
    data = parse_json(payload)
    what = _WHAT[parts.kind]
    is_batch = parts.kind == "reading" and isinstance(data, dict) and data.get("type") == "batch"
    try:
        wire = validate_payload(topic, parts, data)
    except ValidationError as exc:
        detail = _validation_detail(exc, "batch" if is_batch else what)
        loc = exc.errors(include_url=False)[0]["loc"]
        if is_batch and len(loc) > 1 and loc[0] == "readings":
            assert isinstance(data, dict)
            detail += f" (the whole batch of {_batch_size(data)} readings is refused)"
        raise Refusal("invalid payload", detail) from None
    station = parts.station or ""
    readings: list[tuple[str, SensorReading]] = []
    for i, item in enumerate(wire.items):
        try:
            readings.append((station, _check_reading(item, station, index)))
        except Refusal as exc:
            if not wire.batch:
                raise
            raise Refusal(exc.category, _in_batch(exc.detail, i, len(wire.items))) from None
    try:
        inspections = [to_inspection(rec) for rec in wire.inspections]
        site_log = [to_site_log_entry(rec) for rec in wire.site_log]
    except (OverflowError, ValueError) as exc:
        raise Refusal("impossible value", f"field 'time': {exc}") from None
    if site_log:
        areas = [a.id for a in site.areas]
        for entry in site_log:
            check_area(entry.area, areas, index.site_id)
    return Decoded(parts, readings, inspections, wire.status, site_log)


def decode_message(topic: str, payload: bytes, site: SiteConfig) -> Decoded | Rejected:
    """What one MQTT message carries for ``site``, or why it is refused; never raises."""
    try:
        return _decode(topic, payload, site)
    except Refusal as exc:
        return Rejected(exc.reason)
    except RecursionError:
        return Rejected(f"too deeply nested: the payload could not be read (over {MAX_DEPTH} deep)")
    except MemoryError:
        return Rejected("too large: the payload does not fit in memory")
    except Exception as exc:  # a bug in siltwatch: still an answer, never a lost message
        try:
            text = _shown(str(exc), 200)
        except Exception:
            text = "(no message)"
        name = type(exc).__name__
        if isinstance(exc, OverflowError):
            return Rejected(f"impossible value: a number or time overflowed ({name}: {text})")
        if isinstance(exc, ValueError):
            return Rejected(f"invalid payload: {name}: {text}")
        return Rejected(f"undecodable: {name} while decoding ({text}); please report this")
