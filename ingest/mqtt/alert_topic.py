"""Every alert change on MQTT, for the consumers siltwatch does not know.

A town's own system, Node-RED or Home Assistant subscribe to
``siltwatch/v1/{site}/alerts/#`` (docs/wire-format.md) instead of polling the
console. Each episode has its own topic, ``siltwatch/v1/{site}/alerts/{alert id}``,
so that retained messages do not overwrite each other: while the episode is
open its topic retains the episode as it stands (``alert`` payload, QoS 1), so
a consumer that connects later sees exactly the open alerts. When it ends, the
final state (``resolved_at`` set) is published once, not retained, and then the
retained message is cleared (an empty retained payload, MQTT's way to delete
it): the topic tree never fills with history, which stays in the store and the
exports. A consumer ignores empty payloads.

The store is the truth: on (re)connect :meth:`AlertTopic.sync` publishes every
open episode again (retained, idempotent for a consumer: same id, same body),
so a broker that lost its retained messages, or a crash between a store commit
and a publish, heals at the next start. Withdrawn episodes end like any other.

Publishing never blocks the service: paho queues the message (QoS 1, the
ingest's persistent session) and the engine goes on; an error is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from analytics.events import AlertEvent, EngineEvent
from siltwatch.schema import Alert, AlertMessage, alert_episode_topic

log = logging.getLogger(__name__)

# (topic, payload, retain) -> anything; paho's ``client.publish`` with qos=1 in the wiring.
Publish = Callable[[str, bytes, bool], object]


class ClientPublisher:
    """:data:`Publish` on the service's own MQTT client (QoS 1; paho queues it, never
    blocks), once that client exists: the services are built before the ingest connects.
    Until ``client`` is set nothing is sent (:meth:`AlertTopic.sync` catches up)."""

    def __init__(self) -> None:
        self.client: Any = None  # paho.mqtt.client.Client, set after the connect

    def __call__(self, topic: str, payload: bytes, retain: bool) -> object:
        if self.client is None:
            return None
        return self.client.publish(topic, payload, qos=1, retain=retain)


def alert_payload(site_id: str, alert: Alert) -> bytes:
    """The ``alert`` message of docs/wire-format.md for one episode as it stands."""
    message = AlertMessage.model_validate({**alert.model_dump(mode="json"), "site": site_id})
    return message.model_dump_json().encode()


class AlertTopic:
    """An event handler (beside the dispatcher) that mirrors alert episodes to MQTT.

    ``publish`` may be set after construction (the MQTT client exists only once
    the service is built); until then changes are skipped and :meth:`sync`
    publishes the open episodes when it is called.
    """

    def __init__(self, site_id: str, publish: Publish | None = None) -> None:
        self.site_id = site_id
        self.publish = publish
        self.published = 0

    def handle(self, events: Iterable[EngineEvent]) -> None:
        for event in events:
            if isinstance(event, AlertEvent):
                self.changed(event.alert)

    def changed(self, alert: Alert) -> None:
        """Retain an open episode; send an ended one once and clear its retained message."""
        if alert.resolved_at is None:
            self._send(alert_episode_topic(self.site_id, alert.id), alert, retain=True)
            return
        topic = alert_episode_topic(self.site_id, alert.id)
        self._send(topic, alert, retain=False)
        self._raw(topic, b"", retain=True)

    def sync(self, open_alerts: Iterable[Alert]) -> int:
        """Publish every open episode again (retained); how many."""
        n = 0
        for alert in open_alerts:
            if alert.resolved_at is None:
                self.changed(alert)
                n += 1
        return n

    def _send(self, topic: str, alert: Alert, *, retain: bool) -> None:
        self._raw(topic, alert_payload(self.site_id, alert), retain=retain)

    def _raw(self, topic: str, payload: bytes, *, retain: bool) -> None:
        if self.publish is None:
            return
        try:
            self.publish(topic, payload, retain)
            self.published += 1
        except Exception:  # the alerts topic is a courtesy; it must not stop the service
            log.exception("could not publish on %s", topic)
