"""Recordings: CSV, JSONL capture, inspections and DataFrames become the same engine inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analytics.events import Inspection, SensorReading
from ingest.recordings.csv_rows import RecordingError
from ingest.recordings.formats import (
    read_capture,
    read_csv_readings,
    read_inspections,
    readings_from_frame,
)

SENSORS = {"turb-up", "turb-down"}
T0 = 1777899600000  # 2026-05-04T13:00:00Z


def test_csv_any_order_offsets_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text(
        "time,sensor,value\n2026-05-04T13:01:00Z,turb-down,9.1\n\n2026-05-04T09:00:00-04:00,turb-up,8.2\n",
        encoding="utf-8",
    )
    assert read_csv_readings(path, SENSORS) == [
        SensorReading("turb-down", T0 + 60_000, 9.1),
        SensorReading("turb-up", T0, 8.2),
    ]


def test_csv_header_and_row_errors(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("when,sensor,value\n", encoding="utf-8")
    with pytest.raises(RecordingError, match=r"r.csv:1: header .* lacks column\(s\) time"):
        read_csv_readings(path, SENSORS)
    rows = "".join(f"2026-05-04T13:00:{i:02d}Z,turb-up,x{i}\n" for i in range(25))
    path.write_text(
        "time,sensor,value\n" + rows + "2026-05-04T13:00:00Z,turb-up\n", encoding="utf-8"
    )
    with pytest.raises(RecordingError) as info:
        read_csv_readings(path, SENSORS)
    lines = info.value.lines
    assert lines[0] == f"{path}:2: column 'value': 'x0' is not a number"
    assert lines[-1] == f"{path}: ... and 6 more bad rows"  # 26 bad rows, 20 shown


def test_inspections_csv(tmp_path: Path) -> None:
    path = tmp_path / "i.csv"
    path.write_text(
        "time,inspector,duty\n2026-05-05T09:30:00-04:00,Jo Whitaker,\n2026-05-06T09:30:00Z,Jo,du-1\n",
        encoding="utf-8",
    )
    assert read_inspections(path) == [
        Inspection(1777987800000, "Jo Whitaker", None),
        Inspection(1778059800000, "Jo", "du-1"),
    ]
    path.write_text(
        "time,inspector,duty\nyesterday,Jo,\n2026-05-06T09:30:00Z,,\n", encoding="utf-8"
    )
    with pytest.raises(RecordingError) as info:
        read_inspections(path)
    assert info.value.lines[0].startswith(f"{path}:2: column 'time':")
    assert (
        info.value.lines[1]
        == f"{path}:3: column 'inspector': empty (who inspected must be recorded)"
    )


def test_jsonl_capture_with_batches_and_rejections(tmp_path: Path) -> None:
    reading = {
        "type": "reading",
        "site": "s",
        "station": "up-1",
        "sensor": "turb-up",
        "time": "2026-05-04T13:00:00Z",
        "seq": 1,
        "value": 8.0,
        "unit": "NTU",
    }
    batch = {
        "type": "batch",
        "site": "s",
        "station": "up-1",
        "readings": [
            {
                "sensor": "turb-up",
                "time": "2026-05-04T13:01:00Z",
                "seq": 2,
                "value": 8.5,
                "unit": "NTU",
                "quality": ["backfilled"],
            }
        ],
    }
    ins = {"type": "inspection", "site": "s", "time": "2026-05-04T14:00:00Z", "inspector": "Dana"}
    path = tmp_path / "c.jsonl"
    lines = [
        {"topic": "siltwatch/v1/s/up-1/turb-up/reading", "payload": reading},
        {"topic": "siltwatch/v1/s/up-1/turb-up/reading", "payload": batch},
        {"topic": "siltwatch/v1/s/inspections", "payload": ins},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    cap = read_capture(path, SENSORS)
    assert cap.readings == [
        SensorReading("turb-up", T0, 8.0, 1),
        SensorReading("turb-up", T0 + 60_000, 8.5, 2, frozenset({"backfilled"})),
    ]
    assert cap.inspections == [Inspection(T0 + 3_600_000, "Dana", None)]
    wrong = {"topic": "siltwatch/v1/s/up-2/turb-up/reading", "payload": reading}
    path.write_text(json.dumps(wrong) + "\nnot json\n", encoding="utf-8")
    with pytest.raises(RecordingError) as info:
        read_capture(path, SENSORS)
    assert "published on siltwatch/v1/s/up-2/turb-up/reading" in info.value.lines[0]
    assert info.value.lines[1].startswith(f"{path}:2: not a capture line")


def test_dataframe_input() -> None:
    frame = pd.DataFrame({"time": ["2026-05-04T13:00:00Z"], "sensor": ["turb-up"], "value": [8.2]})
    assert list(readings_from_frame(frame)) == [SensorReading("turb-up", T0, 8.2)]
    naive = pd.DataFrame({"time": ["2026-05-04 13:00:00"], "sensor": ["turb-up"], "value": [8.2]})
    with pytest.raises(ValueError, match="naive"):
        list(readings_from_frame(naive))
