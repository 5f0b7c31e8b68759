"""The records to hand over, from the live store: inspections, the daily rain log, the site log.

The ordinances ask the site to keep records and show them: inspection reports
with who inspected, their affiliation, address, telephone and signature (Lake
Lure 96.05(B)(17)(b); Big Flats 17.37.100 A: "kept in a site log book"), the
daily rain gauge reading (NCG01 Part III §A item 1), and what was done on the
site. ``siltwatch records`` writes them as CSV for a date range, from the store
the service writes (it reads only; a running ``serve`` is not disturbed).

Times are the site's local time with their offset, as people read them. The
rain log is derived the one way siltwatch derives it: the store's rain-gauge
readings through the engine's rain detector (analytics/rain.py), so it is the
same record a replay writes.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path

from analytics.events import INSPECTION_RECORD_FIELDS, Inspection, SiteLogEntry
from analytics.timeutil import from_ms, to_ms
from ingest.rain_lead_in import gauge_readings
from ingest.recordings.replay import RainLogRow, replay_site
from ingest.store.queries import SqlStore
from siltwatch.config import SiteConfig

INSPECTION_COLUMNS = ("time", "inspector", "duty", *INSPECTION_RECORD_FIELDS)
SITE_LOG_COLUMNS = ("time", "event", "area", "by", "detail")
RAIN_COLUMNS = ("date", "gauge", "depth", "unit", "readings", "excluded_readings")
_Local = Callable[[int], str]  # event time -> the site's local ISO time


@dataclass(frozen=True)
class Written:
    """How many rows each record got, and where."""

    inspections: int
    rain_days: int
    site_log: int
    folder: Path


def export_records(
    store: SqlStore,
    site: SiteConfig,
    out: Path,
    start: date | None = None,
    end: date | None = None,
) -> Written:
    """Write inspections.csv, rain-log.csv and site-log.csv for ``start``..``end``
    (local dates, both included; None: unbounded) into ``out``."""
    site_id = site.site.id
    zone = site.site.zone

    def within(d: date) -> bool:
        return (start is None or d >= start) and (end is None or d <= end)

    def local(t: int) -> str:
        return local_iso(t, zone)

    inspections = [
        i for i in store.inspections_after(site_id, None) if within(local_day(i.t, zone))
    ]
    log = [e for e in store.site_log(site_id) if within(local_day(e.t, zone))]
    first_ms, end_ms = local_bounds_ms(start, end, zone)
    rain = [r for r in daily_rain(store, site, first_ms, end_ms) if within(r.day)]
    out.mkdir(parents=True, exist_ok=True)
    write_csv(
        out / "inspections.csv",
        INSPECTION_COLUMNS,
        (_inspection_row(i, local) for i in inspections),
    )
    write_csv(out / "site-log.csv", SITE_LOG_COLUMNS, (_log_row(e, local) for e in log))
    write_csv(
        out / "rain-log.csv",
        RAIN_COLUMNS,
        (rain_row(r) for r in rain),
    )
    return Written(len(inspections), len(rain), len(log), out)


def local_bounds_ms(
    start: date | None, end: date | None, zone: tzinfo
) -> tuple[int | None, int | None]:
    """Local dates ``start``..``end`` (both included; None: unbounded) as [from, to) in ms."""
    first_ms = None if start is None else to_ms(datetime.combine(start, time(0), tzinfo=zone))
    after = None if end is None else end + timedelta(days=1)
    end_ms = None if after is None else to_ms(datetime.combine(after, time(0), tzinfo=zone))
    return first_ms, end_ms


def daily_rain(
    store: SqlStore, site: SiteConfig, start_ms: int | None = None, end_ms: int | None = None
) -> list[RainLogRow]:
    """The site's daily rain record from the stored gauge readings (the engine's rule):
    every local day in [``start_ms``, ``end_ms``) as the whole record gives it, replayed
    from a bounded lead-in to a bounded lead-out (ingest/rain_lead_in.py; None: from the
    first / to the last reading)."""
    readings = gauge_readings(site, store, start_ms, end_ms)
    if not readings:
        return []
    return replay_site(site, readings).rain_log


def local_iso(t: int, zone: tzinfo) -> str:
    """An event time as the records show it: ISO 8601 in the site's zone, with its offset."""
    return from_ms(t).astimezone(zone).isoformat()


def local_day(t: int, zone: tzinfo) -> date:
    """The site's local date of an event time: the day a record belongs to."""
    return from_ms(t).astimezone(zone).date()


def rain_row(r: RainLogRow) -> list[object]:
    """One line of the rain log, in ``RAIN_COLUMNS`` order (the date as a ``date``)."""
    return [r.day, r.gauge, r.depth, r.unit, r.readings, r.excluded]


def site_log_fields(entry: SiteLogEntry) -> list[object]:
    """What a site-log line says besides its time: ``SITE_LOG_COLUMNS[1:]``."""
    return [entry.event, entry.area or "", entry.by, entry.detail]


def _inspection_row(ins: Inspection, local: _Local) -> list[object]:
    values = [getattr(ins, name) for name in INSPECTION_RECORD_FIELDS]
    shown = [
        "" if v is None else ("yes" if v is True else "no" if v is False else v) for v in values
    ]
    return [local(ins.t), ins.inspector, ins.duty or "", *shown]


def _log_row(entry: SiteLogEntry, local: _Local) -> list[object]:
    return [local(entry.t), *site_log_fields(entry)]


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """One record as CSV (the field desk's too: ingest/outputs/field_records.py)."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(header)
        out.writerows(rows)


def parse_day(text: str | None) -> date | None:
    """A ``--from``/``--to`` value: a local date, YYYY-MM-DD."""
    return None if text is None else datetime.strptime(text, "%Y-%m-%d").date()
