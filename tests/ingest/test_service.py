"""The ingest pipeline: validate → store (real SQLite) → engine → dispatch.

Driven message by message (no broker needed) and end to end over the
session's real Mosquitto.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from alerts.dispatch import Dispatcher
from analytics.timeutil import iso
from ingest.mqtt.session import BrokerSettings, MqttIngest
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import reading_topic
from tests.alerts.helpers import RecordingSink
from tests.conftest import BrokerInfo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SITE = load_site(EXAMPLES / "lake-george-site.toml")
T0 = 1777899600000  # 2026-05-04T13:00:00Z


def reading(sensor: str, station: str, minute: int, value: float, seq: int | None = None) -> bytes:
    return json.dumps(
        {
            "type": "reading",
            "site": "lg-route9n",
            "station": station,
            "sensor": sensor,
            "time": iso(T0 + minute * 60_000),
            "seq": minute if seq is None else seq,
            "value": value,
            "unit": "NTU",
        }
    ).encode()


def test_bad_payloads_are_counted_stored_and_stop_nothing(sqlite_path: Path) -> None:
    store = SqliteStore(sqlite_path)
    service = IngestService(SITE, store)
    topic = reading_topic("lg-route9n", "up-1", "turb-up")
    service.handle_message(topic, reading("turb-up", "up-1", 0, 8.0), T0)
    service.handle_message(topic, b"{not json", T0)
    service.handle_message(
        topic, reading("turb-up", "up-1", 1, float("nan")).replace(b"NaN", b'"x"'), T0
    )
    service.handle_message(
        topic, reading("turb-down", "down-1", 2, 8.0), T0
    )  # wrong station's topic
    stray = reading_topic("lg-route9n", "up-1", "turb-x")
    service.handle_message(stray, reading("turb-x", "up-1", 2, 8.0), T0)  # not in the site config
    service.handle_message(
        "siltwatch/v1/other-site/up-1/turb-up/reading", reading("turb-up", "up-1", 3, 8.0), T0
    )
    service.handle_message(topic, reading("turb-up", "up-1", 4, 8.5), T0)
    service.handle_message(topic, reading("turb-up", "up-1", 4, 8.5), T0)  # QoS 1 redelivery
    assert service.stats.rejected == 5
    assert service.stats.readings_stored == 2
    assert service.stats.duplicates == 1
    reasons = [reason for _, reason in store.rejections()]
    assert reasons[0].startswith("not JSON")
    assert reasons[1].startswith("invalid payload: field 'value'")
    assert reasons[2].startswith("wrong topic: reading of lg-route9n/down-1/turb-down published")
    assert reasons[3].startswith("unknown sensor:") and "'turb-x'" in reasons[3]
    assert reasons[4].startswith("wrong topic:") and "'other-site'" in reasons[4]
    assert [r.value for r in store.readings("lg-route9n", "turb-up")] == [8.0, 8.5]


def test_an_edge_reset_that_reuses_sequence_numbers_loses_no_reading(sqlite_path: Path) -> None:
    """A station whose outbox was wiped starts its seq again: new times are new readings.

    The dedupe key is (sensor, event time); the same reading resent (same time,
    same seq) is still a duplicate.
    """
    store = SqliteStore(sqlite_path)
    service = IngestService(SITE, store)
    topic = reading_topic("lg-route9n", "up-1", "turb-up")
    for minute in range(100):
        service.handle_message(
            topic, reading("turb-up", "up-1", minute, 8.0, seq=minute), T0 + 6_000_000
        )
    for minute in range(100, 200):  # after the reset: seq 0..99 again
        service.handle_message(
            topic, reading("turb-up", "up-1", minute, 8.0, seq=minute - 100), T0 + 12_000_000
        )
    service.handle_message(topic, reading("turb-up", "up-1", 150, 8.0, seq=50), T0 + 12_000_000)
    assert (service.stats.readings_stored, service.stats.duplicates) == (200, 1)
    assert store.reading_count("lg-route9n", "turb-up") == 200
    assert store.rejections() == []


def _plume(service: IngestService) -> None:
    """Two hours of a 100 NTU plume downstream of an 8 NTU background (limit 25 over background)."""
    up, down = (
        reading_topic("lg-route9n", "up-1", "turb-up"),
        reading_topic("lg-route9n", "down-1", "turb-down"),
    )
    for m in range(0, 180):
        when = f"2026-05-04T{13 + m // 60:02d}:{m % 60:02d}:00Z"
        for topic, sensor, station, value in (
            (up, "turb-up", "up-1", 8.0),
            (down, "turb-down", "down-1", 100.0 if 20 <= m < 140 else 9.0),
        ):
            payload = {
                "type": "reading",
                "site": "lg-route9n",
                "station": station,
                "sensor": sensor,
                "time": when,
                "seq": m,
                "value": value,
                "unit": "NTU",
            }
            arrived = T0 + m * 60_000 + 1_000  # a second after it was measured
            service.handle_message(topic, json.dumps(payload).encode(), arrived)


def test_restart_restores_the_engine_from_the_store(sqlite_path: Path) -> None:
    """A service restarted on the same store continues; the episode is not opened twice."""
    store = SqliteStore(sqlite_path)
    sink = RecordingSink()
    first = IngestService(SITE, store, Dispatcher(SITE, [sink]))
    first.SNAPSHOT_EVERY = 50
    _plume(first)
    first.snapshot(T0)
    opened = [n for n in sink.sent if n.event == "opened" and n.alert.kind == "turbidity_contrast"]
    assert len(opened) == 1
    second = IngestService(SITE, store, Dispatcher(SITE, [sink]))
    assert second.engine.stats.readings_processed == first.engine.stats.readings_processed
    second.finish()
    opened = [n for n in sink.sent if n.event == "opened" and n.alert.kind == "turbidity_contrast"]
    assert len(opened) == 1
    assert [a.kind for a in store.alerts("lg-route9n")].count("turbidity_contrast") == 1


def test_officer_hears_once_when_critical_and_once_when_resolved(sqlite_path: Path) -> None:
    site = SITE
    sink = RecordingSink()
    service = IngestService(site, SqliteStore(sqlite_path), Dispatcher(site, [sink]))
    _plume(service)
    service.finish()
    officer_notes = [n for n in sink.sent if any(c.role == "officer" for c in n.recipients)]
    operator_notes = [n for n in sink.sent if any(c.role == "operator" for c in n.recipients)]
    assert operator_notes, "the operator hears of every episode"
    crit = [n.alert.id for n in officer_notes if n.event != "resolved"]
    assert crit, "a 92 NTU excess over a 25 NTU limit reaches critical: the officer hears of it"
    assert len(crit) == len(set(crit)), "one message per episode, not one per escalation"
    resolved = [n.alert.id for n in officer_notes if n.event == "resolved"]
    assert set(resolved) <= set(crit), (
        "the officer hears of a resolution only of what they were told"
    )
    for note in officer_notes:
        assert note.alert.severity == "critical" or note.alert.kind == "inspection_overdue"


PROTOCOL = {"mosquitto": MQTTProtocolVersion.MQTTv5, "amqtt": MQTTProtocolVersion.MQTTv311}


def test_end_to_end_over_mosquitto(mosquitto: BrokerInfo, sqlite_path: Path) -> None:
    site: SiteConfig = SITE
    store = SqliteStore(sqlite_path)
    service = IngestService(site, store)
    broker = BrokerSettings(
        mosquitto.host,
        mosquitto.port,
        username="ingest",
        password=mosquitto.users["ingest"],
        protocol=PROTOCOL[mosquitto.kind],
    )
    ingest = MqttIngest(
        service,
        broker,
        clock_ms=lambda: T0 + 86_400_000,
        client_id=f"e2e-{sqlite_path.parent.name}",
    )
    ingest.start()
    try:
        assert ingest.subscribed.wait(10)
        pub = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id="e2e-pub", protocol=MQTTProtocolVersion.MQTTv311
        )
        pub.username_pw_set("admin", mosquitto.users["admin"])
        pub.connect(mosquitto.host, mosquitto.port)
        pub.loop_start()
        topic = reading_topic("lg-route9n", "up-1", "turb-up")
        for m in range(10):
            pub.publish(topic, reading("turb-up", "up-1", m, 8.0 + m), qos=1).wait_for_publish(5)
        pub.publish(topic, b"garbage", qos=1).wait_for_publish(5)
        pub.publish(topic, reading("turb-up", "up-1", 10, 18.0), qos=1).wait_for_publish(5)
        deadline = time.monotonic() + 10
        while service.stats.messages < 12 and time.monotonic() < deadline:
            time.sleep(0.02)
        pub.loop_stop()
        pub.disconnect()
    finally:
        ingest.stop()
    assert service.stats.messages == 12
    assert store.reading_count("lg-route9n", "turb-up") == 11
    assert service.stats.rejected == 1
