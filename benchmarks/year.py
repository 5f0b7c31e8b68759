"""A year of one site: what siltwatch costs when the history is long (issue 24).

Run: ``.venv/bin/python -m benchmarks.year`` (a site-year, a few minutes);
``--quick`` for one month; ``--sites N`` to rebuild N copies of the site (in
parallel processes, as a fleet restarts); ``--postgres`` to build and measure
a PostgreSQL store as well (a throwaway server started as tests/servers.py does).

Why: a site lives for years (post-construction duties run five, records are
kept longer), so what a page, a report, a rebuild or an export costs must be
bounded by what is asked, not by what is stored. This script is where those
costs are measured; the unit tests never time anything.

It generates, seeded, the Lake George example site (examples/lake-george-site.toml)
for ``--months`` months from 2025-05-01 UTC: both turbidity probes every minute,
the rain gauge and the basin level every 5 minutes, the sediment depth hourly
(1,270,200 readings a year), with storms (rain, a basin that fills and drains,
turbidity plumes downstream, sediment that builds up). Then, each figure next to
its baseline from the same run:

- ``replay`` of the recording (parse + engine, batch path) vs pandas reading the
  same CSV and computing the detector's rolling medians (benchmarks/replay.py);
- a store built from the recording (readings stored in chunks, then the engine
  rebuilt from the store as after a site change, alerts and duties stored):
  its bytes per reading beside the CSV's, and the rebuild beside ``replay``;
- the console (overview, site page 7 and 92 days, an alert page, the one-week
  report) on that store and on a one-month store: median of ``--repeat`` requests;
- the report of the last 365 days (or the whole period, if shorter) from the console
  (HTML, and the PDF once) and from the command line (``siltwatch report`` to a PDF, the
  whole process), and built directly (``build_report``, what both call);
- ``siltwatch export`` of the readings as CSV and Parquet vs ``sqlite3 -csv`` and
  pandas writing the same frame to Parquet;
- ``siltwatch import`` of the recording into a fresh store (its own process: its
  peak RSS) vs ``replay``; and ``serve``'s MQTT session taking the same year as a
  broker's backlog of 10,000-reading batches (``--backlog``: its peak RSS, the
  largest group commit). ``--part ingest`` measures only replay, import,
  backlog and export (the import's store is the one exported).

Benchmarks may read the clock (``time.perf_counter``); the analytics never do.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.sides import peak_rss_mb, side_in_subprocess

if TYPE_CHECKING:
    from siltwatch.config import SiteConfig

ROOT = Path(__file__).resolve().parent.parent
SITE_FILE = ROOT / "examples" / "lake-george-site.toml"
START = datetime(2025, 5, 1, tzinfo=UTC)
MS_PER_MIN = 60_000
PASSWORD = "silt-fence-holds-7"
CPU_ENV = "SILTWATCH_BENCH_CPU"  # set: the sides measure CPU seconds (--cpu)


def clock() -> float:
    """Wall seconds, or this process's CPU seconds under ``--cpu``."""
    return time.process_time() if os.environ.get(CPU_ENV) else time.perf_counter()


def children_clock() -> float:
    """What a child process (``sqlite3``) took: wall seconds, or its CPU under ``--cpu``."""
    if not os.environ.get(CPU_ENV):
        return time.perf_counter()
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


OPERATOR = "Dana Ruiz"
# (sensor, period in minutes): the example site's sensors and their intervals.
SENSORS = (
    ("turb-up", 1),
    ("turb-down", 1),
    ("rain-1", 5),
    ("lvl-basin-a", 5),
    ("sed-trap-1", 60),
)


# --- the recording ------------------------------------------------------------------


def months_to_minutes(months: int) -> int:
    """Minutes from START to START + ``months`` calendar months."""
    year, month = START.year + (START.month - 1 + months) // 12, (START.month - 1 + months) % 12 + 1
    return int((START.replace(year=year, month=month) - START).total_seconds() // 60)


def write_recording(path: Path, months: int, seed: int = 24) -> int:
    """The seeded site-months as ``time,sensor,value`` CSV in time order; returns the rows."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    minutes = months_to_minutes(months)
    m = np.arange(minutes)
    # Storms: about one every five days, 2-10 h of rain at 0.02-0.3 in/h.
    rain_per_min = np.zeros(minutes)
    starts = np.sort(rng.choice(minutes, size=max(1, minutes // 7200), replace=False))
    for s in starts:
        length = int(rng.integers(120, 600))
        rain_per_min[s : s + length] += rng.uniform(0.02, 0.3) / 60
    # The basin: fills with the rain, drains at 0.02 ft/h.
    level = np.zeros(minutes)
    depth = 0.0
    inflow = rain_per_min * 4.0
    for i in range(minutes):  # a recurrence; 0.5 M steps a year take ~0.3 s
        depth = max(0.0, depth + inflow[i] - 0.02 / 60)
        level[i] = depth
    # Turbidity: a daily cycle upstream; downstream a plume while it rains hard.
    bg = 6.0 + 2.0 * np.sin(m / 1440.0 * 2 * np.pi)
    up = bg + rng.normal(0.0, 0.3, minutes)
    plume = np.convolve(rain_per_min * 60 * 400, np.ones(90) / 90, mode="full")[:minutes]
    down = bg + 1.0 + rng.normal(0.0, 0.4, minutes) + plume
    sediment = 0.2 + np.cumsum(rain_per_min) * 0.05

    frames = []
    for sensor, every in SENSORS:
        idx = m[::every]
        if sensor == "turb-up":
            values = np.round(up[idx], 2)
        elif sensor == "turb-down":
            values = np.round(down[idx], 2)
        elif sensor == "rain-1":
            depth5 = np.add.reduceat(rain_per_min, idx)
            values = np.floor(depth5 / 0.01) * 0.01  # whole tips of 0.01 in
            values = np.round(values, 2)
        elif sensor == "lvl-basin-a":
            values = np.round(level[idx], 3)
        else:
            values = np.round(sediment[idx], 3)
        frames.append(pd.DataFrame({"m": idx, "sensor": sensor, "value": values}))
    frame = pd.concat(frames).sort_values(["m", "sensor"], kind="stable")
    t0 = pd.Timestamp(START)
    stamps = (t0 + pd.to_timedelta(frame["m"].to_numpy(), unit="min")).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    out = pd.DataFrame(
        {"time": stamps, "sensor": frame["sensor"].to_numpy(), "value": frame["value"].to_numpy()}
    )
    out.to_csv(path, index=False)
    return len(out)


# --- sides in their own process (own peak RSS, no warm caches) ------------------------


def side(which: str, args: list[str]) -> dict[str, Any]:
    """One measurement in this process; the result as a dict (printed as JSON)."""
    if which == "pandas":
        import pandas

        from benchmarks.replay import run_pandas

        t = clock()
        run_pandas(Path(args[0]))
        return {"seconds": clock() - t}
    if which == "replay":
        import pyarrow.csv  # noqa: F401 - the column reader's, as pandas is the baseline's

        from ingest.recordings import columns  # noqa: F401 - before the clock starts
        from ingest.recordings.formats import read_recording
        from ingest.recordings.replay import replay_site
        from siltwatch.config import load_site

        site = load_site(SITE_FILE)
        t = clock()
        readings = read_recording(Path(args[0]), site.sensors()).readings
        result = replay_site(site, readings)
        return {
            "seconds": clock() - t,
            "readings": len(readings),
            "alerts": len(result.alerts),
        }
    if which == "import":
        return import_side(Path(args[0]), args[1])
    if which == "session":
        return backlog_side(int(args[0]), 0)
    if which == "backlog":
        return backlog_side(int(args[0]), int(args[1]))
    if which == "rebuild":
        import pandas  # noqa: F401 - the batch path's, before the clock starts

        return {"seconds": rebuild(args[0], args[1] if len(args) > 1 else None)}
    raise SystemExit(f"unknown side {which!r}")


def in_subprocess(which: str, *args: str) -> dict[str, Any]:
    return side_in_subprocess("benchmarks.year", which, *args)


# --- siltwatch import, and serve taking a backlog -------------------------------------


def import_side(csv_path: Path, db: str) -> dict[str, Any]:
    """``siltwatch import`` of the recording into ``db`` (a fresh store), as the command
    does it; the seconds from opening the store to the last chunk's snapshot."""
    from ingest.recordings import columns  # noqa: F401 - before the clock starts
    from ingest.recordings.bulk_import import import_recording
    from ingest.service import IngestService
    from ingest.store.from_url import open_store
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    t = clock()
    store = open_store(db)
    try:
        service = IngestService(site, store, say=lambda _line: None)
        done = import_recording(csv_path, service, int(time.time() * 1000))
        alerts = len(store.alerts(site.site.id))
    finally:
        store.close()
    return {"seconds": clock() - t, "stored": done.stored, "alerts": alerts}


BACKLOG_BATCH = 10_000  # readings per ReadingBatch message: a station's outbox flushed
BACKLOG_CLIENT = "siltwatch-bench-backlog"


def backlog_messages(csv_path: Path) -> Iterator[tuple[str, bytes]]:
    """The recording as each station's outbox flush: (topic, ReadingBatch JSON)."""
    from ingest.recordings.formats import read_recording
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    station = site.station_of()
    units = {sensor_id: s.unit for sensor_id, s in site.sensors().items()}
    by_station: dict[str, list[dict[str, object]]] = {}
    seqs: dict[str, int] = {}
    for r in read_recording(csv_path, site.sensors()).readings.sorted_by_time():  # type: ignore[attr-defined]
        seq = seqs[r.sensor] = seqs.get(r.sensor, -1) + 1
        items = by_station.setdefault(station[r.sensor], [])
        items.append({"sensor": r.sensor, "time": to_iso(r.t), "seq": seq, "value": r.value,
                      "unit": units[r.sensor]})  # fmt: skip
        if len(items) == BACKLOG_BATCH:
            yield _batch_message(site.site.id, station[r.sensor], items)
            by_station[station[r.sensor]] = []
    for st, items in by_station.items():
        if items:
            yield _batch_message(site.site.id, st, items)


def _batch_message(site_id: str, station: str, items: list[dict[str, object]]) -> tuple[str, bytes]:
    from siltwatch.schema import reading_topic

    body = {"type": "batch", "site": site_id, "station": station, "readings": items}
    return reading_topic(site_id, station, str(items[0]["sensor"])), json.dumps(body).encode()


def to_iso(t: int) -> str:
    return datetime.fromtimestamp(t / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def backlog_side(port: int, messages: int) -> dict[str, Any]:
    """``serve``'s MQTT session (its service, a fresh SQLite store) on the broker at
    ``port``: with ``messages`` 0 it only makes the persistent session and leaves; else
    it takes that many queued messages and reports seconds, peak RSS, largest group."""
    from ingest.mqtt.session import BrokerSettings, MqttIngest
    from ingest.service import IngestService
    from ingest.store.sqlite import SqliteStore
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    folder = Path(tempfile.mkdtemp(prefix="siltwatch-backlog-"))
    store = SqliteStore(folder / "store.sqlite3")
    service = IngestService(site, store, say=lambda _line: None)
    ingest = MqttIngest(
        service, BrokerSettings("127.0.0.1", port), clock_ms=lambda: int(time.time() * 1000),
        client_id=BACKLOG_CLIENT,
    )  # fmt: skip
    t = clock()
    ingest.start()
    try:
        ingest.subscribed.wait(30)
        while service.stats.messages < messages and not ingest.failed:
            time.sleep(0.05)
        seconds = clock() - t
    finally:
        ingest.stop()
        stored = store.reading_count(site.site.id)
        store.close()
        shutil.rmtree(folder, ignore_errors=True)
    return {"seconds": seconds, "stored": stored, "largest_batch": ingest.stats.largest_batch,
            "largest_readings": ingest.stats.largest_batch_readings}  # fmt: skip


def serve_backlog(work: Path, csv_path: Path) -> dict[str, Any]:
    """A Mosquitto broker holds the year as a backlog for serve's persistent session,
    which then takes it (benchmarks/edge.py starts the broker the same way)."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    sys.path.insert(0, str(ROOT))
    from tests.servers import MosquittoServer

    broker = MosquittoServer(work / "mosquitto", persistence=False, log_types=("error",),
                             extra_config=("max_queued_messages 0",))  # fmt: skip
    broker.start()
    try:
        in_subprocess("session", str(broker.port))
        pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="bench-backlog-pub")
        pub.connect("127.0.0.1", broker.port)
        pub.loop_start()
        sent = 0
        for topic, payload in backlog_messages(csv_path):
            pub.publish(topic, payload, qos=1).wait_for_publish(60)
            sent += 1
        pub.loop_stop()
        pub.disconnect()
        return in_subprocess("backlog", str(broker.port), str(sent)) | {"messages": sent}
    finally:
        broker.stop()


# --- the store ------------------------------------------------------------------------


def load_readings(db: str, csv_path: Path, site_id: str | None = None) -> float:
    """Store the recording's readings in chunks of 50,000 (no engine); seconds taken."""
    from ingest.recordings.formats import read_recording
    from ingest.store.from_url import open_store
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    readings = read_recording(csv_path, site.sensors()).readings
    station = site.station_of()
    sid = site_id or site.site.id
    store = open_store(db)
    t = clock()
    try:
        step = 50_000
        for start in range(0, len(readings), step):
            chunk = readings[start : start + step]
            store.add_readings(sid, [(station[r.sensor], r) for r in chunk], chunk[-1].t)
    finally:
        store.close()
    return clock() - t


def rebuild(db: str, site_id: str | None = None) -> float:
    """The engine rebuilt from the store (no usable snapshot: a site change); seconds.

    Leaves what a service leaves: the alerts and duties stored, and a snapshot.
    """
    from ingest.service import IngestService
    from ingest.store.from_url import open_store
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    if site_id is not None:
        site = site.model_copy(update={"site": site.site.model_copy(update={"id": site_id})})
    store = open_store(db)
    try:
        for row in store.snapshots(site.site.id):
            store.drop_snapshot(site.site.id, row)
        t = clock()
        service = IngestService(site, store, say=lambda _line: None)
        seconds = clock() - t
        service.snapshot(service.engine.clock or 0)
    finally:
        store.close()
    return seconds


def store_bytes(db: str) -> int:
    """The store's size on disk: the SQLite file after a checkpoint, or the PostgreSQL
    database's reading tables with their indexes (schema v9: the samples, their names and
    arrival spans; ``readings`` is a view)."""
    if db.startswith("postgresql"):
        import psycopg

        with psycopg.connect(db) as conn:
            row = conn.execute(
                "SELECT sum(pg_total_relation_size(t::regclass)) "
                "FROM unnest(ARRAY['samples', 'series', 'stations', 'arrivals']) AS t"
            ).fetchone()
            assert row is not None
            return int(row[0])
    import sqlite3

    lite = sqlite3.connect(db)
    try:
        lite.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (pages,) = lite.execute("PRAGMA page_count").fetchone()
        (size,) = lite.execute("PRAGMA page_size").fetchone()
        return int(pages * size)
    finally:
        lite.close()


# --- the console ----------------------------------------------------------------------


@dataclass
class Pages:
    overview: float
    site_7: float
    site_92: float
    alert: float
    report_week: float
    report_year: float  # HTML, median of the requests
    report_year_pdf: float  # once: the browser prints it


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = clock()
        fn()
        times.append(clock() - t)
    return statistics.median(times)


def console_pages(db: str, repeat: int) -> Pages:
    """Median seconds of each page on the store ``db`` (the console's own tables added)."""
    from starlette.testclient import TestClient

    from console.app import make_app
    from console.book import ConsoleBook
    from ingest.store.from_url import open_store
    from siltwatch.config import load_site
    from tests.console.app_world import log_in

    site = load_site(SITE_FILE)
    sid = site.site.id
    book = ConsoleBook(db)
    try:
        if not book.accounts.exists(OPERATOR):
            book.accounts.add(OPERATOR, PASSWORD, 0)
            book.accounts.grant(OPERATOR, sid, "operator")
    finally:
        book.close()
    store = open_store(db)
    try:
        newest = store.newest_reading_t(sid) or 0
        alerts = store.alerts(sid)
    finally:
        store.close()
    assert alerts, "the generated period raised no alert: the alert page cannot be timed"
    alert_id = alerts[len(alerts) // 2].id
    app = make_app({sid: site}, db, desk=None, clock=lambda: newest / 1000 + 3600)
    client = TestClient(app, base_url="https://console.test", follow_redirects=False)
    response = log_in(client, OPERATOR, PASSWORD)
    assert response.status_code == 303, response.text
    last = datetime.fromtimestamp(newest / 1000, site.site.zone).date()
    week = f"from={last - timedelta(days=6)}&to={last}"
    year = f"from={year_start(site, last)}&to={last}"

    def get(path: str) -> Callable[[], object]:
        def fetch() -> object:
            r = client.get(path)
            assert r.status_code == 200, (path, r.status_code, r.text[:300])
            return r

        return fetch

    return Pages(
        overview=_median(get("/"), repeat),
        site_7=_median(get(f"/sites/{sid}"), repeat),
        site_92=_median(get(f"/sites/{sid}?hours={92 * 24}"), repeat),
        alert=_median(get(f"/sites/{sid}/alerts/{alert_id}"), repeat),
        report_week=_median(get(f"/sites/{sid}/report?{week}"), repeat),
        report_year=_median(get(f"/sites/{sid}/report?{year}"), repeat),
        report_year_pdf=_median(get(f"/sites/{sid}/report?{year}&format=pdf"), 1),
    )


def year_start(site: SiteConfig, last: date) -> date:
    """The first local day of the report of a year ending on ``last``: 365 days, or from
    the recording's first day when it is shorter."""
    first = datetime.fromtimestamp(to_ms(START) / 1000, site.site.zone).date()
    return max(first, last - timedelta(days=364))


def cli_report(db: str, work: Path) -> float:
    """``siltwatch report`` of the year to a PDF, the whole command (start, store, report,
    the browser's print): wall seconds, or the children's CPU seconds under ``--cpu``."""
    from ingest.store.from_url import open_store
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    store = open_store(db)
    try:
        newest = store.newest_reading_t(site.site.id) or 0
    finally:
        store.close()
    last = datetime.fromtimestamp(newest / 1000, site.site.zone).date()
    command = [str(Path(sys.executable).parent / "siltwatch"), "report", "--site", str(SITE_FILE)]
    command += ["--db", db, "--from", str(year_start(site, last)), "--to", str(last)]
    command += ["--out", str(work / "year-report.pdf")]
    t = children_clock()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return children_clock() - t


def whole_report(db: str) -> float:
    """The report of every day the store holds, built as the command line builds it."""
    from console.report.document import build_report
    from ingest.store.from_url import open_store
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    store = open_store(db)
    try:
        zone = site.site.zone
        first = datetime.fromtimestamp(to_ms(START) / 1000, zone).date()
        last = datetime.fromtimestamp((store.newest_reading_t(site.site.id) or 0) / 1000, zone)
        t = clock()
        build_report(site, store, None, first, last.date())
        return clock() - t
    finally:
        store.close()


def to_ms(value: datetime) -> int:
    return round(value.timestamp() * 1000)


# --- export ---------------------------------------------------------------------------


def export_times(db: str, work: Path) -> dict[str, float]:
    """``siltwatch export`` of the readings (CSV, Parquet) and the two baselines."""
    import pandas as pd

    from ingest.outputs.export import ExportFormat, SiteSlice, Window, export_tables, tables_named
    from ingest.store.from_url import open_store_read_only
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    out: dict[str, float] = {}
    store = open_store_read_only(db)
    try:
        for fmt in (ExportFormat.CSV, ExportFormat.PARQUET):
            t = clock()
            export_tables(
                store,
                [SiteSlice(site, Window())],
                work / f"export-{fmt.value}",
                fmt,
                tables_named("readings"),
            )
            out[fmt.value] = clock() - t
    finally:
        store.close()
    sqlite3_cli = shutil.which("sqlite3")
    if sqlite3_cli is not None and not db.startswith("postgresql"):
        t = children_clock()
        with (work / "sqlite3.csv").open("wb") as fh:
            subprocess.run(
                [sqlite3_cli, "-csv", "-header", db, "SELECT * FROM readings ORDER BY t, sensor"],
                stdout=fh,
                check=True,
            )
        out["sqlite3_csv"] = children_clock() - t
    frame = pd.read_parquet(work / "export-parquet" / "readings.parquet")
    t = clock()
    frame.to_parquet(work / "pandas.parquet", index=False)
    out["pandas_parquet"] = clock() - t
    return out


def export_lines(name: str, db: str, work: Path) -> list[str]:
    """The export figures of one store, each beside its baseline."""
    ex = export_times(db, work)
    lines = []
    if "sqlite3_csv" in ex:
        lines.append(versus(f"{name} export CSV", f"{ex['csv']:.2f} s",
                            f"sqlite3 -csv {ex['sqlite3_csv']:.2f} s",
                            ex["csv"] / ex["sqlite3_csv"]))  # fmt: skip
    lines.append(versus(f"{name} export Parquet", f"{ex['parquet']:.2f} s",
                        f"pandas to_parquet {ex['pandas_parquet']:.2f} s",
                        ex["parquet"] / ex["pandas_parquet"]))  # fmt: skip
    return lines


# --- PostgreSQL -----------------------------------------------------------------------


@contextmanager
def postgres(work: Path) -> Iterator[tuple[str, str]]:
    """A throwaway PostgreSQL server (as the tests start one): the URLs of a database for
    the year and one for the month."""
    sys.path.insert(0, str(ROOT))
    from tests.servers import PostgresServer

    server = PostgresServer(work / "pg")
    server.start()
    try:
        yield server.create_database("year"), server.create_database("month")
    finally:
        server.stop()


# --- the run --------------------------------------------------------------------------


def build_store(db: str, csv_path: Path) -> tuple[float, float]:
    """(seconds loading readings, seconds of the rebuild) for a fresh store ``db``."""
    loaded = load_readings(db, csv_path)
    rebuilt = in_subprocess("rebuild", db)["seconds"]
    return loaded, float(rebuilt)


def fleet_rebuild(db: str, work: Path, sites: int, workers: int) -> float:
    """``sites`` site-years rebuilt as a fleet's restart rebuilds them (ingest/sites.py):
    each by a worker process reading the year's store (``rebuild_site``, ``workers`` at a
    time), then taken over by its service in this process over a copy of the store.

    The copies of one site-year are the same site read ``sites`` times from one file
    (a store of 100 site-years is 127 M readings to load first): the CPU work of
    ``sites`` rebuilds, with the file in the page cache. Wall seconds even under --cpu.
    """
    from analytics.engine import DEFAULT_ALLOWED_LATENESS_S
    from ingest.service import IngestService
    from ingest.sites import rebuild_site
    from ingest.store.from_url import open_store
    from siltwatch.config import load_site

    site = load_site(SITE_FILE)
    store = open_store(db)
    try:
        for row in store.snapshots(site.site.id):  # as after a site change
            store.drop_snapshot(site.site.id, row)
    finally:
        store.close()
    taken = str(work / "fleet-takeover.sqlite3")
    shutil.copyfile(db, taken)
    now = None  # the service clock: the newest arrival in the store, as rebuild() has it
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = pool.map(
            rebuild_site,
            [site] * sites,
            [db] * sites,
            [now] * sites,
            [DEFAULT_ALLOWED_LATENESS_S] * sites,
            [None] * sites,
        )
        for rebuilt in results:
            assert rebuilt is not None, "the year's store has no usable snapshot"
            store = open_store(taken)
            try:
                IngestService(site, store, now_ms=now, say=lambda _line: None, rebuilt=rebuilt)
            finally:
                store.close()
    return time.perf_counter() - t


def row(name: str, measured: str, baseline: str, ratio: str = "") -> str:
    return f"| {name:<44} | {measured:>22} | {baseline:>34} | {ratio:>7} |"


def versus(name: str, measured: str, baseline: str, ratio: float) -> str:
    """A row that compares with a baseline: ``ratio`` is measured over baseline."""
    return row(name, measured, baseline, f"{ratio:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--quick", action="store_true", help="one month")
    parser.add_argument("--sites", type=int, default=0, help="also rebuild N site copies")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=5, help="requests per page")
    parser.add_argument("--postgres", action="store_true", help="measure PostgreSQL too")
    parser.add_argument("--no-export", action="store_true", help="skip the export figures")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds instead of wall seconds")
    parser.add_argument("--part", choices=("all", "ingest"), default="all",
                        help="ingest: only replay, import, the serve backlog and export")  # fmt: skip
    parser.add_argument("--backlog", action="store_true", help="also serve taking the backlog")
    parser.add_argument("--side", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cpu:
        os.environ[CPU_ENV] = "1"  # the sides' processes inherit it
    if args.side:
        print(json.dumps(side(args.side[0], args.side[1:]) | {"rss_mb": peak_rss_mb()}))
        return 0
    months = 1 if args.quick else args.months
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="siltwatch-year-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)  # the postgres account enters it (tests/servers.py)
        csv_path, month_csv = work / "year.csv", work / "month.csv"
        t = clock()
        rows = write_recording(csv_path, months)
        print(f"recording: {months} month(s), {rows:,} readings, "
              f"{csv_path.stat().st_size / rows:.1f} B/reading as CSV "
              f"(written in {clock() - t:.1f} s)", flush=True)  # fmt: skip
        replay = in_subprocess("replay", str(csv_path))
        pandas_s = float(in_subprocess("pandas", str(csv_path))["seconds"])
        lines.append(versus("replay (parse + engine)", f"{replay['seconds']:.2f} s",
                            f"pandas read + medians {pandas_s:.2f} s",
                            replay["seconds"] / pandas_s))  # fmt: skip
        print(f"replay: {replay['readings']:,} readings, {replay['alerts']} alerts", flush=True)
        if args.part == "ingest":
            lines += ingest_part(args, work, csv_path, replay)
            print_table(lines)
            return 0

        backends = [("SQLite", str(work / "year.sqlite3"), str(work / "month.sqlite3"))]
        pg = postgres(work) if args.postgres else None
        if pg is not None:
            backends.append(("PostgreSQL", *pg.__enter__()))
        try:
            if months > 1:
                write_recording(month_csv, 1)
            for name, db, month_db in backends:
                if months > 1:
                    build_store(month_db, month_csv)
                loaded, rebuilt = build_store(db, csv_path)
                print(f"{name}: readings stored in {loaded:.1f} s, rebuilt in {rebuilt:.1f} s",
                      flush=True)  # fmt: skip
                size, csv_size = store_bytes(db) / rows, csv_path.stat().st_size / rows
                lines += [
                    versus(f"{name} store size", f"{size:.1f} B/reading",
                           f"the CSV {csv_size:.1f} B", size / csv_size),
                    versus(f"{name} rebuild (a site change)", f"{rebuilt:.2f} s",
                           f"replay {replay['seconds']:.2f} s", rebuilt / replay["seconds"]),
                ]  # fmt: skip
                pages = console_pages(db, args.repeat)
                base = pages if months == 1 else console_pages(month_db, args.repeat)
                for label, key in (
                    ("overview", "overview"),
                    ("site page, 7 days", "site_7"),
                    ("site page, 92 days", "site_92"),
                    ("alert page", "alert"),
                    ("report, 1 week", "report_week"),
                    ("report, 1 year (HTML)", "report_year"),
                ):
                    here, there = getattr(pages, key), getattr(base, key)
                    lines.append(versus(f"{name} console {label} (median)", f"{here * 1000:.0f} ms",
                                        f"one-month store {there * 1000:.0f} ms", here / there))  # fmt: skip
                whole = whole_report(db)
                lines.append(row(f"{name} report of all {months} month(s)", f"{whole:.2f} s", "—"))
                lines.append(row(f"{name} console report, 1 year (PDF)",
                                 f"{pages.report_year_pdf:.2f} s", "—"))  # fmt: skip
                cli = cli_report(db, work)
                lines.append(row(f"{name} siltwatch report, 1 year (PDF)", f"{cli:.2f} s", "—"))
                if not args.no_export:
                    lines += export_lines(name, db, work)
        finally:
            if pg is not None:
                pg.__exit__(None, None, None)
        if args.sites:
            seconds = fleet_rebuild(backends[0][1], work, args.sites, args.workers)
            serial = replay["seconds"] * args.sites
            lines.append(versus(f"{args.sites} sites rebuilt, {args.workers} processes",
                                f"{seconds:.1f} s", f"replay x {args.sites} {serial:.0f} s",
                                seconds / serial))  # fmt: skip
    print_table(lines)
    return 0


def print_table(lines: list[str]) -> None:
    print()
    print(row("figure", "measured", "baseline, same run", "ratio"))
    print(f"|{'-' * 46}|{'-' * 24}|{'-' * 36}|{'-' * 9}|")
    for line in lines:
        print(line)


def ingest_part(
    args: argparse.Namespace, work: Path, csv_path: Path, replay: dict[str, Any]
) -> list[str]:
    """``siltwatch import`` (SQLite, and PostgreSQL with --postgres) beside replay, its peak
    RSS, the import's store exported beside sqlite3 -csv and pandas, serve's backlog."""
    lines: list[str] = []
    targets = [("SQLite", str(work / "import.sqlite3"))]
    pg = postgres(work) if args.postgres else None
    if pg is not None:
        targets.append(("PostgreSQL", pg.__enter__()[0]))
    try:
        for name, db in targets:
            done = in_subprocess("import", str(csv_path), db)
            print(f"{name} import: {done}", flush=True)
            lines += [
                versus(f"{name} siltwatch import", f"{done['seconds']:.2f} s",
                       f"replay {replay['seconds']:.2f} s", done["seconds"] / replay["seconds"]),
                row(f"{name} siltwatch import, peak RSS", f"{done['rss_mb']:.0f} MB",
                    f"replay {replay['rss_mb']:.0f} MB"),
                row(f"{name} import alerts", f"{done['alerts']}", f"replay {replay['alerts']}"),
            ]  # fmt: skip
            if not args.no_export:
                lines += export_lines(name, db, work)
    finally:
        if pg is not None:
            pg.__exit__(None, None, None)
    if args.backlog:
        got = serve_backlog(work, csv_path)
        print(f"serve backlog: {got}", flush=True)
        lines += [
            row("serve taking the backlog over MQTT", f"{got['seconds']:.1f} s",
                f"{got['messages']} messages, {got['stored']:,} stored"),
            row("serve taking the backlog, peak RSS", f"{got['rss_mb']:.0f} MB",
                f"largest group {got['largest_readings']:,} readings"),
        ]  # fmt: skip
    return lines


if __name__ == "__main__":
    sys.exit(main())
