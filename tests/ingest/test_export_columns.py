"""The export's column path writes the row path's bytes (ingest/outputs/export_columns.py).

The times' text is checked against ``utc_iso`` and ``local_iso`` for any
millisecond, in zones whose offsets change on the hour, on the half hour and by
half an hour (Lord Howe), most of all around their changes; then a real SQLite
store with flags, missing sequence numbers and milliseconds is exported both
ways, CSV and Parquet, and the files compared byte for byte.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.events import SensorReading
from analytics.timeutil import to_ms
from ingest.outputs import export
from ingest.outputs.export_columns import local_texts, utc_texts
from ingest.outputs.records import local_iso
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from siltwatch.timefmt import utc_iso

ROOT = Path(__file__).resolve().parents[2]
SITE = load_site(ROOT / "examples" / "lake-george-site.toml")
ZONES = [ZoneInfo(z) for z in ("America/New_York", "Australia/Adelaide", "Australia/Lord_Howe")]
# DST changes of those zones in 2025-2026 (UTC), and a quarter hour either side of each
CHANGES = [
    to_ms(datetime(2025, 3, 9, 7, tzinfo=UTC)),
    to_ms(datetime(2025, 11, 2, 6, tzinfo=UTC)),
    to_ms(datetime(2025, 4, 5, 16, 30, tzinfo=UTC)),
    to_ms(datetime(2025, 10, 4, 16, 30, tzinfo=UTC)),
    to_ms(datetime(2025, 4, 5, 15, tzinfo=UTC)),
    to_ms(datetime(2025, 10, 4, 15, 30, tzinfo=UTC)),
]
near_change = st.builds(
    lambda at, d: at + d, st.sampled_from(CHANGES), st.integers(-3_600_000, 3_600_000)
)
any_time = st.integers(
    to_ms(datetime(1971, 1, 1, tzinfo=UTC)), to_ms(datetime(2090, 1, 1, tzinfo=UTC))
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(near_change, any_time), min_size=1, max_size=300), st.sampled_from(ZONES))
def test_times_are_the_row_paths_text(times: list[int], zone: ZoneInfo) -> None:
    ms = np.array(times, dtype=np.int64)
    assert utc_texts(ms).to_pylist() == [utc_iso(t) for t in times]
    assert local_texts(ms, zone).to_pylist() == [local_iso(t, zone) for t in times]


def test_every_millisecond_across_a_change_is_exact() -> None:
    start = CHANGES[1] - 2_000  # New York falls back: the same local hour twice
    ms = np.arange(start, start + 4_000, dtype=np.int64)
    zone = ZONES[0]
    assert local_texts(ms, zone).to_pylist() == [local_iso(int(t), zone) for t in ms]


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A week of a few sensors, every tenth reading with milliseconds, flags, no seq."""
    db = tmp_path_factory.mktemp("columns") / "siltwatch.sqlite3"
    station = SITE.station_of()
    sensors = sorted(station)[:4]
    t0 = CHANGES[1] - 3 * 86_400_000  # the week holds New York's change
    rows = []
    for i in range(60_000):  # more than one row group of the export
        sensor = sensors[i % len(sensors)]
        t = t0 + (i // len(sensors)) * 40_000 + (i % 10 == 0) * 7
        flags = frozenset({"suspect", "clipped"}) if i % 13 == 0 else frozenset()
        seq = None if i % 17 == 0 else i
        rows.append((station[sensor], SensorReading(sensor, t, i / 7, seq, flags)))
    store = SqliteStore(db)
    try:
        store.add_readings(SITE.site.id, rows, rows[-1][1].t)
    finally:
        store.close()
    return db


@pytest.mark.parametrize("fmt", list(export.ExportFormat))
def test_column_and_row_paths_write_the_same_bytes(
    store_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: export.ExportFormat
) -> None:
    store = SqliteStore.open_read_only(store_file)
    parts = [export.SiteSlice(SITE, export.Window())]
    tables = export.tables_named("readings")
    try:
        assert export.columnar()
        (by_columns,) = export.export_tables(store, parts, tmp_path / "columns", fmt, tables)
        monkeypatch.setattr(export, "columnar", lambda: False)
        (by_rows,) = export.export_tables(store, parts, tmp_path / "rows", fmt, tables)
    finally:
        store.close()
    assert by_columns.rows == by_rows.rows == 60_000
    assert by_columns.path.read_bytes() == by_rows.path.read_bytes()
