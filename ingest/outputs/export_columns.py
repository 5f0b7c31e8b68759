"""The readings' export as columns: times formatted by pyarrow compute, not per reading.

Why: a year of one site is 1.3 M readings, and formatting two timestamps per
reading in Python (``utc_iso``, ``local_iso``) was most of ``siltwatch
export``'s 30-40 s (issue 24). Here a chunk of stored rows becomes one Arrow
table: the UTC text is one cast of the chunk's times to text, the local text is the
same over the times shifted by the zone's offset, and the offset is asked of
the zone once per quarter hour the chunk touches (a zone changes its offset at
most once in a quarter hour; a quarter hour where it does is formatted reading
by reading, so a DST change is exact to the millisecond).

The text is the same text, byte for byte, as the row path's (siltwatch/timefmt.py
``utc_iso``: whole seconds, ``.mmm`` when there are milliseconds, ``Z``;
ingest/outputs/records.py ``local_iso``: Python's ``isoformat``, microseconds when
there are milliseconds, the offset as ``+HH:MM``). tests/ingest/test_export.py holds
both paths to the same bytes.

pyarrow and numpy come with ``siltwatch[server]``; without them the export
takes the row path (ingest/outputs/export.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import tzinfo
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analytics.timeutil import from_ms
from ingest.outputs.records import local_iso

QUARTER_HOUR_MS = 900_000

StoredRow = tuple[str, str, int, float, int | None, str]
"""A reading as the store gives it: (station, sensor, t, value, seq, flags)."""


def _seconds_text(ms: np.ndarray[Any, Any]) -> Any:
    """``YYYY-MM-DDTHH:MM:SS`` of epoch milliseconds (whole seconds, floored)."""
    seconds = pa.array(np.floor_divide(ms, 1000), type=pa.int64()).cast(pa.timestamp("s"))
    # Arrow's cast writes "YYYY-MM-DD HH:MM:SS", three times faster than its strftime
    return pc.replace_substring(seconds.cast(pa.string()), " ", "T", max_replacements=1)


def _millis(ms: np.ndarray[Any, Any], pad: str) -> Any:
    """``.mmm`` + ``pad`` where the time has milliseconds, else the empty text."""
    part = np.mod(ms, 1000)
    digits = pc.utf8_lpad(pa.array(part).cast(pa.string()), width=3, padding="0")
    dotted = pc.binary_join_element_wise(".", digits, pad, "")
    return pc.if_else(pa.array(part != 0), dotted, "")


def utc_texts(ms: np.ndarray[Any, Any]) -> Any:
    """``utc_iso`` of each time, as a string array."""
    return pc.binary_join_element_wise(_seconds_text(ms), _millis(ms, ""), "Z", "")


def _offset_ms(t: int, zone: tzinfo) -> int:
    offset = from_ms(t).astimezone(zone).utcoffset()
    assert offset is not None  # an aware datetime
    return round(offset.total_seconds() * 1000)


def _offset_text(t: int, zone: tzinfo) -> str:
    """How ``isoformat`` writes the zone's offset at ``t`` (``-04:00``)."""
    return from_ms(t - t % 1000).astimezone(zone).isoformat()[19:]


def local_texts(ms: np.ndarray[Any, Any], zone: tzinfo) -> Any:
    """``local_iso`` of each time in ``zone``, as a string array."""
    if len(ms) == 0:
        return pa.array([], type=pa.string())
    quarters, where = np.unique(np.floor_divide(ms, QUARTER_HOUR_MS), return_inverse=True)
    offsets = np.empty(len(quarters), dtype=np.int64)
    suffixes: list[str] = []
    steady = np.ones(len(quarters), dtype=bool)
    for i, q in enumerate(quarters.tolist()):
        first, last = q * QUARTER_HOUR_MS, (q + 1) * QUARTER_HOUR_MS - 1
        offsets[i] = _offset_ms(first, zone)
        suffixes.append(_offset_text(first, zone))
        steady[i] = offsets[i] == _offset_ms(last, zone)
    shifted = ms + offsets[where]
    text = pc.binary_join_element_wise(
        _seconds_text(shifted),
        _millis(shifted, "000"),
        pc.take(pa.array(suffixes, type=pa.string()), pa.array(where)),
        "",
    )
    if steady.all():
        return text
    changing = np.flatnonzero(~steady[where])  # readings in a quarter hour the offset changes
    exact = text.to_pylist()
    for i in changing.tolist():
        exact[i] = local_iso(int(ms[i]), zone)
    return pa.array(exact, type=pa.string())


def flags_sorted(flags: str) -> str:
    """Stored flags as the export writes them: sorted, comma-separated."""
    return ",".join(sorted(flags.split(","))) if "," in flags else flags


def readings_table(
    schema: Any, site: str, zone: tzinfo, units: Mapping[str, str], rows: Sequence[StoredRow]
) -> Any:
    """One chunk of stored readings as an Arrow table in the export's ``readings`` schema
    (site, station, sensor, time_utc, time_local, value, unit, seq, flags)."""
    stations, sensors, times, values, seqs, flags = zip(*rows, strict=True)
    ms = np.fromiter(times, dtype=np.int64, count=len(times))
    n = len(rows)
    columns = [
        pa.array([site] * n, type=pa.string()),
        pa.array(stations, type=pa.string()),
        pa.array(sensors, type=pa.string()),
        pa.array(ms).cast(pa.timestamp("ms", tz="UTC")),
        local_texts(ms, zone),
        pa.array(values, type=pa.float64()),
        pa.array([units.get(s, "") for s in sensors], type=pa.string()),
        pa.array(seqs, type=pa.int64()),
        pa.array([flags_sorted(f) for f in flags], type=pa.string()),
    ]
    return pa.Table.from_arrays(columns, schema=schema)
