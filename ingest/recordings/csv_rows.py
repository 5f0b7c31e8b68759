"""CSV recordings read row by row: the one reader every CSV path must equal.

``read_csv_rows`` (the csv module) is the reference for ``time,sensor,value``
files; the column-wise reader (ingest/recordings/columns.py) must give the same
readings and the same ``FILE:LINE`` errors. The helpers here — the file opened
as text (gzip too), the header checked, the bad lines collected and raised
together — serve the inspection and site-log CSVs as well. They sit below both
readers so that neither imports the other's internals.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO

from analytics.events import SensorReading
from analytics.timeutil import to_ms

MAX_REPORTED = 20


class RecordingError(Exception):
    """A recording that cannot be replayed; ``lines`` holds one line per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass
class Problems:
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


def file_error(source: str, exc: Exception) -> RecordingError:
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


def open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


@contextmanager
def reading_file(path: Path) -> Iterator[tuple[IO[str], Problems]]:
    """The open file and the list of its bad lines. A file that cannot be read at all is
    one RecordingError; the bad lines the reader adds are raised together at the end."""
    source = str(path)
    problems = Problems(source)
    try:
        with open_text(path) as fh:
            yield fh, problems
    except (FileNotFoundError, UnicodeDecodeError, csv.Error) as exc:
        raise file_error(source, exc) from None
    problems.raise_if_any()


def csv_table(
    fh: IO[str], source: str, expected: tuple[str, ...]
) -> tuple[dict[str, int], list[str], Iterator[tuple[int, list[str]]]]:
    """A CSV whose header names ``expected`` (and perhaps more): where each expected column
    is, every column name, and the non-blank rows with their line numbers."""
    reader = csv.reader(fh)
    header = next(reader, None)
    cols = check_header(source, header, expected)
    names = [h.strip().lstrip("\ufeff") for h in header or []]

    def rows() -> Iterator[tuple[int, list[str]]]:
        for row in reader:
            if row and any(c.strip() for c in row):
                yield reader.line_num, row

    return cols, names, rows()


def check_header(
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


CSV_COLUMNS = ("time", "sensor", "value")


def read_csv_rows(path: Path, sensors: Iterable[str]) -> list[SensorReading]:
    """The row-wise reader (the csv module): what the column-wise one must equal."""
    known = set(sensors)
    out: list[SensorReading] = []
    with reading_file(path) as (fh, problems):
        reader = csv.reader(fh)
        cols = check_header(problems.source, next(reader, None), CSV_COLUMNS)
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
    t = row_time(row, cols, times)
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


def row_time(
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
