"""The field desk of a console that runs apart from the workers: it publishes over MQTT.

``siltwatch console`` (siltwatch/console_cmd.py) serves one web console over every
site of a fleet, but it owns no site: each site is judged by the worker whose
partition holds it, and that worker alone writes the site's store rows. So what
a person records in the console takes the road a field tablet's record takes:
published with QoS 1 on the site's topic (``siltwatch/v1/{site}/inspections``,
``siltwatch/v1/{site}/log``), stored and judged by the owning worker when its
session receives it. If that worker is down, the broker keeps the message in
the worker's persistent session until it is back.

Before anything is sent, the message is decoded as the worker will decode it
(``ingest.decode.decode_message``) and its time is checked against the worker's
clock-skew bound, so an entry the worker would refuse is refused at the form
with the worker's reason instead of vanishing into a rejection row.

Each :meth:`MqttDesk.submit` opens its own short connection (clean start, a
client id of its own) and waits for the PUBACK: a form is submitted rarely, a
per-request client needs no locking between concurrent requests, and an entry
the broker did not take is never left queued in a long-lived client to be
delivered behind the person's back after they were told it failed.
"""

from __future__ import annotations

import ssl
import threading
import time
import uuid
from collections.abc import Callable, Mapping

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.reasoncodes import ReasonCode

from console.desk import DeskError
from ingest.decode import DEFAULT_MAX_CLOCK_SKEW_S, Decoded, Rejected, decode_message
from ingest.mqtt_ingest import BrokerSettings
from ingest.sites import site_of_topic
from siltwatch.config import SiteConfig
from siltwatch.timefmt import utc_iso

PUBACK_TIMEOUT_S = 10.0
NOT_TAKEN = "the broker did not take it"


class MqttDesk:
    """Publish what people record to the site's topic; return once the broker has it.

    ``sites`` are the sites this console shows (keyed by id); ``clock_ms`` the
    wall clock in epoch ms (the skew check); ``timeout_s`` bounds the whole
    submit (connect, login, PUBACK).
    """

    def __init__(
        self,
        sites: Mapping[str, SiteConfig],
        broker: BrokerSettings,
        clock_ms: Callable[[], int],
        *,
        timeout_s: float = PUBACK_TIMEOUT_S,
        max_clock_skew_s: float = DEFAULT_MAX_CLOCK_SKEW_S,
        client_prefix: str = "siltwatch-console",
    ) -> None:
        self.sites = dict(sites)
        self.broker = broker
        self.clock_ms = clock_ms
        self.timeout_s = timeout_s
        self.max_skew_ms = int(max_clock_skew_s * 1000)
        self.client_prefix = client_prefix

    def submit(self, topic: str, payload: bytes) -> None:
        """Check the message as the worker will, then publish it (DeskError says why not)."""
        sid = site_of_topic(topic)
        site = None if sid is None else self.sites.get(sid)
        if site is None:
            raise DeskError(f"no site of this console takes {topic}")
        decoded = decode_message(topic, payload, site)
        if isinstance(decoded, Rejected):
            raise DeskError(decoded.reason)
        self._check_clock(decoded)
        client_id = f"{self.client_prefix}-{uuid.uuid4().hex[:12]}"
        publish_acknowledged(self.broker, topic, payload, client_id, self.timeout_s)

    def _check_clock(self, decoded: Decoded) -> None:
        """Refuse an entry dated further ahead than the worker accepts (ingest/service.py
        refuses it there: stored as a rejection, it would complete no duty)."""
        now = self.clock_ms()
        dated = [("inspection", i.t) for i in decoded.inspections]
        dated += [("site-log", e.t) for e in decoded.site_log]
        for what, t in dated:
            if t > now + self.max_skew_ms:
                raise DeskError(
                    f"clock ahead: {what} time {utc_iso(t)} is {(t - now) / 1000:,.0f} s ahead "
                    f"of now (the site's worker accepts at most {self.max_skew_ms / 1000:,.0f} s)"
                )


def _client(broker: BrokerSettings, client_id: str, timeout_s: float) -> mqtt.Client:
    """A clean-start client for one publish, logged in and over TLS as ``broker`` says."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=broker.protocol)
    client.connect_timeout = timeout_s
    if broker.username is not None:
        client.username_pw_set(broker.username, broker.password)
    if broker.tls:
        client.tls_set(
            ca_certs=broker.ca_file,
            certfile=broker.cert_file,
            keyfile=broker.key_file,
            cert_reqs=ssl.CERT_REQUIRED,
            tls_version=ssl.PROTOCOL_TLS_CLIENT,
        )
    return client


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
    broker: BrokerSettings, topic: str, payload: bytes, client_id: str, timeout_s: float
) -> None:
    """Publish once with QoS 1 and return when the broker acknowledged it (PUBACK).

    DeskError, for the person at the form: the broker unreachable, the login
    refused, the publish refused (an MQTT v5 reason code), or no answer within
    ``timeout_s`` (then it may or may not have been taken).
    """
    deadline = time.monotonic() + timeout_s
    answers = _Answers()
    client = _client(broker, client_id, timeout_s)

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
        raise DeskError(
            f"{NOT_TAKEN}: the MQTT broker at {url} cannot be reached "
            f"({getattr(exc, 'strerror', None) or exc}); nothing was sent, try again later"
        ) from None
    client.loop_start()
    try:
        _await_login(answers, deadline, url)
        sent = client.publish(topic, payload, qos=1)
        if sent.rc != mqtt.MQTT_ERR_SUCCESS:
            raise DeskError(f"{NOT_TAKEN}: {mqtt.error_string(sent.rc)} (MQTT broker at {url})")
        while answers.puback is None:
            if answers.gone is not None or not answers.wait(deadline):
                raise DeskError(
                    f"{NOT_TAKEN} within {timeout_s:.0f} s (MQTT broker at {url}); it may "
                    "still reach the site's worker: look at the site before recording it again"
                )
        if answers.puback.is_failure:
            raise DeskError(
                f"the MQTT broker at {url} refused it: {answers.puback} "
                f"(may the console's MQTT user write {topic}?)"
            )
    finally:
        client.disconnect()
        client.loop_stop()


def _await_login(answers: _Answers, deadline: float, url: str) -> None:
    """Wait for the CONNACK; DeskError when it is a refusal or does not come."""
    while answers.connect is None:
        if answers.gone is not None or not answers.wait(deadline):
            raise DeskError(f"{NOT_TAKEN}: the MQTT broker at {url} did not answer the login")
    if answers.connect.is_failure:
        raise DeskError(
            f"{NOT_TAKEN}: the MQTT broker at {url} refused the console's login ({answers.connect})"
        )
