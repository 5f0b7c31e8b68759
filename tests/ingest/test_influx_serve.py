"""``siltwatch serve --influx-url ... --influx-db ...``: readings reach SQLite and InfluxDB."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from siltwatch.schema import reading_topic
from tests.conftest import BrokerInfo
from tests.ingest.test_service import EXAMPLES, T0, reading
from tests.servers import InfluxDBServer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def test_serve_mirrors_readings_into_influxdb(
    mosquitto: BrokerInfo, influxdb: InfluxDBServer, tmp_path: Path
) -> None:
    influxdb.create_database("serve")
    secret = tmp_path / "pw"
    secret.write_text(mosquitto.users["ingest"], encoding="utf-8")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "siltwatch.cli", "serve",
            "--site", str(EXAMPLES / "lake-george-site.toml"),
            "--broker", f"mqtt://{mosquitto.host}:{mosquitto.port}",
            "--username", "ingest", "--password-file", str(secret),
            "--db", str(tmp_path / "site.sqlite3"),
            "--alert-log", str(tmp_path / "alerts.jsonl"),
            "--client-id", f"influx-serve-{tmp_path.name}",
            "--tick-s", "0.2",
            "--influx-url", influxdb.url, "--influx-db", "serve",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("mirroring to InfluxDB")
        assert "siltwatch serving site 'lg-route9n'" in proc.stdout.readline()
        time.sleep(1.0)  # let it subscribe
        pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="serve-influx-pub")
        pub.username_pw_set("admin", mosquitto.users["admin"])
        pub.connect(mosquitto.host, mosquitto.port)
        pub.loop_start()
        topic = reading_topic("lg-route9n", "up-1", "turb-up")
        for m in range(3):
            pub.publish(topic, reading("turb-up", "up-1", m, 8.0 + m), qos=1).wait_for_publish(5)
        pub.loop_stop()
        pub.disconnect()
        deadline = time.monotonic() + 10
        values: list[list[object]] = []
        while time.monotonic() < deadline and len(values) < 3:
            result = influxdb.query("serve", 'SELECT "value" FROM "reading"')
            values = result["results"][0].get("series", [{}])[0].get("values", [])
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, rest
    assert values == [[T0 + m * 60_000, 8.0 + m] for m in range(3)]


def test_serve_refuses_half_an_influx_setting(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable, "-m", "siltwatch.cli", "serve",
            "--site", str(EXAMPLES / "lake-george-site.toml"),
            "--db", str(tmp_path / "x.sqlite3"),
            "--influx-v2-url", "http://127.0.0.1:9", "--influx-org", "o",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert run.returncode == 1
    assert "--influx-v2-url needs --influx-bucket, --influx-token-file" in run.stderr
