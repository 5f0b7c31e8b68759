"""``siltwatch serve`` as an operator runs it: a process against the real broker, stopped with Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from analytics.engine import Engine
from ingest.store import SqliteStore
from siltwatch.schema import reading_topic
from tests.conftest import BrokerInfo
from tests.ingest.test_service import EXAMPLES, SITE, reading

ROOT = Path(__file__).resolve().parents[2]


def test_serve_ingests_until_interrupted_and_snapshots(
    mosquitto: BrokerInfo, tmp_path: Path
) -> None:
    secret = tmp_path / "pw"
    secret.write_text(mosquitto.users["ingest"], encoding="utf-8")
    db = tmp_path / "site.sqlite3"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "siltwatch.cli",
            "serve",
            "--site",
            str(EXAMPLES / "lake-george-site.toml"),
            "--broker",
            f"mqtt://{mosquitto.host}:{mosquitto.port}",
            "--username",
            "ingest",
            "--password-file",
            str(secret),
            "--db",
            str(db),
            "--alert-log",
            str(tmp_path / "alerts.jsonl"),
            # Its own session: the shared test broker keeps other tests' sessions' queues.
            "--client-id",
            f"serve-test-{tmp_path.name}",
            "--tick-s",
            "0.2",
            "--allowed-lateness-s",
            "3600",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert "siltwatch serving site 'lg-route9n'" in proc.stdout.readline()
        time.sleep(1.0)  # let it subscribe
        pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="serve-pub")
        pub.username_pw_set("admin", mosquitto.users["admin"])
        pub.connect(mosquitto.host, mosquitto.port)
        pub.loop_start()
        topic = reading_topic("lg-route9n", "up-1", "turb-up")
        for m in range(5):
            pub.publish(topic, reading("turb-up", "up-1", m, 8.0), qos=1).wait_for_publish(5)
        pub.publish(topic, b"not json", qos=1).wait_for_publish(5)
        pub.loop_stop()
        pub.disconnect()
        time.sleep(1.0)
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, rest
    assert "rejected message on 'siltwatch/v1/lg-route9n/up-1/turb-up/reading': not JSON" in rest
    assert "stopped:" in rest and "readings_stored=5" in rest and "rejected=1" in rest
    store = SqliteStore(db)
    assert store.reading_count("lg-route9n") == 5
    blob = store.load_snapshot("lg-route9n")
    assert blob is not None  # a restart continues from here
    assert Engine.restore(SITE, blob).allowed_lateness_ms == 3_600_000
    store.close()
