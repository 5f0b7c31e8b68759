"""Per-hour summaries of each sensor's readings, kept with the readings (issue 24).

Why: a plot of 92 days of a one-minute turbidity probe is 640 pixel columns
wide, yet drawing it from the readings means reading, parsing and bucketing
132,000 of them per probe on every page view, so the page's cost grows with the
window, not with what it shows. The console's plots (console/charts/plots.py)
read these summaries instead whenever one drawn bucket spans an hour or more.

What an hour keeps: the count, the minimum, the maximum, the median and the sum
of the sensor's readings of that hour (``hour`` is ``t // HOUR_MS``: hours
aligned to the epoch, as the plots' buckets are). The minimum and maximum are
kept so that a plume is not averaged away: the plot draws them as a band around
the line. The sum makes a mean exact over any number of hours. The count and sum
of the readings at the hour's first instant (``head_n``, ``head_total``) make the
sums over hours that end at a reading's time exact too: a rain reading is the
depth that fell in the interval ending at its time, so the rain plot counts a
reading at 10:00 in the hour before (:meth:`HourSummary.ending_sums`).

Which readings count is the plots' own rule, analytics/quality.py: grade 0
summarises the ``usable`` readings (rain, level, sediment); grade 1 those
``usable_in_median`` (turbidity, the spike test), stored only for an hour where
it differs from grade 0 (the hour has readings with a soft flag), so the common
hour is one row. Non-finite values are left out, as the plots leave them out.

Kept, not recomputed: a commit that stores readings recomputes each
sensor-hour it touched from the stored readings of that hour, in the same
transaction (:meth:`HourSummaries._advance_summaries`, one indexed range read
per run of consecutive touched hours). So a reading arriving late, out of
order, or twice gives the same summary as a computation from scratch, and the
store stays the truth: the summaries are derived from it and can be refilled
(:meth:`HourSummaries._fill_summaries`, run once when a writer opens a store
written before they existed). :meth:`HourSummaries.hour_summaries` answers for
any window: the hours inside it from the table, the partial hours at its edges
from their readings, so the answer is the same as summarising the window's
readings afresh (property-tested on both backends, tests/ingest/test_hour_summaries.py).
"""

from __future__ import annotations

import math
import statistics
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from analytics.events import SensorReading
from analytics.quality import usable, usable_in_median

HOUR_MS = 3_600_000
GRADE_USABLE = 0  # the readings analytics/quality.py ``usable`` passes
GRADE_MEDIAN = 1  # those ``usable_in_median`` passes, where they differ from grade 0

HOURS_SCHEMA = """
CREATE TABLE IF NOT EXISTS reading_hours (
    site TEXT NOT NULL, sensor TEXT NOT NULL, hour INTEGER NOT NULL, grade INTEGER NOT NULL,
    n INTEGER NOT NULL, lo REAL NOT NULL, hi REAL NOT NULL, mid REAL NOT NULL,
    total REAL NOT NULL, head_n INTEGER NOT NULL, head_total REAL NOT NULL,
    PRIMARY KEY (site, sensor, hour, grade)
);
"""

_ROWS_PER_INSERT = 500  # 11 parameters a row: 5,500 a statement, under both backends' limits
_COLUMNS = "hour, n, lo, hi, mid, total, head_n, head_total"  # HourSummary's fields


class HourSummary(NamedTuple):
    """One sensor-hour: ``n`` readings from ``lo`` to ``hi``, their median and their sum;
    ``head_n`` of them, summing ``head_total``, at the hour's first instant.

    A named tuple, not a dataclass: a plot of a year reads thousands of them per page.
    """

    hour: int  # t // HOUR_MS
    n: int
    lo: float
    hi: float
    mid: float
    total: float
    head_n: int = 0
    head_total: float = 0.0

    @property
    def start_ms(self) -> int:
        return self.hour * HOUR_MS

    @staticmethod
    def ending_sums(hours: Sequence[HourSummary]) -> list[tuple[int, float]]:
        """(end, sum) of the readings in each hour (start, end], for each such hour with
        readings, in order: what summing readings at ``(t - 1) // HOUR_MS`` gives (a reading
        at an hour's first instant ends the hour before). ``hours`` in hour order."""
        sums: dict[int, float] = {}
        for h in hours:
            if h.n > h.head_n:
                sums[h.hour] = sums.get(h.hour, 0.0) + (h.total - h.head_total)
            if h.head_n:
                sums[h.hour - 1] = sums.get(h.hour - 1, 0.0) + h.head_total
        return [((k + 1) * HOUR_MS, sums[k]) for k in sorted(sums)]


def _summary(hour: int, values: Sequence[float], head: Sequence[float]) -> HourSummary:
    return HourSummary(
        hour, len(values), min(values), max(values), statistics.median(values), math.fsum(values),
        len(head), math.fsum(head),
    )  # fmt: skip


def _marks(flags: str | frozenset[str]) -> frozenset[str]:
    if isinstance(flags, frozenset):
        return flags
    return frozenset(flags.split(",")) if flags else frozenset()


def summarise(
    points: Iterable[tuple[int, float, str | frozenset[str]]],
) -> list[tuple[int, HourSummary]]:
    """(grade, summary) of each hour of the (t, value, flags) points, in (hour, grade) order.

    Flags are a set or the store's comma-separated text. Grade 1 appears only for
    an hour where the readings usable in a median are more than the usable ones.
    """
    # Per hour: the usable values, those usable in a median, and of each the head's.
    hours: dict[int, tuple[list[float], list[float], list[float], list[float]]] = {}
    for t, value, flags in points:
        if not math.isfinite(value):
            continue
        marks = _marks(flags)
        if not usable_in_median(marks):
            continue
        plain, median, plain_head, median_head = hours.setdefault(t // HOUR_MS, ([], [], [], []))
        head = t % HOUR_MS == 0
        median.append(value)
        if head:
            median_head.append(value)
        if usable(marks):
            plain.append(value)
            if head:
                plain_head.append(value)
    out: list[tuple[int, HourSummary]] = []
    for hour in sorted(hours):
        plain, median, plain_head, median_head = hours[hour]
        if plain:
            out.append((GRADE_USABLE, _summary(hour, plain, plain_head)))
        if len(median) > len(plain):
            out.append((GRADE_MEDIAN, _summary(hour, median, median_head)))
    return out


def pick(rows: Iterable[tuple[int, HourSummary]], *, median: bool) -> list[HourSummary]:
    """Each hour's summary for the plots' rule: ``median`` (``usable_in_median``) takes an
    hour's grade 1 where it has one, else its grade 0; otherwise grade 0 only."""
    out: dict[int, HourSummary] = {}
    for grade, s in rows:
        # Rows come in (hour, grade) order: a grade 1 replaces its hour's grade 0.
        wanted = GRADE_MEDIAN if median else GRADE_USABLE
        if grade in (GRADE_USABLE, wanted):
            out[s.hour] = s
    return [out[h] for h in sorted(out)]


def hour_runs(hours: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive hours as (first, last) runs, in order."""
    runs: list[tuple[int, int]] = []
    for h in sorted(set(hours)):
        if runs and h == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], h)
        else:
            runs.append((h, h))
    return runs


class HourSummaries(ABC):
    """The ``reading_hours`` table: kept as readings are stored, filled once, read by plots.

    A part of ingest/store/queries.py ``SqlStore`` (its bases), as the field desk's
    tables are; the readings are read only through the store's own range reads
    (``sensor_points``, ``readings_between``), whatever the readings table's format.
    """

    @abstractmethod
    def _execute(self, sql: str, args: Sequence[object] = ()) -> Any: ...

    @abstractmethod
    def sensor_points(
        self, site: str, sensor: str, start: int, end: int
    ) -> list[tuple[int, float, str]]: ...

    @abstractmethod
    def readings_between(
        self, site: str, start: int | None, end: int | None, chunk: int = 20_000
    ) -> Iterator[list[tuple[str, SensorReading]]]: ...

    @abstractmethod
    def sites(self) -> list[str]: ...

    def _advance_summaries(
        self, site: str, stored: Iterable[tuple[str, SensorReading, int]]
    ) -> None:
        """Recompute the sensor-hours the readings just stored touched (same transaction):
        per run of consecutive hours of a sensor, one range read of its readings, the old
        rows deleted and the new ones inserted."""
        touched: dict[str, set[int]] = {}
        for _station, r, _at in stored:
            touched.setdefault(r.sensor, set()).add(r.t // HOUR_MS)
        for sensor, hours in touched.items():
            for first, last in hour_runs(hours):
                points = self.sensor_points(site, sensor, first * HOUR_MS, (last + 1) * HOUR_MS - 1)
                self._execute(
                    "DELETE FROM reading_hours WHERE site = ? AND sensor = ? "
                    "AND hour >= ? AND hour <= ?",
                    (site, sensor, first, last),
                )
                self._insert_hours(site, sensor, summarise(points))

    def _insert_hours(
        self, site: str, sensor: str, rows: Sequence[tuple[int, HourSummary]]
    ) -> None:
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            chunk = rows[start : start + _ROWS_PER_INSERT]
            args: list[object] = []
            for grade, s in chunk:
                args += (site, sensor, grade, *s)
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
            self._execute(
                f"INSERT INTO reading_hours (site, sensor, grade, {_COLUMNS}) VALUES {values}",
                args,
            )

    def _fill_summaries(self) -> None:
        """The v8 step: summarise every stored reading, once, when a writer opens a store
        written before ``reading_hours`` existed (inside the migration's transaction).

        Each site's readings are read in (time, sensor) order in chunks, so an hour is
        complete, summarised and written as soon as a later hour's reading is read: the
        memory held is one hour of the site's readings, whatever the history's length.
        """
        self._execute("DELETE FROM reading_hours")
        for site in self.sites():
            pending: dict[str, list[tuple[int, float, frozenset[str]]]] = {}
            current: int | None = None
            for chunk in self.readings_between(site, None, None, chunk=100_000):
                for _station, r in chunk:
                    hour = r.t // HOUR_MS
                    if current is not None and hour != current:
                        self._flush_hours(site, pending)
                    current = hour
                    pending.setdefault(r.sensor, []).append((r.t, r.value, r.flags))
            self._flush_hours(site, pending)

    def _flush_hours(
        self, site: str, pending: dict[str, list[tuple[int, float, frozenset[str]]]]
    ) -> None:
        for sensor, points in pending.items():
            self._insert_hours(site, sensor, summarise(points))
        pending.clear()

    def hour_summaries(
        self, site: str, sensor: str, start_ms: int, end_ms: int, *, median: bool = False
    ) -> list[HourSummary]:
        """Per hour, the summary of the sensor's readings with ``start_ms <= t <= end_ms``.

        The same answer as :func:`summarise` of ``sensor_points(site, sensor, start_ms,
        end_ms)`` (then :func:`pick`), at the cost of the hours drawn: the whole hours
        inside the window are read from ``reading_hours`` (one range read on its key),
        the partial hours at its two edges from their own readings.
        """
        if end_ms < start_ms:
            return []
        first_whole = -(-start_ms // HOUR_MS)  # the first hour starting at or after start_ms
        last_whole = (end_ms + 1) // HOUR_MS - 1  # the last hour ending at or before end_ms
        if first_whole > last_whole:
            return pick(
                summarise(self.sensor_points(site, sensor, start_ms, end_ms)), median=median
            )
        rows: list[tuple[int, HourSummary]] = []
        if start_ms < first_whole * HOUR_MS:
            rows += summarise(self.sensor_points(site, sensor, start_ms, first_whole * HOUR_MS - 1))
        # The plain rule reads grade 0 only; the median rule both, in (hour, grade) order.
        grades = "grade <= 1" if median else "grade = 0"
        cur = self._execute(
            f"SELECT grade, {_COLUMNS} FROM reading_hours WHERE site = ? AND sensor = ? "
            f"AND hour >= ? AND hour <= ? AND {grades} ORDER BY hour, grade",
            (site, sensor, first_whole, last_whole),
        )
        rows += _hour_rows(cur)
        if (last_whole + 1) * HOUR_MS <= end_ms:
            rows += summarise(self.sensor_points(site, sensor, (last_whole + 1) * HOUR_MS, end_ms))
        return pick(rows, median=median)

    def stored_hours(self, site: str, sensor: str) -> list[tuple[int, HourSummary]]:
        """Every kept (grade, summary) row of the sensor, in (hour, grade) order: what a
        check compares with a computation from scratch."""
        cur = self._execute(
            f"SELECT grade, {_COLUMNS} FROM reading_hours WHERE site = ? AND sensor = ? "
            "ORDER BY hour, grade",
            (site, sensor),
        )
        return _hour_rows(cur)


def _hour_rows(cur: Iterable[Sequence[Any]]) -> list[tuple[int, HourSummary]]:
    """``SELECT grade, {_COLUMNS}`` rows as (grade, summary): the drivers already give
    INTEGER columns as int and REAL ones as float."""
    make = HourSummary._make
    return [(row[0], make(row[1:])) for row in cur]
