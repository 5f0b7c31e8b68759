"""The MQTT side of the live service: a persistent session, acks after commit, one owner.

Why each choice (issue: "a live service that loses nothing"):

* **Acknowledge after commit.** paho's default acknowledges a QoS 1 message
  the moment it is received; a crash before the store commits then loses a
  reading the broker has forgotten. Here paho runs with ``manual_ack`` and a
  worker thread takes what has arrived, commits it in one transaction (a
  group commit: one fsync for many messages) and only then sends the PUBACKs.
* **A group commit bounded by readings and bytes**, not only messages: a
  backlog of 10,000-reading batches once became one 1 M-reading transaction
  held in memory (1.2 GB, issue 24). A group stops at ``batch_max`` messages,
  ``batch_max_readings`` readings or ``batch_max_bytes`` of payload, whichever
  comes first (one message is always taken); and what waits in the queue is
  bounded too (``queue_max_bytes``): past it paho's thread waits before it
  reads more, so the broker holds the backlog, not this process.
* **A persistent session** (MQTT v5 ``clean_start=False`` with a session
  expiry; 3.1.1 ``clean_session=False``) under a client id that is stable per
  instance, so the broker queues what arrives while the service is down or
  restarting and redelivers what was never acknowledged.
* **One owner per site.** A second ``serve`` for the same site would split
  the data between two stores (or, with the same client id, kick the first
  off in a loop). Each instance holds a retained *lease* on
  ``siltwatch/v1/{site}/ingest/owner`` naming itself, with a last will that
  clears it; a new instance that finds a live lease refuses, naming the
  owner. A lease left behind by a dead process on the same host is taken over.
* **Many sites, one session** (``fleet=True``, ingest/sites.py): one
  connection subscribes to every owned site and holds a lease per site. A
  connection has one last will, so a fleet's leases are cleared on an orderly
  stop only; a lease naming this worker's own client id is its own (a restart,
  perhaps on another host: the broker's session take-over already keeps two
  copies of one worker from running).
* **Back in about a second.** A broker that restarts is reconnected to within
  about a second of its return (waits of 0.25-1 s with jitter for the first
  minute, then up to 15 s; siltwatch/backoff.py): readings the stations publish
  before the session is back are readings this session misses.
* **Gaps are fetched back** (ingest/gaps.py): once a second the service's due
  resend requests are published on each station's command topic
  (``siltwatch/v1/{site}/{station}/cmd/resend``, QoS 1) while connected.
* **Failures said plainly.** A refused login or an unreachable broker at
  start is an :class:`MqttStartError` (the CLI prints it and exits 1);
  disconnects and reconnects later are logged and counted while paho retries.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlparse

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from ingest.service import Incoming
from ingest.store.fence import FreezeWatch, lease_token
from ingest.store.queries import StoreUnreachable
from siltwatch import backoff
from siltwatch.counters import Counters
from siltwatch.schema import (
    ResendRequest,
    ingest_owner_topic,
    inspections_topic,
    readings_subscription,
    resend_topic,
    site_log_topic,
    statuses_subscription,
)

log = logging.getLogger(__name__)

BATCH_MAX_READINGS = 20_000  # readings in one group commit (about 20 MB decoded)
BATCH_MAX_BYTES = 8 * 1024 * 1024  # payload bytes in one group commit
QUEUE_MAX_BYTES = 64 * 1024 * 1024  # payload bytes received and not yet taken by the worker
SESSION_EXPIRY_S = 7 * 24 * 3600  # the broker keeps our queue through a week-long outage
CONNECT_TIMEOUT_S = 15.0
LEASE_WAIT_S = 1.0
SESSION_TAKEN_OVER = 142  # MQTT v5 DISCONNECT reason code
RECONNECT_BASE_S = 0.5  # the first wait (half of it random) ...
RECONNECT_FAST_CAP_S = 1.0  # ... at most this for the first RECONNECT_FAST_ATTEMPTS ...
RECONNECT_FAST_ATTEMPTS = 60
RECONNECT_CAP_S = 15.0  # ... then backing off to this
COMPLETENESS_EVERY_S = 1.0  # how often due resend requests are looked for


def site_topics(site_id: str) -> tuple[str, ...]:
    """What the service subscribes to for one site."""
    return (
        readings_subscription(site_id),
        inspections_topic(site_id),
        statuses_subscription(site_id),
        site_log_topic(site_id),
    )


def readings_in(payload: bytes) -> int:
    """How many readings a message holds, counted without decoding it (each reading has
    a ``"seq"`` key; a batch's readings are its items): an upper bound, at least 1."""
    return max(1, payload.count(b'"seq"'))


class MqttStartError(Exception):
    """The service could not start talking to the broker; the message says why."""


owner_topic = ingest_owner_topic  # the old name, still imported by callers


@dataclass(frozen=True)
class BrokerSettings:
    """Where the broker is and how to log in (``mqtt://`` or ``mqtts://`` URLs)."""

    host: str
    port: int
    tls: bool = False
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    protocol: MQTTProtocolVersion = MQTTProtocolVersion.MQTTv5

    @classmethod
    def from_url(cls, url: str, **kwargs: object) -> BrokerSettings:
        """``mqtt://host:1883`` or ``mqtts://host:8883``; ValueError says what is wrong."""
        parsed = urlparse(url)
        if parsed.scheme not in ("mqtt", "mqtts") or not parsed.hostname:
            raise ValueError(f"broker URL {url!r}: expected mqtt://HOST:PORT or mqtts://HOST:PORT")
        tls = parsed.scheme == "mqtts"
        try:
            port = parsed.port or (8883 if tls else 1883)
        except ValueError:
            raise ValueError(f"broker URL {url!r}: the port is not a number") from None
        return cls(parsed.hostname, port, tls, **kwargs)  # type: ignore[arg-type]

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"

    def client(self, client_id: str, **options: Any) -> mqtt.Client:
        """A paho client for this broker: its protocol, login and TLS (the CA, and the
        client certificate when given); ``options`` go to ``mqtt.Client`` as they are."""
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=client_id, protocol=self.protocol, **options
        )
        if self.username is not None:
            client.username_pw_set(self.username, self.password)
        if self.tls:
            client.tls_set(
                ca_certs=self.ca_file,
                certfile=self.cert_file,
                keyfile=self.key_file,
                cert_reqs=ssl.CERT_REQUIRED,
                tls_version=ssl.PROTOCOL_TLS_CLIENT,
            )
        return client


class MqttStats(Counters):
    """The broker link as the tests and the benchmark read it (this process only)."""

    connects: int
    disconnects: int
    acked: int
    batches: int
    last_disconnect_reason: str
    largest_batch: int
    largest_batch_readings: int  # as counted by readings_in (an upper bound)
    largest_batch_bytes: int
    paused: int  # times paho's thread waited for the queue to drain (queue_max_bytes)
    errors: list[str]
    resend_requests: int  # resend requests published (ingest/gaps.py)


class SiteHandler(Protocol):
    """What the MQTT side needs of the service: an IngestService, or ingest/sites.py's router."""

    @property
    def site_ids(self) -> list[str]: ...

    def handle_batch(
        self, messages: Sequence[Incoming], on_committed: Callable[[], None] | None = None
    ) -> object: ...


class MqttIngest:
    """Subscribes to its sites' readings and inspections; commits, then acknowledges."""

    def __init__(
        self,
        service: SiteHandler,
        broker: BrokerSettings,
        *,
        clock_ms: Callable[[], int],
        client_id: str | None = None,
        batch_max: int = 1_000,
        batch_max_readings: int = BATCH_MAX_READINGS,
        batch_max_bytes: int = BATCH_MAX_BYTES,
        queue_max_bytes: int = QUEUE_MAX_BYTES,
        take_over: bool = False,
        on_fatal: Callable[[str], None] | None = None,
        fleet: bool = False,
    ) -> None:
        self.service = service
        self.broker = broker
        self.clock_ms = clock_ms
        self.fleet = fleet
        self._sites = list(service.site_ids)
        self._sites_lock = threading.Lock()
        self.site_id = self._sites[0] if self._sites else ""
        if not fleet and len(self._sites) != 1:
            raise ValueError("one MqttIngest per site unless fleet=True")
        self.client_id = client_id or f"siltwatch-ingest-{self.site_id}"
        self.batch_max = batch_max
        self.batch_max_readings = batch_max_readings
        self.batch_max_bytes = batch_max_bytes
        self.queue_max_bytes = queue_max_bytes
        self.take_over = take_over
        self.on_fatal = on_fatal
        self.stats = MqttStats()
        # SimpleQueue: put and get are C calls, no Python-level locks per message, which
        # matters at tens of thousands of single-reading messages a second (paho's thread
        # puts, the commit worker takes; nothing needs Queue's task tracking or bound).
        self._queue: queue.SimpleQueue[tuple[Incoming, int, int]] = queue.SimpleQueue()
        # The queue's payload bytes are queued - taken; each counter has one writer (paho's
        # thread, the worker), so no lock per message. The worker sets _room as it takes.
        self._queued_bytes = 0
        self._taken_bytes = 0
        self._room = threading.Event()
        self._stop = threading.Event()
        self._fatal = threading.Event()
        self._connected = threading.Event()
        self._connect_result: str | None = None
        self.subscribed = threading.Event()
        self._reconnect_attempt = 0
        self._rng = random.Random()
        self._next_completeness = 0.0
        self._worker = threading.Thread(target=self._work, name="ingest-commit", daemon=True)
        self.client = self._make_client(self.client_id, persistent=True)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *args: self.subscribed.set()
        self.client.on_connect_fail = lambda *args: self._schedule_reconnect()
        self.watch = FreezeWatch()  # ingest/store/fence.py: a paused owner checks before writing
        self.token = 0  # this claim's fencing token (set by _check_lease)

    # --- the client -----------------------------------------------------------------

    def _make_client(self, client_id: str, *, persistent: bool) -> mqtt.Client:
        """The session client (persistent, manual acks) or a throw-away probe."""
        v5 = self.broker.protocol == MQTTProtocolVersion.MQTTv5
        client = self.broker.client(
            client_id, clean_session=None if v5 else not persistent, manual_ack=persistent
        )
        return client

    def _schedule_reconnect(self) -> None:
        """The wait before paho's next attempt (called when the link is lost and after
        each failed attempt): under a second at first, with jitter, then backing off."""
        attempt = self._reconnect_attempt
        self._reconnect_attempt += 1
        cap = RECONNECT_FAST_CAP_S if attempt < RECONNECT_FAST_ATTEMPTS else RECONNECT_CAP_S
        wait = backoff.delay(attempt, RECONNECT_BASE_S, cap, jitter_fraction=0.5, rng=self._rng)
        # paho takes seconds as a number (its hint says int; it adds them to time.time())
        self.client.reconnect_delay_set(wait, wait)  # type: ignore[arg-type]

    def _connect(self, client: mqtt.Client, *, persistent: bool) -> None:
        v5 = self.broker.protocol == MQTTProtocolVersion.MQTTv5
        props = None
        if v5:
            props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
            props.SessionExpiryInterval = SESSION_EXPIRY_S if persistent else 0
            # How many unacknowledged messages the broker may have in flight to us:
            # the group commit acknowledges in batches, so allow many.
            props.ReceiveMaximum = 10_000
        try:
            client.connect(
                self.broker.host,
                self.broker.port,
                keepalive=30,
                clean_start=not persistent if v5 else mqtt.MQTT_CLEAN_START_FIRST_ONLY,
                properties=props,
            )
        except (OSError, ssl.SSLError) as exc:
            raise MqttStartError(
                f"cannot reach the MQTT broker at {self.broker.url}: {exc}"
            ) from None

    # --- the lease --------------------------------------------------------------------

    def _lease_text(self) -> str:
        return json.dumps(
            {
                "client_id": self.client_id,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "since": self.clock_ms(),
                "token": self.token,
            }
        )

    @property
    def site_ids(self) -> list[str]:
        """The sites this session subscribes to now."""
        with self._sites_lock:
            return list(self._sites)

    def _check_lease(self, sites: Sequence[str] | None = None) -> None:
        """Refuse to start when another live instance holds one of these sites' leases."""
        sites = self.site_ids if sites is None else list(sites)
        found = self._read_leases(sites)
        seen = [t for t in (lease_token(found.get(sid, b"")) for sid in sites) if t is not None]
        self.token = max([self.clock_ms(), self.token + 1, *(t + 1 for t in seen)])
        for sid in sites:
            self._judge_lease(sid, found.get(sid, b""))

    def _read_leases(self, sites: Sequence[str]) -> dict[str, bytes]:
        """The retained lease of each site (absent: none), read by a throw-away probe."""
        found: dict[str, bytes] = {}
        got = threading.Event()
        connected: list[str] = []
        probe = self._make_client(f"{self.client_id}-probe-{os.getpid()}", persistent=False)
        topics = {ingest_owner_topic(sid): sid for sid in sites}

        def on_connect(c: mqtt.Client, u: object, f: object, rc: ReasonCode, p: object) -> None:
            connected.append(str(rc))
            if rc.is_failure or not topics:
                got.set()
                return
            c.subscribe([(topic, 1) for topic in topics])

        def on_message(c: mqtt.Client, u: object, msg: mqtt.MQTTMessage) -> None:
            if msg.retain and msg.topic in topics:
                found[topics[msg.topic]] = bytes(msg.payload)
            if len(found) == len(topics):
                got.set()

        probe.on_connect = on_connect
        probe.on_message = on_message
        probe.on_subscribe = lambda *a: threading.Timer(LEASE_WAIT_S, got.set).start()
        self._connect(probe, persistent=False)
        probe.loop_start()
        try:
            if not got.wait(CONNECT_TIMEOUT_S) and not connected:
                raise MqttStartError(
                    f"the MQTT broker at {self.broker.url} did not answer within "
                    f"{CONNECT_TIMEOUT_S:.0f} s"
                )
            if connected and connected[0] != "Success":
                raise MqttStartError(
                    f"the MQTT broker at {self.broker.url} refused the login: {connected[0]}"
                )
        finally:
            probe.disconnect()
            probe.loop_stop()
        return found

    def _still_owner(self) -> bool:
        """After a pause or a lost connection: the leases read again before any write.

        Free or our own: published again, and writes go on (True). Another
        owner's: this instance stops, saying so, with nothing written (False).
        """
        try:
            found = self._read_leases(self.site_ids)
        except MqttStartError as exc:
            log.warning("cannot check the leases yet (%s); nothing is written meanwhile", exc)
            return False
        for sid in self.site_ids:
            lease = found.get(sid, b"")
            try:
                owner = json.loads(lease) if lease.strip() else {}
            except ValueError:
                owner = {"client_id": "?"}
            other = isinstance(owner, dict) and owner and owner.get("client_id") != self.client_id
            if other:
                message = (
                    f"site {sid!r} was taken over by client {owner.get('client_id')!r} (pid "
                    f"{owner.get('pid')} on host {owner.get('host')}, token {owner.get('token')}) "
                    f"while this instance (token {self.token}) was paused or cut off; it stops "
                    "without writing or acknowledging anything more"
                )
                log.error("%s", message)
                self._fatal.set()
                self._stop.set()
                if self.on_fatal is not None:
                    self.on_fatal(message)
                return False
        for sid in self.site_ids:
            self.client.publish(ingest_owner_topic(sid), self._lease_text(), qos=1, retain=True)
        self.watch.cleared()
        return True

    def _judge_lease(self, site_id: str, lease: bytes) -> None:
        """Take a free, stale or own lease; MqttStartError naming a live other owner."""
        if not lease.strip():
            return
        try:
            owner = json.loads(lease)
            who = (
                f"siltwatch serve pid {owner['pid']} on host {owner['host']} "
                f"(client id {owner['client_id']})"
            )
        except (ValueError, KeyError, TypeError):
            owner, who = {}, f"an unknown holder ({lease[:100]!r})"
        own = self.fleet and isinstance(owner, dict) and owner.get("client_id") == self.client_id
        if self.take_over or own or self._stale(owner):
            log.warning("taking over the lease of site %s from %s", site_id, who)
            return
        raise MqttStartError(
            f"site {site_id!r} is already served by {who}; stop it first "
            "(or pass --take-over if it is gone for good)"
        )

    @staticmethod
    def _stale(owner: dict[str, object]) -> bool:
        """A lease from a process on this host that no longer runs."""
        if owner.get("host") != socket.gethostname():
            return False
        pid = owner.get("pid")
        if not isinstance(pid, int):
            return True
        if pid == os.getpid():
            return True
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    # --- callbacks (paho's network thread) -------------------------------------------------

    def _on_connect(
        self,
        client: mqtt.Client,
        userdata: object,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        props: object,
    ) -> None:
        if reason.is_failure:
            self._connect_result = str(reason)
            log.error("the MQTT broker refused the connection: %s", reason)
            self._connected.set()
            return
        self.stats.connects += 1
        self._reconnect_attempt = 0
        self._connect_result = "Success"
        if self.stats.connects > 1:
            log.warning(
                "reconnected to %s (session %s)",
                self.broker.url,
                "resumed" if flags.session_present else "new",
            )
        sites = self.site_ids
        if self.stats.connects > 1:
            self.watch.suspect()  # the commit worker checks the leases before writing again
        else:
            for sid in sites:
                client.publish(ingest_owner_topic(sid), self._lease_text(), qos=1, retain=True)
        if sites:
            client.subscribe([(topic, 1) for sid in sites for topic in site_topics(sid)])
        elif self.fleet:
            self.subscribed.set()  # nothing to subscribe to: a worker that owns no site
        self._connected.set()

    def _on_disconnect(
        self,
        client: mqtt.Client,
        userdata: object,
        flags: object,
        reason: ReasonCode,
        props: object,
    ) -> None:
        if self._stop.is_set():
            return
        self.stats.disconnects += 1
        self.stats.last_disconnect_reason = str(reason)
        if reason.value == SESSION_TAKEN_OVER:
            message = (
                f"another client connected as {self.client_id!r} and took this session over; "
                "this instance stops (two services for one site would split its data)"
            )
            log.error("%s", message)
            self._fatal.set()
            self._stop.set()
            client.disconnect()
            if self.on_fatal is not None:
                self.on_fatal(message)
            return
        self._schedule_reconnect()
        self.watch.suspect()
        log.warning("lost the MQTT broker at %s (%s); reconnecting", self.broker.url, reason)

    def _on_message(self, client: mqtt.Client, userdata: object, msg: mqtt.MQTTMessage) -> None:
        payload = bytes(msg.payload)
        self._queue.put((Incoming(msg.topic, payload, self.clock_ms()), msg.mid, msg.qos))
        self._queued_bytes += len(payload)
        if self._queued_bytes - self._taken_bytes > self.queue_max_bytes:
            self._wait_for_room()

    def _wait_for_room(self) -> None:
        """Hold paho's thread (it reads no more from the socket, so the broker keeps the
        rest) until the worker has taken the queue below ``queue_max_bytes``."""
        self.stats.paused += 1
        while not self._stop.is_set():
            self._room.clear()
            if self._queued_bytes - self._taken_bytes <= self.queue_max_bytes:
                return
            self._room.wait(0.5)

    # --- the commit worker --------------------------------------------------------------

    def _take_batch(self) -> list[tuple[Incoming, int, int]]:
        try:
            first = self._queue.get(timeout=0.2)
        except queue.Empty:
            return []
        batch = [first]
        readings, size = readings_in(first[0].payload), len(first[0].payload)
        take, limit = self._queue.get_nowait, self.batch_max
        while len(batch) < limit and readings < self.batch_max_readings:
            try:
                item = take()
            except queue.Empty:
                break
            batch.append(item)
            readings += readings_in(item[0].payload)
            size += len(item[0].payload)
            if size >= self.batch_max_bytes:
                break
        self._taken_bytes += size
        self._room.set()
        self.stats.largest_batch_readings = max(self.stats.largest_batch_readings, readings)
        self.stats.largest_batch_bytes = max(self.stats.largest_batch_bytes, size)
        return batch

    def _work(self) -> None:
        """Commit and acknowledge batches until told to stop.

        On stop the batch in hand is finished; what is still queued was never
        acknowledged, so the broker delivers it again to the next session.
        """
        while not self._stop.is_set():
            if self.watch.suspected() and not self._still_owner():
                if self._stop.wait(1.0):
                    return
                continue
            batch = self._take_batch()
            if batch:
                self._process(batch)
            if time.monotonic() >= self._next_completeness and not self._stop.is_set():
                self._next_completeness = time.monotonic() + COMPLETENESS_EVERY_S
                self._ask_for_gaps()

    def _ask_for_gaps(self) -> None:
        """Publish the resend requests that are due (only while connected: a request the
        broker cannot take is asked again later, ingest/gaps.py)."""
        due = getattr(self.service, "completeness_due", None)
        if due is None or not self.client.is_connected():
            return
        try:
            requests: list[ResendRequest] = due(self.clock_ms())
        except StoreUnreachable as exc:
            log.error("%s", exc)
            return
        for request in requests:
            topic = resend_topic(request.site, request.station)
            self.client.publish(topic, request.model_dump_json().encode(), qos=1)
            self.stats.resend_requests += 1
            log.warning(
                "asked station %s for sensor %s seq %d..%d again (request %s)",
                request.station,
                request.sensor,
                request.seq_from,
                request.seq_to,
                request.request,
            )

    def _process(self, batch: Sequence[tuple[Incoming, int, int]]) -> None:
        def ack() -> None:
            send = self.client.ack
            for _msg, mid, qos in batch:
                if qos:
                    send(mid, qos)
            self.stats.acked += len(batch)

        self.stats.batches += 1
        self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
        if self.watch.suspected() and not self._still_owner():
            return  # not stored, not acknowledged: the broker delivers it again elsewhere
        try:
            self.service.handle_batch([m for m, _mid, _qos in batch], on_committed=ack)
        except StoreUnreachable as exc:  # an outage, not a bug: one line, no traceback
            log.error("%s", exc)
            self.stats.errors.append(repr(exc))
            if self.on_fatal is not None:
                self.on_fatal(f"{exc}; {exc.STOPPING}")
            self._fatal.set()
            self._stop.set()
        except Exception as exc:  # a bug must be loud, and must not ack what was not stored
            log.exception("ingest failed on a batch of %d messages", len(batch))
            self.stats.errors.append(repr(exc))
            if self.on_fatal is not None:
                self.on_fatal(f"ingest failed: {exc!r}")
            self._fatal.set()
            self._stop.set()

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Check the lease, connect, subscribe; MqttStartError when that cannot be done."""
        self._check_lease()
        if not self.fleet:  # one will per connection: a fleet clears its leases on stop
            self.client.will_set(ingest_owner_topic(self.site_id), b"", qos=1, retain=True)
        self._connect(self.client, persistent=True)
        self.client.loop_start()
        if not self._connected.wait(CONNECT_TIMEOUT_S):
            self.client.loop_stop()
            raise MqttStartError(
                f"the MQTT broker at {self.broker.url} did not answer within {CONNECT_TIMEOUT_S:.0f} s"
            )
        if self._connect_result != "Success":
            self.client.loop_stop()
            raise MqttStartError(
                f"the MQTT broker at {self.broker.url} refused the login: {self._connect_result}"
            )
        fence = getattr(self.service, "fence", None)
        if callable(fence) and not self.fleet:  # the store's owner token (ingest/store/fence.py)
            try:
                fence(self.token, self.client_id)
            except StoreUnreachable as exc:
                self.client.loop_stop()
                raise MqttStartError(str(exc)) from None
        self.watch.cleared()
        self.watch.start()
        self._worker.start()

    def stop(self, drain_s: float = 10.0) -> None:
        """Commit and acknowledge what has arrived (for up to ``drain_s``), release the lease,
        disconnect. The worker always finishes its batch before the store may close."""
        deadline = time.monotonic() + drain_s
        while not self._queue.empty() and time.monotonic() < deadline and self._worker.is_alive():
            time.sleep(0.02)
        self._stop.set()
        self.watch.stop()
        if self._worker.is_alive():
            self._worker.join()
        if self._fatal.is_set() and self.watch.suspected():
            self.client.disconnect()  # replaced: the lease is the new owner's, not ours to clear
            self.client.loop_stop()
            return
        for sid in self.site_ids:
            self._release(sid)
        self.client.disconnect()
        self.client.loop_stop()

    def _release(self, site_id: str) -> None:
        try:
            info = self.client.publish(ingest_owner_topic(site_id), b"", qos=1, retain=True)
            info.wait_for_publish(timeout=2.0)
        except (RuntimeError, ValueError):
            pass

    # --- the set of sites changes (SIGHUP, app/serve.py) -------------------------

    def add_site(self, site_id: str) -> None:
        """Take ``site_id``'s lease and subscribe to it; MqttStartError when it is held."""
        if site_id in self.site_ids:
            return
        self._check_lease([site_id])
        with self._sites_lock:
            self._sites.append(site_id)
        self.client.publish(ingest_owner_topic(site_id), self._lease_text(), qos=1, retain=True)
        self.client.subscribe([(topic, 1) for topic in site_topics(site_id)])

    def remove_site(self, site_id: str) -> None:
        """Unsubscribe from ``site_id`` and release its lease."""
        with self._sites_lock:
            if site_id not in self._sites:
                return
            self._sites.remove(site_id)
        self.client.unsubscribe(list(site_topics(site_id)))
        self._release(site_id)

    @property
    def connected(self) -> bool:
        """True while the session is connected (readiness: /readyz, ingest/ops/health.py)."""
        return self.client.is_connected() and not self._stop.is_set()

    @property
    def worker_alive(self) -> bool:
        """True while the commit worker runs (liveness: /healthz, ingest/ops/health.py)."""
        return self._worker.is_alive()

    @property
    def failed(self) -> bool:
        """True when the instance stopped itself (session taken over, a bug)."""
        return self._fatal.is_set()
