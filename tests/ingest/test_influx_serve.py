"""``siltwatch serve --influx-url ... --influx-db ...``: readings reach SQLite and InfluxDB."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from siltwatch.schema import reading_topic
from tests.conftest import BrokerInfo
from tests.ingest.live import EXAMPLES, ROOT, admin_client, interrupt, serve_lake_george
from tests.ingest.test_service import T0, reading
from tests.servers import InfluxDBServer

pytestmark = pytest.mark.integration


def test_serve_mirrors_readings_into_influxdb(
    mosquitto: BrokerInfo, influxdb: InfluxDBServer, tmp_path: Path
) -> None:
    influxdb.create_database("serve")
    proc = serve_lake_george(
        mosquitto,
        tmp_path,
        tmp_path / "site.sqlite3",
        f"influx-serve-{tmp_path.name}",
        "--influx-url", influxdb.url, "--influx-db", "serve",
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("mirroring to InfluxDB")
        assert "siltwatch serving site 'lg-route9n'" in proc.stdout.readline()
        time.sleep(1.0)  # let it subscribe
        with admin_client(mosquitto, "serve-influx-pub") as pub:
            topic = reading_topic("lg-route9n", "up-1", "turb-up")
            for m in range(3):
                info = pub.publish(topic, reading("turb-up", "up-1", m, 8.0 + m), qos=1)
                info.wait_for_publish(5)
        deadline = time.monotonic() + 10
        values: list[list[object]] = []
        while time.monotonic() < deadline and len(values) < 3:
            result = influxdb.query("serve", 'SELECT "value" FROM "reading"')
            values = result["results"][0].get("series", [{}])[0].get("values", [])
            time.sleep(0.1)
    finally:
        rest = interrupt(proc)
    assert proc.returncode == 0, rest
    assert values == [[T0 + m * 60_000, 8.0 + m] for m in range(3)]


def test_serve_refuses_half_an_influx_setting(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable, "-m", "app.cli", "serve",
            "--site", str(EXAMPLES / "lake-george-site.toml"),
            "--db", str(tmp_path / "x.sqlite3"),
            "--influx-v2-url", "http://127.0.0.1:9", "--influx-org", "o",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert run.returncode == 1
    assert "--influx-v2-url needs --influx-bucket, --influx-token-file" in run.stderr
