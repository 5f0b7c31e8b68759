"""Shared helpers for the edge tests: agent configs as TOML, an MQTT v5 subscriber, and
for the tests against a real Mosquitto: the station's broker, its config, the agent run in
a thread or as a process we can SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edge.agent import Agent
from edge.config import load_config
from siltwatch.schema import Reading, ReadingBatch
from tests.conftest import require_server
from tests.servers import MosquittoServer

REPO = Path(__file__).resolve().parents[2]
SITE = "site1"
# Station st1 may publish only its own topics; the ingest account reads every site's.
ACL = """
user st1
topic write siltwatch/v1/site1/st1/#

user ingest
topic read siltwatch/v1/#
"""
USERS = {"st1": "st1-secret", "ingest": "ingest-secret"}
READINGS = f"siltwatch/v1/{SITE}/st1/+/reading"


def agent_toml(
    *,
    outbox: Path,
    port: int,
    station: str = "st1",
    username: str | None = None,
    password: str | None = None,
    sensors: int = 4,
    interval_s: float = 0.05,
    extra_broker: str = "",
    drain_timeout_s: float = 20.0,
    max_readings: int = 1_000_000,
) -> str:
    """An agent config with ``sensors`` simulated storm sensors at ``interval_s``."""
    creds = ""
    if username is not None:
        creds = f'username = "{username}"\npassword = "{password}"\n'
    text = f"""
site = "{SITE}"
station = "{station}"
config_version = "test-1"
drain_timeout_s = {drain_timeout_s}

[broker]
host = "127.0.0.1"
port = {port}
{creds}backoff_min_s = 0.1
backoff_max_s = 1.0
connect_timeout_s = 3.0
{extra_broker}

[outbox]
path = "{outbox}"
max_readings = {max_readings}
batch_max = 200

[health]
interval_s = 1.0
clock_check = "year"
"""
    for i in range(sensors):
        text += f"""
[[sensors]]
id = "s{i}"
unit = "NTU"
interval_s = {interval_s}
[sensors.driver]
kind = "simulated"
quantity = "turbidity_ntu"
noise = 1.0
seed = {i}
"""
    return text


class Collector:
    """A persistent-session MQTT v5 subscriber, logged in as the ingest account, that
    records every (sensor, seq) it gets on ``topic``.

    ``clean_start=False`` with a session expiry: while the broker restarts or the
    subscriber is briefly away, QoS 1 messages wait in its session.
    """

    def __init__(
        self, server: MosquittoServer, topic: str = READINGS, client_id: str = "collector"
    ) -> None:
        self.topic = topic
        self.lock = threading.Lock()
        self.raw: list[tuple[str, int]] = []
        self.contents: dict[tuple[str, int], set[tuple[str, float]]] = {}
        self.messages = 0
        self.statuses: list[dict[str, Any]] = []
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=client_id, protocol=MQTTProtocolVersion.MQTTv5
        )
        self.client.username_pw_set("ingest", USERS["ingest"])
        self.client.reconnect_delay_set(1, 2)
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.subscribed = threading.Event()
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = 3600
        self.client.connect(
            server.host, server.port, keepalive=10, clean_start=False, properties=props
        )
        self.client.loop_start()

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, rc: Any, props: Any
    ) -> None:
        client.subscribe(self.topic, qos=1)
        self.subscribed.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        data = json.loads(msg.payload)
        with self.lock:
            self.messages += 1
            if data.get("type") == "status":
                self.statuses.append(data)
                return
            if data["type"] == "batch":
                readings = ReadingBatch.model_validate(data).expand()
            else:
                readings = [Reading.model_validate(data)]
            for r in readings:
                self.raw.append((r.sensor, r.seq))
                self.contents.setdefault((r.sensor, r.seq), set()).add(
                    (r.time.isoformat(), r.value)
                )

    def counts(self) -> Counter[tuple[str, int]]:
        with self.lock:
            return Counter(self.raw)

    def conflicting(self) -> list[tuple[str, int]]:
        """(sensor, seq) keys seen with different time or value: a reused sequence number."""
        with self.lock:
            return [key for key, seen in self.contents.items() if len(seen) > 1]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def need_mosquitto() -> None:
    """Skip without mosquitto, but fail under CI=true (the shared conftest rule)."""
    require_server("mosquitto", MosquittoServer.available())


@contextmanager
def station_broker(
    workdir: Path, *, persistence: bool, tls: bool = False
) -> Iterator[MosquittoServer]:
    """A Mosquitto with :data:`USERS` and :data:`ACL` (skips without mosquitto), stopped
    on exit."""
    need_mosquitto()
    with MosquittoServer(workdir, users=USERS, acl=ACL, persistence=persistence, tls=tls) as server:
        yield server


def station_config(folder: Path, port: int, **options: Any) -> Path:
    """``folder/agent.toml``: :func:`agent_toml` logged in as st1 (its own credentials),
    outbox ``folder/outbox.sqlite`` unless ``options`` say otherwise."""
    options.setdefault("outbox", folder / "outbox.sqlite")
    config = folder / "agent.toml"
    config.write_text(agent_toml(port=port, username="st1", password=USERS["st1"], **options))
    return config


def run_agent(config_path: Path, seconds: float) -> Agent:
    """Run the agent in a thread for ``seconds``, then stop it; it must have ended."""
    agent = Agent(load_config(config_path))
    thread = threading.Thread(target=agent.run, name="agent")
    thread.start()
    try:
        time.sleep(seconds)
    finally:
        agent.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()
    return agent


class AgentProcess:
    """``python -m edge --config FILE`` as a child process we can SIGKILL."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config = config
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "edge", "--config", str(self.config)],
                cwd=REPO,
                stdout=out,
                stderr=out,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
        self.starts += 1

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def terminate(self, timeout: float) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
