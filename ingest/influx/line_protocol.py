"""InfluxDB line protocol for siltwatch's readings, alerts and duties.

Written by hand rather than with influxdb-client's ``Point`` so that the exact
bytes are ours to test: both transports (v1 ``/write`` and v2 ``/api/v2/write``)
send the same lines, and the escaping is checked by a round trip through a real
InfluxDB 1.x (tests/ingest/test_influx_roundtrip.py).

Escaping (the line protocol reference, "Special characters"):

* tag values: ``,`` ``=`` and space are backslash-escaped. A backslash is
  literal, and the 1.x/2.x parsers never unescape ``\\\\`` in a tag, so a
  backslash that ends a tag value or precedes ``,`` ``=`` or space cannot be
  written at all; it is written as ``/`` (the field copies — an alert's
  ``message`` — keep the exact text). Line breaks and tabs in a tag become
  spaces, and an empty tag is left out (the parsers reject ``k=``).
* string field values: ``"`` and ``\\`` are backslash-escaped; everything else,
  line breaks included, is literal inside the quotes.

Identifiers (site, station, sensor ids) match ``[A-Za-z0-9][A-Za-z0-9_.-]*``
(siltwatch/schema.py), so only free text — alert subjects and messages — ever
needs the escapes; they are there so a strange id never corrupts a batch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime

from analytics.events import SensorReading
from siltwatch import measurements as m
from siltwatch.schema import Alert, Duty

FieldValue = float | int | str | bool

_TAG_SPECIAL = re.compile(r"([,= ])")
_TAG_BAD_BACKSLASH = re.compile(r"\\(?=[,= ]|$)")
_TAG_BREAKS = re.compile(r"[\r\n\t]")


def escape_tag(value: str) -> str:
    """A tag key or value as line protocol writes it (see the module docstring)."""
    value = _TAG_BREAKS.sub(" ", value)
    value = _TAG_BAD_BACKSLASH.sub("/", value)
    return _TAG_SPECIAL.sub(r"\\\1", value)


def stored_tag(value: str) -> str:
    """What InfluxDB will store for tag ``value``: the text after the substitutions above."""
    return _TAG_BAD_BACKSLASH.sub("/", _TAG_BREAKS.sub(" ", value))


def escape_string_field(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _field(value: FieldValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}i"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"line protocol has no {value!r}: a reading must be finite")
        # repr keeps every bit of a float; InfluxDB parses 1e-05 and 1.5e+20 alike.
        return repr(value)
    return escape_string_field(value)


def line(
    measurement: str,
    tags: Mapping[str, str],
    fields: Mapping[str, FieldValue],
    time_ms: int,
) -> str:
    """One line: ``measurement,tag=v,... field=v,... time`` with time in epoch ms.

    Tags are sorted by key (what InfluxDB recommends for write performance);
    empty tags are left out; at least one field is required.
    """
    if not fields:
        raise ValueError(f"a {measurement} point needs at least one field")
    tag_part = "".join(
        f",{escape_tag(k)}={escape_tag(v)}" for k, v in sorted(tags.items()) if stored_tag(v)
    )
    field_part = ",".join(f"{escape_tag(k)}={_field(v)}" for k, v in fields.items())
    return f"{escape_tag(measurement)}{tag_part} {field_part} {int(time_ms)}"


def _ms(t: datetime) -> int:
    return round(t.timestamp() * 1000)


def reading_line(site: str, station: str, kind: str, unit: str, reading: SensorReading) -> str:
    """A sensor reading at its event time; ``kind`` and ``unit`` come from the site config."""
    fields: dict[str, FieldValue] = {m.READING_VALUE: float(reading.value)}
    if reading.seq is not None:
        fields[m.READING_SEQ] = int(reading.seq)
    fields[m.READING_FLAGS] = ",".join(sorted(reading.flags))
    tags = {"site": site, "station": station, "sensor": reading.sensor, "kind": kind, "unit": unit}
    return line(m.READING, tags, fields, reading.t)


def alert_line(site: str, alert: Alert) -> str:
    """An alert episode as one point at its opening time, so a later state overwrites it."""
    fields: dict[str, FieldValue] = {
        "id": alert.id,
        "severity": alert.severity,
        "state": m.ALERT_OPEN if alert.resolved_at is None else m.ALERT_RESOLVED,
        "message": alert.message,
        "rule": alert.rule,
        "opened_ms": _ms(alert.opened_at),
    }
    if alert.resolved_at is not None:
        fields["resolved_ms"] = _ms(alert.resolved_at)
    tags = {"site": site, "kind": alert.kind, "subject": alert.subject}
    return line(m.ALERT, tags, fields, _ms(alert.opened_at))


def duty_line(site: str, duty: Duty, *, overdue: bool = False) -> str:
    """A duty as one point at its creation time; ``overdue`` when the engine said so."""
    if duty.completed_at is not None:
        state = m.DUTY_COMPLETED
    elif overdue:
        state = m.DUTY_OVERDUE
    else:
        state = m.DUTY_OPEN
    fields: dict[str, FieldValue] = {
        "id": duty.id,
        "reason": duty.reason,
        "rule": duty.rule,
        "state": state,
        "created_ms": _ms(duty.created_at),
        "due_ms": _ms(duty.due_at),
    }
    if duty.completed_at is not None:
        fields["completed_ms"] = _ms(duty.completed_at)
    tags = {"site": site, "kind": duty.kind, "subject": duty.subject}
    return line(m.DUTY, tags, fields, _ms(duty.created_at))


def reading_lines(
    site: str,
    rows: Iterable[tuple[str, SensorReading]],
    kinds: Mapping[str, tuple[str, str]],
) -> list[str]:
    """Lines for (station, reading) rows; ``kinds`` maps sensor id -> (kind, unit)."""
    out = []
    for station, r in rows:
        kind, unit = kinds.get(r.sensor, ("", ""))
        out.append(reading_line(site, station, kind, unit, r))
    return out
