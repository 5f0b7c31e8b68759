"""``siltwatch record`` captures real MQTT traffic; the capture replays (the contract's JSONL input)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from ingest.recordings.replay import replay_file
from siltwatch.schema import inspections_topic, reading_topic
from tests.conftest import BrokerInfo
from tests.ingest.live import ROOT, SERVICE_USERS, admin_client, loopback_broker, password_file
from tests.ingest.test_service import EXAMPLES, reading
from tests.servers import MosquittoServer


@pytest.fixture
def tls_broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-record-tls-", tls=True)


def record_command(out: Path, broker_args: list[str], seconds: float) -> list[str]:
    return [
        sys.executable, "-m", "app.cli", "record", "lg-route9n",
        "--out", str(out), *broker_args, "--seconds", str(seconds),
    ]  # fmt: skip


def test_record_then_replay(mosquitto: BrokerInfo, tmp_path: Path) -> None:
    secret = password_file(tmp_path, mosquitto.users["admin"])
    out = tmp_path / "capture.jsonl"
    proc = subprocess.Popen(
        record_command(
            out,
            [
                "--broker",
                f"mqtt://{mosquitto.host}:{mosquitto.port}",
                "--username",
                "admin",
                "--password-file",
                str(secret),
            ],
            4,
        ),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("recording siltwatch/v1/lg-route9n/#")
    time.sleep(1.0)  # let it subscribe
    with admin_client(mosquitto, "record-pub") as pub:
        for m in range(5):
            pub.publish(
                reading_topic("lg-route9n", "up-1", "turb-up"),
                reading("turb-up", "up-1", m, 8.0),
                qos=1,
            )
            pub.publish(
                reading_topic("lg-route9n", "down-1", "turb-down"),
                reading("turb-down", "down-1", m, 9.0),
                qos=1,
            )
        info = pub.publish(
            inspections_topic("lg-route9n"),
            b'{"type": "inspection", "site": "lg-route9n", "time": "2026-05-04T13:03:30Z", "inspector": "Dana Ruiz"}',
            qos=1,
        )
        info.wait_for_publish(5)
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert "recorded 11 messages" in rest
    result = replay_file(EXAMPLES / "lake-george-site.toml", out)
    assert result.stats.readings_processed == 10
    assert result.stats.inspections == 1


def test_record_over_tls_with_the_shared_broker_options(
    tls_broker: MosquittoServer, tmp_path: Path
) -> None:
    """``record`` takes serve's broker options: an ``mqtts://`` URL and ``--ca-file`` reach a
    TLS listener (it used to crash with a traceback on any ``mqtts://`` URL)."""
    assert tls_broker.ca_path is not None
    secret = password_file(tmp_path, SERVICE_USERS["ingest"])
    out = tmp_path / "capture.jsonl"
    url = f"mqtts://127.0.0.1:{tls_broker.tls_port}"
    proc = subprocess.Popen(
        record_command(
            out,
            [
                "--broker",
                url,
                "--ca-file",
                str(tls_broker.ca_path),
                "--username",
                "ingest",
                "--password-file",
                str(secret),
            ],
            4,
        ),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith(f"recording siltwatch/v1/lg-route9n/# from {url}")
    time.sleep(1.0)  # let it subscribe
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="record-tls-pub")
    pub.username_pw_set("ingest", SERVICE_USERS["ingest"])
    pub.connect("127.0.0.1", tls_broker.port)
    pub.loop_start()
    try:
        for m in range(3):
            info = pub.publish(
                reading_topic("lg-route9n", "up-1", "turb-up"),
                reading("turb-up", "up-1", m, 8.0),
                qos=1,
            )
        info.wait_for_publish(5)
    finally:
        pub.loop_stop()
        pub.disconnect()
    rest, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "recorded 3 messages" in rest
    assert replay_file(EXAMPLES / "lake-george-site.toml", out).stats.readings_processed == 3


def test_record_without_the_ca_says_why_in_one_line(
    tls_broker: MosquittoServer, tmp_path: Path
) -> None:
    url = f"mqtts://127.0.0.1:{tls_broker.tls_port}"
    done = subprocess.run(
        record_command(tmp_path / "c.jsonl", ["--broker", url], 1),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert url in done.stderr and "CERTIFICATE_VERIFY_FAILED" in done.stderr, done.stderr
