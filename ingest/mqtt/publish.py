"""Publish one message with QoS 1 and wait for the broker's PUBACK: for people's entries.

``siltwatch log`` (app/cli.py) and the console of a fleet
(console/mqtt_desk.py) send what a person typed to the site's topic, and must
tell that person whether the broker took it. Each call opens its own short
clean-start connection: an entry the person was told failed is never left
queued in a long-lived client to be delivered behind their back.

Why not ``paho.mqtt.publish.single``: it neither reports a v5 refusal (PUBACK
reason code 135 "Not authorized", which a wrong ACL gives) nor bounds the wait
for an answer; a person at a form or a terminal needs both.
"""

from __future__ import annotations

import ssl
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.reasoncodes import ReasonCode

from ingest.mqtt.session import BrokerSettings


class NotAcknowledged(ConnectionError):
    """Why the broker did not take the message, for a person. ``published``: the message
    went out (and was refused, or is unanswered); ``maybe_sent``: it went out and no
    answer came in time, so it may still arrive."""

    def __init__(self, message: str, *, published: bool = False, maybe_sent: bool = False):
        super().__init__(message)
        self.published = published or maybe_sent
        self.maybe_sent = maybe_sent


class _Answers:
    """What the broker said, filled in by paho's network thread."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.connect: ReasonCode | None = None
        self.puback: ReasonCode | None = None
        self.gone: ReasonCode | None = None

    def wait(self, until: float) -> bool:
        """Wait for the next answer until the monotonic deadline ``until``."""
        got = self.event.wait(max(0.0, until - time.monotonic()))
        self.event.clear()
        return got


def publish_acknowledged(
    broker: BrokerSettings,
    topic: str,
    payload: bytes,
    *,
    client_id: str,
    timeout_s: float,
    refused_hint: str,
) -> None:
    """Publish once with QoS 1; return when the broker acknowledged it (PUBACK).

    :class:`NotAcknowledged` says why not: the broker unreachable, the login
    refused or unanswered, the publish refused (an MQTT v5 reason code; the
    message ends with ``refused_hint``, e.g. which permission to check), or no
    PUBACK within ``timeout_s`` (``maybe_sent``).
    """
    deadline = time.monotonic() + timeout_s
    answers = _Answers()
    client = broker.client(client_id)
    client.connect_timeout = timeout_s

    def on_connect(c: mqtt.Client, u: object, f: object, rc: ReasonCode, p: object) -> None:
        answers.connect = rc
        answers.event.set()

    def on_publish(c: mqtt.Client, u: object, mid: int, rc: ReasonCode, p: object) -> None:
        answers.puback = rc
        answers.event.set()

    def on_disconnect(c: mqtt.Client, u: object, f: object, rc: ReasonCode, p: object) -> None:
        answers.gone = rc
        answers.event.set()

    client.on_connect, client.on_publish = on_connect, on_publish
    client.on_disconnect = on_disconnect
    url = broker.url
    try:
        client.connect(broker.host, broker.port, keepalive=30)
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise NotAcknowledged(f"cannot reach the MQTT broker at {url}: {reason}") from None
    client.loop_start()
    try:
        while answers.connect is None:
            if answers.gone is not None or not answers.wait(deadline):
                raise NotAcknowledged(
                    f"the MQTT broker at {url} did not answer the login within {timeout_s:.0f} s"
                )
        if answers.connect.is_failure:
            raise NotAcknowledged(f"the MQTT broker at {url} refused the login: {answers.connect}")
        sent = client.publish(topic, payload, qos=1)
        if sent.rc != mqtt.MQTT_ERR_SUCCESS:
            raise NotAcknowledged(f"{mqtt.error_string(sent.rc)} (MQTT broker at {url})")
        while answers.puback is None:
            if answers.gone is not None or not answers.wait(deadline):
                raise NotAcknowledged(
                    f"the MQTT broker at {url} did not acknowledge it within {timeout_s:.0f} s",
                    maybe_sent=True,
                )
        if answers.puback.is_failure:
            raise NotAcknowledged(
                f"the MQTT broker at {url} refused it on {topic}: {answers.puback} ({refused_hint})",
                published=True,
            )
    finally:
        client.disconnect()
        client.loop_stop()
