"""``siltwatch serve --sites DIR --influx-url …``: every site's data reaches InfluxDB.

A fleet operator's Grafana shows one dashboard per site, filtered on the ``site``
tag, so each site's readings, alerts and duties must be mirrored like a single
site's. Real Mosquitto, real InfluxDB 1.x, a real ``serve`` child process; at
the end InfluxDB holds, site by site, exactly the readings the store holds
(tags from that site's configuration) and one alert point per stored alert,
including for a site added by SIGHUP while serving. In process: /metrics gives
the mirror's counters per site and follows the sites as they come and go.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from analytics.events import SensorReading
from ingest.influx.fleet import FleetMirrors
from ingest.influx.mirror import InfluxV1Writer
from ingest.ops.health import ServiceParts
from ingest.ops.metrics import exposition, service_registry
from ingest.service import IngestService
from ingest.sites import SiteRouter
from ingest.store.sqlite import SqliteStore
from siltwatch.config import SiteConfig, load_site
from tests.ingest.fleet_world import site_id, stream, write_site, write_sites
from tests.ingest.live import SERVICE_USERS, Publisher, ServeProcess
from tests.ingest.test_fleet import (
    MINUTE_MS,
    _broker,
    fleet_args,
    now_minute,
    publish,
    sighup,
    wait_stored,
)
from tests.servers import InfluxDBServer

pytestmark = pytest.mark.integration

INFLUX_S = 15.0  # bound on the mirror catching up with the store

Row = tuple[int, str, str, str, float]  # time, station, sensor, kind, value


def _series(result: dict[str, Any]) -> list[dict[str, Any]]:
    first = result["results"][0]
    assert "error" not in first, first
    return list(first.get("series", []))


def influx_readings(influxdb: InfluxDBServer, db: str) -> dict[str, set[Row]]:
    """Every reading point in InfluxDB, by its ``site`` tag."""
    q = 'SELECT "value", "station", "sensor", "kind" FROM "reading" GROUP BY "site"'
    out: dict[str, set[Row]] = {}
    for series in _series(influxdb.query(db, q)):
        rows = out.setdefault(series["tags"]["site"], set())
        for t, value, station, sensor, kind in series["values"]:
            rows.add((int(t), station, sensor, kind, float(value)))
    return out


def influx_alert_ids(influxdb: InfluxDBServer, db: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for series in _series(influxdb.query(db, 'SELECT "id" FROM "alert" GROUP BY "site"')):
        out[series["tags"]["site"]] = {row[1] for row in series["values"]}
    return out


def stored_readings(db: Path, sites: dict[str, SiteConfig]) -> dict[str, set[Row]]:
    """The store's readings by site, each with its sensor's kind from the site's file."""
    out: dict[str, set[Row]] = {}
    with sqlite3.connect(db) as con:
        for site, station, sensor, t, value in con.execute(
            "SELECT site, station, sensor, t, value FROM readings"
        ):
            kind = sites[site].sensors()[sensor].kind
            out.setdefault(site, set()).add((int(t), station, sensor, kind, float(value)))
    return out


def stored_alert_ids(db: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    with sqlite3.connect(db) as con:
        for site, alert_id in con.execute("SELECT site, id FROM alerts"):
            out.setdefault(site, set()).add(alert_id)
    return out


def wait_influx(influxdb: InfluxDBServer, db: str, site: str, count: int) -> None:
    deadline = time.monotonic() + INFLUX_S
    have = 0
    while time.monotonic() < deadline:
        have = len(influx_readings(influxdb, db).get(site, set()))
        if have >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"InfluxDB holds {have} of {count} readings of {site}")


def test_a_fleet_mirrors_every_site_and_a_sighup_added_one(
    influxdb: InfluxDBServer, tmp_path: Path
) -> None:
    influxdb.create_database("fleet")
    sites_dir = tmp_path / "sites"
    sites = write_sites(sites_dir, 3)  # fleet-01 has a turbidity plume: an alert
    base = now_minute() - 130 * MINUTE_MS
    first = stream(sites, base, 120)  # long enough for the plume to raise its alert
    db = tmp_path / "mirror.sqlite3"
    with ExitStack() as stack:
        broker = stack.enter_context(_broker())
        serve = ServeProcess(
            fleet_args(
                broker, tmp_path, "mirror",
                "--sites", str(sites_dir), "--tick-s", "0.5",
                "--influx-url", influxdb.url, "--influx-db", "fleet",
            ),
            tmp_path / "mirror.log",
        )  # fmt: skip
        stack.callback(serve.stop_quietly)
        serve.start(wait_s=30.0)
        assert f"mirroring every site to InfluxDB {influxdb.url}" in serve.output, serve.output
        publish(broker, first, "mirror-pub-1").close()
        wait_stored([db], len(first), [serve])

        added = load_site(write_site(sites_dir, 3))
        sighup(serve)
        assert "added 'fleet-03'" in serve.output, serve.output
        newcomer = stream([added], base, 30)
        pub = Publisher(broker.host, broker.port, "station", SERVICE_USERS["station"], "mp-3")
        for message in newcomer:
            pub.publish(message)
        assert pub.wait_acked(30.0) and pub.log.refused == 0
        pub.close()
        wait_stored([db], len(first) + len(newcomer), [serve])
        # The added site's readings reach InfluxDB while it is served, not only at the stop.
        wait_influx(influxdb, "fleet", site_id(3), len(newcomer))
        assert serve.terminate(timeout=30) == 0, serve.output
    assert "Traceback" not in serve.output, serve.output

    configs = {s.site.id: s for s in [*sites, added]}
    stored = stored_readings(db, configs)
    assert sorted(stored) == [site_id(n) for n in range(4)]
    mirrored = influx_readings(influxdb, "fleet")
    assert sorted(mirrored) == sorted(stored)
    for sid, rows in stored.items():
        assert mirrored[sid] == rows, sid
    alerts = stored_alert_ids(db)
    assert alerts.get(site_id(1)), "the plume site raised no alert: the test proves nothing"
    assert influx_alert_ids(influxdb, "fleet") == alerts


def _mirror_samples(parts: ServiceParts) -> dict[tuple[str, str], float]:
    """(metric, site) -> value of the mirror's families in one scrape."""
    text = exposition(service_registry(parts, lambda: 0)).decode()
    return {
        (s.name, s.labels["site"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("siltwatch_influx_mirror")
    }


def test_fleet_mirror_metrics_are_per_site_and_follow_the_sites(
    influxdb: InfluxDBServer, tmp_path: Path
) -> None:
    influxdb.create_database("metrics")
    sites = write_sites(tmp_path / "sites", 2)
    store = SqliteStore(tmp_path / "m.sqlite3")
    now = now_minute()
    mirrors = FleetMirrors(InfluxV1Writer(influxdb.url, "metrics"), tmp_path / "m.sqlite3")
    router = SiteRouter(
        store,
        lambda site, lock: IngestService(
            site, store, now_ms=now, lock=lock, mirror=mirrors.for_site(site)
        ),
    )
    for site in sites:
        router.add(site)
    parts = ServiceParts("", sites=router, site_mirrors=mirrors)
    a, b = site_id(0), site_id(1)
    queued = mirrors.mirrors()[a]
    queued(a, [("up-0", SensorReading("turb-up", now - n * MINUTE_MS, 5.0)) for n in range(3)])
    samples = _mirror_samples(parts)
    assert samples[("siltwatch_influx_mirror_pending", a)] == 3
    assert samples[("siltwatch_influx_mirror_pending", b)] == 0
    assert samples[("siltwatch_influx_mirror_dropped_total", a)] == 0

    assert mirrors.flush()  # one flush, every site's queue
    assert _mirror_samples(parts)[("siltwatch_influx_mirror_pending", a)] == 0
    assert len(influx_readings(influxdb, "metrics")[a]) == 3

    router.add(sites[0])  # a rebuild keeps the site's mirror and its counters
    assert mirrors.mirrors()[a] is queued
    router.remove(b, now)
    mirrors.remove(b)
    assert {site for _name, site in _mirror_samples(parts)} == {a}
    router.close(now)
    mirrors.close()
    store.close()
