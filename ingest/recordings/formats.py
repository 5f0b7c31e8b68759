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

import csv
import gzip
import io
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from analytics.batch_columns import ReadingColumns
from analytics.events import Inspection, SensorReading, SiteLogEntry, StationReport
from analytics.timeutil import MS_PER_S, to_ms
from ingest.decode import (
    DEFAULT_MAX_CLOCK_SKEW_S,
    check_area,
    to_inspection,
    to_sensor_reading,
    to_site_log_entry,
    to_station_report,
    validate_payload,
)
from siltwatch.schema import (
    SITE_LOG_BY_MAX,
    SITE_LOG_DETAIL_MAX,
    parse_topic,
    site_log_problem,
)
from siltwatch.vocabulary import SiteEvent

MAX_REPORTED = 20


class RecordingError(Exception):
    """A recording that cannot be replayed; ``lines`` holds one line per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass
class _Problems:
    source: str
    lines: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, line_no: int, message: str) -> None:
        self.count += 1
        if len(self.lines) < MAX_REPORTED:
            self.lines.append(f"{self.source}:{line_no}: {message}")

    def raise_if_any(self) -> None:
        if self.count:
            extra = self.count - len(self.lines)
            lines = self.lines + (
                [f"{self.source}: ... and {extra} more bad rows"] if extra > 0 else []
            )
            raise RecordingError(lines)


def _file_error(source: str, exc: Exception) -> RecordingError:
    """A file that cannot be read at all, said for a person."""
    if isinstance(exc, FileNotFoundError):
        return RecordingError([f"{source}: file not found"])
    if isinstance(exc, UnicodeDecodeError):
        return RecordingError([f"{source}: is not UTF-8 text ({exc.reason})"])
    return RecordingError([f"{source}: is not valid CSV ({exc})"])


def parse_time(text: str) -> int:
    """ISO 8601 with ``Z`` or an offset -> epoch ms; ValueError says what was expected."""
    value = text.strip()
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO 8601 time (expected e.g. 2026-05-04T13:00:00Z)"
        ) from None
    if dt.tzinfo is None:
        raise ValueError(
            f"{text!r} has no UTC offset (add 'Z' or e.g. '-04:00'; local times are ambiguous)"
        )
    return to_ms(dt)


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


@contextmanager
def _reading(path: Path) -> Iterator[tuple[IO[str], _Problems]]:
    """The open file and the list of its bad lines. A file that cannot be read at all is
    one RecordingError; the bad lines the reader adds are raised together at the end."""
    source = str(path)
    problems = _Problems(source)
    try:
        with _open_text(path) as fh:
            yield fh, problems
    except (FileNotFoundError, UnicodeDecodeError, csv.Error) as exc:
        raise _file_error(source, exc) from None
    problems.raise_if_any()


def _csv_table(
    fh: IO[str], source: str, expected: tuple[str, ...]
) -> tuple[dict[str, int], list[str], Iterator[tuple[int, list[str]]]]:
    """A CSV whose header names ``expected`` (and perhaps more): where each expected column
    is, every column name, and the non-blank rows with their line numbers."""
    reader = csv.reader(fh)
    header = next(reader, None)
    cols = _check_header(source, header, expected)
    names = [h.strip().lstrip("\ufeff") for h in header or []]

    def rows() -> Iterator[tuple[int, list[str]]]:
        for row in reader:
            if row and any(c.strip() for c in row):
                yield reader.line_num, row

    return cols, names, rows()


def _check_header(
    source: str, header: list[str] | None, expected: tuple[str, ...]
) -> dict[str, int]:
    if header is None:
        raise RecordingError(
            [f"{source}:1: the file is empty (expected a header {','.join(expected)})"]
        )
    names = [h.strip().lstrip("\ufeff") for h in header]
    missing = [c for c in expected if c not in names]
    if missing:
        raise RecordingError(
            [
                f"{source}:1: header {','.join(names)!r} lacks column(s) {', '.join(missing)} "
                f"(expected {','.join(expected)})"
            ]
        )
    return {c: names.index(c) for c in expected}


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
    return _read_csv_rows(path, sensors)


def read_csv_columns(path: Path, sensors: Iterable[str]) -> ReadingColumns | None:
    """A ``time,sensor,value`` CSV as columns (ingest/recordings/columns.py), or None without pandas
    or when the csv module must read the file; RecordingError as :func:`read_csv_readings`."""
    from ingest.recordings.columns import read_csv_columns as read

    return read(path, sensors)


CSV_COLUMNS = ("time", "sensor", "value")


def _read_csv_rows(path: Path, sensors: Iterable[str]) -> list[SensorReading]:
    """The row-wise reader (the csv module): what the column-wise one must equal."""
    known = set(sensors)
    out: list[SensorReading] = []
    with _reading(path) as (fh, problems):
        reader = csv.reader(fh)
        cols = _check_header(problems.source, next(reader, None), CSV_COLUMNS)
        it, ss, vs = cols["time"], cols["sensor"], cols["value"]
        width = max(cols.values()) + 1
        # Every sensor of a site shares the same timestamps: parse each text once.
        times: dict[str, int] = {}
        append = out.append
        for row in reader:
            # The common row, checked inline; anything else is judged by csv_reading.
            if len(row) >= width:
                sensor = row[ss].strip()
                t = times.get(row[it])
                if t is not None and sensor in known:
                    try:
                        value = float(row[vs])
                    except ValueError:
                        pass
                    else:
                        if math.isfinite(value):
                            append(SensorReading(sensor, t, value))
                            continue
            if not row or not any(c.strip() for c in row):
                continue  # a blank line
            reading = csv_reading(row, cols, width, known, times)
            if isinstance(reading, str):
                problems.add(reader.line_num, reading)
            else:
                append(reading)
            if len(times) > 100_000:
                times.clear()
    return out


def csv_reading(
    row: list[str], cols: dict[str, int], width: int, known: set[str], times: dict[str, int]
) -> SensorReading | str:
    """One non-blank row of a recording as a reading, or what is wrong with it (the first
    problem, by column); ``times`` caches parsed time texts."""
    if len(row) < width:
        return f"expected {width} columns, got {len(row)}: {','.join(row)!r}"
    sensor = row[cols["sensor"]].strip()
    if sensor not in known:
        return (
            f"column 'sensor': {sensor!r} is not a sensor of the site "
            f"(known: {', '.join(sorted(known))})"
        )
    t = _row_time(row, cols, times)
    if isinstance(t, str):
        return t
    value = _row_value(row[cols["value"]].strip())
    if isinstance(value, str):
        return value
    return SensorReading(sensor, t, value)


def _row_value(text: str) -> float | str:
    """The ``value`` cell as a finite number, or what is wrong with that column."""
    try:
        value = float(text)
    except ValueError:
        return f"column 'value': {text!r} is not a number"
    if not math.isfinite(value):
        return f"column 'value': {text!r} is not a finite number"
    return value


def _row_time(
    row: list[str], cols: dict[str, int], times: dict[str, int] | None = None
) -> int | str:
    """The row's ``time`` in epoch ms, or what is wrong with that column;
    ``times``, when given, caches parsed time texts."""
    stamp = row[cols["time"]]
    t = None if times is None else times.get(stamp)
    if t is None:
        try:
            t = parse_time(stamp)
        except ValueError as exc:
            return f"column 'time': {exc}"
        if times is not None:
            times[stamp] = t
    return t


# The inspection record's optional text columns (analytics.events.Inspection).
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
    with _reading(path) as (fh, problems):
        cols, names, rows = _csv_table(fh, problems.source, ("time", "inspector"))
        for line, row in rows:
            if len(row) <= max(cols.values()):
                problems.add(line, f"expected columns {','.join(names)}, got {','.join(row)!r}")
                continue
            t = _row_time(row, cols)
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
    with _reading(path) as (fh, problems):
        cols, names, rows = _csv_table(fh, problems.source, ("time", "event", "area", "by"))
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
    t = _row_time(row, cols)
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
    with _reading(path) as (fh, problems):
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
    return Capture(_read_csv_rows(path, sensors), [])


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
