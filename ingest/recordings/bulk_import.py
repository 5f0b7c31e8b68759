"""``siltwatch import``: a recording into the live store, as if the stations had sent it.

Why: a site's history often exists before its service does (a logger's CSV, a
capture, another store's export), and loading a year of it through MQTT took
70 s and 1.2 GB (issue 24). Here the recording is read in chunks of readings in
event-time order and each chunk goes the service's way, through
:meth:`IngestService.import_chunk`: the same time flags, the same dedupe (a
reading already stored is skipped; one stored with another value is a stored
rejection, counted), one commit per chunk, then the engine on its batch path
(``Engine.catch_up``) and the alerts and duties stored as ``serve`` stores them.
A CSV's chunk of a fresh store (nothing stored in its span, no time flag
needed, no reading twice) takes :meth:`IngestService.import_columns` instead:
stored from the arrays and fed to ``Engine.feed_columns``, replay's own path,
with no object per reading (a year: 2x replay, not 3.8x).

Interrupted (Ctrl-C, a kill) it leaves a consistent store: a chunk is committed
whole or not at all, and the engine is only a cache of the store. Run again it
continues: the service starts from the newest snapshot (one every 200,000
readings) and replays what was stored after it, what was stored is skipped
as duplicates, and the rest is imported, so the readings and alerts are those
of one uninterrupted import.

Three formats: CSV ``time,sensor,value`` and the JSONL capture of ``siltwatch
record`` (ingest/recordings/formats.py, with their ``FILE:LINE`` errors), and
the Parquet file of ``siltwatch export`` (its readings table, one site's rows;
the sensor's unit must be the site's). A CSV is parsed column-wise (a year of
one site is ~25 MB of arrays), a Parquet file a row group at a time, and the
store is written a chunk at a time, so memory is bounded by the chunk. A
capture's inspections, station statuses and site-log entries are counted and
left out: they belong to ``serve`` or ``siltwatch log``, which judge them live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from analytics.batch_columns import ReadingColumns
from analytics.events import SensorReading
from ingest.recordings.csv_rows import RecordingError
from ingest.recordings.formats import read_recording
from ingest.service import IngestService

# Readings per commit and engine catch-up: at 100,000 the objects of a chunk took a year's
# import to 455 MB peak, at 25,000 it peaks at 284 MB, the CSV parse's own peak
# (benchmarks/year.py). A snapshot (the point a rerun continues from) every SNAPSHOT_EVERY.
CHUNK = 25_000
SNAPSHOT_EVERY = 200_000
Rows = list[tuple[str, SensorReading]]


@dataclass
class Imported:
    """What an import did (the service's counters hold the rest: rejections, flags)."""

    read: int = 0  # readings in the recording
    stored: int = 0  # new in the store
    skipped: int = 0  # already stored (a run again, or the same reading twice)
    left_out: int = 0  # a capture's inspections, statuses and site-log entries (not readings)


@dataclass(frozen=True)
class Recording:
    """A recording's readings in chunks of (station, reading), in event-time order (a chunk
    ends between two instants), and what it holds that an import leaves out."""

    total: int
    chunks: Iterator[Rows | ReadingColumns]  # a CSV's chunks stay columns
    left_out: int = 0  # a capture's inspections, station statuses and site-log entries


def recording_chunks(path: Path, service: IngestService, chunk: int = CHUNK) -> Recording:
    """The recording at ``path`` for ``service``'s site; RecordingError for a file that is
    not a recording of the site (every bad line named)."""
    site = service.site
    station = site.station_of()
    if path.name.endswith(".parquet"):
        return _parquet_chunks(path, service, chunk)
    capture = read_recording(path, site.sensors(), [a.id for a in site.areas])
    readings = capture.readings
    ordered: Sequence[SensorReading]
    if isinstance(readings, ReadingColumns):  # sorted as arrays, objects made per chunk
        ordered = readings.sorted_by_time()
    else:
        ordered = sorted(readings, key=lambda r: (r.t, r.sensor))

    def chunks() -> Iterator[Rows | ReadingColumns]:
        start, n = 0, len(ordered)
        while start < n:
            end = _instant_end(ordered, min(start + chunk, n))
            part = ordered[start:end]
            yield (
                part if isinstance(part, ReadingColumns) else [(station[r.sensor], r) for r in part]
            )
            start = end

    left_out = len(capture.inspections) + len(capture.statuses) + len(capture.site_log)
    return Recording(len(ordered), chunks(), left_out)


def _instant_end(ordered: Sequence[SensorReading], end: int) -> int:
    """``end`` moved past every reading at the same time as the one before it."""
    n = len(ordered)
    if end >= n:
        return n
    last = ordered[end - 1].t
    while end < n and ordered[end].t == last:
        end += 1
    return end


def _parquet_chunks(path: Path, service: IngestService, chunk: int) -> Recording:
    """The readings table of ``siltwatch export`` (Parquet), this site's rows, a row
    group at a time; the file must be in the export's order (time, then sensor)."""
    import pyarrow.parquet as pq

    site = service.site
    try:
        file = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow's errors name no file
        raise RecordingError([f"{path}: not a Parquet file ({exc})"]) from None
    want = ("site", "station", "sensor", "time_utc", "value", "unit", "seq", "flags")
    missing = [c for c in want if c not in file.schema_arrow.names]
    if missing:
        raise RecordingError(
            [f"{path}: expected the readings table of siltwatch export; no column "
             f"{', '.join(map(repr, missing))}"]
        )  # fmt: skip
    sensors = site.sensors()
    station = site.station_of()
    total = file.metadata.num_rows

    def chunks() -> Iterator[Rows]:
        row_no, last_t = 0, -(2**63)
        pending: Rows = []
        for batch in file.iter_batches(batch_size=chunk, columns=list(want)):
            cols = batch.to_pydict()
            times = batch.column("time_utc").cast("int64").to_pylist()
            for i, t in enumerate(times):
                row_no += 1
                if cols["site"][i] != site.site.id:
                    continue
                sensor = cols["sensor"][i]
                known = sensors.get(sensor)
                where = f"{path}: row {row_no:,}"
                if known is None:
                    raise RecordingError(
                        [f"{where}: sensor {sensor!r} is not a sensor of the site"]
                    )
                if cols["unit"][i] != known.unit:
                    raise RecordingError(
                        [f"{where}: sensor {sensor!r} in {cols['unit'][i]!r}; the site says "
                         f"{known.unit!r}"]
                    )  # fmt: skip
                if t < last_t:
                    raise RecordingError([f"{where}: out of time order (sort it by time_utc)"])
                flags = cols["flags"][i]
                pending.append(
                    (station[sensor],
                     SensorReading(sensor, t, float(cols["value"][i]), cols["seq"][i],
                                   frozenset(flags.split(",")) if flags else frozenset()))
                )  # fmt: skip
                if len(pending) >= chunk and t != last_t:
                    *whole, (s, r) = pending
                    yield whole
                    pending = [(s, r)]
                last_t = t
        if pending:
            yield pending

    return Recording(total, chunks())


def import_recording(
    path: Path,
    service: IngestService,
    received_at: int,
    *,
    chunk: int = CHUNK,
    progress: Callable[[int, int], None] | None = None,
    done: Imported | None = None,
) -> Imported:
    """Import ``path`` through ``service`` (its store, its engine); ``received_at`` is the
    arrival time stored with every reading (the import's clock). A snapshot every
    ``SNAPSHOT_EVERY`` new readings and at the end: a run interrupted at any point
    continues from the last one (what was stored after it is replayed from the store).
    ``done`` (a new one if None) is counted up as chunks are committed."""
    recording = recording_chunks(path, service, chunk)
    total = recording.total
    done = Imported() if done is None else done  # the caller's, to read after a Ctrl-C
    done.left_out = recording.left_out
    source = f"import {path.name}"
    if progress is not None:
        progress(0, total)
    unsaved = 0  # new readings since the last snapshot
    station = service.site.station_of()
    for part in recording.chunks:
        if isinstance(part, ReadingColumns):
            if service.import_columns(part, received_at):  # a fresh store's: as replay
                done.read += len(part)
                done.stored += len(part)
                unsaved += len(part)
                if progress is not None:
                    progress(done.read, total)
                continue
            part = [(station[r.sensor], r) for r in part]
        new = service.import_chunk(part, received_at, source)
        done.read += len(part)
        done.stored += len(new)
        done.skipped += len(part) - len(new)
        unsaved += len(new)
        if unsaved >= SNAPSHOT_EVERY:
            service.snapshot(received_at)
            unsaved = 0
        if progress is not None:
            progress(done.read, total)
    if unsaved:
        service.snapshot(received_at)
    return done
