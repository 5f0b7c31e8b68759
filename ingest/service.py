"""The live ingest service: MQTT in, validated and deduplicated readings stored,
the engine fed, alerts dispatched.

A bad payload is a logged, counted and stored rejection with the reason — it
never stops the pipeline. Duplicates (QoS 1 redelivery, an outbox resend) are
dropped by the store before the engine sees them. The engine's state is
snapshotted to the store so a restart continues where it stopped.

``handle_message`` is the whole pipeline for one message and needs no broker,
so tests drive it directly; ``MqttIngest`` connects it to a real broker.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from pydantic import ValidationError

from analytics.engine import DEFAULT_ALLOWED_LATENESS_S, Engine
from analytics.events import AlertEvent, DutyEvent, EngineEvent, SensorReading
from ingest.recording import parse_payload
from ingest.store import SqliteStore
from siltwatch.config import SiteConfig
from siltwatch.schema import parse_topic, readings_subscription

log = logging.getLogger(__name__)


class EventHandler(Protocol):
    """Where engine events go next (alerts.dispatch.Dispatcher in the wired system).

    ingest does not import alerts (shared/design.md): the CLI hands the
    dispatcher in.
    """

    def handle(self, events: Iterable[EngineEvent]) -> None: ...


ReadingMirror = Callable[[str, list[tuple[str, SensorReading]]], None]
"""Gets (site, [(station, reading), ...]) for every newly stored reading (ingest/influx.py)."""


@dataclass
class IngestStats:
    messages: int = 0
    readings_stored: int = 0
    duplicates: int = 0
    rejected: int = 0
    inspections: int = 0
    rejected_by_reason: dict[str, int] = field(default_factory=dict)


class IngestService:
    """Validate → store → engine → dispatch, for one site."""

    SNAPSHOT_EVERY = 5_000  # readings between engine snapshots

    def __init__(
        self,
        site: SiteConfig,
        store: SqliteStore,
        dispatcher: EventHandler | None = None,
        *,
        allowed_lateness_s: float = DEFAULT_ALLOWED_LATENESS_S,
        mirror: ReadingMirror | None = None,
    ) -> None:
        """``allowed_lateness_s``: how late a reading may arrive and still be judged in order.

        Set it to at least the stations' publishing period (a station that sends
        hourly batches needs more than an hour); alerts wait that long.
        ``mirror`` also gets each message's new readings once they are stored and
        judged (the InfluxDB mirror for Grafana); alerts and duties reach such a
        mirror through ``dispatcher``.
        """
        self.site = site
        self.store = store
        self.dispatcher = dispatcher
        self.mirror = mirror
        self.stats = IngestStats()
        blob = store.load_snapshot(site.site.id)
        self.engine = (
            Engine.restore(site, blob)
            if blob is not None
            else Engine(site, allowed_lateness_s=allowed_lateness_s)
        )
        self._since_snapshot = 0
        self._station_of = site.station_of()
        self.lock = threading.Lock()

    def _reject(self, topic: str, payload: bytes, reason: str, received_at: int) -> None:
        self.stats.rejected += 1
        key = reason.split(":", 1)[0]
        self.stats.rejected_by_reason[key] = self.stats.rejected_by_reason.get(key, 0) + 1
        log.warning("rejected message on %s: %s", topic, reason)
        self.store.add_rejection(topic, reason, payload, received_at)

    def handle_message(self, topic: str, payload: bytes, received_at: int) -> list[EngineEvent]:
        """The pipeline for one MQTT message; never raises for bad input."""
        with self.lock:
            self.stats.messages += 1
            site_id = self.site.site.id
            try:
                parts = parse_topic(topic)
                if parts.site != site_id:
                    raise ValueError(
                        f"topic is for site {parts.site!r}, this service ingests {site_id!r}"
                    )
                data = json.loads(payload)
                readings, inspections = parse_payload(topic, data)
            except json.JSONDecodeError as exc:
                self._reject(
                    topic, payload, f"not JSON: {exc.msg} at position {exc.pos}", received_at
                )
                return []
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "(payload)"
                self._reject(
                    topic, payload, f"invalid payload: field {where!r}: {first['msg']}", received_at
                )
                return []
            except ValueError as exc:
                self._reject(topic, payload, f"refused: {exc}", received_at)
                return []
            rows = []
            for r in readings:
                station = self._station_of.get(r.sensor)
                if station is None or station != parts.station:
                    self._reject(
                        topic,
                        payload,
                        f"unknown sensor: {r.sensor!r} is not a sensor of station {parts.station!r} in the site config",
                        received_at,
                    )
                    return []
                rows.append((station, r))
            new = self.store.add_readings(site_id, rows, received_at)
            self.stats.readings_stored += len(new)
            self.stats.duplicates += len(rows) - len(new)
            events: list[EngineEvent] = []
            for ins in inspections:
                if self.store.add_inspection(site_id, ins):
                    self.stats.inspections += 1
                    events += self.engine.feed_inspection(ins)
            if new:
                events += self.engine.feed(new)
            self._since_snapshot += len(new)
            if self._since_snapshot >= self.SNAPSHOT_EVERY:
                self.snapshot(received_at)
            self._publish(events)
            if new and self.mirror is not None:
                self.mirror(site_id, [(self._station_of[r.sensor], r) for r in new])
            return events

    def _publish(self, events: list[EngineEvent]) -> None:
        site_id = self.site.site.id
        for event in events:
            if isinstance(event, AlertEvent):
                self.store.save_alert(site_id, event.alert)
            elif isinstance(event, DutyEvent):
                self.store.save_duty(site_id, event.duty)
        if self.dispatcher is not None and events:
            self.dispatcher.handle(events)

    def tick(self, now_ms: int) -> list[EngineEvent]:
        """Advance event time from the service's clock, so silence is noticed too."""
        with self.lock:
            events = self.engine.advance_to(now_ms)
            self._publish(events)
            return events

    def finish(self, end_ms: int | None = None) -> list[EngineEvent]:
        with self.lock:
            events = self.engine.finish(end_ms)
            self._publish(events)
            return events

    def snapshot(self, taken_at: int) -> None:
        self.store.save_snapshot(self.site.site.id, self.engine.snapshot(), taken_at)
        self._since_snapshot = 0


class MqttIngest:
    """Subscribes to one site's readings and inspections and feeds the service."""

    def __init__(
        self,
        service: IngestService,
        host: str,
        port: int,
        *,
        username: str | None = None,
        password: str | None = None,
        protocol: MQTTProtocolVersion = MQTTProtocolVersion.MQTTv311,
        clock_ms: Callable[[], int],
    ) -> None:
        self.service = service
        self.clock_ms = clock_ms
        site = service.site.site.id
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=f"siltwatch-ingest-{site}", protocol=protocol
        )
        if username is not None:
            self.client.username_pw_set(username, password)
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.host, self.port = host, port
        self.subscribed = threading.Event()
        self.client.on_subscribe = lambda *args: self.subscribed.set()

    def _on_connect(
        self, client: mqtt.Client, userdata: object, flags: object, reason: object, props: object
    ) -> None:
        site = self.service.site.site.id
        client.subscribe(
            [(readings_subscription(site), 1), (f"siltwatch/v1/{site}/inspections", 1)]
        )

    def _on_message(self, client: mqtt.Client, userdata: object, msg: mqtt.MQTTMessage) -> None:
        try:
            self.service.handle_message(msg.topic, bytes(msg.payload), self.clock_ms())
        except Exception:  # a bug must be loud, but must not kill the network loop
            log.exception("ingest failed on a message from %s", msg.topic)

    def start(self) -> None:
        self.client.connect(self.host, self.port, keepalive=30)
        self.client.loop_start()

    def stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
