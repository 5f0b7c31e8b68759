"""The column-wise CSV reader (ingest/recordings/columns.py) equals the row-wise one, readings and errors.

Generated recordings with everything a person's file may hold: columns in any
order and extra ones, a byte-order mark, blank and whitespace-only lines, CR,
LF and CRLF line ends, times with offsets, fractions and none, sensor ids with
spaces around them or unknown, values the csv module's float() takes and
pandas does not (``1_000``) or neither does, short and long rows, more bad rows
than are reported, gzip, and quoted fields (which go to the row-wise reader).
Either both readers give the same readings in the same order, or the same
``FILE:LINE`` error lines.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from analytics.batch_columns import ReadingColumns
from analytics.events import SensorReading
from ingest.recordings.columns import _times, read_csv_columns
from ingest.recordings.csv_rows import RecordingError, parse_time, read_csv_rows
from ingest.recordings.formats import read_csv_readings, read_recording

SENSORS = {"turb-up", "turb-down", "rain-1"}

GOOD_TIMES = [
    "2026-05-04T13:00:00Z",
    "2026-05-04T13:01:00Z",
    "2026-05-04T09:02:00-04:00",
    "2026-05-04T13:03:00.250Z",
    "2026-05-04 13:04:00+00:00",
    " 2026-05-04T13:05:00Z ",
]
BAD_TIMES = ["2026-05-04T13:00:00", "yesterday", "", "2026-13-04T13:00:00Z"]
GOOD_SENSORS = ["turb-up", "turb-down", "rain-1", " turb-up ", "turb-down\t"]
BAD_SENSORS = ["turb-x", "", "TURB-UP"]
GOOD_VALUES = [
    "8.2",
    " 9.1 ",
    "1e2",
    "-0.0",
    "0",
    "+5",
    ".5",
    "12.",
    "0.1000000000000000055511151231257827",
]
ODD_VALUES = ["1_000", "\u0663"]  # float() takes them, pandas does not
BAD_VALUES = ["x", "", "nan", "inf", "-Infinity", "1e400", "0x10", "1,5"]


@st.composite
def recordings(draw: st.DrawFn) -> tuple[bytes, bool, str]:
    """(file bytes, gzip it, what went in)."""
    order = draw(st.permutations(["time", "sensor", "value"]))
    extras = draw(st.lists(st.sampled_from(["note", "station", "q"]), max_size=2, unique=True))
    header = list(order)
    for extra in extras:
        header.insert(draw(st.integers(0, len(header))), extra)
    if draw(st.booleans()):
        header = [f" {h} " if h in ("time", "value") else h for h in header]
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    mixed_ends = draw(st.booleans())
    bad_share = draw(st.sampled_from([0.0, 0.0, 0.02, 0.3]))
    quotes = draw(st.sampled_from([False, False, False, True]))
    n = draw(st.integers(min_value=0, max_value=120))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    lines = [",".join(header)]
    for _ in range(n):
        kind = rng.random()
        if kind < 0.04:
            lines.append(rng.choice(["", "  ", "\t", ",,", " , , "]))
            continue
        cells = {
            "time": rng.choice(GOOD_TIMES),
            "sensor": rng.choice(GOOD_SENSORS),
            "value": rng.choice(GOOD_VALUES)
            if rng.random() < 0.9
            else f"{rng.uniform(-5, 900):.3f}",
        }
        if rng.random() < 0.05:
            cells["value"] = rng.choice(ODD_VALUES)
        if rng.random() < bad_share:
            which = rng.choice(["time", "sensor", "value", "short", "long"])
            if which == "time":
                cells["time"] = rng.choice(BAD_TIMES)
            elif which == "sensor":
                cells["sensor"] = rng.choice(BAD_SENSORS)
            elif which == "value":
                cells["value"] = rng.choice(BAD_VALUES)
        else:
            which = ""
        row = [cells.get(h.strip(), rng.choice(["", "a", "x y"])) for h in header]
        if which == "short":
            row = row[: rng.randrange(0, len(row))]
        elif which == "long":
            row += ["extra", "more"][: rng.randint(1, 2)]
        if quotes and rng.random() < 0.05:
            row = [f'"{c}"' for c in row]
        lines.append(",".join(row))
    if mixed_ends:
        text = "".join(line + rng.choice(["\n", "\r\n"]) for line in lines)
    else:
        text = end.join(lines) + (end if draw(st.booleans()) else "")
    if draw(st.booleans()):
        text = "\ufeff" + text
    zipped = draw(st.booleans())
    plan = f"header={header} end={end!r} mixed={mixed_ends} bad={bad_share} quotes={quotes} n={n}"
    return text.encode("utf-8"), zipped, plan


def outcome(read: Callable[[], Sequence[SensorReading]]) -> list[SensorReading] | list[str]:
    """The readings, or ``["error", *lines]``."""
    try:
        readings = read()
    except RecordingError as exc:
        return ["error", *exc.lines]
    return list(readings)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=recordings())
def test_the_column_wise_reader_equals_the_row_wise_one(
    tmp_path: Path, case: tuple[bytes, bool, str]
) -> None:
    data, zipped, plan = case
    path = tmp_path / ("r.csv.gz" if zipped else "r.csv")
    path.write_bytes(gzip.compress(data) if zipped else data)
    rows = outcome(lambda: read_csv_rows(path, SENSORS))
    columns = outcome(lambda: read_csv_readings(path, SENSORS))
    assert columns == rows, plan
    recorded = outcome(lambda: read_recording(path, SENSORS).readings)
    assert recorded == rows, plan
    body = data.decode("utf-8").splitlines()[1:]
    lone_cr = b"\r" in data.replace(b"\r\n", b"")
    if b'"' not in data and not lone_cr and any(line.strip(" \t,") for line in body):
        # Nothing here needs the csv module: the column-wise reader did read it. (A file
        # with a header only may go to the row-wise reader: there is nothing to read; so
        # may one with old Mac line ends, CR alone, which pandas splits otherwise when a
        # line starts with an empty field: it raises, and the csv module reads the file.)
        try:
            read = read_csv_columns(path, SENSORS)
        except RecordingError:
            read = ReadingColumns.empty()
        assert read is not None, plan
    event("errors" if rows and rows[0] == "error" else "readings")


@settings(max_examples=300, deadline=None)
@given(
    fields=st.lists(
        st.tuples(
            st.integers(0, 10_000), st.integers(0, 13), st.integers(0, 32),
            st.integers(0, 25), st.integers(0, 61), st.integers(0, 61),
        ),
        max_size=40,
    ),
    odd=st.lists(st.text(max_size=22), max_size=5),
)  # fmt: skip
def test_times_on_arrays_are_what_parse_time_says(
    fields: list[tuple[int, int, int, int, int, int]], odd: list[str]
) -> None:
    """Every text ``YYYY-MM-DDTHH:MM:SSZ``-shaped, in range or not (a 29 February, a 31
    April, a hour 24, a year 0), and any other text: the same epoch ms, or the same refusal."""
    texts = [f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z" for y, mo, d, h, mi, s in fields]
    texts += [*odd, "2024-02-29T23:59:59Z", "1900-02-29T00:00:00Z", "0001-01-01T00:00:00Z"]
    stamps, ok = _times(texts)
    for text, got, taken in zip(texts, stamps.tolist(), ok.tolist(), strict=True):
        try:
            want: int | None = parse_time(text)
        except ValueError:
            want = None
        assert (got if taken else None) == want, text


def test_the_first_20_bad_rows_then_how_many_more(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    rows = [f"2026-05-04T13:{i % 60:02d}:00Z,turb-up,{i}" for i in range(3000)]
    for i in (10, 500, 501, 2999):
        rows[i] = f"2026-05-04T13:00:00Z,turb-up,x{i}"
    rows += [f"2026-05-04T14:00:00Z,nobody,{i}" for i in range(30)]
    path.write_text("time,sensor,value\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(RecordingError) as info:
        read_csv_columns(path, SENSORS)
    lines = info.value.lines
    assert lines[0] == f"{path}:12: column 'value': 'x10' is not a number"
    assert lines[3] == f"{path}:3001: column 'value': 'x2999' is not a number"
    assert lines[4].startswith(f"{path}:3002: column 'sensor': 'nobody' is not a sensor")
    assert lines[-1] == f"{path}: ... and 14 more bad rows"
    assert len(lines) == 21


def test_a_recording_is_read_as_columns(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text(
        "value,sensor,time\n8.2,turb-up,2026-05-04T13:00:00Z\n9.1, turb-down ,2026-05-04T13:00:00Z\n",
        encoding="utf-8",
    )
    readings = read_recording(path, SENSORS).readings
    assert isinstance(readings, ReadingColumns)
    assert readings.names == ("turb-up", "turb-down")
    assert list(readings) == [
        SensorReading("turb-up", 1777899600000, 8.2),
        SensorReading("turb-down", 1777899600000, 9.1),
    ]
