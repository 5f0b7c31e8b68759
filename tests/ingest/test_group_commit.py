"""The service's group commit is bounded by readings and bytes, not only by messages.

A station back from a long outage sends its outbox as ReadingBatch messages of
up to 10,000 readings; with only a message cap, a broker's backlog of them once
became one 1 M-reading transaction held in memory (issue 24). Here a backlog of
batches waits in a real Mosquitto for the service's persistent session, and the
service must take it in groups of at most ``batch_max_readings`` readings (more
than one message a group: still a group commit), hold at most
``queue_max_bytes`` of it in its queue (paho's thread waits), and store every
reading once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from analytics.timeutil import iso
from ingest.mqtt.session import BrokerSettings, MqttIngest, readings_in
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from siltwatch.schema import reading_topic
from tests.conftest import BrokerInfo
from tests.ingest.test_service import PROTOCOL

SITE = load_site(Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml")
T0 = 1777899600000  # 2026-05-04T13:00:00Z
BATCHES, PER_BATCH = 12, 1_000


def batch(n: int) -> bytes:
    """The n-th outbox flush of turb-up: PER_BATCH one-minute readings."""
    first = n * PER_BATCH
    items = [
        {"sensor": "turb-up", "time": iso(T0 + m * 60_000), "seq": m, "value": 8.0, "unit": "NTU"}
        for m in range(first, first + PER_BATCH)
    ]
    return json.dumps(
        {"type": "batch", "site": SITE.site.id, "station": "up-1", "readings": items}
    ).encode()


def test_readings_in_counts_a_batch_without_decoding_it() -> None:
    assert readings_in(batch(0)) == PER_BATCH
    assert readings_in(b"{}") == 1


def test_a_backlog_of_big_batches_is_committed_in_bounded_groups(
    mosquitto: BrokerInfo, sqlite_path: Path
) -> None:
    url = f"mqtt://{mosquitto.host}:{mosquitto.port}"
    login = {"username": "ingest", "password": mosquitto.users["ingest"]}
    broker = BrokerSettings.from_url(url, protocol=PROTOCOL[mosquitto.kind], **login)
    store = SqliteStore(sqlite_path)
    client_id = f"backlog-{sqlite_path.parent.name}"

    def session(service: IngestService) -> MqttIngest:
        return MqttIngest(
            service,
            broker,
            clock_ms=lambda: T0 + 30 * 86_400_000,
            client_id=client_id,
            batch_max_readings=3 * PER_BATCH,
            queue_max_bytes=4 * len(batch(0)),
        )

    first = session(IngestService(SITE, store))
    first.start()  # the persistent session and its subscriptions exist from now on
    assert first.subscribed.wait(10)
    first.stop()

    pub = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=f"{client_id}-pub",
        protocol=MQTTProtocolVersion.MQTTv311,
    )
    pub.username_pw_set("admin", mosquitto.users["admin"])
    pub.connect(mosquitto.host, mosquitto.port)
    pub.loop_start()
    topic = reading_topic(SITE.site.id, "up-1", "turb-up")
    try:
        for n in range(BATCHES):  # the service is away: the broker keeps the backlog
            pub.publish(topic, batch(n), qos=1).wait_for_publish(10)
    finally:
        pub.loop_stop()
        pub.disconnect()

    service = IngestService(SITE, store)
    ingest = session(service)
    ingest.start()
    try:
        deadline = time.monotonic() + 60
        while service.stats.messages < BATCHES and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        ingest.stop()
    try:
        assert service.stats.messages == BATCHES
        assert store.reading_count(SITE.site.id, "turb-up") == BATCHES * PER_BATCH
        stats = ingest.stats
        assert stats.largest_batch_readings <= 3 * PER_BATCH  # never the whole backlog
        assert stats.batches < BATCHES or stats.largest_batch == 1  # grouped when it could
        assert stats.acked == BATCHES
    finally:
        store.close()
