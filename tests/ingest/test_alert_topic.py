"""Alert episodes on MQTT for other consumers, over a real Mosquitto.

The Lake George week is fed to the live service; its alert changes go out on
``siltwatch/v1/{site}/alerts/{alert id}`` through a real broker. While the
plume is open a consumer that connects late finds it retained; when it ends a
connected consumer gets its final state once and the retained message is
cleared, so a consumer connecting afterwards finds nothing for it.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from ingest.influx.mirror import EventFanOut
from ingest.mqtt.alert_topic import AlertTopic
from ingest.recordings.formats import read_csv_readings
from ingest.recordings.replay import replay_site
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from siltwatch.schema import AlertMessage, alert_episode_topic
from tests.conftest import BrokerInfo
from tests.ingest.live import EXAMPLES, interrupt, reading_messages, serve_lake_george

pytestmark = pytest.mark.integration

SITE = load_site(EXAMPLES / "lake-george-site.toml")
SID = SITE.site.id
PROTOCOL = {"mosquitto": MQTTProtocolVersion.MQTTv5, "amqtt": MQTTProtocolVersion.MQTTv311}


def client(broker: BrokerInfo, name: str, user: str) -> mqtt.Client:
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=name, protocol=PROTOCOL[broker.kind])
    c.username_pw_set(user, broker.users[user])
    c.connect(broker.host, broker.port)
    c.loop_start()
    return c


@pytest.fixture
def publisher(mosquitto: BrokerInfo) -> Iterator[mqtt.Client]:
    c = client(mosquitto, "alert-topic-service", "ingest")
    yield c
    c.disconnect()
    c.loop_stop()


def consumer(
    broker: BrokerInfo, name: str
) -> tuple[mqtt.Client, queue.Queue[tuple[str, bytes, bool]]]:
    got: queue.Queue[tuple[str, bytes, bool]] = queue.Queue()
    subscribed: queue.Queue[bool] = queue.Queue()
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=name, protocol=PROTOCOL[broker.kind])
    c.username_pw_set("admin", broker.users["admin"])
    c.on_message = lambda _c, _u, m: got.put((m.topic, bytes(m.payload), bool(m.retain)))
    c.on_subscribe = lambda *_a: subscribed.put(True)
    c.connect(broker.host, broker.port)
    c.loop_start()
    c.subscribe(f"siltwatch/v1/{SID}/alerts/#", qos=1)
    subscribed.get(timeout=5)
    return c, got


def drain(
    got: queue.Queue[tuple[str, bytes, bool]], quiet_s: float = 0.5
) -> list[tuple[str, bytes, bool]]:
    out = []
    while True:
        try:
            out.append(got.get(timeout=quiet_s))
        except queue.Empty:
            return out


def close(c: mqtt.Client) -> None:
    c.disconnect()
    c.loop_stop()


def test_an_episode_is_retained_while_open_and_cleared_when_it_ends(
    mosquitto: BrokerInfo, publisher: mqtt.Client, tmp_path: Path
) -> None:
    readings = sorted(
        read_csv_readings(EXAMPLES / "lake-george-storm.csv", SITE.sensors()),
        key=lambda r: (r.t, r.sensor),
    )
    plume = next(a for a in replay_site(SITE, readings).alerts if a.kind == "turbidity_contrast")
    assert plume.resolved_at is not None
    topic = alert_episode_topic(SID, plume.id)
    opened_ms = int(plume.opened_at.timestamp() * 1000)

    def send(t: str, payload: bytes, retain: bool) -> object:
        info = publisher.publish(t, payload, qos=1, retain=retain)
        info.wait_for_publish(5)
        return info

    alerts = AlertTopic(SID, send)
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(SITE, store, EventFanOut([alerts]))
    messages = reading_messages(SITE, readings)
    live, live_got = consumer(mosquitto, "alert-topic-live")
    try:
        for m in messages:
            if m.keys[0][1] > opened_ms + 3_600_000:
                break
            service.handle_message(m.topic, m.payload, m.keys[0][1] + 1000)
        # A consumer that connects now finds the open plume, retained.
        late, late_got = consumer(mosquitto, "alert-topic-late")
        retained = {t: (p, r) for t, p, r in drain(late_got)}
        close(late)
        assert topic in retained and retained[topic][1] is True
        open_now = AlertMessage.model_validate_json(retained[topic][0])
        assert open_now.site == SID and open_now.resolved_at is None
        assert open_now.severity == "critical"
        for m in messages:
            if m.keys[0][1] > opened_ms + 3_600_000:
                service.handle_message(m.topic, m.payload, m.keys[0][1] + 1000)
        service.finish(readings[-1].t)
        seen = [(p, r) for t, p, r in drain(live_got) if t == topic]
    finally:
        close(live)
    bodies = [json.loads(p) for p, _r in seen if p]
    assert bodies[0]["resolved_at"] is None  # opened
    assert bodies[-1]["resolved_at"] is not None  # ended, said once
    assert sum(1 for b in bodies if b["resolved_at"] is not None) == 1
    assert seen[-1] == (b"", False)  # the clearing message, as a live subscriber sees it
    # Connecting afterwards: nothing retained for the ended episode.
    after, after_got = consumer(mosquitto, "alert-topic-after")
    time.sleep(0.3)
    leftover = [t for t, p, _r in drain(after_got) if t == topic and p]
    close(after)
    assert leftover == []
    # The store is the truth: a restart re-publishes exactly the open episodes.
    open_ids = {a.id for a in store.alerts(SID) if a.resolved_at is None}
    assert alerts.sync(store.alerts(SID)) == len(open_ids)
    for alert_id in open_ids:  # the session's broker is shared: leave nothing retained
        send(alert_episode_topic(SID, alert_id), b"", True)


def test_serve_publishes_the_open_episodes_of_its_store_when_it_starts(
    mosquitto: BrokerInfo, tmp_path: Path
) -> None:
    """`siltwatch serve` (a real process) on a store holding an open and a resolved episode:
    a consumer finds the open one retained on its own topic, and nothing for the other."""
    readings = sorted(
        read_csv_readings(EXAMPLES / "lake-george-storm.csv", SITE.sensors()),
        key=lambda r: (r.t, r.sensor),
    )
    alerts = replay_site(SITE, readings).alerts
    ended = next(a for a in alerts if a.resolved_at is not None)
    still = ended.model_copy(update={"id": "al-open-for-the-topic", "resolved_at": None})
    db = tmp_path / "site.sqlite3"
    store = SqliteStore(db)
    store.save_alert(SID, ended)
    store.save_alert(SID, still)
    store.close()
    open_topic = alert_episode_topic(SID, still.id)
    proc = serve_lake_george(mosquitto, tmp_path, db, f"alert-topic-serve-{tmp_path.name}")
    try:
        assert proc.stdout is not None
        assert "siltwatch serving site 'lg-route9n'" in proc.stdout.readline()
        watcher, got = consumer(mosquitto, "alert-topic-serve-watcher")
        # serve publishes its open episodes just after its banner, not before it: wait
        # for the open one (or 15 s), then a quiet second for anything else it sends.
        seen: dict[str, tuple[bytes, bool]] = {}
        deadline = time.monotonic() + 15
        while open_topic not in seen and time.monotonic() < deadline:
            seen.update({t: (p, r) for t, p, r in drain(got, 0.2)})
        seen.update({t: (p, r) for t, p, r in drain(got, 1.0)})
        close(watcher)
        # The watcher may have subscribed before or after serve published, so its copy may
        # be live or retained. A consumer that connects now must find it retained.
        latecomer, late_got = consumer(mosquitto, "alert-topic-serve-latecomer")
        late = {t: (p, r) for t, p, r in drain(late_got, 1.0)}
        close(latecomer)
    finally:
        rest = interrupt(proc)
        # The session's broker is shared: leave no retained message behind, pass or fail.
        cleaner = client(mosquitto, "alert-topic-serve-cleaner", "admin")
        cleaner.publish(open_topic, b"", qos=1, retain=True).wait_for_publish(5)
        close(cleaner)
    assert proc.returncode == 0, rest
    assert open_topic in seen, seen.keys()
    assert AlertMessage.model_validate_json(seen[open_topic][0]).id == still.id
    assert alert_episode_topic(SID, ended.id) not in seen
    assert open_topic in late and late[open_topic][1] is True, late.keys()
    assert AlertMessage.model_validate_json(late[open_topic][0]).id == still.id
    assert alert_episode_topic(SID, ended.id) not in late
