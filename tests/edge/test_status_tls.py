"""Station status and TLS against a real Mosquitto.

- The agent announces itself with a *retained* ``online`` status carrying
  firmware, config version and health; when it dies (SIGKILL) the broker
  publishes its last will, a retained ``offline``; a restarted agent is
  ``online`` again.
- Username/password over TLS with the broker's CA: readings arrive.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from tests.edge.helpers import (
    SITE,
    USERS,
    AgentProcess,
    Collector,
    run_agent,
    station_broker,
    station_config,
)
from tests.servers import MosquittoServer

STATUS = f"siltwatch/v1/{SITE}/st1/status"


def retained_status(server: MosquittoServer) -> dict[str, Any] | None:
    """The retained status as a fresh subscriber sees it (None if there is none)."""
    got: list[dict[str, Any]] = []
    event = threading.Event()
    client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=MQTTProtocolVersion.MQTTv5)
    client.username_pw_set("ingest", USERS["ingest"])

    def on_message(c: mqtt.Client, u: Any, msg: mqtt.MQTTMessage) -> None:
        if msg.retain:
            got.append(json.loads(msg.payload))
            event.set()

    client.on_message = on_message
    client.on_connect = lambda c, u, f, rc, p: c.subscribe(STATUS, qos=1)
    client.connect(server.host, server.port)
    client.loop_start()
    event.wait(2.0)
    client.disconnect()
    client.loop_stop()
    return got[-1] if got else None


def wait_for_state(server: MosquittoServer, state: str, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        status = retained_status(server)
        if status is not None and status["state"] == state:
            return status
        time.sleep(0.2)
    raise AssertionError(f"retained status never became {state!r}; last: {status}")


@pytest.mark.integration
def test_retained_online_status_with_health_then_last_will_offline(tmp_path: Path) -> None:
    with station_broker(tmp_path / "mosquitto", persistence=False) as server:
        config = station_config(
            tmp_path, server.port, outbox=tmp_path / "o.sqlite", sensors=1, interval_s=0.2
        )
        agent = AgentProcess(config, tmp_path / "agent.log")
        started = time.monotonic()
        agent.start()
        try:
            online = wait_for_state(server, "online")
            assert online["station"] == "st1" and online["config_version"] == "test-1"
            assert online["firmware"].startswith("siltwatch-edge")
            health = online["health"]
            assert health["clock_synced"] is True and health["dropped"] == 0
            # What the agent measured, checked against the machine: the free space of
            # the file system its outbox is on (tmp_path; other writers may move it a
            # little meanwhile), and a backlog of at most the readings it has sampled.
            free_mb = shutil.disk_usage(tmp_path).free / 1e6
            assert abs(health["disk_free_mb"] - free_mb) <= max(64.0, 0.02 * free_mb), health
            assert 0 <= health["backlog"] <= (time.monotonic() - started) / 0.2 + 1, health

            agent.kill()
            offline = wait_for_state(server, "offline")
            assert offline["station"] == "st1"

            agent.start()
            wait_for_state(server, "online")
            # a clean stop says offline itself
            assert agent.terminate(timeout=30) == 0
            wait_for_state(server, "offline")
        finally:
            agent.cleanup()


@pytest.mark.integration
def test_username_password_over_tls(tmp_path: Path) -> None:
    with station_broker(tmp_path / "mosquitto", persistence=False, tls=True) as server:
        assert server.ca_path is not None
        config = station_config(
            tmp_path,
            server.tls_port,
            outbox=tmp_path / "o.sqlite",
            sensors=2,
            interval_s=0.1,
            extra_broker=f'tls_ca = "{server.ca_path}"',
            drain_timeout_s=5,
        )
        collector = Collector(server, client_id="tls-c")
        try:
            assert collector.subscribed.wait(5)
            agent = run_agent(config, 1.5)
            time.sleep(0.3)
            got = collector.counts()
        finally:
            collector.close()
        assert agent.publisher.stats.connects >= 1
        assert agent.publisher.stats.acked_readings > 0
        assert {sensor for sensor, _ in got} == {"s0", "s1"}
