"""The store's data out, for pandas, Excel or a warehouse: ``siltwatch export``.

``siltwatch records`` writes the records the ordinances ask for, for people to
hand over; this writes the data itself — readings, alert episodes, duties, the
site log and the daily rain log — of one or more sites and a time range, as
CSV or Parquet, to load into a notebook or a spreadsheet.

One file per table (``readings.csv``, ``alerts.parquet``, ...) with a ``site``
column, so several sites load as one frame and filter as one column. Every
time is there twice: ``*_utc`` (UTC, ISO 8601 with ``Z`` in CSV, a UTC
timestamp in Parquet) to compute with, and ``*_local`` (the site's local time
with its offset, as ``records`` shows it) to read. A table with no rows is
still written, header (or schema) only, so a script that loads it works.

What "in the range" means, per table (the range is half-open, [from, to)):

* readings and site-log entries: their event time is in it;
* alert episodes and duties: they were open at some time in it (opened before
  its end, not closed before its start), so an alert that was running when the
  range began is there;
* rain-log days: the local day *begins* in it, so consecutive ranges share no
  day; with ``--from``/``--to`` as dates this is exactly ``records``' range of
  local dates, and the rows are ``records``' rows (:func:`ingest.outputs.records.daily_rain`).

Withdrawn alert episodes (late data disproved them) are exported too, marked in
the ``withdrawn`` column: the store keeps them as the record of what was sent,
and an analysis may want them; the console leaves them out.

The store is only read (:meth:`SqliteStore.open_read_only`) and readings are
streamed in chunks, so a store of millions of rows exports in bounded memory
next to a running ``serve``. With pyarrow (``siltwatch[server]``) each chunk of
readings is an Arrow table whose times pyarrow compute formats
(ingest/outputs/export_columns.py), at the speed of the columnar tools; without
it the same bytes come out reading by reading.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from analytics.timeutil import to_ms
from ingest.outputs.records import (
    RAIN_COLUMNS,
    SITE_LOG_COLUMNS,
    daily_rain,
    local_iso,
    parse_day,
    rain_row,
    site_log_fields,
)
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig
from siltwatch.timefmt import utc_iso

READING_CHUNK = 50_000  # readings per store query, and per Parquet row group at most
PARQUET_NEEDS = "--format parquet needs pyarrow: pip install 'siltwatch[server]'"
Row = Sequence[object]


class ColumnType(Enum):
    """How a column is written: its CSV text and its Parquet type."""

    TEXT = "text"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    UTC = "utc"  # epoch milliseconds in the rows
    DATE = "date"


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType


def _columns(*spec: tuple[str, ColumnType]) -> tuple[Column, ...]:
    return tuple(Column(name, kind) for name, kind in spec)


TEXT, INT, FLOAT, BOOL, UTC, DATE = (
    ColumnType.TEXT,
    ColumnType.INT,
    ColumnType.FLOAT,
    ColumnType.BOOL,
    ColumnType.UTC,
    ColumnType.DATE,
)


def _timed(name: str) -> tuple[tuple[str, ColumnType], tuple[str, ColumnType]]:
    """A time's two columns: UTC to compute with, local to read."""
    return (f"{name}_utc", UTC), (f"{name}_local", TEXT)


# --- the range ----------------------------------------------------------------------

Bound = date | datetime
"""A ``--from``/``--to`` value: a local date, a local time (no offset) or an instant."""


def parse_bound(text: str) -> Bound:
    """YYYY-MM-DD (a local date, as ``records`` takes it) or an ISO 8601 time.

    A time without an offset is each site's local time; with one, an instant.
    ValueError for anything else.
    """
    try:
        day = parse_day(text)
    except ValueError:
        return datetime.fromisoformat(text)
    assert day is not None
    return day


def _start_ms(bound: Bound, zone: tzinfo) -> int:
    """Where a range begins: the instant, or the local midnight that begins the date."""
    if isinstance(bound, datetime):
        return to_ms(bound if bound.tzinfo is not None else bound.replace(tzinfo=zone))
    return day_start_ms(bound, zone)


def _end_ms(bound: Bound, zone: tzinfo) -> int:
    """Where a range stops: the instant, or after the whole date (records' dates are inclusive)."""
    if isinstance(bound, datetime):
        return _start_ms(bound, zone)
    return day_start_ms(bound + timedelta(days=1), zone)


def day_start_ms(day: date, zone: tzinfo) -> int:
    """The first instant of a local day."""
    return to_ms(datetime.combine(day, time(0), tzinfo=zone))


@dataclass(frozen=True)
class Window:
    """A half-open range of event times [start, end) in epoch ms; None is unbounded."""

    start: int | None = None
    end: int | None = None

    @classmethod
    def of(cls, start: Bound | None, end: Bound | None, zone: tzinfo) -> Window:
        return cls(
            None if start is None else _start_ms(start, zone),
            None if end is None else _end_ms(end, zone),
        )

    @property
    def empty(self) -> bool:
        return self.start is not None and self.end is not None and self.start >= self.end

    def holds(self, t: int) -> bool:
        return (self.start is None or t >= self.start) and (self.end is None or t < self.end)

    def overlaps(self, opened: int, closed: int | None) -> bool:
        """Open at some time in the window: opened before its end, not closed before its start."""
        return (self.end is None or opened < self.end) and (
            closed is None or self.start is None or closed >= self.start
        )


@dataclass(frozen=True)
class SiteSlice:
    """One site and its window: what that site contributes to every table."""

    site: SiteConfig
    window: Window

    @property
    def id(self) -> str:
        return self.site.site.id

    @property
    def zone(self) -> tzinfo:
        return self.site.site.zone

    def times(self, t: int | None) -> tuple[int | None, str | None]:
        """An event time's two cells: epoch ms (for ``*_utc``) and the local ISO text."""
        return (None, None) if t is None else (t, local_iso(t, self.zone))


# --- the tables ---------------------------------------------------------------------

Chunks = Callable[[SqlStore, SiteSlice], Iterator["Sequence[Row] | Columns"]]


@dataclass(frozen=True)
class Table:
    """One exported table: its columns, and the rows one site gives, chunk by chunk."""

    name: str
    columns: tuple[Column, ...]
    chunks: Chunks


@dataclass(frozen=True)
class Columns:
    """A chunk as one Arrow table in its table's schema (the readings, with pyarrow)."""

    table: Any

    def __len__(self) -> int:
        return int(self.table.num_rows)


def columnar() -> bool:
    """Whether pyarrow and numpy are here for the column path (``siltwatch[server]``)."""
    return all(importlib.util.find_spec(name) is not None for name in ("pyarrow", "numpy"))


def flags_sorted(flags: str) -> str:
    """Stored flags as the export writes them: sorted, comma-separated ('' for none)."""
    return ",".join(sorted(flags.split(","))) if "," in flags else flags


def _readings(store: SqlStore, part: SiteSlice) -> Iterator[Sequence[Row] | Columns]:
    units = {sensor_id: s.unit for sensor_id, s in part.site.sensors().items()}
    w = part.window
    chunks = store.reading_rows_between(part.id, w.start, w.end, READING_CHUNK)
    if columnar():
        from ingest.outputs.export_columns import readings_table

        schema = arrow_schema(TABLES[0].columns)
        for rows in chunks:
            yield Columns(readings_table(schema, part.id, part.zone, units, rows))
        return
    for rows in chunks:
        yield [
            (part.id, station, sensor, *part.times(t), float(value), units.get(sensor, ""),
             seq, flags_sorted(flags))
            for station, sensor, t, value, seq, flags in rows
        ]  # fmt: skip


def _ms_or_none(t: datetime | None) -> int | None:
    return None if t is None else to_ms(t)


def _alerts(store: SqlStore, part: SiteSlice) -> Iterator[Sequence[Row]]:
    """Episodes open at some point in the window, withdrawn and late ones marked."""
    rows: list[Row] = []
    for stored in store.alert_records(part.id):
        a = stored.alert
        opened, resolved = to_ms(a.opened_at), _ms_or_none(a.resolved_at)
        if not part.window.overlaps(opened, resolved):
            continue
        head = (part.id, a.id, a.kind, a.subject, a.severity)
        times = (*part.times(opened), *part.times(resolved))
        evidence = json.dumps(a.evidence, sort_keys=True, separators=(",", ":"))
        rows.append((*head, *times, a.rule, a.message, stored.late, stored.withdrawn, evidence))
    yield rows


def _duties(store: SqlStore, part: SiteSlice) -> Iterator[Sequence[Row]]:
    """Duties open at some point in the window."""
    rows: list[Row] = []
    for d in store.duties(part.id):
        created, completed = to_ms(d.created_at), _ms_or_none(d.completed_at)
        if not part.window.overlaps(created, completed):
            continue
        head = (part.id, d.id, d.kind, d.reason, d.subject)
        times = (*part.times(created), *part.times(to_ms(d.due_at)), *part.times(completed))
        rows.append((*head, *times, d.rule))
    yield rows


def _site_log(store: SqlStore, part: SiteSlice) -> Iterator[Sequence[Row]]:
    yield [
        (part.id, *part.times(e.t), *site_log_fields(e))
        for e in store.site_log(part.id)
        if part.window.holds(e.t)
    ]


def _field_records(store: SqlStore, part: SiteSlice) -> Iterator[Sequence[Row]]:
    """The field desk's checklists (ingest/store/fieldbook.py) dated in the window, each with
    its signature and the content as signed (``body``: canonical JSON, hash it to check)."""
    w = part.window
    yield [
        (part.id, r.record_id, *part.times(r.t), r.account, *part.times(r.signed_at),
         r.sha256, r.intact, r.amends or "", r.body)
        for r in store.field_records(part.id, w.start, w.end)
    ]  # fmt: skip


def _corrective_actions(store: SqlStore, part: SiteSlice) -> Iterator[Sequence[Row]]:
    """Corrective actions open at some point in the window."""
    yield [
        (part.id, a.action_id, a.record_id, a.practice, a.finding, a.owner,
         *part.times(a.created_at), *part.times(a.due_at), a.rule, *part.times(a.closed_at),
         a.closed_by or "", a.closure_note or "", a.closure_photo or "")
        for a in store.corrective_actions(part.id)
        if part.window.overlaps(a.created_at, a.closed_at)
    ]  # fmt: skip


def export_photos(store: SqlStore, parts: Sequence[SiteSlice], out: Path) -> int:
    """The photos of the exported checklists and closures as files ``photos/<sha256>.<ext>``
    (named by their content, never by the name the phone gave them); how many."""
    written = 0
    for part in parts:
        w = part.window
        ids = [
            p
            for r in store.field_records(part.id, w.start, w.end)
            for p in store.field_photo_ids(part.id, r.record_id)
        ]
        ids += [
            a.closure_photo
            for a in store.corrective_actions(part.id)
            if a.closure_photo and w.overlaps(a.created_at, a.closed_at)
        ]
        for photo_id in dict.fromkeys(ids):
            photo = store.field_photo(part.id, photo_id)
            if photo is not None:
                ext = photo.content_type.removeprefix("image/").replace("jpeg", "jpg")
                (out / "photos").mkdir(parents=True, exist_ok=True)
                (out / "photos" / f"{photo_id}.{ext}").write_bytes(photo.data)
                written += 1
    return written


def _rain_log(store: SqlStore, part: SiteSlice) -> Iterator[Sequence[Row]]:
    yield [
        (part.id, *rain_row(r))
        for r in daily_rain(store, part.site, part.window.start, part.window.end)
        if part.window.holds(day_start_ms(r.day, part.zone))
    ]


TABLES: tuple[Table, ...] = (
    Table(
        "readings",
        _columns(
            ("site", TEXT),
            ("station", TEXT),
            ("sensor", TEXT),
            *_timed("time"),
            ("value", FLOAT),
            ("unit", TEXT),
            ("seq", INT),
            ("flags", TEXT),
        ),
        _readings,
    ),
    Table(
        "alerts",
        _columns(
            ("site", TEXT),
            ("id", TEXT),
            ("kind", TEXT),
            ("subject", TEXT),
            ("severity", TEXT),
            *_timed("opened"),
            *_timed("resolved"),
            ("rule", TEXT),
            ("message", TEXT),
            ("late", BOOL),
            ("withdrawn", BOOL),
            ("evidence", TEXT),
        ),
        _alerts,
    ),
    Table(
        "duties",
        _columns(
            ("site", TEXT),
            ("id", TEXT),
            ("kind", TEXT),
            ("reason", TEXT),
            ("subject", TEXT),
            *_timed("created"),
            *_timed("due"),
            *_timed("completed"),
            ("rule", TEXT),
        ),
        _duties,
    ),
    Table(
        "site_log",
        _columns(("site", TEXT), *_timed("time"), *((name, TEXT) for name in SITE_LOG_COLUMNS[1:])),
        _site_log,
    ),
    Table(
        "rain_log",
        _columns(
            ("site", TEXT), *zip(RAIN_COLUMNS, (DATE, TEXT, FLOAT, TEXT, INT, INT), strict=True)
        ),
        _rain_log,
    ),
    Table(
        "field_records",
        _columns(
            ("site", TEXT),
            ("record", TEXT),
            *_timed("time"),
            ("account", TEXT),
            *_timed("signed"),
            ("sha256", TEXT),
            ("intact", BOOL),
            ("amends", TEXT),
            ("body", TEXT),
        ),
        _field_records,
    ),
    Table(
        "corrective_actions",
        _columns(
            ("site", TEXT),
            ("action", TEXT),
            ("record", TEXT),
            ("practice", TEXT),
            ("finding", TEXT),
            ("owner", TEXT),
            *_timed("opened"),
            *_timed("due"),
            ("due_rule", TEXT),
            *_timed("closed"),
            ("closed_by", TEXT),
            ("closure_note", TEXT),
            ("closure_photo", TEXT),
        ),
        _corrective_actions,
    ),
)
TABLE_NAMES = tuple(t.name for t in TABLES)


def tables_named(text: str) -> list[Table]:
    """The tables of a ``--tables`` value (comma-separated), in the order given.

    ValueError naming the unknown ones and the known ones.
    """
    by_name = {t.name: t for t in TABLES}
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        said = f"unknown table {', '.join(map(repr, unknown))}" if unknown else "no table named"
        raise ValueError(
            f"--tables: {said} (expected a comma-separated list of {', '.join(TABLE_NAMES)})"
        )
    return [by_name[n] for n in dict.fromkeys(names)]


# --- the writers --------------------------------------------------------------------


class ExportFormat(Enum):
    CSV = "csv"
    PARQUET = "parquet"


def _csv_cell(kind: ColumnType) -> Callable[[Any], object]:
    if kind is ColumnType.UTC:
        return lambda v: "" if v is None else utc_iso(v)
    if kind is ColumnType.BOOL:
        return lambda v: "" if v is None else ("true" if v else "false")
    if kind is ColumnType.DATE:
        return lambda v: "" if v is None else v.isoformat()
    return lambda v: "" if v is None else v


class CsvTableWriter:
    """One CSV file: the header, then rows as they come (UTF-8, ``\\n`` line ends)."""

    def __init__(self, path: Path, columns: Sequence[Column]) -> None:
        self._fh: TextIO = path.open("w", encoding="utf-8", newline="")
        self._out = csv.writer(self._fh, lineterminator="\n")
        self._cells = [_csv_cell(c.type) for c in columns]
        self._columns = tuple(columns)
        self._out.writerow([c.name for c in columns])

    def write(self, rows: Sequence[Row] | Columns) -> None:
        if isinstance(rows, Columns):
            self._out.writerows(zip(*self._texts(rows.table), strict=True))
            return
        cells = self._cells
        self._out.writerows([[f(v) for f, v in zip(cells, row, strict=True)] for row in rows])

    def _texts(self, table: Any) -> list[list[object]]:
        """Each column's cells (the csv module writes None as the empty text); the UTC
        times formatted by pyarrow compute, as ``utc_iso`` writes them."""
        from ingest.outputs.export_columns import utc_texts

        out: list[list[object]] = []
        for column, field in zip(self._columns, table.columns, strict=True):
            if column.type is ColumnType.UTC:
                field = utc_texts(field.cast("int64").to_numpy())
            elif column.type not in (ColumnType.TEXT, ColumnType.INT, ColumnType.FLOAT):
                raise TypeError(f"{column.name}: no CSV text for {column.type} in columns")
            out.append(field.to_pylist())
        return out

    def close(self) -> None:
        self._fh.close()


class ParquetTableWriter:
    """One Parquet file, written a row group at a time (at most ``READING_CHUNK`` rows)."""

    def __init__(self, path: Path, columns: Sequence[Column]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        self._schema = arrow_schema(columns)
        self._writer = pq.ParquetWriter(path, self._schema)
        self._pending: list[Row] = []
        self._tables: list[Any] = []  # Columns not yet written, fewer than READING_CHUNK rows
        self._held = 0

    def write(self, rows: Sequence[Row] | Columns) -> None:
        if isinstance(rows, Columns):
            self._write_columns(rows.table)
            return
        self._pending.extend(rows)
        while len(self._pending) >= READING_CHUNK:
            group, self._pending = self._pending[:READING_CHUNK], self._pending[READING_CHUNK:]
            self._write_group(group)

    def _write_group(self, rows: Sequence[Row]) -> None:
        pa, schema = self._pa, self._schema
        by_column = list(zip(*rows, strict=True))
        arrays = [
            pa.array(values, type=f.type) for values, f in zip(by_column, schema, strict=True)
        ]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=schema))

    def _write_columns(self, table: Any) -> None:
        """Row groups of exactly ``READING_CHUNK`` rows, as the row path writes them."""
        self._tables.append(table)
        self._held += table.num_rows
        while self._held >= READING_CHUNK:
            held = self._pa.concat_tables(self._tables).combine_chunks()
            self._writer.write_table(held.slice(0, READING_CHUNK))
            self._tables, self._held = [held.slice(READING_CHUNK)], self._held - READING_CHUNK

    def close(self) -> None:
        if self._pending:
            self._write_group(self._pending)
        if self._held:
            self._writer.write_table(self._pa.concat_tables(self._tables).combine_chunks())
        self._writer.close()


def arrow_schema(columns: Sequence[Column]) -> Any:
    """The Parquet file's schema: each column's Arrow type."""
    import pyarrow as pa

    types = {
        ColumnType.TEXT: pa.string(),
        ColumnType.INT: pa.int64(),
        ColumnType.FLOAT: pa.float64(),
        ColumnType.BOOL: pa.bool_(),
        ColumnType.UTC: pa.timestamp("ms", tz="UTC"),
        ColumnType.DATE: pa.date32(),
    }
    return pa.schema([(c.name, types[c.type]) for c in columns])


def open_writer(
    fmt: ExportFormat, path: Path, columns: Sequence[Column]
) -> CsvTableWriter | ParquetTableWriter:
    if fmt is ExportFormat.PARQUET:
        return ParquetTableWriter(path, columns)
    return CsvTableWriter(path, columns)


# --- the export ---------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """One table's file and how many rows went into it."""

    table: str
    rows: int
    path: Path


def export_tables(
    store: SqlStore,
    parts: Sequence[SiteSlice],
    out: Path,
    fmt: ExportFormat,
    tables: Sequence[Table] = TABLES,
) -> list[Written]:
    """Write each table, every site's rows in turn, to ``out/<table>.<format>``.

    A file is written under a ``.part`` name and renamed when complete, so a
    failed export never leaves a file that looks whole.
    """
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for table in tables:
        path = out / f"{table.name}.{fmt.value}"
        partial = path.with_name(path.name + ".part")
        writer = open_writer(fmt, partial, table.columns)
        count = 0
        try:
            for part in parts:
                for rows in table.chunks(store, part):
                    writer.write(rows)
                    count += len(rows)
        except BaseException:
            writer.close()
            partial.unlink(missing_ok=True)
            raise
        writer.close()
        partial.replace(path)
        written.append(Written(table.name, count, path))
    return written


def summary(written: Sequence[Written]) -> str:
    """The rows written per table, as a small aligned table for the terminal."""
    lines = [("table", "rows", "file")] + [(w.table, f"{w.rows:,}", str(w.path)) for w in written]
    name_w = max(len(a) for a, _, _ in lines)
    rows_w = max(len(b) for _, b, _ in lines)
    return "\n".join(f"{a:<{name_w}}  {b:>{rows_w}}  {c}" for a, b, c in lines)
