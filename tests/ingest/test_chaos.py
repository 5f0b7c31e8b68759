"""Chaos: every reading the broker acknowledged is stored once, and the alerts are replay's.

The Lake George storm week (24,365 readings) is published at 2,000 readings/s
to a real Mosquitto while a real ``siltwatch serve`` is killed with SIGKILL
five times, the broker is stopped and started five times, and the service is
stopped once with SIGTERM (each time restarted). Afterwards:

* every reading the broker PUBACKed is in the store exactly once, and nothing
  else is (the store's (site, sensor, time) key makes "once" structural; the
  test checks "every");
* the alerts and duties in the store equal those of ``siltwatch replay`` of
  the same readings: same ids, kinds, subjects, times and severities.

The stream goes on for 20 minutes after the storm week at every sensor's
cadence (the next readings of a live site), so that the live service's watermark —
which trails the data by the allowed lateness — has passed the whole week, as
the replay's end does.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from analytics.events import SensorReading
from analytics.timeutil import MS_PER_MIN, iso
from ingest.recordings.formats import read_csv_readings
from ingest.recordings.replay import load_jsonl
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from tests.ingest.live import (
    EXAMPLES,
    ROOT,
    SERVICE_USERS,
    Publisher,
    ServeProcess,
    alert_key,
    batch_messages,
    duty_key,
    loopback_broker,
    reading_messages,
)
from tests.servers import MosquittoServer

SITE_FILE = EXAMPLES / "lake-george-site.toml"
RATE = 2_000.0
USERS = SERVICE_USERS


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-chaos-")


def storm_with_a_next_morning() -> list[SensorReading]:
    site = load_site(SITE_FILE)
    readings = sorted(
        read_csv_readings(EXAMPLES / "lake-george-storm.csv", site.sensors()),
        key=lambda r: (r.t, r.sensor),
    )
    end = readings[-1].t
    last = {r.sensor: r for r in readings}
    tail = []
    for sensor, r in last.items():
        step = round(site.sensor(sensor).interval_s * 1000)
        tail += [
            SensorReading(sensor, t, r.value)
            for t in range(r.t + step, end + 20 * MS_PER_MIN + 1, step)
        ]
    return readings + sorted(tail, key=lambda r: (r.t, r.sensor))


def serve_args(broker: MosquittoServer, work: Path) -> list[str]:
    password = work / "ingest.pw"
    password.write_text(USERS["ingest"], encoding="utf-8")
    return [
        "--site", str(SITE_FILE),
        "--broker", f"mqtt://{broker.host}:{broker.port}",
        "--username", "ingest",
        "--password-file", str(password),
        "--db", str(work / "store.sqlite3"),
        "--alert-log", str(work / "alerts.jsonl"),
        "--tick-s", "1",
    ]  # fmt: skip


def run_faults(
    publisher: Publisher, total: int, faults: list[tuple[float, Callable[[], None]]]
) -> threading.Thread:
    """Run each fault once the publisher has sent that fraction of the stream."""

    def drive() -> None:
        for fraction, fault in faults:
            while publisher.log.published < fraction * total:
                time.sleep(0.005)
            fault()

    thread = threading.Thread(target=drive, name="faults")
    thread.start()
    return thread


def stored_keys(db: Path, site: str) -> list[tuple[str, int]]:
    store = SqliteStore(db)
    try:
        rows = store.db.execute("SELECT sensor, t FROM readings WHERE site = ?", (site,))
        return [(str(s), int(t)) for s, t in rows]
    finally:
        store.close()


def wait_until_stored(db: Path, site: str, expected: int, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    count = 0
    while time.monotonic() < deadline:
        count = len(stored_keys(db, site))
        if count >= expected:
            return count
        time.sleep(0.5)
    return count


def replay_outputs(readings: list[SensorReading], work: Path) -> tuple[list[Any], list[Any]]:
    """``siltwatch replay`` of exactly these readings (its CLI, as a user runs it)."""
    recording = work / "published.csv"
    with recording.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["time", "sensor", "value"])
        for r in readings:
            out.writerow([iso(r.t), r.sensor, repr(r.value)])
    alerts, duties = work / "replay-alerts.jsonl", work / "replay-duties.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "replay", str(recording), "--site",
         str(SITE_FILE), "--alerts-out", str(alerts), "--duties-out", str(duties)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return load_jsonl(alerts), load_jsonl(duties)


@pytest.mark.integration
def test_kills_broker_restarts_and_sigterm_lose_nothing_and_change_no_alert(
    broker: MosquittoServer, tmp_path: Path
) -> None:
    site = load_site(SITE_FILE)
    readings = storm_with_a_next_morning()
    messages = reading_messages(site, readings)
    serve = ServeProcess(serve_args(broker, tmp_path), tmp_path / "serve.log")
    serve.start()
    publisher = Publisher(broker.host, broker.port, "station", USERS["station"], "chaos-station")
    counts = {"kill -9": 0, "broker restart": 0, "SIGTERM": 0}
    exits: list[int] = []

    def kill9() -> None:
        serve.kill9()
        counts["kill -9"] += 1
        time.sleep(0.5)
        serve.start()

    def broker_restart() -> None:
        broker.stop()
        counts["broker restart"] += 1
        time.sleep(1.5)
        broker.start()

    def sigterm() -> None:
        exits.append(serve.terminate())
        counts["SIGTERM"] += 1
        serve.start()

    faults = [
        (0.06, kill9), (0.14, broker_restart), (0.22, kill9), (0.30, broker_restart),
        (0.38, kill9), (0.46, broker_restart), (0.54, kill9), (0.62, broker_restart),
        (0.70, kill9), (0.78, broker_restart), (0.86, sigterm),
    ]  # fmt: skip
    try:
        driver = run_faults(publisher, len(messages), faults)
        publisher.publish_all(messages, RATE)
        driver.join(timeout=300)
        assert not driver.is_alive(), "the fault schedule did not finish"
        assert publisher.wait_acked(120), "the broker did not acknowledge every publish"
        db = tmp_path / "store.sqlite3"
        stored_count = wait_until_stored(db, site.site.id, len(publisher.log.acked), 120)
        time.sleep(2.0)  # let the service judge the last batch before it is stopped
        exits.append(serve.terminate())
    finally:
        publisher.close()
        serve.stop_quietly()
    assert exits == [0, 0], f"SIGTERM must drain and exit 0, got {exits}:\n{serve.output[-3000:]}"
    keys = stored_keys(db, site.site.id)
    acked = publisher.log.acked
    print(
        f"\nchaos: published {publisher.log.published:,} messages; PUBACKed {len(acked):,}; "
        f"stored {len(keys):,} ({len(set(keys)):,} distinct); faults {counts}"
    )
    assert counts == {"kill -9": 5, "broker restart": 5, "SIGTERM": 1}
    assert len(keys) == len(set(keys)), "a reading stored twice"
    missing = acked - set(keys)
    assert not missing, f"{len(missing)} PUBACKed readings were lost, e.g. {sorted(missing)[:5]}"
    assert set(keys) <= {(r.sensor, r.t) for r in readings}
    assert stored_count == len(acked) == len(readings)

    store = SqliteStore(db)
    try:
        live_alerts = [a.model_dump(mode="json") for a in store.alerts(site.site.id)]
        live_duties = [d.model_dump(mode="json") for d in store.duties(site.site.id)]
    finally:
        store.close()
    want_alerts, want_duties = replay_outputs(readings, tmp_path)
    print(
        f"chaos: {len(live_alerts)} alert episodes and {len(live_duties)} duties live; "
        f"replay gives {len(want_alerts)} and {len(want_duties)}"
    )
    assert want_alerts, "the storm week raises alerts: a comparison of nothing proves nothing"
    assert sorted(map(alert_key, live_alerts)) == sorted(map(alert_key, want_alerts))
    assert sorted(map(duty_key, live_duties)) == sorted(map(duty_key, want_duties))


def nine_storm_weeks() -> list[SensorReading]:
    """The storm week nine times over, back to back: 219,000 readings of one site."""
    site = load_site(SITE_FILE)
    week = read_csv_readings(EXAMPLES / "lake-george-storm.csv", site.sensors())
    start = min(r.t for r in week)
    span = 7 * 24 * 60 * MS_PER_MIN
    seen: set[tuple[str, int]] = set()
    out = []
    for k in range(9):
        for r in week:
            t = r.t + k * span
            if (r.sensor, t) not in seen and t >= start:
                seen.add((r.sensor, t))
                out.append(SensorReading(r.sensor, t, r.value))
    return sorted(out, key=lambda r: (r.t, r.sensor))


@pytest.mark.integration
def test_stations_flushing_at_full_speed_raise_no_offline_storm(
    broker: MosquittoServer, tmp_path: Path
) -> None:
    """Each station flushes its share of 219,000 readings as fast as it can, in batches.

    The stations' streams drift apart in event time (one has three sensors,
    the others one). With a watermark per station nothing looks silent that
    never was: no ``sensor_offline``, and the alerts are the replay's.
    """
    site = load_site(SITE_FILE)
    readings = nine_storm_weeks()
    per_station = batch_messages(site, readings, 50)
    serve = ServeProcess(serve_args(broker, tmp_path), tmp_path / "serve.log")
    serve.start()
    publishers = [
        Publisher(broker.host, broker.port, "station", USERS["station"], f"flush-{station}")
        for station in per_station
    ]
    try:
        threads = [
            threading.Thread(target=p.publish_all, args=(messages, 1e9))
            for p, messages in zip(publishers, per_station.values(), strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert all(p.wait_acked(120) for p in publishers)
        db = tmp_path / "store.sqlite3"
        stored = wait_until_stored(db, site.site.id, len(readings), 240)
        time.sleep(2.0)
        assert serve.terminate() == 0, serve.output[-3000:]
    finally:
        for p in publishers:
            p.close()
        serve.stop_quietly()
    assert stored == len(readings) > 200_000
    store = SqliteStore(db)
    try:
        live_alerts = [a.model_dump(mode="json") for a in store.alerts(site.site.id)]
        # Withdrawn episodes count too: someone was told of them before late data came.
        offline = store.db.execute(
            "SELECT id, withdrawn FROM alerts WHERE site = ? AND kind = 'sensor_offline'",
            (site.site.id,),
        ).fetchall()
        rebuilt = "late data" in serve.output
    finally:
        store.close()
    told = (tmp_path / "alerts.jsonl").read_text(encoding="utf-8")
    print(f"\nfull speed: {stored:,} readings stored; {len(live_alerts)} alert episodes")
    assert offline == [], offline[:3]
    assert "sensor_offline" not in told
    assert not rebuilt, "nothing arrived late: the stations were never silent"
    want_alerts, _duties = replay_outputs(readings, tmp_path)
    closed = [a for a in want_alerts if a["resolved_at"] is not None]
    # The live service trails the data by the allowed lateness: compare what had ended.
    assert sorted(map(alert_key, closed)) == sorted(
        alert_key(a) for a in live_alerts if a["resolved_at"] is not None
    )
