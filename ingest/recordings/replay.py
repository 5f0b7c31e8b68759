"""Replay: recorded readings through the same engine the live service runs.

This is the developer's API for their own tests::

    from ingest.recordings.replay import replay_file
    result = replay_file("examples/lake-george-site.toml", "examples/lake-george-storm.csv")
    result.assert_alert("turbidity_contrast", subject="outfall-a", severity="critical")

A recording is complete data, so the replay sorts it by event time before
feeding the engine; the engine's own ordering (watermark, allowed lateness) is
what live and backfilled data rely on, and the property tests show both give
the same alerts.
"""

from __future__ import annotations

import csv
import heapq
import json
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from analytics import batch as batch_path
from analytics.batch_columns import ReadingColumns
from analytics.engine import DEFAULT_ALLOWED_LATENESS_S, Engine, EngineStats
from analytics.events import (
    EngineEvent,
    Inspection,
    RainDay,
    SensorReading,
    SiteLogEntry,
    StationReport,
)
from ingest.recordings.csv_rows import RecordingError
from ingest.recordings.formats import (
    columns_from_frame,
    read_inspections,
    read_recording,
    read_site_log,
)
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import Alert, Duty

CHUNK = 10_000
# Readings as columns go to the engine in larger blocks: the batch path's cost is per block.
BLOCK = 250_000
# A list of readings at least this long is fed as columns (when the batch path is at hand).
COLUMNS_FROM = 5_000
Progress = Callable[[int, int], None]


# One local day of one gauge, in the gauge's unit (the engine's daily rain record).
RainLogRow = RainDay


def rain_log(engine: Engine) -> list[RainLogRow]:
    """The daily rainfall log of every gauge of the site (``Engine.rain_log``)."""
    return engine.rain_log()


@dataclass
class ReplayResult:
    """What a replay found: the contract's alerts and duties, and the engine's counters."""

    site: SiteConfig
    alerts: list[Alert]
    duties: list[Duty]
    stats: EngineStats
    events: list[EngineEvent] = field(default_factory=list)
    engine: Engine | None = None
    rain_log: list[RainLogRow] = field(default_factory=list)

    def alerts_jsonl(self) -> str:
        return "".join(a.model_dump_json() + "\n" for a in self.alerts)

    def duties_jsonl(self) -> str:
        return "".join(d.model_dump_json() + "\n" for d in self.duties)

    def write_rain_log(self, path: Path) -> None:
        """The daily rainfall record (NCG01 Part III §A item 1: read and record the gauge daily)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as fh:
            out = csv.writer(fh, lineterminator="\n")
            out.writerow(["date", "gauge", "depth", "unit", "readings", "excluded_readings"])
            for row in self.rain_log:
                out.writerow(
                    [
                        row.day.isoformat(),
                        row.gauge,
                        row.depth,
                        row.unit,
                        row.readings,
                        row.excluded,
                    ]
                )

    def write(self, alerts_out: Path, duties_out: Path) -> None:
        alerts_out.parent.mkdir(parents=True, exist_ok=True)
        duties_out.parent.mkdir(parents=True, exist_ok=True)
        alerts_out.write_text(self.alerts_jsonl(), encoding="utf-8")
        duties_out.write_text(self.duties_jsonl(), encoding="utf-8")

    # --- helpers for developers' assertions ------------------------------------

    def find_alerts(self, kind: str | None = None, *, subject: str | None = None) -> list[Alert]:
        return [
            a
            for a in self.alerts
            if (kind is None or a.kind == kind) and (subject is None or a.subject == subject)
        ]

    def assert_alert(
        self,
        kind: str,
        *,
        subject: str | None = None,
        severity: str | None = None,
        count: int | None = None,
    ) -> list[Alert]:
        """Assert that alerts of ``kind`` exist (optionally: subject, highest severity, exact count)."""
        found = self.find_alerts(kind, subject=subject)
        if severity is not None:
            found = [a for a in found if a.severity == severity]
        if (count is None and not found) or (count is not None and len(found) != count):
            raise AssertionError(
                f"expected {count if count is not None else 'some'} {kind!r} alert(s)"
                f"{f' on {subject!r}' if subject else ''}{f' at {severity}' if severity else ''}, "
                f"found {len(found)}; all alerts:\n{self.summary()}"
            )
        return found

    def assert_no_alert(self, kind: str | None = None, *, subject: str | None = None) -> None:
        found = self.find_alerts(kind, subject=subject)
        if found:
            raise AssertionError(f"expected no {kind or ''} alert, found:\n{self.summary()}")

    def summary(self) -> str:
        lines = [
            f"  {a.opened_at:%Y-%m-%d %H:%M}Z {a.kind} {a.subject} {a.severity} "
            f"{'open' if a.resolved_at is None else f'-> {a.resolved_at:%Y-%m-%d %H:%M}Z'}"
            for a in self.alerts
        ]
        return "\n".join(lines) or "  (none)"


def replay_site(
    site: SiteConfig,
    readings: Iterable[SensorReading],
    inspections: Iterable[Inspection] = (),
    *,
    allowed_lateness_s: float = DEFAULT_ALLOWED_LATENESS_S,
    progress: Progress | None = None,
    keep_engine: bool = False,
    statuses: Iterable[StationReport] = (),
    site_log: Sequence[SiteLogEntry] = (),
    batch: bool = True,
) -> ReplayResult:
    """Run readings, inspections, station reports and site-log entries through a fresh engine.

    The run ends at the last reading: inspections, station reports and site-log
    entries after it are not fed (neither a station report nor a site-log entry
    moves event time, so a status from a clock years ahead ends nothing).

    ``batch``: the engine's batch path may take the readings (analytics/batch.py,
    with numpy and pandas at hand); False feeds them one by one. The results are
    the same either way (tests/analytics/test_batch_path.py).
    """
    engine = Engine(site, allowed_lateness_s=allowed_lateness_s, batch=batch)
    ordered = _in_order(readings, engine)
    events: list[EngineEvent] = []
    pending_ins = sorted(inspections, key=lambda i: (i.t, i.inspector, i.duty or ""))
    pending_st = sorted(statuses, key=lambda r: (r.t, r.station))
    pending_log = sorted(site_log, key=lambda e: e.t)
    # Inspections, station reports and site-log entries merged by time (in the engine's
    # order at one instant); without reports and entries this is the inspections as
    # they were.
    pending: list[tuple[int, int, int, Inspection | StationReport | SiteLogEntry]] = list(
        heapq.merge(
            ((ins.t, 0, n, ins) for n, ins in enumerate(pending_ins)),
            ((rep.t, 1, n, rep) for n, rep in enumerate(pending_st)),
            ((entry.t, 2, n, entry) for n, entry in enumerate(pending_log)),
        )
    )
    total = len(ordered)
    columns = ordered if isinstance(ordered, ReadingColumns) else None
    times: Any = columns.t if columns is not None else [r.t for r in ordered]
    chunk = BLOCK if columns is not None else CHUNK

    def feed(start: int, stop: int) -> list[EngineEvent]:
        if columns is not None:
            return engine.feed_columns(columns[start:stop])
        return engine.feed(ordered[start:stop])

    end = int(times[-1]) if total else None
    start, k = 0, 0
    # Feed in event-time order: readings up to each inspection's (or report's) time,
    # then the inspection, so the watermark never runs ahead of the readings (the
    # engine would still order them, but this keeps every reading on time).
    while start < total:
        stop = min(start + chunk, total)
        if k < len(pending):
            cut = bisect_right(times, pending[k][0], lo=start, hi=stop)
            if cut < stop:
                stop = cut
        if stop > start:
            events += feed(start, stop)
            start = stop
            if progress is not None:
                progress(start, total)
        while k < len(pending) and (start >= total or pending[k][0] < times[start]):
            t, _kind, _n, item = pending[k]
            if end is None or t <= end:
                if isinstance(item, Inspection):
                    events += engine.feed_inspection(item)
                elif isinstance(item, StationReport):
                    events += engine.feed_status(item)
                else:
                    events += engine.feed_site_log(item)
            k += 1
    events += engine.finish(end)
    return ReplayResult(
        site=site,
        alerts=engine.alerts(),
        duties=engine.duties(),
        stats=engine.stats,
        events=events,
        engine=engine if keep_engine else None,
        rain_log=rain_log(engine),
    )


def _in_order(
    readings: Iterable[SensorReading], engine: Engine
) -> ReadingColumns | list[SensorReading]:
    """The readings sorted by (time, sensor id), ties in their order: as columns when the
    engine's batch path can take them (a recording read column-wise, or a long list of
    readings without flags or sequence numbers), else as a list."""
    if isinstance(readings, ReadingColumns):
        if batch_path.usable_here(engine):
            return readings.sorted_by_time()
        readings = list(readings)
    ordered = sorted(readings, key=attrgetter("t", "sensor"))
    if (
        len(ordered) >= COLUMNS_FROM
        and batch_path.usable_here(engine)
        and all(not r.flags and r.seq is None for r in ordered)
    ):
        return ReadingColumns.from_readings(ordered)
    return ordered


def replay_file(
    site: SiteConfig | Path | str,
    recording: Path | str,
    inspections: Path | str | None = None,
    *,
    progress: Progress | None = None,
    site_log: Path | str | None = None,
    recorded: Callable[[Sequence[SensorReading]], None] | None = None,
) -> ReplayResult:
    """Load a site file and a recording (CSV or JSONL capture) and replay them.

    ``inspections`` and ``site_log`` are the optional CSVs of the replay
    contract (``time,inspector,duty``; ``time,event,area,by,detail``).
    ``recorded`` is handed the recording's readings once the replay has run
    (``replay --influx…`` loads them into InfluxDB without reading the file twice).
    """
    site_cfg = site if isinstance(site, SiteConfig) else load_site(Path(site))
    areas = [area.id for area in site_cfg.areas]
    capture = read_recording(Path(recording), site_cfg.sensors(), areas)
    if not (capture.readings or capture.inspections or capture.statuses or capture.site_log):
        # A header alone (or an empty capture) would replay to empty outputs and "0
        # readings", which reads like a quiet site: say that the file held nothing.
        raise RecordingError(
            [
                f"{recording}: holds no data (no readings, inspections, statuses or site-log "
                "entries): nothing to replay"
            ]
        )
    ins = list(capture.inspections)
    if inspections is not None:
        ins += read_inspections(Path(inspections))
    log = list(capture.site_log)
    if site_log is not None:
        log += read_site_log(Path(site_log), areas)
    result = replay_site(
        site_cfg,
        capture.readings,
        ins,
        progress=progress,
        statuses=capture.statuses,
        site_log=log,
    )
    if recorded is not None:
        recorded(capture.readings)
    return result


def replay_frame(
    site: SiteConfig, frame: Any, inspections: Sequence[Inspection] = ()
) -> ReplayResult:
    """Replay a pandas DataFrame with columns time, sensor, value."""
    return replay_site(site, columns_from_frame(frame), inspections)


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read ALERTS.jsonl / DUTIES.jsonl back (for tests and reports)."""
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
