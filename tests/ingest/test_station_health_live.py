"""Station health through the live service, against a real Mosquitto.

A station process (as a station account, with its last will
set as the edge agent sets it) publishes a retained status with a low battery;
``siltwatch serve`` stores it and raises ``station_battery_low``. The station
is then killed with SIGKILL: the broker publishes its last will, and serve
raises ``station_offline`` from it. A restarted serve gets the retained will
again and repeats nothing: the store is the truth.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.live import ROOT, ServeProcess, loopback_broker
from tests.ingest.test_operations import (
    SITE_ID,
    USERS,
    plain_url,
    publish,
    readings_at,
    serve_args,
    start_subscribed,
    stop,
)
from tests.servers import MosquittoServer

pytestmark = pytest.mark.integration

ALERT_S = 20.0  # bound on a status reaching an alert (lateness 1 s, tick 0.5 s)

STATION = """
import datetime, json, sys, time
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

host, port, password = sys.argv[1], int(sys.argv[2]), sys.argv[3]
topic = "siltwatch/v1/lg-route9n/up-1/status"
base = {"type": "status", "site": "lg-route9n", "station": "up-1"}
client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="station-up-1-health")
client.username_pw_set("station", password)
client.will_set(topic, json.dumps({**base, "state": "offline"}), qos=1, retain=True)
client.connect(host, port, keepalive=10)
client.loop_start()
now = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
health = {"battery_v": 11.2, "disk_free_mb": 5000.0, "backlog": 0, "clock_synced": True}
info = client.publish(
    topic, json.dumps({**base, "state": "online", "time": now, "health": health}), qos=1, retain=True
)
info.wait_for_publish(timeout=10)
print("published" if info.is_published() else "no puback", flush=True)
time.sleep(600)
"""


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-station-health-", log_types=("all",))


def stored_alerts(db: Path) -> list[dict[str, Any]]:
    """The alert episodes in the store, read-only (never contends with the writer)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
        try:
            rows = con.execute("SELECT body FROM alerts WHERE site = ?", (SITE_ID,)).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []
    return [json.loads(body) for (body,) in rows]


def wait_alert(db: Path, kind: str, serve: ServeProcess) -> dict[str, Any]:
    deadline = time.monotonic() + ALERT_S
    while time.monotonic() < deadline:
        found = [a for a in stored_alerts(db) if a["kind"] == kind]
        if found:
            (alert,) = found
            return alert
        time.sleep(0.2)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        statuses = con.execute("SELECT station, t, state, health FROM statuses").fetchall()
    finally:
        con.close()
    raise AssertionError(
        f"no {kind} alert in {db}: {stored_alerts(db)}\nstatuses: {statuses}\n{serve.output}"
    )


def test_a_low_battery_and_a_station_killed_reach_alerts_once(
    broker: MosquittoServer, tmp_path: Path
) -> None:
    db = tmp_path / "site.sqlite3"
    args = serve_args(plain_url(broker), tmp_path, db, extra=("--allowed-lateness-s", "1"))
    serves: list[ServeProcess] = []
    station = subprocess.Popen(
        [sys.executable, "-c", STATION, broker.host, str(broker.port), USERS["station"]],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        serve = start_subscribed(serves, args, tmp_path, broker)
        assert station.stdout is not None and station.stdout.readline().strip() == "published"
        # A reading of the station's probe: event time runs from it at the service's pace.
        publish(broker, readings_at([int(time.time() * 1000)]))
        battery = wait_alert(db, "station_battery_low", serve)
        assert battery["subject"] == "up-1" and battery["evidence"]["battery_v"] == 11.2
        assert "11.20 V, below 11.8 V" in battery["message"]

        station.send_signal(signal.SIGKILL)  # no DISCONNECT: the broker sends the will
        station.wait(timeout=10)
        offline = wait_alert(db, "station_offline", serve)
        assert offline["evidence"]["why"] == "last will", offline
        assert offline["resolved_at"] is None
        first_run = stop(serve)
        assert "Traceback" not in first_run

        # Restarted: the retained will arrives again; it is the same status, stored once.
        again = start_subscribed(serves, args, tmp_path, broker)
        time.sleep(3.0)
        out = stop(again)
        assert "status_duplicates=1" in out or "statuses=0" in out, out
        kinds = sorted(a["kind"] for a in stored_alerts(db))
        assert kinds == ["station_battery_low", "station_offline"], kinds
        log = (tmp_path / f"{db.stem}-alerts.jsonl").read_text().splitlines()
        opened = [json.loads(line) for line in log if '"opened"' in line]
        assert len(opened) == 2, log
    finally:
        station.kill()
        station.wait(timeout=10)
        for s in serves:
            s.stop_quietly()
