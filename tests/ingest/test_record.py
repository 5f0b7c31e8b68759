"""``siltwatch record`` captures real MQTT traffic; the capture replays (the contract's JSONL input)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ingest.replay import replay_file
from siltwatch.schema import inspections_topic, reading_topic
from tests.conftest import BrokerInfo
from tests.ingest.live import ROOT, admin_client, password_file
from tests.ingest.test_service import EXAMPLES, reading


def test_record_then_replay(mosquitto: BrokerInfo, tmp_path: Path) -> None:
    secret = password_file(tmp_path, mosquitto.users["admin"])
    out = tmp_path / "capture.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "siltwatch.cli",
            "record",
            "lg-route9n",
            "--out",
            str(out),
            "--broker",
            f"mqtt://{mosquitto.host}:{mosquitto.port}",
            "--username",
            "admin",
            "--password-file",
            str(secret),
            "--seconds",
            "4",
        ],
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
