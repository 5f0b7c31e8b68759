"""``siltwatch serve``: the live service's wiring, start-up checks and orderly stop.

Kept apart from cli.py because starting a service that must lose nothing is
mostly about failing well: a bad site file, an unusable store, a store
another instance already serves, a refused MQTT login or an unreachable
broker each end the start with one line on stderr and exit 1 — before
anything is acknowledged. Once running, SIGTERM (a container's stop) and
SIGINT (Ctrl-C) both drain: what has arrived is committed and acknowledged,
late data is applied, a snapshot is left, and the exit code is 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from siltwatch.configerrors import ConfigError

if TYPE_CHECKING:
    from ingest.mqtt.session import BrokerSettings
    from ingest.ops.health import ServiceParts
    from ingest.ops.http import OpsFront

EXIT_OK, EXIT_FAIL = 0, 1


T = TypeVar("T")


class _Voice:
    """``serve``'s own lines: the banner, a rebuild's reason, errors, the stop summary.

    Printed for a person by default; with ``--log-json`` they are log records
    like every other line, so the whole output is one JSON object per line.
    """

    def __init__(self, json_lines: bool) -> None:
        self.json_lines = json_lines
        self.log = logging.getLogger("siltwatch.serve")

    def say(self, line: str) -> None:
        """A line for stdout (the banner, the stop summary)."""
        if self.json_lines:
            self.log.info("%s", line)
        else:
            print(line, flush=True)

    def note(self, line: str) -> None:
        """A line for stderr that is not an error (why the engine is rebuilt)."""
        if self.json_lines:
            self.log.warning("%s", line)
        else:
            print(line, file=sys.stderr)

    def err(self, lines: Sequence[str]) -> None:
        for line in lines:
            if self.json_lines:
                self.log.error("%s", line)
            else:
                print(f"error: {line}", file=sys.stderr)

    def checked(self, make: Callable[[], T]) -> T | None:
        """``make()``, or None once its ConfigError or ValueError is said as errors: what
        a command reads and checks (options, site and notify files) before it starts."""
        try:
            return make()
        except ConfigError as exc:
            self.err(exc.lines)
        except ValueError as exc:
            self.err([str(exc)])
        return None


def _now_ms() -> int:
    """The wall clock enters here, in the I/O shell, never in the analytics."""
    return int(time.time() * 1000)


class _Progress:
    """A one-line progress bar on a terminal for a rebuild from the store; quiet otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.tty or total <= 0:
            return
        pct = min(100, done * 100 // total)
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4)
            print(f"\rrebuilding from the store [{bar:<25}] {pct:3d}%", end="", file=sys.stderr)
            if pct == 100:
                print(file=sys.stderr)


def read_secret(path: str | None, what: str) -> str | None:
    """A secret from a file (never from the command line, where ps shows it)."""
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None


class _People:
    """What ``serve`` needs for people in the loop: the console's book (who acknowledged),
    the delivery (``--notify``) and the console's web server (``--http``).

    The book lives in the store's database (the SQLite file, or the PostgreSQL
    database), so an acknowledgement in the console, by link or by SMS stops the
    escalations and repeats the delivery worker schedules.
    """

    def __init__(self, args: argparse.Namespace, site: Any) -> None:
        self.args = args
        self.site = site
        self.listen = None if args.http is None else _listen(args.http, "--http")
        self.notify = None
        if args.notify:
            from alerts.notify_config import load_notify

            self.notify = load_notify(Path(args.notify))
        self.book: Any = None
        self.reader: Any = None
        self.delivery: Any = None
        self.server: Any = None
        self.front: OpsFront | None = None
        self.app: Any = None

    def public_url(self) -> str | None:
        if self.args.public_url:
            return str(self.args.public_url).rstrip("/")
        if self.listen is not None:
            host, port = self.listen
            shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
            return f"http://{shown}:{port}"
        return None

    def open(self, db: Path | str) -> None:
        """The book and the delivery, before the service starts announcing (once: a
        standby opens them while it waits)."""
        if (self.notify is None and self.listen is None) or self.book is not None:
            return
        from console.book import ConsoleBook

        self.book = ConsoleBook(db)
        if self.notify is None or self.site is None:  # a fleet: app/fleet_notify.py
            return
        from ingest.store.from_url import open_store

        self.reader = open_store(db)  # the digest's own connection (the worker's thread)
        self.delivery = self.delivery_for(self.site, self.notify, self.reader, db)

    def delivery_for(self, site: Any, notify: Any, digests: Any, db: Path | str) -> Any:
        """A (not yet started) Delivery for ``site`` through ``notify``'s channels and
        outbox, over the book (who acknowledged), with the console's links under --http,
        the alert's chart from the store ``db`` and the daily digest read from ``digests``.

        One site's ``serve`` has one; a fleet one per site (app/fleet_notify.py).
        """
        from alerts.acklinks import Links
        from alerts.notify_config import Delivery
        from console.charts.email import AlertCharts

        sid = site.site.id
        links = None
        public = self.public_url()  # this serve's --http, or a console elsewhere (--public-url)
        if public is not None:  # answers need a console: its links and SMS webhook
            names = tuple(c.name for c in site.contacts)
            links = Links(public, self.book.link_secret(), sid, names)
        return Delivery(
            notify,
            site,
            time.time,
            acks=self.book,
            digests=digests,
            links=links,
            chart_for=AlertCharts({sid: site}, db),
            once=lambda key: bool(self.book.first_time(key, _now_ms())),
            silences=self.book,
        )

    def http_server(self, front: OpsFront) -> Any:
        """The --http server (not yet started) with ``front`` before the console, which
        :meth:`serve_console` attaches once the service runs; None without --http."""
        if self.listen is None:
            return None
        from console.server import ConsoleServer

        self.front = front
        trusted = getattr(self.args, "trusted_proxy", None) or []
        self.server = ConsoleServer(front, *self.listen, trusted_proxies=trusted)
        return self.server

    def serve_console(self, service: Any, db: Path | str) -> str | None:
        """Attach the web console over the running service; its URL, or None without --http."""
        if self.front is None:
            return None
        from console.desk import ServiceDesk

        return self.serve_console_of(
            {self.site.site.id: self.site}, db, ServiceDesk(service, _now_ms)
        )

    def serve_console_of(self, sites: dict[str, Any], db: Path | str, desk: Any) -> str | None:
        """Attach the web console over ``sites`` with ``desk`` taking what people record."""
        if self.front is None:
            return None
        from console.app import make_app

        token = None
        if self.notify is not None and self.notify.sms is not None:
            token = self.notify.sms.auth_token
        app = make_app(
            sites,
            db,
            desk=desk,
            public_url=self.args.public_url,
            twilio_token=token,
            outboxes=self._outboxes(sites),
        )
        self.app = app
        self.front.console = app
        return str(self.server.url)

    def _outboxes(self, sites: dict[str, Any]) -> dict[str, Path]:
        """Each site's outbox file, whose delivery audit the alert page shows."""
        if self.notify is None:
            return {}
        fleet = (
            getattr(self.args, "sites", None) or getattr(self.args, "partition", None) is not None
        )
        if len(sites) == 1 and not fleet:
            return {sid: self.notify.outbox_path for sid in sites}
        return {sid: self.notify.for_site(sid).outbox_path for sid in sites}

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.app is not None:
            self.app.state.console.close()
        if self.delivery is not None:
            self.delivery.stop()  # undelivered messages stay in the outbox for the next start
        if self.reader is not None:
            self.reader.close()
        if self.book is not None:
            self.book.close()


def _listen(text: str, option: str) -> tuple[str, int]:
    from console.server import parse_listen

    try:
        return parse_listen(text)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None


class _Endpoints:
    """/metrics, /healthz and /readyz: alone on ``--metrics``, and in front of the console
    on ``--http``; both listen before the rebuild from the store (ingest/ops/http.py)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.listen = None if args.metrics is None else _listen(args.metrics, "--metrics")
        self.server: Any = None
        self.url: str | None = None

    def start(self, parts: ServiceParts, people: _People, voice: _Voice) -> None:
        """Listen; OSError names the option whose address cannot be had."""
        if self.listen is None and people.listen is None:
            return
        from console.server import ConsoleServer
        from ingest.ops.http import OpsFront, ops_app

        ops = ops_app(parts, _now_ms)
        servers: list[tuple[str, Any]] = []
        if self.listen is not None:
            self.server = ConsoleServer(ops, *self.listen)
            servers.append((f"--metrics {self.args.metrics}: cannot listen there", self.server))
            # (ConsoleServer's own reason names the console; uvicorn logged the real one.)
        front = OpsFront(ops)
        http = people.http_server(front)
        if http is not None:  # ready only once the console answers (ingest/ops/health.py)
            parts.console_attached = lambda: front.console is not None
        if http is not None:
            servers.append((f"--http {self.args.http}: the web console cannot listen", http))
        if voice.json_lines:  # uvicorn set up its own handlers when each server was made
            from siltwatch.logjson import adopt_uvicorn_logs

            adopt_uvicorn_logs()
        for what, server in servers:
            try:
                server.start()
            except OSError as exc:  # uvicorn has logged the system's reason (port taken...)
                raise OSError(what if server is self.server else f"{what}: {exc}") from None
        if self.server is not None:
            self.url = str(self.server.url)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def cmd_serve(args: argparse.Namespace, influx_writer: Callable[[argparse.Namespace], Any]) -> int:
    """Run the live service for one site until SIGTERM/SIGINT; 1 when it cannot start.

    Several sites (``--sites``, more than one ``--site``, ``--partition``) are
    app/serve_fleet.py's.
    """
    from ingest.mqtt.session import MqttIngest, MqttStartError
    from siltwatch.config import load_site
    from siltwatch.logjson import configure_logging

    configure_logging(json_lines=args.log_json)
    voice = _Voice(args.log_json)
    sites = list(args.site or [])
    if args.sites or args.partition is not None or len(sites) != 1:
        from app.serve_fleet import serve_fleet

        return serve_fleet(args, voice, influx_writer)

    def read() -> tuple[Any, _People, _Endpoints]:
        site = load_site(Path(sites[0]))
        return site, _People(args, site), _Endpoints(args)

    started = voice.checked(read)
    if started is None:
        return EXIT_FAIL
    site, people, endpoints = started
    try:
        writer = influx_writer(args)  # ValueError for incomplete options
        mirror = None
        if writer is not None:
            from ingest.influx.mirror import InfluxMirror

            # Ingest only queues; a MirrorFlusher thread writes (_run).
            mirror = InfluxMirror(site, writer, auto_flush=False)
        broker = broker_settings(args)
    except ValueError as exc:
        voice.err([str(exc)])
        return EXIT_FAIL
    who = f"siltwatch serve for site {site.site.id!r}"
    store = store_and_people(args, who, f"site {site.site.id}", people, voice)
    if store is None:
        return EXIT_FAIL
    if mirror is not None:
        from ingest.influx.recopy import StoreRecopy

        # What the mirror drops in a long InfluxDB outage is copied again from the store.
        mirror.recopy = StoreRecopy(args.db, site.site.id)
    wiring = _Wiring(args, site, store, broker, people, endpoints, voice)
    return _run(wiring, mirror, MqttIngest, MqttStartError)


STANDBY_POLL_S = 0.5


def site_service(
    args: argparse.Namespace,
    site: Any,
    store: Any,
    handler: Any,
    mirror: Any,
    voice: _Voice,
    lock: Any = None,
) -> Any:
    """One site's IngestService as ``serve``'s options configure it (rebuilt from the store
    on the way: it can take a while, with a progress bar on a terminal)."""
    from ingest.gaps import GapPolicy
    from ingest.service import IngestService

    return IngestService(
        site,
        store,
        handler,
        allowed_lateness_s=args.allowed_lateness_s,
        max_clock_skew_s=args.max_clock_skew_s,
        mirror=mirror,
        now_ms=_now_ms(),
        progress=_Progress(),
        say=voice.note,
        lock=lock,
        completeness=GapPolicy(),  # fetch back what a broker loses (docs/live-service.md)
    )


def connect(ingest: Any, start_error: type[Exception], parts: ServiceParts, voice: _Voice) -> bool:
    """Start the MQTT side and show it to the probes; False (said) when it cannot start."""
    try:
        ingest.start()
    except start_error as exc:
        voice.err([str(exc)])
        return False
    parts.mqtt = ingest
    parts.threads["ingest"] = lambda: bool(ingest.worker_alive)
    return True


def open_service_store(
    args: argparse.Namespace,
    who: str,
    claim: str,
    say: Callable[[str], None] = print,
    standing_by: Callable[[], None] | None = None,
) -> Any:
    """The store ``--db`` names, claimed for this service (StoreError says why not).

    A SQLite file has one writer, whoever it is. A PostgreSQL database is shared
    by the workers of a fleet: each holds an advisory lock on its own ``claim``
    (a site, or a partition ``k/N``), so two workers never serve the same sites.
    With ``--standby`` a refused claim is tried again every half second: the
    standby takes over as soon as the holder's session ends (a kill -9 ends it),
    and since the holder's snapshots and readings are in the database it goes on
    from there. It claims before it connects to MQTT, so it never disturbs the
    holder's session. ``standing_by`` is called once, when the first claim is refused
    (the delivery drains what this worker's outboxes still hold meanwhile).
    """
    from ingest.store.from_url import open_store
    from ingest.store.sqlite import StoreError

    said = False
    while True:
        store = open_store(args.db, synchronous="FULL")
        try:
            store.claim_writer(who, claim=claim)
            return store
        except StoreError as exc:
            store.close()
            if not getattr(args, "standby", False):
                raise
            if not said:
                say(f"standing by: {exc}")
                said = True
                if standing_by is not None:
                    standing_by()
        except Exception:
            store.close()
            raise
        time.sleep(STANDBY_POLL_S)


def store_and_people(
    args: argparse.Namespace,
    who: str,
    claim: str,
    people: _People,
    voice: _Voice,
    drain: Callable[[], None] | None = None,
) -> Any:
    """The claimed store, then the book and delivery over it; None (said) when the
    store cannot be had.

    A standby (``--standby``) with ``--notify`` opens the book and calls ``drain``
    (a fleet's: app/serve_fleet.py) while it waits: what this worker's outboxes
    still hold from the last time it served (a kill -9 leaves it there) is sent and
    its escalations go on, instead of waiting for the next takeover. The worker that
    holds the partition does not send them again: its engines find those alerts
    already told in the store.
    """
    from ingest.store.sqlite import StoreError

    def standing_by() -> None:
        if people.notify is None or drain is None:
            return
        people.open(args.db)
        drain()
        voice.say("standing by: what this worker's outboxes hold is sent meanwhile")

    try:
        store = open_service_store(args, who, claim, voice.say, standing_by)
    except StoreError as exc:
        voice.err([str(exc)])
        return None
    try:
        people.open(args.db)
    except Exception:
        store.close()
        raise
    return store


def _protocol(version: str) -> Any:
    from paho.mqtt.enums import MQTTProtocolVersion

    return MQTTProtocolVersion.MQTTv5 if version == "5" else MQTTProtocolVersion.MQTTv311


class _Wiring:
    """What ``cmd_serve`` checked and opened, handed to :func:`_run` in one piece."""

    def __init__(
        self,
        args: argparse.Namespace,
        site: Any,
        store: Any,
        broker: Any,
        people: _People,
        endpoints: _Endpoints,
        voice: _Voice,
    ) -> None:
        self.args, self.site, self.store, self.broker = args, site, store, broker
        self.people, self.endpoints, self.voice = people, endpoints, voice


def _run(w: _Wiring, mirror: Any, mqtt_ingest: Any, start_error: type[Exception]) -> int:
    from alerts.dispatch import Dispatcher
    from alerts.sinks import ConsoleSink, JsonlSink, Sink
    from ingest.ops.health import ServiceParts
    from ingest.service import EventHandler

    args, site, store, people, voice = w.args, w.site, w.store, w.people, w.voice
    parts = ServiceParts(site.site.id, broker_url=w.broker.url, mirror=mirror)
    sinks: list[Sink] = [ConsoleSink(), JsonlSink(Path(args.alert_log))]
    delivery = people.delivery
    if delivery is not None:
        sinks.append(delivery.sink)
        delivery.start()
        parts.delivery = delivery
        parts.threads["delivery"] = lambda: bool(delivery.alive)
    from ingest.influx.mirror import EventFanOut
    from ingest.mqtt.alert_topic import AlertTopic, ClientPublisher

    publisher = ClientPublisher()  # siltwatch/v1/{site}/alerts/{id}, once connected
    alert_topic = AlertTopic(site.site.id, publisher)
    dispatcher: EventHandler = EventFanOut([Dispatcher(site, sinks), alert_topic])
    flusher = None
    if mirror is not None:
        from ingest.influx.mirror import MirrorFlusher

        dispatcher = EventFanOut([dispatcher, mirror])
        flusher = MirrorFlusher(mirror)
        flusher.start()
        parts.threads["influx-mirror"] = lambda: flusher.alive
        voice.say(f"mirroring to {mirror.writer.what}")
    stop, reload = threading.Event(), threading.Event()
    fatal: list[str] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        (reload if signum == signal.SIGHUP else stop).set()

    def on_fatal(why: str) -> None:
        fatal.append(why)
        stop.set()

    def dispatch_for(new_site: Any) -> EventHandler:
        handler: EventHandler = Dispatcher(new_site, sinks)
        if mirror is not None:
            from ingest.influx.mirror import EventFanOut

            handler = EventFanOut([handler, mirror])
        return handler

    signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {s: signal.signal(s, on_signal) for s in signals}
    service = None
    ingest = None
    try:
        try:
            w.endpoints.start(parts, people, voice)
        except OSError as exc:
            voice.err([str(exc)])
            return EXIT_FAIL
        service = site_service(args, site, store, dispatcher, mirror, voice)
        parts.service = service
        ingest = mqtt_ingest(
            service,
            w.broker,
            clock_ms=_now_ms,
            client_id=args.client_id,
            take_over=args.take_over,
            on_fatal=on_fatal,
        )
        if not connect(ingest, start_error, parts, voice):
            ingest = None
            return EXIT_FAIL
        publisher.client = ingest.client
        alert_topic.sync(store.open_alerts(site.site.id))  # the store is the truth
        console_url = people.serve_console(service, args.db)
        voice.say(
            f"siltwatch serving site {site.site.id!r} from {w.broker.url}; store {store.where}; "
            f"alert log {args.alert_log}"
            + (f"; alerts by {delivery.describe()}" if delivery else "")
            + (f"; web console {console_url}" if console_url else "")
            + (f"; metrics {w.endpoints.url}/metrics" if w.endpoints.url else "")
            + "; Ctrl-C or SIGTERM to stop, SIGHUP to re-read the site file"
        )
        _readmit_held(service, voice)
        next_tick = time.monotonic() + args.tick_s if args.tick_s > 0 else None
        while not stop.wait(0.2):
            if reload.is_set():
                reload.clear()
                service = reload_one_site(args, service, ingest, dispatch_for, voice)
                parts.service = service
            if next_tick is not None and time.monotonic() >= next_tick:
                next_tick = time.monotonic() + args.tick_s
                ticked(partial(_tick, service), on_fatal)
    finally:
        parts.stopping = True  # /readyz: not ready from the first moment of the stop
        for s, handler in previous.items():
            signal.signal(s, handler)
        if ingest is not None:
            ingest.stop()
        if service is not None:
            close_service(service, _now_ms(), voice)
        store.close()
        if flusher is not None:
            flusher.stop()
            mirror.close()
        w.endpoints.stop()
        people.close()
    return ended(voice, fatal, service.stats if service else "")


def _readmit_held(service: Any, voice: _Voice) -> None:
    """Take back the held messages the site's configuration now knows (ingest/held.py)."""
    from ingest.held import readmit

    done = readmit(service)
    if done.messages:
        voice.note(
            f"site {service.site_id}: {done.messages} held messages taken back under its "
            f"configuration ({done.held} still held)"
        )


def reload_one_site(
    args: argparse.Namespace,
    service: Any,
    ingest: Any,
    dispatch_for: Callable[[Any], Any],
    voice: _Voice,
) -> Any:
    """SIGHUP for ``serve --site FILE``: the file re-read and, when it is acceptable
    (ingest/reload_guard.py), a new engine over the store; else one line and the
    running configuration stays. Returns the service that now runs."""
    from ingest.reload_guard import RECENT_MS, reload_refusal
    from siltwatch.config import load_site

    path, old = Path(args.site[0]), service.site
    try:
        new = load_site(path)
    except ConfigError as exc:
        voice.err([*exc.lines, "reload: nothing changed"])
        return service
    if new.site.id != old.site.id:
        voice.err(
            [
                f"{path}: reload refused: site.id is now {new.site.id!r}; this serve runs site "
                f"{old.site.id!r} (start another serve for another site)"
            ]
        )
        return service
    if new == old:
        voice.say(f"reloaded the site file {path}: unchanged")
        return service
    now = _now_ms()
    if not getattr(args, "allow_orphaning", False):
        recent = service.store.recent_sensors(old.site.id, now - RECENT_MS)
        refusal = reload_refusal(path, old, new, recent)
        if refusal is not None:
            voice.err([refusal])
            return service
    with service.lock:  # no batch between the old engine's snapshot and the new engine
        close_service(service, now, voice)
        fresh = site_service(args, new, service.store, dispatch_for(new), service.mirror, voice)
        fresh.fence_token = service.fence_token  # the same claim (ingest/store/fence.py)
        ingest.service = fresh
    later = ""
    if (new.contacts, new.notifications) != (old.contacts, old.notifications):
        later = "; contacts and notifications take effect at the next restart"
    voice.say(f"reloaded the site file {path}: configuration changed, new engine{later}")
    _readmit_held(fresh, voice)
    return fresh


def _tick(service: Any) -> object:
    return service.tick(_now_ms())


def ticked(tick: Callable[[], object], on_fatal: Callable[[str], None]) -> None:
    """The service's clock; a store that became unreachable stops the service (the
    commit thread says the same when it meets it first)."""
    from ingest.store.queries import StoreUnreachable

    try:
        tick()
    except StoreUnreachable as exc:
        on_fatal(f"{exc}; {exc.STOPPING}")


def close_service(service: Any, now_ms: int, voice: _Voice) -> None:
    """Leave a snapshot on the way out; an unreachable store leaves none (a snapshot is a
    cache: the next start rebuilds from the store), said in one line."""
    from ingest.store.queries import StoreUnreachable

    try:
        service.close(now_ms)
    except StoreUnreachable as exc:
        voice.note(f"no snapshot left: {exc}")


def ended(voice: _Voice, fatal: list[str], stats: object) -> int:
    """The exit after the drain: the fatal reasons (exit 1), or the stop summary (exit 0)."""
    if fatal:
        voice.err(fatal)
        return EXIT_FAIL
    voice.say(f"stopped: {stats}")
    return EXIT_OK


def add_broker_options(p: argparse.ArgumentParser) -> None:
    """How to reach and log in to the MQTT broker (``serve``, ``log``); see :func:`broker_settings`."""
    p.add_argument(
        "--broker",
        default="mqtt://127.0.0.1:1883",
        metavar="URL",
        help="mqtt://host:port, or mqtts://host:port for TLS",
    )
    p.add_argument("--username", help="MQTT user name")
    p.add_argument("--password-file", metavar="FILE", help="file holding the MQTT password")
    p.add_argument(
        "--ca-file", metavar="FILE", help="CA certificate for mqtts:// (default: system)"
    )
    p.add_argument("--cert-file", metavar="FILE", help="client certificate for mqtts://")
    p.add_argument("--key-file", metavar="FILE", help="client certificate's key for mqtts://")
    p.add_argument(
        "--mqtt-version", choices=("5", "3.1.1"), default="5", help="MQTT protocol (default 5)"
    )


def broker_settings(args: argparse.Namespace) -> BrokerSettings:
    """Where the broker is and how to log in, from :func:`add_broker_options`' options;
    ValueError names a bad URL or an unreadable password file."""
    from ingest.mqtt.session import BrokerSettings

    return BrokerSettings.from_url(
        args.broker,
        username=args.username,
        password=read_secret(args.password_file, "MQTT password"),
        ca_file=args.ca_file,
        cert_file=args.cert_file,
        key_file=args.key_file,
        protocol=_protocol(args.mqtt_version),
    )


def add_trusted_proxy_option(parser: argparse.ArgumentParser) -> None:
    """``--trusted-proxy ADDR`` (repeatable) on a command that serves the console."""
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        help="the address (or CIDR) of a reverse proxy whose X-Forwarded-For is believed; "
        "repeat for more. Default: none, not even loopback (the login throttle counts the "
        "TCP peer)",
    )


def add_serve_options(p: argparse.ArgumentParser) -> None:
    """The options of ``siltwatch serve`` (cli.py adds the InfluxDB group)."""
    p.add_argument(
        "--site",
        action="append",
        metavar="SITE.toml",
        help="a site configuration (repeat it to serve several sites in one process)",
    )
    p.add_argument(
        "--sites",
        action="append",
        metavar="DIR",
        help="serve every site file (*.toml with a [site] table) in DIR; SIGHUP re-reads "
        "them (docs/fleet.md)",
    )
    p.add_argument(
        "--partition",
        metavar="k/N",
        help="worker k of N: serve only the sites whose stable hash mod N is k (docs/fleet.md)",
    )
    add_broker_options(p)
    p.add_argument(
        "--client-id",
        metavar="ID",
        help="MQTT client id, stable per instance (default siltwatch-ingest-SITE; "
        "siltwatch-ingest-part-k-of-N or siltwatch-ingest-fleet for several sites); "
        "the broker keeps this session's queue while the service is down",
    )
    p.add_argument(
        "--take-over",
        action="store_true",
        help="start even though another instance's lease on the site is still held",
    )
    p.add_argument(
        "--db",
        default="siltwatch.sqlite3",
        metavar="FILE|URL",
        help="the store: a SQLite file, or postgresql://… shared by a fleet's workers",
    )
    p.add_argument(
        "--standby",
        action="store_true",
        help="with a postgresql:// --db: wait until the site or partition is free, then "
        "take it over from the database (a hot standby for a worker)",
    )
    p.add_argument("--alert-log", default="alert-log.jsonl", metavar="FILE", help="JSONL alert log")
    p.add_argument(
        "--notify",
        metavar="NOTIFY.toml",
        help="also deliver alerts by email/SMS/webhook through a persistent outbox "
        "(with several sites: each site to its own contacts, through its own outbox "
        "file next to the configured one)",
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve the web console here (e.g. 127.0.0.1:8080); acknowledgements in it, "
        "by its links or by SMS stop escalations and repeats",
    )
    add_trusted_proxy_option(p)
    p.add_argument(
        "--allow-orphaning",
        action="store_true",
        help="on SIGHUP, apply a site file even when it drops sensors that delivered readings "
        "in the last 7 days, or every station (refused by default: docs/live-service.md)",
    )
    p.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        help="serve /metrics (Prometheus), /healthz and /readyz here, without the console "
        "(--http serves them too); see docs/operations.md",
    )
    p.add_argument(
        "--log-json",
        action="store_true",
        help="log one JSON object per line (time, level, logger, message, fields) "
        "instead of human-readable lines",
    )
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="where people and the SMS gateway reach the console (https://...), for the "
        "links in messages and Twilio's signature check (default: http://HOST:PORT of --http); "
        "without --http, the console of 'siltwatch console' on the same --db",
    )
    p.add_argument(
        "--tick-s",
        type=float,
        default=30.0,
        help="seconds between clock heartbeats (0: none)",
    )
    p.add_argument(
        "--allowed-lateness-s",
        type=float,
        default=900.0,
        help="how late a reading may arrive and still be judged in order "
        "(>= the stations' publishing period); later ones rebuild the history",
    )
    p.add_argument(
        "--max-clock-skew-s",
        type=float,
        default=300.0,
        help="a reading dated further ahead of its arrival is flagged clock_ahead and "
        "never moves event time; an inspection so dated is refused",
    )
