"""Harness for live-service tests: a real ``siltwatch serve`` process and a real publisher.

Faults are made the way they happen: the service is killed with SIGKILL (no
chance to flush anything), the broker is stopped and started, the service is
asked to stop with SIGTERM. The publisher is an MQTT v5 client that records
which readings the broker acknowledged (PUBACK with a success code): those,
and only those, are what the service promised to keep.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.reasoncodes import ReasonCode

from analytics.events import SensorReading
from analytics.timeutil import iso
from siltwatch.config import SiteConfig
from siltwatch.schema import reading_topic
from tests.conftest import BrokerInfo, require_server
from tests.servers import MosquittoServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# The production settings that matter for loss (deploy/mosquitto/mosquitto.conf): the
# default queue cap of 1000 messages per client silently drops a lagging session's data.
BROKER_CONFIG = ("max_queued_messages 0", "max_inflight_messages 0")
# Connections and subscriptions, not every message (``log_type all`` logs each one twice).
QUIET_LOG = ("error", "warning", "notice", "information", "subscribe")


@dataclass(frozen=True)
class Outgoing:
    """One message to publish and the (sensor, time) keys of the readings it carries."""

    topic: str
    payload: bytes
    keys: tuple[tuple[str, int], ...]


def reading_messages(site: SiteConfig, readings: Iterable[SensorReading]) -> list[Outgoing]:
    """One wire message per reading, in the order given, with a per-sensor seq."""
    station_of = site.station_of()
    sensors = site.sensors()
    seq: dict[str, int] = {}
    out = []
    for r in readings:
        station = station_of[r.sensor]
        n = seq.get(r.sensor, 0)
        seq[r.sensor] = n + 1
        payload = {
            "type": "reading",
            "site": site.site.id,
            "station": station,
            "sensor": r.sensor,
            "time": iso(r.t),
            "seq": n,
            "value": r.value,
            "unit": sensors[r.sensor].unit,
        }
        out.append(
            Outgoing(
                reading_topic(site.site.id, station, r.sensor),
                json.dumps(payload).encode(),
                ((r.sensor, r.t),),
            )
        )
    return out


def batch_messages(
    site: SiteConfig, readings: Iterable[SensorReading], size: int
) -> dict[str, list[Outgoing]]:
    """Per station, its readings (in the order given) as batches of ``size``: an outbox flush."""
    station_of = site.station_of()
    sensors = site.sensors()
    by_station: dict[str, list[SensorReading]] = {}
    for r in readings:
        by_station.setdefault(station_of[r.sensor], []).append(r)
    seq: dict[str, int] = {}
    out: dict[str, list[Outgoing]] = {}
    for station, rs in by_station.items():
        for i in range(0, len(rs), size):
            part = rs[i : i + size]
            items = []
            for r in part:
                n = seq.get(r.sensor, 0)
                seq[r.sensor] = n + 1
                items.append(
                    {
                        "sensor": r.sensor,
                        "time": iso(r.t),
                        "seq": n,
                        "value": r.value,
                        "unit": sensors[r.sensor].unit,
                    }
                )
            payload = {"type": "batch", "site": site.site.id, "station": station, "readings": items}
            out.setdefault(station, []).append(
                Outgoing(
                    reading_topic(site.site.id, station, part[0].sensor),
                    json.dumps(payload).encode(),
                    tuple((r.sensor, r.t) for r in part),
                )
            )
    return out


def alert_key(a: dict[str, Any]) -> tuple[Any, ...]:
    """What must be the same in an alert (as JSON) however its readings arrived."""
    return (
        a["id"], a["kind"], a["subject"], a["severity"], a["opened_at"], a["resolved_at"],
        tuple((e["at"], e["severity"]) for e in a["escalations"]),
    )  # fmt: skip


def duty_key(d: dict[str, Any]) -> tuple[Any, ...]:
    """What must be the same in a duty (as JSON) however its readings arrived."""
    return (d["id"], d["kind"], d["reason"], d["subject"], d["created_at"], d["due_at"],
            d["completed_at"])  # fmt: skip


# A service account and a station account that may write anywhere under siltwatch/.
SERVICE_USERS = {"ingest": "ingest-pw", "station": "station-pw"}
SERVICE_ACL = """
user ingest
topic readwrite siltwatch/#

user station
topic write siltwatch/#
"""


def loopback_broker(
    prefix: str,
    *,
    users: dict[str, str] = SERVICE_USERS,
    acl: str = SERVICE_ACL,
    tls: bool = False,
    log_types: tuple[str, ...] = QUIET_LOG,
) -> Iterator[MosquittoServer]:
    """A fresh Mosquitto for one test, with production queue settings (a fixture body).

    Under /tmp directly (not tmp_path) so Mosquitto can drop to its own user;
    fresh per test so no lease, session or retained message leaks between tests.
    """
    require_server("mosquitto", MosquittoServer.available())
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        with MosquittoServer(
            workdir, users=users, acl=acl, tls=tls, extra_config=BROKER_CONFIG, log_types=log_types
        ) as server:
            yield server
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def password_file(work: Path, password: str) -> Path:
    """``work/pw`` holding ``password``: what ``--password-file`` reads."""
    secret = work / "pw"
    secret.write_text(password, encoding="utf-8")
    return secret


def lake_george_args(broker: MosquittoServer, work: Path, db: str, *extra: str) -> list[str]:
    """``serve``'s arguments for the Lake George example on a test broker (one started with
    SERVICE_USERS) as ``ingest``: its password file and alert log in ``work``, then ``extra``."""
    secret = work / "ingest.pw"
    secret.write_text(SERVICE_USERS["ingest"], encoding="utf-8")
    return [
        "--site", str(EXAMPLES / "lake-george-site.toml"),
        "--broker", f"mqtt://{broker.host}:{broker.port}",
        "--username", "ingest", "--password-file", str(secret),
        "--db", db, "--alert-log", str(work / "alerts.jsonl"),
        *extra,
    ]  # fmt: skip


def serve_lake_george(
    broker: BrokerInfo, work: Path, db: Path, client_id: str, *extra: str
) -> subprocess.Popen[str]:
    """``siltwatch serve`` of the Lake George example on the session broker as ``ingest``,
    its own ``client_id`` (the shared broker keeps other tests' sessions' queues), its
    output on ``stdout``; stop it with :func:`interrupt`."""
    secret = password_file(work, broker.users["ingest"])
    return subprocess.Popen(
        [
            sys.executable, "-m", "app.cli", "serve",
            "--site", str(EXAMPLES / "lake-george-site.toml"),
            "--broker", f"mqtt://{broker.host}:{broker.port}",
            "--username", "ingest", "--password-file", str(secret),
            "--db", str(db),
            "--alert-log", str(work / "alerts.jsonl"),
            "--client-id", client_id,
            "--tick-s", "0.2",
            *extra,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def run_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``siltwatch ARGS…`` to its end, its output captured (a one-shot command)."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def siltwatch_child(*args: str) -> subprocess.Popen[str]:
    """``siltwatch ARGS…`` as a long-running child in a session of its own (a signal to
    the test does not reach it), stdout and stderr as one text stream, no stdin."""
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def interrupt(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C (SIGINT), as an operator stops it; the rest of its output."""
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=20)
    return rest


@contextmanager
def admin_client(broker: BrokerInfo, client_id: str) -> Iterator[mqtt.Client]:
    """An MQTT client logged in as ``admin`` on the session broker, its network loop
    running; stopped and disconnected on exit."""
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id)
    pub.username_pw_set("admin", broker.users["admin"])
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    try:
        yield pub
    finally:
        pub.loop_stop()
        pub.disconnect()


class ServeProcess:
    """``siltwatch serve`` as a child process; its output is collected in the background."""

    def __init__(self, args: Sequence[str], log_path: Path) -> None:
        self.args = list(args)
        self.log_path = log_path
        self.proc: subprocess.Popen[str] | None = None
        self._lines: list[list[str]] = []  # one list of output lines per start
        self._reader: threading.Thread | None = None
        self._ready = threading.Event()

    def start(self, wait_s: float = 60.0) -> None:
        self._ready.clear()
        self.proc = siltwatch_child("serve", *self.args)
        lines: list[str] = []
        self._lines.append(lines)
        proc = self.proc

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if "siltwatch serving site" in line:
                    self._ready.set()
            self._ready.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not self._ready.wait(wait_s) or proc.poll() is not None:
            raise AssertionError(f"serve did not start:\n{''.join(lines)}")

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        if self._reader is not None:
            self._reader.join(timeout=10)

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM and the exit code (a container's stop)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout)
        if self._reader is not None:
            self._reader.join(timeout=10)
        return code

    def stop_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    @property
    def outputs(self) -> list[str]:
        """Each start's output so far."""
        return ["".join(lines) for lines in self._lines]

    @property
    def output(self) -> str:
        return "\n".join(self.outputs)


@dataclass
class PublishLog:
    acked: set[tuple[str, int]] = field(default_factory=set)
    refused: int = 0
    published: int = 0


class Publisher:
    """A station-side MQTT v5 client that publishes at a steady rate and records PUBACKs."""

    def __init__(self, host: str, port: int, username: str, password: str, client_id: str) -> None:
        self.log = PublishLog()
        self._pending: dict[int, tuple[tuple[str, int], ...]] = {}
        self._early: dict[int, ReasonCode] = {}
        self._lock = threading.Lock()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=client_id, protocol=MQTTProtocolVersion.MQTTv5
        )
        self.client.username_pw_set(username, password)
        self.client.max_queued_messages_set(0)
        self.client.max_inflight_messages_set(100)
        self.client.reconnect_delay_set(1, 2)
        self.client.on_publish = self._on_publish
        self.client.connect(host, port)
        self.client.loop_start()

    def _on_publish(
        self, client: mqtt.Client, userdata: object, mid: int, rc: ReasonCode, props: object
    ) -> None:
        # paho may call this (holding its own locks) before publish() returned the mid:
        # never take our lock around client.publish, and remember early answers.
        with self._lock:
            if mid in self._pending:
                self._settle(self._pending.pop(mid), rc)
            else:
                self._early[mid] = rc

    def _settle(self, keys: tuple[tuple[str, int], ...], rc: ReasonCode) -> None:
        if rc.is_failure:
            self.log.refused += 1
        else:
            self.log.acked.update(keys)

    MAX_OUTSTANDING = 5_000

    def publish(self, message: Outgoing) -> None:
        """Publish with QoS 1; waits while too many are unacknowledged.

        paho numbers messages 1-65535 and keys its queue by that number: with
        more than 65,535 queued at once, new ones overwrite old ones unseen.
        """
        while len(self._pending) >= self.MAX_OUTSTANDING:
            time.sleep(0.002)
        info = self.client.publish(message.topic, message.payload, qos=1)
        with self._lock:
            self.log.published += 1
            early = self._early.pop(info.mid, None)
            if early is not None:
                self._settle(message.keys, early)
            else:
                self._pending[info.mid] = message.keys

    def publish_all(self, messages: Sequence[Outgoing], per_second: float) -> None:
        """Publish at ``per_second`` (in 10 ms slices), whatever the broker is doing."""
        start = time.monotonic()
        for i, message in enumerate(messages):
            due = start + i / per_second
            delay = due - time.monotonic()
            if delay > 0.01:
                time.sleep(delay)
            self.publish(message)

    def wait_acked(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if not self._pending:
                    return True
            time.sleep(0.1)
        return False

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
