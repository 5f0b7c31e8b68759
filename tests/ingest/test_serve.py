"""``siltwatch serve`` as an operator runs it: a process against the real broker, stopped with Ctrl-C."""

from __future__ import annotations

import time
from pathlib import Path

from analytics.engine import Engine
from ingest.store.sqlite import SqliteStore
from siltwatch.schema import reading_topic
from tests.conftest import BrokerInfo
from tests.ingest.live import admin_client, interrupt, serve_lake_george
from tests.ingest.test_service import SITE, reading


def test_serve_ingests_until_interrupted_and_snapshots(
    mosquitto: BrokerInfo, tmp_path: Path
) -> None:
    db = tmp_path / "site.sqlite3"
    proc = serve_lake_george(
        mosquitto, tmp_path, db, f"serve-test-{tmp_path.name}", "--allowed-lateness-s", "3600"
    )
    try:
        assert proc.stdout is not None
        assert "siltwatch serving site 'lg-route9n'" in proc.stdout.readline()
        time.sleep(1.0)  # let it subscribe
        with admin_client(mosquitto, "serve-pub") as pub:
            topic = reading_topic("lg-route9n", "up-1", "turb-up")
            for m in range(5):
                pub.publish(topic, reading("turb-up", "up-1", m, 8.0), qos=1).wait_for_publish(5)
            pub.publish(topic, b"not json", qos=1).wait_for_publish(5)
        time.sleep(1.0)
    finally:
        rest = interrupt(proc)
    assert proc.returncode == 0, rest
    assert "rejected message on 'siltwatch/v1/lg-route9n/up-1/turb-up/reading': not JSON" in rest
    assert "stopped:" in rest and "readings_stored=5" in rest and "rejected=1" in rest
    store = SqliteStore(db)
    assert store.reading_count("lg-route9n") == 5
    blob = store.load_snapshot("lg-route9n")
    assert blob is not None  # a restart continues from here
    assert Engine.restore(SITE, blob).allowed_lateness_ms == 3_600_000
    store.close()
