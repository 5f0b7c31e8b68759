"""Publishing the outbox over MQTT (paho-mqtt 2.x): QoS 1, delete only after PUBACK.

Why this shape:

- **A fresh paho client per connection, clean session.** The outbox is the
  only queue. After any disconnect every unacknowledged reading is simply
  sent again from the outbox, oldest first (at-least-once; ingest dedupes on
  (sensor, seq)). paho's own in-memory resend queue would only add a second
  copy that dies with the process anyway.
- **Single thread.** The network loop (``client.loop``), the callbacks and the
  outbox deletes all run in the publisher's thread, so the in-flight map needs
  no locks and a PUBACK is always for a message we recorded.
- **MQTT v5 reason codes.** A PUBACK with a failure reason code (e.g. 135 Not
  authorized: the ACL forbids this topic) is not a success: the readings are
  logged with the topic and the reason, moved to quarantine and counted,
  never silently deleted. (MQTT 3.1.1 brokers acknowledge denied publishes
  as success; use v5.)
- **Reconnect with exponential backoff and jitter**, so a fleet of stations
  does not hammer a broker that has just come back.
- **Resend requests** (``siltwatch/v1/{site}/{station}/cmd/resend``, QoS 1,
  read by this station only): the ingest service saw a hole in a sensor's
  sequence numbers (a broker lost what it acknowledged); the outbox makes the
  retained readings of that range pending again, they go out through the same
  path (ingest dedupes), and a status follows at once whose ``health.held``
  says what the station still has, so the service can tell a range gone for
  good from one on its way. A request is checked (site, station, a range of
  at most ``RESEND_MAX`` readings) and a bad one is logged and ignored.
- **Batches when there is a backlog**: live readings go one per message on
  their sensor's topic; from ``batch_threshold`` pending readings on they go
  as ReadingBatch messages (at most ``batch_max``), oldest first, on the topic
  of the first reading's sensor.
"""

from __future__ import annotations

import logging
import random
import ssl
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from pydantic import ValidationError

from edge.clock import Clock
from edge.config import AgentConfig
from edge.outbox import Outbox, Row
from siltwatch import backoff
from siltwatch.counters import Counters
from siltwatch.schema import (
    QualityFlag,
    Reading,
    ReadingBatch,
    ReadingItem,
    ResendRequest,
    StationHealth,
    StationStatus,
    reading_topic,
    resend_topic,
    status_topic,
)

log = logging.getLogger(__name__)

FIRMWARE = "siltwatch-edge 0.1.0"
# How long the network wait may block: short while messages are in flight (PUBACKs
# wake it anyway), longer when idle so a station on a solar battery does not poll its
# outbox ten times a second. A fresh reading waits at most IDLE_WAIT_S to go out.
BUSY_WAIT_S = 0.1
IDLE_WAIT_S = 1.0
RESEND_MAX = 100_000  # readings one resend request may ask for


class PublisherStats(Counters):
    """Counters the tests and the benchmark read (this process only)."""

    published_messages: int
    acked_readings: int
    refused_readings: int
    connects: int
    refusals: list[str]
    resend_requests: int
    resent_readings: int


class Publisher:
    """Drains the outbox to the broker; call :meth:`step` in a loop (see :meth:`run`)."""

    def __init__(
        self,
        config: AgentConfig,
        clock: Clock,
        health: Callable[[Outbox], StationHealth] | None = None,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        # built in one thread, used only by the thread that runs the publisher
        self.outbox = Outbox(
            config.outbox.path,
            config.outbox.max_readings,
            check_same_thread=False,
            retain_s=config.outbox.retention_days * 86_400,
            retain_max=config.outbox.retention_max_readings,
        )
        self.health = health
        self.rng = rng or random.Random()
        self.stats = PublisherStats()
        self.client: mqtt.Client | None = None
        self.connected = False
        self._connack: ReasonCode | None = None
        self._inflight: dict[int, tuple[list[int], str]] = {}
        self._status_mids: set[int] = set()
        self._cursor = 0
        self._attempt = 0
        self._next_attempt = 0.0
        self._next_health = 0.0
        self.status_topic = status_topic(config.site, config.station)
        self.resend_topic = resend_topic(config.site, config.station)
        if config.broker.protocol != "5":
            log.warning(
                "MQTT 3.1.1: a broker acknowledges publishes its ACL refuses as if delivered, "
                'so refused readings cannot be detected or kept; use protocol = "5"'
            )

    # -- connection ------------------------------------------------------------------

    def _payload_status(self, state: str, health: StationHealth | None) -> bytes:
        status = StationStatus(
            site=self.config.site,
            station=self.config.station,
            state="online" if state == "online" else "offline",
            time=self.clock.now() if state == "online" else None,
            firmware=FIRMWARE,
            config_version=self.config.config_version,
            health=health,
        )
        return status.model_dump_json(exclude_none=True).encode()

    def _new_client(self) -> mqtt.Client:
        b = self.config.broker
        v5 = b.protocol == "5"
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=b.client_id or f"siltwatch-edge-{self.config.site}-{self.config.station}",
            protocol=MQTTProtocolVersion.MQTTv5 if v5 else MQTTProtocolVersion.MQTTv311,
            clean_session=None if v5 else True,
        )
        client.enable_logger(logging.getLogger("edge.paho"))
        client.max_inflight_messages_set(self.config.outbox.inflight_max)
        client.max_queued_messages_set(0)
        client.connect_timeout = b.connect_timeout_s
        if b.username is not None:
            client.username_pw_set(b.username, b.resolved_password())
        if b.tls_ca is not None:
            client.tls_set(ca_certs=str(b.tls_ca), cert_reqs=ssl.CERT_REQUIRED)
            client.tls_insecure_set(b.tls_insecure)
        client.will_set(
            self.status_topic, self._payload_status("offline", None), qos=1, retain=True
        )
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_publish = self._on_publish
        client.on_message = self._on_message
        return client

    def _connect(self) -> None:
        b = self.config.broker
        self._connack = None
        props: Properties | None = None
        if b.protocol == "5":
            props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
            props.SessionExpiryInterval = 0  # the outbox is our queue, not the broker session
        try:
            # inside the try: an unreadable password file or CA is retried, not fatal
            client = self._new_client()
        except (OSError, ssl.SSLError, ValueError) as exc:
            self._schedule_retry(f"cannot set up the MQTT client: {exc}")
            return
        try:
            if b.protocol == "5":
                client.connect(b.host, b.port, b.keepalive_s, clean_start=True, properties=props)
            else:
                client.connect(b.host, b.port, b.keepalive_s)
            deadline = time.monotonic() + b.connect_timeout_s
            while self._connack is None and time.monotonic() < deadline:
                if client.loop(timeout=0.05) != MQTTErrorCode.MQTT_ERR_SUCCESS:
                    break
        except (OSError, ssl.SSLError, ValueError) as exc:
            self._schedule_retry(f"cannot connect to {b.host}:{b.port}: {exc}")
            self._drop(client)
            return
        if self._connack is None or self._connack.is_failure:
            why = "no CONNACK" if self._connack is None else f"refused: {self._connack}"
            self._schedule_retry(f"broker {b.host}:{b.port} {why}")
            self._drop(client)
            return
        self.client = client
        self.connected = True
        client.subscribe(self.resend_topic, qos=1)
        self._attempt = 0
        self._cursor = 0
        self._inflight.clear()
        self.stats.connects += 1
        log.info(
            "connected to %s:%d (MQTT %s); backlog %d",
            b.host,
            b.port,
            b.protocol,
            self.outbox.backlog(),
        )
        self._next_health = 0.0  # announce online (retained) right away

    def _drop(self, client: mqtt.Client) -> None:
        try:
            sock = client.socket()
            if sock is not None:
                sock.close()
        except OSError:
            pass

    def _schedule_retry(self, why: str) -> None:
        b = self.config.broker
        # "equal jitter": half of the capped exponential wait fixed, half random
        delay = backoff.delay(
            min(self._attempt, 30),
            b.backoff_min_s,
            b.backoff_max_s,
            jitter_fraction=0.5,
            rng=self.rng,
        )
        self._attempt += 1
        self._next_attempt = time.monotonic() + delay
        log.warning("%s; retrying in %.1f s (attempt %d)", why, delay, self._attempt)

    def _lost(self, why: str) -> None:
        if self.client is not None:
            self._drop(self.client)
        self.client = None
        self.connected = False
        unacked = sum(len(ids) for ids, _ in self._inflight.values())
        self._inflight.clear()
        self._status_mids.clear()
        self._cursor = 0
        self._schedule_retry(f"connection lost ({why}); {unacked} readings unacked, will resend")

    # -- paho callbacks (run inside client.loop, in this thread) ----------------------

    def _on_connect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: Any,
        reason_code: ReasonCode,
        properties: Properties | None,
    ) -> None:
        self._connack = reason_code

    def _on_disconnect(self, client: mqtt.Client, *_: Any) -> None:
        """paho's (client, userdata, flags, reason_code, properties): only whose link it was."""
        if client is self.client and self.connected:
            self.connected = False  # step() notices and cleans up

    def _on_publish(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reason_code: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if client is not self.client:
            return
        if mid in self._status_mids:
            self._status_mids.discard(mid)
            if reason_code.is_failure:
                log.error(
                    "broker refused the station status on %s: %s (reason code %d)",
                    self.status_topic,
                    reason_code,
                    reason_code.value,
                )
            return
        entry = self._inflight.pop(mid, None)
        if entry is None:
            return
        ids, topic = entry
        if reason_code.is_failure:
            moved = self.outbox.quarantine(
                ids, topic, f"{reason_code.value} {reason_code}", self.clock.now()
            )
            self.stats.refused_readings += moved
            self.stats.refusals.append(f"{reason_code.value} {reason_code} on {topic}")
            log.error(
                "broker REFUSED %d readings on topic %s: reason code %d (%s); quarantined "
                "in the outbox (%d quarantined in total) - check the broker ACL and credentials",
                len(ids),
                topic,
                reason_code.value,
                reason_code,
                self.outbox.quarantined(),
            )
            return
        self.stats.acked_readings += self.outbox.ack(ids)

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        """A resend request from the ingest service (the only topic we subscribe to)."""
        if client is not self.client or msg.topic != self.resend_topic:
            return
        try:
            request = ResendRequest.model_validate_json(msg.payload)
        except ValidationError as exc:
            log.error("resend request on %s is not valid, ignored: %s", msg.topic, exc)
            return
        cfg = self.config
        if (request.site, request.station) != (cfg.site, cfg.station):
            log.error(
                "resend request %s names %s/%s, not this station: ignored",
                request.request,
                request.site,
                request.station,
            )
            return
        seq_to = min(request.seq_to, request.seq_from + RESEND_MAX - 1)
        moved = self.outbox.resend(request.sensor, request.seq_from, seq_to)
        self.stats.resend_requests += 1
        self.stats.resent_readings += moved
        log.warning(
            "resend request %s: sensor %s seq %d..%d; %d readings held and queued again",
            request.request,
            request.sensor,
            request.seq_from,
            seq_to,
            moved,
        )
        self._next_health = 0.0  # say what is held right away

    # -- publishing ------------------------------------------------------------------

    def _payload(self, rows: list[Row]) -> tuple[str, bytes]:
        cfg = self.config
        cutoff = self.clock.now() - timedelta(seconds=cfg.outbox.backfill_after_s)
        items = []
        for row in rows:
            quality = [QualityFlag(q) for q in row.quality]
            when = datetime.fromisoformat(row.time)
            if when < cutoff and QualityFlag.BACKFILLED not in quality:
                quality.append(QualityFlag.BACKFILLED)
            items.append(
                ReadingItem(
                    sensor=row.sensor,
                    time=when,
                    seq=row.seq,
                    value=row.value,
                    unit=row.unit,
                    raw=row.raw,
                    quality=quality,
                )
            )
        topic = reading_topic(cfg.site, cfg.station, rows[0].sensor)
        if len(items) == 1:
            one = Reading(site=cfg.site, station=cfg.station, **items[0].model_dump())
            return topic, one.model_dump_json().encode()
        batch = ReadingBatch(site=cfg.site, station=cfg.station, readings=items)
        return topic, batch.model_dump_json().encode()

    def _fill_window(self) -> None:
        """Publish pending readings while the in-flight window has room.

        A few pending readings (live operation) go out one per message on their own
        sensor's topic; from ``batch_threshold`` pending on (a backlog after an
        outage) they go as ReadingBatch messages of up to ``batch_max``.
        """
        assert self.client is not None
        cfg = self.config.outbox
        while len(self._inflight) < cfg.inflight_max:
            rows = self.outbox.pending(self._cursor, cfg.batch_max)
            if not rows:
                return
            if len(rows) < cfg.batch_threshold:
                rows = rows[:1]
            try:
                topic, payload = self._payload(rows)
            except ValidationError:
                self._quarantine_invalid(rows)
                continue
            info = self.client.publish(topic, payload, qos=1)
            if info.rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
                self.connected = False
                return
            self._inflight[info.mid] = ([r.id for r in rows], topic)
            self._cursor = rows[-1].id
            self.stats.published_messages += 1

    def _quarantine_invalid(self, rows: list[Row]) -> None:
        """Rows the wire schema rejects (a corrupt file, a driver bug) must not block the
        queue forever: each bad row is quarantined with the validation error; the rest
        go out on the next round."""
        for row in rows:
            try:
                self._payload([row])
            except ValidationError as exc:
                topic = reading_topic(self.config.site, self.config.station, row.sensor)
                reason = f"invalid: {exc.errors()[0]['msg']}"
                self.outbox.quarantine([row.id], topic, reason, self.clock.now())
                log.error(
                    "reading %s seq %d fails the wire schema (%s): quarantined",
                    row.sensor,
                    row.seq,
                    reason,
                )

    def publish_status(self, state: str = "online") -> None:
        if self.client is None or not self.connected:
            return
        health = self.health(self.outbox) if self.health is not None else None
        info = self.client.publish(
            self.status_topic, self._payload_status(state, health), qos=1, retain=True
        )
        if info.rc == MQTTErrorCode.MQTT_ERR_SUCCESS:
            self._status_mids.add(info.mid)

    def step(self, timeout: float = 0.1) -> None:
        """One round: (re)connect when due, exchange packets, send more of the backlog.

        ``timeout`` bounds how long the network wait may block when idle: it is
        also the latency of a fresh reading (samplers do not wake us up), and
        its inverse is the idle polling rate of the outbox (cheap: one indexed
        query).
        """
        if self.client is None:
            if time.monotonic() >= self._next_attempt:
                self._connect()
            else:
                time.sleep(min(timeout, max(0.0, self._next_attempt - time.monotonic())))
            return
        rc = self.client.loop(timeout=timeout)
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS or not self.connected:
            self._lost(f"paho rc {rc}")
            return
        if time.monotonic() >= self._next_health:
            self.outbox.expire_retained(self.clock.now())
            self.publish_status("online")
            self._next_health = time.monotonic() + self.config.health.interval_s
        self._fill_window()

    def idle(self) -> bool:
        """Nothing waiting and nothing unacknowledged."""
        return not self._inflight and self.outbox.backlog() == 0

    def run(self, stop: threading.Event, drain_timeout_s: float) -> None:
        """Publish until ``stop``; then drain the backlog for up to ``drain_timeout_s``."""
        while not stop.is_set():
            self.step(BUSY_WAIT_S if self._inflight else IDLE_WAIT_S)
        deadline = time.monotonic() + drain_timeout_s
        while time.monotonic() < deadline and not (self.connected and self.idle()):
            self.step()
        self.close()

    def close(self) -> None:
        """Say offline (retained) and disconnect cleanly; no last will on a clean exit."""
        client = self.client
        if client is not None and self.connected:
            info = client.publish(
                self.status_topic, self._payload_status("offline", None), qos=1, retain=True
            )
            deadline = time.monotonic() + 2.0
            while not info.is_published() and time.monotonic() < deadline:
                if client.loop(timeout=0.05) != MQTTErrorCode.MQTT_ERR_SUCCESS:
                    break
            client.disconnect()  # sends DISCONNECT at once: the broker drops the will
        self.client = None
        self.connected = False
        backlog = self.outbox.backlog()
        if backlog:
            log.warning(
                "stopping with %d readings in the outbox; they are sent on next start", backlog
            )
        self.outbox.close()
