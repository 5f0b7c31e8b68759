"""Tests of the test harness itself: do the real servers behave as the other tests assume?

Each property the rest of the suite leans on (auth refusal, ACL refusal visible to an
MQTT v5 client, a stable port across restarts, persistence, InfluxQL round trip, the
amqtt fallback) is checked here once, against the real server, with a real client.
"""

from __future__ import annotations

import queue
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.reasoncodes import ReasonCode

from tests.conftest import BrokerInfo, require_mosquitto, require_server
from tests.servers import AmqttServer, InfluxDBServer, MosquittoServer, free_port

pytestmark = pytest.mark.integration

WAIT_S = 5.0
# Reason codes from the MQTT 5 spec that Mosquitto sends back.
# Mosquitto 2.0.11 answers a wrong password with 135, not 134 "Bad user name or password".
RC_NOT_AUTHORIZED_CONNACK = 135
RC_NOT_AUTHORIZED = 135


class Probe:
    """A paho-mqtt 2.x client with queues in place of callbacks, so tests read linearly."""

    def __init__(self, protocol: MQTTProtocolVersion = MQTTProtocolVersion.MQTTv5) -> None:
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"harness-{uuid.uuid4().hex[:8]}",
            protocol=protocol,
            # A probe never reconnects: tests see the failure, and loop_stop() does not
            # sit in paho's reconnect back-off (1 s per test) after the broker goes away.
            reconnect_on_failure=False,
        )
        self.connacks: queue.Queue[ReasonCode] = queue.Queue()
        self.pubacks: dict[int, ReasonCode] = {}
        self._puback_event = threading.Condition()
        self.subacks: queue.Queue[list[ReasonCode]] = queue.Queue()
        self.messages: queue.Queue[mqtt.MQTTMessage] = queue.Queue()
        self.client.on_connect = self._on_connect
        self.client.on_publish = self._on_publish
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message

    def _on_connect(
        self, _c: mqtt.Client, _u: Any, _f: mqtt.ConnectFlags, rc: ReasonCode, _p: Any
    ) -> None:
        self.connacks.put(rc)

    def _on_publish(self, _c: mqtt.Client, _u: Any, mid: int, rc: ReasonCode, _p: Any) -> None:
        with self._puback_event:
            self.pubacks[mid] = rc
            self._puback_event.notify_all()

    def _on_subscribe(
        self, _c: mqtt.Client, _u: Any, _mid: int, rcs: list[ReasonCode], _p: Any
    ) -> None:
        self.subacks.put(rcs)

    def _on_message(self, _c: mqtt.Client, _u: Any, msg: mqtt.MQTTMessage) -> None:
        self.messages.put(msg)

    def connect(
        self,
        host: str,
        port: int,
        login: tuple[str, str] | None = None,
        ca_path: Path | None = None,
    ) -> ReasonCode:
        """Connect, as ``login`` (user, password) if given, and return the CONNACK reason
        code (the network loop keeps running)."""
        if login is not None:
            self.client.username_pw_set(*login)
        if ca_path is not None:
            self.client.tls_set(ca_certs=str(ca_path))
        self.client.connect(host, port, keepalive=10)
        self.client.loop_start()
        return self.connacks.get(timeout=WAIT_S)

    def subscribe(self, topic: str, qos: int = 1) -> list[ReasonCode]:
        self.client.subscribe(topic, qos=qos)
        return self.subacks.get(timeout=WAIT_S)

    def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False) -> ReasonCode:
        """Publish and return the broker's PUBACK reason code (QoS 1)."""
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        with self._puback_event:
            if not self._puback_event.wait_for(lambda: info.mid in self.pubacks, WAIT_S):
                raise TimeoutError(f"no PUBACK for {topic} within {WAIT_S} s")
            return self.pubacks[info.mid]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class Probes:
    """Makes probes and disconnects them all at teardown (even when a test fails)."""

    def __init__(self) -> None:
        self.made: list[Probe] = []

    def __call__(self, protocol: MQTTProtocolVersion = MQTTProtocolVersion.MQTTv5) -> Probe:
        probe = Probe(protocol)
        self.made.append(probe)
        return probe


@pytest.fixture
def probes() -> Iterator[Probes]:
    factory = Probes()
    yield factory
    for probe in factory.made:
        probe.close()


def _protocol(broker: BrokerInfo) -> MQTTProtocolVersion:
    """MQTT v5 on Mosquitto; amqtt only speaks 3.1.1."""
    return (
        MQTTProtocolVersion.MQTTv5 if broker.kind == "mosquitto" else MQTTProtocolVersion.MQTTv311
    )


def test_qos1_round_trip_authenticated(mosquitto: BrokerInfo, probes: Probes) -> None:
    proto = _protocol(mosquitto)
    sub = probes(proto)
    pub = probes(proto)
    assert sub.connect(mosquitto.host, mosquitto.port, ("ingest", mosquitto.users["ingest"])) == 0
    assert pub.connect(mosquitto.host, mosquitto.port, ("admin", mosquitto.users["admin"])) == 0
    topic = "siltwatch/v1/harness/roundtrip"
    assert [rc.value for rc in sub.subscribe(topic)] == [1]  # granted QoS 1

    rc = pub.publish(topic, b"hello", qos=1)

    assert not rc.is_failure
    msg = sub.messages.get(timeout=WAIT_S)
    assert (msg.topic, msg.payload, msg.qos) == (topic, b"hello", 1)


def test_wrong_password_is_refused(mosquitto: BrokerInfo, probes: Probes) -> None:
    require_mosquitto(mosquitto)
    probe = probes()

    rc = probe.connect(mosquitto.host, mosquitto.port, ("admin", "not-the-password"))

    assert rc.is_failure
    assert rc.value == RC_NOT_AUTHORIZED_CONNACK


def test_station_cannot_publish_to_another_station(mosquitto: BrokerInfo, probes: Probes) -> None:
    """MQTT v5 makes an ACL refusal visible: PUBACK 135 instead of a silent drop."""
    require_mosquitto(mosquitto)
    watcher = probes()
    station = probes()
    assert watcher.connect(mosquitto.host, mosquitto.port, ("admin", mosquitto.users["admin"])) == 0
    assert (
        station.connect(
            mosquitto.host, mosquitto.port, ("station-up-1", mosquitto.users["station-up-1"])
        )
        == 0
    )
    watcher.subscribe("siltwatch/v1/lg-route9n/#")
    own = "siltwatch/v1/lg-route9n/up-1/turbidity/reading"
    other = "siltwatch/v1/lg-route9n/up-2/turbidity/reading"

    denied = station.publish(other, b"forged", qos=1)
    allowed = station.publish(own, b"mine", qos=1)

    assert denied.is_failure
    assert denied.value == RC_NOT_AUTHORIZED
    assert not allowed.is_failure
    # The allowed message arrives; the denied one (sent first) never does.
    msg = watcher.messages.get(timeout=WAIT_S)
    assert (msg.topic, msg.payload) == (own, b"mine")
    assert watcher.messages.empty()


def test_restart_keeps_port_and_retained_message(tmp_path: Path, probes: Probes) -> None:
    """Persistence on: a retained QoS 1 message survives a restart on the same port.

    Uses tmp_path (unreachable for the ``mosquitto`` user), so this also covers the
    fallback where the broker keeps running as root.
    """
    require_server("mosquitto", MosquittoServer.available())
    with MosquittoServer(tmp_path / "broker") as server:
        port = server.port
        before = probes()
        assert before.connect(server.host, server.port) == 0
        assert not before.publish("siltwatch/v1/harness/retained", b"kept", retain=True).is_failure
        before.close()

        server.restart()

        assert server.port == port
        assert server.running
        after = probes()
        assert after.connect(server.host, port) == 0
        after.subscribe("siltwatch/v1/harness/retained")
        msg = after.messages.get(timeout=WAIT_S)
        assert (msg.payload, msg.retain) == (b"kept", True)
    assert "mosquitto version" in server.log_text()


def test_tls_listener_verifies_against_generated_ca(tmp_path: Path, probes: Probes) -> None:
    require_server("mosquitto", MosquittoServer.available())
    with MosquittoServer(
        tmp_path / "tls-broker", users={"admin": "pw"}, persistence=False, tls=True
    ) as server:
        assert server.ca_path is not None
        probe = probes()
        assert probe.connect(server.host, server.tls_port, ("admin", "pw"), server.ca_path) == 0
        probe.subscribe("t/#")
        assert not probe.publish("t/1", b"over tls").is_failure
        assert probe.messages.get(timeout=WAIT_S).payload == b"over tls"


def test_influxdb_line_protocol_write_and_influxql_read(influxdb: InfluxDBServer) -> None:
    db = f"harness_{uuid.uuid4().hex[:8]}"
    influxdb.create_database(db)

    influxdb.write(
        db,
        "turbidity,site=lg-route9n,station=up-1 ntu=12.5 1700000000000\n"
        "turbidity,site=lg-route9n,station=up-1 ntu=48.0 1700000060000\n",
        precision="ms",
    )
    result = influxdb.query(db, 'SELECT "ntu" FROM "turbidity" WHERE "station" = \'up-1\'')

    series = result["results"][0]["series"][0]
    assert series["columns"] == ["time", "ntu"]
    assert series["values"] == [[1700000000000, 12.5], [1700000060000, 48.0]]


def test_influxdb_write_error_raises(influxdb: InfluxDBServer) -> None:
    """A bad write must raise, not vanish (unlike influxdb-client's batching writer)."""
    with pytest.raises(RuntimeError, match="HTTP 404"):
        influxdb.write("no_such_db_here", "m v=1 1700000000000")


def test_amqtt_fallback_qos1_round_trip(probes: Probes) -> None:
    with AmqttServer(free_port()) as server:
        sub = probes(MQTTProtocolVersion.MQTTv311)
        pub = probes(MQTTProtocolVersion.MQTTv311)
        assert sub.connect(server.host, server.port) == 0
        assert pub.connect(server.host, server.port) == 0
        sub.subscribe("siltwatch/v1/harness/amqtt")

        assert not pub.publish("siltwatch/v1/harness/amqtt", b"fallback").is_failure

        msg = sub.messages.get(timeout=WAIT_S)
        assert (msg.payload, msg.qos) == (b"fallback", 1)
        # Disconnect before the broker goes away, so paho does not log reconnect attempts.
        sub.close()
        pub.close()


def test_require_server_fails_under_ci_and_skips_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI=true integration tests must not"):
        require_server("thing", False)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        require_server("thing", False)
    require_server("thing", True)  # available: neither
