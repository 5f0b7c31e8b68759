"""What serving one site and serving many share: the command's voice, the store's claim,
the people in the loop, the probes' endpoints, the broker's options and the orderly stop.

``siltwatch serve`` for one site (app/serve.py) and for a fleet (app/serve_fleet.py)
both stand on this module and neither imports the other's insides: a start-up check,
a standby's claim or the stop summary is written once, here, and reads the same
whichever path runs. Starting a service that must lose nothing is mostly about
failing well: a bad site file, an unusable store, a store another instance already
serves, a refused MQTT login or an unreachable broker each end the start with one
line on stderr and exit 1, before anything is acknowledged.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
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


class Voice:
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


def now_ms() -> int:
    """The wall clock enters here, in the I/O shell, never in the analytics."""
    return int(time.time() * 1000)


class Progress:
    """Progress on stderr: a one-line bar on a terminal; off one, a plain line every ten
    per cent when ``unit`` names what is counted (a log keeps lines, not carriage
    returns), else nothing. ``serve``'s rebuild from the store and ``siltwatch import``."""

    def __init__(self, label: str = "rebuilding from the store", unit: str | None = None) -> None:
        self.label = label
        self.unit = unit
        self.tty = sys.stderr.isatty()
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.tty and self.unit is None:
            return
        pct = 100 if total <= 0 else min(100, done * 100 // total)
        step = pct if self.tty else pct // 10 * 10
        if step == self.shown:
            return
        self.shown = step
        if self.tty:
            end = "\n" if pct == 100 else ""
            print(f"\r{self.label} [{'#' * (pct // 4):<25}] {pct:3d}%", end=end, file=sys.stderr)
        else:
            print(f"{self.label}: {done:,} of {total:,} {self.unit}", file=sys.stderr)


def read_secret(path: str | None, what: str) -> str | None:
    """A secret from a file (never from the command line, where ps shows it)."""
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None


class People:
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
            once=lambda key: bool(self.book.first_time(key, now_ms())),
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
            {self.site.site.id: self.site}, db, ServiceDesk(service, now_ms)
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


class Endpoints:
    """/metrics, /healthz and /readyz: alone on ``--metrics``, and in front of the console
    on ``--http``; both listen before the rebuild from the store (ingest/ops/http.py)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.listen = None if args.metrics is None else _listen(args.metrics, "--metrics")
        self.server: Any = None
        self.url: str | None = None

    def start(self, parts: ServiceParts, people: People, voice: Voice) -> None:
        """Listen; OSError names the option whose address cannot be had."""
        if self.listen is None and people.listen is None:
            return
        from console.server import ConsoleServer
        from ingest.ops.http import OpsFront, ops_app

        ops = ops_app(parts, now_ms)
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


STANDBY_POLL_S = 0.5


def site_service(
    args: argparse.Namespace,
    site: Any,
    store: Any,
    handler: Any,
    mirror: Any,
    voice: Voice,
    lock: Any = None,
    rebuilt: Any = None,
) -> Any:
    """One site's IngestService as ``serve``'s options configure it (rebuilt from the store
    on the way: it can take a while, with a progress bar on a terminal; ``rebuilt``: the
    engine a worker process rebuilt, ingest/sites.py ``rebuild_in_parallel``)."""
    from ingest.gaps import GapPolicy
    from ingest.service import IngestService

    return IngestService(
        site,
        store,
        handler,
        allowed_lateness_s=args.allowed_lateness_s,
        max_clock_skew_s=args.max_clock_skew_s,
        mirror=mirror,
        now_ms=now_ms(),
        progress=Progress(),
        say=voice.note,
        lock=lock,
        completeness=GapPolicy(),  # fetch back what a broker loses (docs/live-service.md)
        rebuilt=rebuilt,
    )


def connect(ingest: Any, start_error: type[Exception], parts: ServiceParts, voice: Voice) -> bool:
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
    people: People,
    voice: Voice,
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


def readmit_held(service: Any, voice: Voice) -> None:
    """Take back the held messages the site's configuration now knows (ingest/held.py)."""
    from ingest.held import readmit

    done = readmit(service)
    if done.messages:
        voice.note(
            f"site {service.site_id}: {done.messages} held messages taken back under its "
            f"configuration ({done.held} still held)"
        )


class Stopping:
    """How a running ``serve`` ends or re-reads: SIGTERM (a container's stop) and SIGINT
    (Ctrl-C) ask for the drain, SIGHUP for a re-read of the site files, and a fatal error
    (a store that became unreachable, a broker that took the session away) stops it too
    with its reason, which :func:`ended` turns into exit 1."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    ENDING = (signal.SIGTERM, signal.SIGINT)  # a command with nothing to re-read

    def __init__(self, signals: tuple[signal.Signals, ...] = SIGNALS) -> None:
        self.signals = signals
        self.stop, self.reload = threading.Event(), threading.Event()
        self.fatal: list[str] = []
        self._previous: dict[int, Any] = {}

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        (self.reload if signum == signal.SIGHUP else self.stop).set()

    def on_fatal(self, why: str) -> None:
        self.fatal.append(why)
        self.stop.set()

    def install(self) -> None:
        """Take the signals (given back by :meth:`restore`)."""
        self._previous = {s: signal.signal(s, self.on_signal) for s in self.signals}

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)

    def wait(self) -> None:
        """Until stopped (the main thread wakes twice a second, so a signal is seen)."""
        while not self.stop.wait(0.5):
            pass

    def run(self, tick_s: float, reload: Callable[[], None], tick: Callable[[], object]) -> None:
        """Until stopped: ``reload()`` after each SIGHUP, ``tick()`` every ``tick_s`` seconds
        (none when 0), the clock heartbeat that closes windows while no reading arrives."""
        next_tick = time.monotonic() + tick_s if tick_s > 0 else None
        while not self.stop.wait(0.2):
            if self.reload.is_set():
                self.reload.clear()
                reload()
            if next_tick is not None and time.monotonic() >= next_tick:
                next_tick = time.monotonic() + tick_s
                ticked(tick, self.on_fatal)


def ticked(tick: Callable[[], object], on_fatal: Callable[[str], None]) -> None:
    """The service's clock; a store that became unreachable stops the service (the
    commit thread says the same when it meets it first)."""
    from ingest.store.queries import StoreUnreachable

    try:
        tick()
    except StoreUnreachable as exc:
        on_fatal(f"{exc}; {exc.STOPPING}")


def close_service(service: Any, now_ms: int, voice: Voice) -> None:
    """Leave a snapshot on the way out; an unreachable store leaves none (a snapshot is a
    cache: the next start rebuilds from the store), said in one line."""
    from ingest.store.queries import StoreUnreachable

    try:
        service.close(now_ms)
    except StoreUnreachable as exc:
        voice.note(f"no snapshot left: {exc}")


def ended(voice: Voice, fatal: list[str], stats: object) -> int:
    """The exit after the drain: the fatal reasons (exit 1), or the stop summary (exit 0)."""
    if fatal:
        voice.err(fatal)
        return EXIT_FAIL
    voice.say(f"stopped: {stats}")
    return EXIT_OK


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
