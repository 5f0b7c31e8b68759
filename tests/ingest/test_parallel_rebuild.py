"""A fleet's sites rebuilt in worker processes give what each service's own rebuild gives.

ingest/sites.py ``rebuild_in_parallel`` (issue 24): workers read the store (a real
SQLite file) and hand back each site's engine and the events its history raised;
the services store and tell them. Held to the serial path on the two example
sites: the alerts and duties stored, the events dispatched, the snapshot left. A
site whose worker fails is named and left to its service; a reading stored after
a worker read makes its service rebuild by itself.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from analytics.events import EngineEvent, SensorReading
from ingest.recordings.csv_rows import read_csv_rows
from ingest.service import IngestService, Rebuilt
from ingest.sites import rebuild_in_parallel
from ingest.store.sqlite import SqliteStore
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import Alert, Duty
from tests.ingest.live import EXAMPLES

NAMES = ("lake-george", "lake-lure")
LATENESS_S = 900.0


class Heard:
    def __init__(self) -> None:
        self.events: list[str] = []

    def handle(self, events: Iterable[EngineEvent]) -> None:
        self.events += [repr(e) for e in events]


def fill(db: Path) -> tuple[list[SiteConfig], int]:
    """The example sites' storms in one store; the service clock an hour after the last."""
    sites = [load_site(EXAMPLES / f"{name}-site.toml") for name in NAMES]
    store = SqliteStore(db)
    last = 0
    try:
        for name, site in zip(NAMES, sites, strict=True):
            station = site.station_of()
            readings = read_csv_rows(EXAMPLES / f"{name}-storm.csv", site.sensors())
            rows = [(station[r.sensor], r) for r in readings]
            store.add_readings(site.site.id, rows, max(r.t for r in readings))
            last = max(last, *(r.t for r in readings))
    finally:
        store.close()
    return sites, last + 3_600_000


def started(
    db: Path, sites: list[SiteConfig], now: int, rebuilt: dict[str, Rebuilt]
) -> dict[str, tuple[list[str], list[Alert], list[Duty], bytes]]:
    """Each site's service started on ``db``: (events told, alerts, duties, its snapshot)."""
    store = SqliteStore(db)
    out = {}
    try:
        for site in sites:
            heard = Heard()
            service = IngestService(
                site,
                store,
                heard,
                allowed_lateness_s=LATENESS_S,
                now_ms=now,
                say=lambda _line: None,
                rebuilt=rebuilt.get(site.site.id),
            )
            sid = site.site.id
            blob = service.engine.snapshot()
            out[sid] = (heard.events, store.alerts(sid), store.duties(sid), blob)
    finally:
        store.close()
    return out


def test_sites_rebuilt_in_worker_processes_give_what_their_own_rebuild_gives(
    tmp_path: Path,
) -> None:
    sites, now = fill(tmp_path / "serial.sqlite3")
    shutil.copyfile(tmp_path / "serial.sqlite3", tmp_path / "parallel.sqlite3")
    broken = sites[0].model_copy(
        update={"site": sites[0].site.model_copy(update={"id": "broken"}), "stations": None}
    )
    said: list[str] = []
    rebuilt = rebuild_in_parallel(
        [*sites, broken],
        str(tmp_path / "parallel.sqlite3"),
        now_ms=now,
        allowed_lateness_s=LATENESS_S,
        processes=2,
        min_readings=0,
        say=said.append,
    )
    assert sorted(rebuilt) == sorted(s.site.id for s in sites)
    serial = started(tmp_path / "serial.sqlite3", sites, now, {})
    parallel = started(tmp_path / "parallel.sqlite3", sites, now, rebuilt)
    assert any(alerts for _, alerts, _, _ in serial.values()), "the storms raise alerts"
    assert parallel == serial
    assert len(said) == 1 and said[0].startswith("site broken: its rebuild in a worker"), said


def test_a_reading_stored_after_the_worker_read_makes_the_service_rebuild_itself(
    tmp_path: Path,
) -> None:
    sites, now = fill(tmp_path / "serial.sqlite3")
    shutil.copyfile(tmp_path / "serial.sqlite3", tmp_path / "parallel.sqlite3")
    rebuilt = rebuild_in_parallel(
        sites,
        str(tmp_path / "parallel.sqlite3"),
        now_ms=now,
        allowed_lateness_s=LATENESS_S,
        min_readings=0,
    )
    site = sites[0]
    sensor = sorted(site.station_of())[0]
    late = SensorReading(sensor, now - 7_200_000, 3.0)
    for db in ("serial", "parallel"):
        store = SqliteStore(tmp_path / f"{db}.sqlite3")
        store.add_readings(site.site.id, [(site.station_of()[sensor], late)], now)
        store.close()
    serial = started(tmp_path / "serial.sqlite3", sites, now, {})
    assert started(tmp_path / "parallel.sqlite3", sites, now, rebuilt) == serial
