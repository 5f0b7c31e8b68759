"""Publisher logic without a broker: what goes out as single readings or batches,
and what a PUBACK (success or failure reason code) does to the outbox."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from paho.mqtt.enums import MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from edge.clock import ManualClock
from edge.config import AgentConfig, load_config
from edge.outbox import Outbox
from edge.publisher import Publisher
from hardware.base import Sample
from tests.edge.helpers import agent_toml

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@dataclass
class Info:
    mid: int
    rc: MQTTErrorCode = MQTTErrorCode.MQTT_ERR_SUCCESS


class FakeClient:
    """Records publishes; acks come only when the test says so."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, dict[str, object]]] = []

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> Info:
        assert qos == 1
        mid = len(self.sent) + 1
        self.sent.append((mid, topic, json.loads(payload)))
        return Info(mid)

    def socket(self) -> None:
        return None


def setup(tmp_path: Path, pending: int) -> tuple[AgentConfig, Outbox, Publisher, FakeClient]:
    path = tmp_path / "agent.toml"
    path.write_text(agent_toml(outbox=tmp_path / "o.sqlite", port=1883, sensors=2))
    cfg = load_config(path)
    box = Outbox(cfg.outbox.path)
    for i in range(pending):
        box.append(f"s{i % 2}", T0, Sample(float(i), "NTU"))
    pub = Publisher(cfg, ManualClock(T0))
    client = FakeClient()
    pub.client = client  # type: ignore[assignment]
    pub.connected = True
    return cfg, box, pub, client


def puback(code: int) -> ReasonCode:
    return ReasonCode(PacketTypes.PUBACK, identifier=code)


def test_live_readings_go_one_per_message_on_their_own_topic(tmp_path: Path) -> None:
    _, _box, pub, client = setup(tmp_path, pending=3)
    pub._fill_window()
    assert [(topic.split("/")[4], msg["type"], msg["seq"]) for _, topic, msg in client.sent] == [
        ("s0", "reading", 0),
        ("s1", "reading", 0),
        ("s0", "reading", 1),
    ]


def test_a_backlog_goes_in_bounded_batches_oldest_first(tmp_path: Path) -> None:
    _cfg, _box, pub, client = setup(tmp_path, pending=450)
    pub._fill_window()
    sizes = [len(msg["readings"]) for _, _, msg in client.sent]  # type: ignore[arg-type]
    assert sizes == [200, 200, 50]  # batch_max = 200 in the test config
    first = client.sent[0][2]["readings"][0]  # type: ignore[index]
    assert (first["sensor"], first["seq"]) == ("s0", 0)


def test_window_limits_unacknowledged_messages(tmp_path: Path) -> None:
    cfg, _box, pub, client = setup(tmp_path, pending=9)  # below the threshold: singles
    pub.config = cfg.model_copy(
        update={"outbox": cfg.outbox.model_copy(update={"inflight_max": 4})}
    )
    pub._fill_window()
    assert len(client.sent) == 4
    pub._on_publish(client, None, 1, puback(0), None)  # type: ignore[arg-type]
    pub._fill_window()
    assert len(client.sent) == 5


def test_success_puback_deletes_failure_puback_quarantines(tmp_path: Path) -> None:
    _, box, pub, client = setup(tmp_path, pending=2)
    pub._fill_window()
    (mid_a, _, _), (mid_b, topic_b, _) = client.sent
    pub._on_publish(client, None, mid_a, puback(0), None)  # type: ignore[arg-type]
    pub._on_publish(client, None, mid_b, puback(135), None)  # type: ignore[arg-type]
    assert box.backlog() == 0 and box.quarantined() == 1
    row = box.conn.execute("SELECT sensor, seq, topic, reason FROM quarantine").fetchone()
    assert row == ("s1", 0, topic_b, "135 Not authorized")
    assert pub.stats.acked_readings == 1 and pub.stats.refused_readings == 1


def test_no_matching_subscribers_is_still_a_success(tmp_path: Path) -> None:
    _, box, pub, client = setup(tmp_path, pending=1)
    pub._fill_window()
    pub._on_publish(client, None, 1, puback(16), None)  # type: ignore[arg-type]
    assert box.backlog() == 0 and box.quarantined() == 0


def test_after_a_lost_connection_everything_unacked_is_sent_again(tmp_path: Path) -> None:
    _, _box, pub, client = setup(tmp_path, pending=3)
    pub._fill_window()
    pub._on_publish(client, None, 1, puback(0), None)  # type: ignore[arg-type]
    pub._lost("test")
    fresh = FakeClient()
    pub.client = fresh  # type: ignore[assignment]
    pub.connected = True
    pub._fill_window()
    assert [msg["seq"] for _, _, msg in fresh.sent] == [0, 1]  # s1#0 and s0#1 again
    assert [msg["sensor"] for _, _, msg in fresh.sent] == ["s1", "s0"]


def test_a_missing_password_file_is_retried_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "agent.toml"
    extra = f'password_file = "{tmp_path / "missing"}"'
    path.write_text(
        agent_toml(outbox=tmp_path / "o.sqlite", port=1883, extra_broker=extra, username="st1")
    )
    text = path.read_text().replace('password = "None"\n', "")
    path.write_text(text)
    pub = Publisher(load_config(path), ManualClock(T0))
    pub._connect()
    assert pub.client is None and not pub.connected
    assert pub._attempt == 1  # scheduled a retry with backoff
    assert "cannot set up the MQTT client" in caplog.text and "missing" in caplog.text
