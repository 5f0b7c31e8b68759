"""Recordings: sensor data captured to a file, read back for replay.

Two formats (docs/replay-contract.md, "Recording (input)"):

* CSV with a header ``time,sensor,value``, one reading a row, any order;
  ``time`` ISO 8601 with ``Z`` or an offset, ``value`` in the sensor's unit.
* JSONL capture of MQTT messages written by ``siltwatch record``: one object a
  line, ``{"topic": ..., "payload": {...}}`` (and ``"received_at"`` when the
  recorder had a clock), payloads in the wire schema (reading, batch,
  inspection, station status, site-log entry). The recorder subscribes to the
  whole site, so a capture holds the stations' retained statuses and last wills
  too; they replay as station reports (:func:`status_report`), and the site
  log's entries as site-log entries.

Inspections come in a second CSV ``time,inspector,duty`` (an empty ``duty`` is
a full site inspection), with the record's optional columns
``affiliation,address,phone,signed,deviations,corrective_actions``. The site
log comes in a third, ``time,event,area,by,detail`` (:func:`read_site_log`).

A bad row is reported with its line number, column and value — all of them at
once (up to a cap), because a person fixing a 30-day file should not have to
run the replay thirty times.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from analytics.batch_columns import ReadingColumns
from analytics.events import Inspection, SensorReading, SiteLogEntry, StationReport
from analytics.timeutil import MS_PER_S
from ingest.decode import (
    DEFAULT_MAX_CLOCK_SKEW_S,
    check_area,
    to_inspection,
    to_sensor_reading,
    to_site_log_entry,
    to_station_report,
    validate_payload,
)
from ingest.recordings.columns import read_csv_columns
from ingest.recordings.csv_rows import (
    csv_table,
    parse_time,
    read_csv_rows,
    reading_file,
    row_time,
)
from siltwatch.schema import (
    SITE_LOG_BY_MAX,
    SITE_LOG_DETAIL_MAX,
    parse_topic,
    site_log_problem,
)
from siltwatch.vocabulary import SiteEvent


def read_csv_readings(path: Path, sensors: Iterable[str]) -> list[SensorReading]:
    """Read a ``time,sensor,value`` CSV; every bad row is named by line and column.

    With pandas (the server extra) the file is parsed column-wise
    (:func:`read_csv_columns`); without it, or for a file that reader leaves to
    the csv module (quoted fields, NUL bytes, text that is not UTF-8), row by
    row. Both give the same readings and the same errors.
    """
    columns = read_csv_columns(path, sensors)
    if columns is not None:
        return list(columns)
    return read_csv_rows(path, sensors)


_RECORD_TEXT = ("affiliation", "address", "phone", "deviations", "corrective_actions")
_YES = frozenset({"yes", "true", "1"})
_NO = frozenset({"no", "false", "0"})


def _cell(row: list[str], names: list[str], column: str) -> str:
    """The stripped text of an optional column ("" when the file or the row lacks it)."""
    if column not in names:
        return ""
    i = names.index(column)
    return row[i].strip() if len(row) > i else ""


def _signed(text: str) -> bool | None:
    """yes/no (or true/false, 1/0; any case) -> bool, "" -> None; ValueError otherwise."""
    word = text.lower()
    if not word:
        return None
    if word in _YES or word in _NO:
        return word in _YES
    raise ValueError(f"{text!r} is not yes or no (expected yes, no, true, false, 1 or 0)")


def read_inspections(path: Path) -> list[Inspection]:
    """Read a ``time,inspector,duty`` CSV (empty or absent duty: a full site inspection).

    Optional columns hold the rest of the record: ``affiliation``, ``address``,
    ``phone``, ``signed`` (yes/no), ``deviations``, ``corrective_actions``.
    """
    out: list[Inspection] = []
    with reading_file(path) as (fh, problems):
        cols, names, rows = csv_table(fh, problems.source, ("time", "inspector"))
        for line, row in rows:
            if len(row) <= max(cols.values()):
                problems.add(line, f"expected columns {','.join(names)}, got {','.join(row)!r}")
                continue
            t = row_time(row, cols)
            if isinstance(t, str):
                problems.add(line, t)
                continue
            try:
                signed = _signed(_cell(row, names, "signed"))
            except ValueError as exc:
                problems.add(line, f"column 'signed': {exc}")
                continue
            inspector = row[cols["inspector"]].strip()
            if not inspector:
                problems.add(line, "column 'inspector': empty (who inspected must be recorded)")
                continue
            duty = _cell(row, names, "duty")
            record: dict[str, Any] = {
                name: _cell(row, names, name) or None for name in _RECORD_TEXT
            }
            out.append(Inspection(t, inspector, duty or None, signed=signed, **record))
    return out


_EVENTS = ", ".join(e.value for e in SiteEvent)


def read_site_log(path: Path, areas: Iterable[str]) -> list[SiteLogEntry]:
    """Read a ``time,event,area,by,detail`` CSV: the site log (docs/replay-contract.md).

    ``areas`` are the site's area ids. Every bad row is named by line and column,
    with what was expected: an unknown event, an unknown area, an area missing
    where the event needs one or given where it takes none, a bad time, no
    ``by``, a ``milestone``/``notice`` whose detail is not a milestone. The
    ``detail`` column may be left out of a file that needs none.
    """
    known = list(areas)
    out: list[SiteLogEntry] = []
    with reading_file(path) as (fh, problems):
        cols, names, rows = csv_table(fh, problems.source, ("time", "event", "area", "by"))
        for line, row in rows:
            if len(row) <= max(cols.values()):
                problems.add(line, f"expected columns {','.join(names)}, got {','.join(row)!r}")
                continue
            entry = _site_log_row(row, cols, names, known)
            if isinstance(entry, str):
                problems.add(line, entry)
                continue
            out.append(entry)
    return out


def _site_log_row(
    row: list[str], cols: dict[str, int], names: list[str], areas: list[str]
) -> SiteLogEntry | str:
    """The row as an entry, or what is wrong with it (the first problem, by column)."""
    t = row_time(row, cols)
    if isinstance(t, str):
        return t
    text = row[cols["event"]].strip()
    try:
        event = SiteEvent(text)
    except ValueError:
        return f"column 'event': {text!r} is not a site-log event (expected one of {_EVENTS})"
    area = row[cols["area"]].strip() or None
    detail = _cell(row, names, "detail")
    by = row[cols["by"]].strip()
    wrong = site_log_problem(event, area, detail)
    if wrong is not None:
        column, why = wrong
        if column == "area" and area is None:
            why += f" (the site's areas: {', '.join(areas) or 'none'})"
        return f"column {column!r}: {why}"
    if area is not None and area not in areas:
        return (
            f"column 'area': {area!r} is not an area of the site "
            f"(its areas: {', '.join(areas) or 'none'})"
        )
    if not by:
        return "column 'by': empty (who did it or recorded it must be named)"
    if len(by) > SITE_LOG_BY_MAX:
        return f"column 'by': {len(by)} characters; at most {SITE_LOG_BY_MAX}"
    if len(detail) > SITE_LOG_DETAIL_MAX:
        return f"column 'detail': {len(detail)} characters; at most {SITE_LOG_DETAIL_MAX}"
    return SiteLogEntry(t, event.value, area, by, detail)


@dataclass
class Capture:
    """What a recording holds, as engine inputs.

    ``readings``: a list for a JSONL capture; for a CSV read column-wise, a
    :class:`~analytics.batch_columns.ReadingColumns` (a sequence of the same
    readings, which the replay feeds to the engine's batch path as columns).
    """

    readings: Sequence[SensorReading]
    inspections: list[Inspection]
    statuses: list[StationReport] = field(default_factory=list)
    site_log: list[SiteLogEntry] = field(default_factory=list)


def parse_payload(topic: str, payload: Any) -> tuple[list[SensorReading], list[Inspection]]:
    """One MQTT message -> engine inputs; ValueError/ValidationError says why it is refused.

    The wire checks are ingest/decode.py's (strict types, ids matching the topic),
    so a capture replays exactly what the live service would have accepted from
    the wire; the site checks (units, physical bounds) need a site and stay there.
    """
    parts = parse_topic(topic)
    wire = validate_payload(topic, parts, payload)
    return [to_sensor_reading(r) for r in wire.items], [to_inspection(r) for r in wire.inspections]


def status_report(topic: str, payload: Any, received_at: int | None) -> StationReport | None:
    """A captured station status as the engine's input, as the live service would place it.

    None when the message is not a status, or is one that cannot be placed in
    time: a last will (no time of its own) captured without an arrival time.
    A status dated more than the default clock-skew bound after its arrival
    is placed at its arrival, as ``serve`` does. ValueError/ValidationError as
    :func:`parse_payload`.
    """
    parts = parse_topic(topic)
    if parts.kind != "status":
        return None
    wire = validate_payload(topic, parts, payload)
    if wire.status is None:
        return None
    return to_station_report(wire.status, received_at, round(DEFAULT_MAX_CLOCK_SKEW_S * MS_PER_S))


def _arrival(line: dict[str, Any]) -> int | None:
    """A capture line's ``received_at`` (the recorder's clock) in epoch ms, if it has one."""
    arrived = line.get("received_at")
    if arrived is None:
        return None
    try:
        return parse_time(str(arrived))
    except ValueError as exc:
        raise ValueError(f"field 'received_at': {exc}") from None


def read_capture(path: Path, sensors: Iterable[str], areas: Iterable[str] | None = None) -> Capture:
    """Read a JSONL capture of MQTT messages (``siltwatch record``).

    ``areas``: the site's area ids, which site-log entries must name (None: not
    checked, the detectors get what was captured).
    """
    known = set(sensors)
    known_areas = None if areas is None else list(areas)
    readings: list[SensorReading] = []
    inspections: list[Inspection] = []
    statuses: list[StationReport] = []
    site_log: list[SiteLogEntry] = []
    with reading_file(path) as (fh, problems):
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                topic, payload = obj["topic"], obj["payload"]
                rs, ins = parse_payload(topic, payload)
                parts = parse_topic(topic)
                kind = parts.kind
                report = status_report(topic, payload, _arrival(obj)) if kind == "status" else None
                log = site_log_entries(topic, payload) if kind == "log" else []
                if known_areas is not None:
                    for entry in log:
                        check_area(entry.area, known_areas, parts.site)
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                problems.add(
                    line_no, f'not a capture line {{"topic": ..., "payload": ...}} ({exc})'
                )
                continue
            except RecursionError:
                # json (or pydantic) gives up on a line nested thousands deep: that line
                # is refused like any other, not the whole replay with a traceback.
                problems.add(line_no, "not a capture line: its JSON is nested too deeply to read")
                continue
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                problems.add(line_no, f"payload field {where!r}: {first['msg']}")
                continue
            except ValueError as exc:
                problems.add(line_no, str(exc))
                continue
            for r in rs:
                if r.sensor not in known:
                    problems.add(line_no, f"sensor {r.sensor!r} is not a sensor of the site")
                    break
            else:
                readings.extend(rs)
            inspections.extend(ins)
            if report is not None:
                statuses.append(report)
            site_log.extend(log)
    return Capture(readings, inspections, statuses, site_log)


def site_log_entries(topic: str, payload: Any) -> list[SiteLogEntry]:
    """A captured site-log message as the engine's inputs ([] for another topic's);
    ValueError/ValidationError as :func:`parse_payload` (the site's areas are not checked)."""
    parts = parse_topic(topic)
    if parts.kind != "log":
        return []
    wire = validate_payload(topic, parts, payload)
    return [to_site_log_entry(rec) for rec in wire.site_log]


def read_recording(
    path: Path, sensors: Iterable[str], areas: Iterable[str] | None = None
) -> Capture:
    """A CSV or JSONL recording (by extension: .jsonl / .jsonl.gz is a capture)."""
    name = path.name.removesuffix(".gz")
    if name.endswith(".jsonl"):
        return read_capture(path, sensors, areas)
    sensors = list(sensors)
    columns = read_csv_columns(path, sensors)
    if columns is not None:
        return Capture(columns, [])
    return Capture(read_csv_rows(path, sensors), [])


def readings_from_frame(frame: Any) -> Iterator[SensorReading]:
    """Readings from a pandas DataFrame with columns ``time``, ``sensor``, ``value``.

    ``time`` may be strings or tz-aware timestamps; naive times are refused.
    """
    return iter(columns_from_frame(frame))


def columns_from_frame(frame: Any) -> ReadingColumns:
    """:func:`readings_from_frame` as columns (what the replay feeds the engine's batch path)."""
    import numpy as np
    import pandas as pd

    times = pd.to_datetime(frame["time"], utc=False)
    if getattr(times.dt, "tz", None) is None:
        raise ValueError(
            "DataFrame column 'time' has naive times: localize them (e.g. .dt.tz_localize('UTC'))"
        )
    # pandas 3 infers the resolution (s, ms, us, ns): ask for milliseconds explicitly.
    ms = times.dt.tz_convert("UTC").dt.as_unit("ms").astype("int64").to_numpy(dtype=np.int64)
    codes, names = pd.factorize(frame["sensor"].astype(str).to_numpy(dtype=object))
    values = frame["value"].astype(float).to_numpy(dtype=np.float64)
    return ReadingColumns(
        [str(name) for name in names], codes.astype(np.int32), ms.copy(), values.copy()
    )
