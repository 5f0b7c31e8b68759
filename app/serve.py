"""``siltwatch serve``: the command's options, and the live service's wiring for one site.

Several sites (``--sites``, more than one ``--site``, ``--partition``) are
app/serve_fleet.py's; what both share (start-up checks, the store's claim,
the people in the loop, the endpoints, the orderly stop) is app/serving.py's,
so this module and the fleet's import that one and not each other's insides.
Once running, SIGTERM (a container's stop) and SIGINT (Ctrl-C) both drain:
what has arrived is committed and acknowledged, late data is applied, a
snapshot is left, and the exit code is 0.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.serve_fleet import serve_fleet
from app.serving import (
    EXIT_FAIL,
    Endpoints,
    People,
    Stopping,
    Voice,
    broker_settings,
    close_service,
    connect,
    ended,
    now_ms,
    readmit_held,
    site_service,
    store_and_people,
)
from siltwatch.configerrors import ConfigError


def cmd_serve(args: argparse.Namespace, influx_writer: Callable[[argparse.Namespace], Any]) -> int:
    """Run the live service for one site until SIGTERM/SIGINT; 1 when it cannot start.

    Several sites (``--sites``, more than one ``--site``, ``--partition``) are
    app/serve_fleet.py's.
    """
    from ingest.mqtt.session import MqttIngest, MqttStartError
    from siltwatch.config import load_site
    from siltwatch.logjson import configure_logging

    configure_logging(json_lines=args.log_json)
    voice = Voice(args.log_json)
    sites = list(args.site or [])
    if args.sites or args.partition is not None or len(sites) != 1:
        return serve_fleet(args, voice, influx_writer)

    def read() -> tuple[Any, People, Endpoints]:
        site = load_site(Path(sites[0]))
        return site, People(args, site), Endpoints(args)

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


class _Wiring:
    """What ``cmd_serve`` checked and opened, handed to :func:`_run` in one piece."""

    def __init__(
        self,
        args: argparse.Namespace,
        site: Any,
        store: Any,
        broker: Any,
        people: People,
        endpoints: Endpoints,
        voice: Voice,
    ) -> None:
        self.args, self.site, self.store, self.broker = args, site, store, broker
        self.people, self.endpoints, self.voice = people, endpoints, voice


def _with_acks(mirror: Any, book: Any, db: Path | str) -> Any:
    """The mirror, with the book's acknowledgements copied into it for Grafana's alert
    table (ingest/influx/acks.py) when people are in the loop (a book is open); the
    alerts are read on a connection of the flusher's own."""
    if book is None:
        return mirror
    from ingest.influx.acks import AckMirror
    from ingest.store.from_url import open_store_read_only

    return AckMirror(mirror, book, open_store_read_only(db))


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
    flushed: Any = None
    if mirror is not None:
        from ingest.influx.mirror import MirrorFlusher

        dispatcher = EventFanOut([dispatcher, mirror])
        flushed = _with_acks(mirror, people.book, args.db)
        flusher = MirrorFlusher(flushed)
        flusher.start()
        parts.threads["influx-mirror"] = lambda: flusher.alive
        voice.say(f"mirroring to {mirror.writer.what}")
    stopping = Stopping()

    def dispatch_for(new_site: Any) -> EventHandler:
        handler: EventHandler = Dispatcher(new_site, sinks)
        if mirror is not None:
            from ingest.influx.mirror import EventFanOut

            handler = EventFanOut([handler, mirror])
        return handler

    stopping.install()
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
            clock_ms=now_ms,
            client_id=args.client_id,
            take_over=args.take_over,
            on_fatal=stopping.on_fatal,
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
        readmit_held(service, voice)

        def reload() -> None:
            nonlocal service
            service = reload_one_site(args, service, ingest, dispatch_for, voice)
            parts.service = service

        stopping.run(args.tick_s, reload, lambda: service.tick(now_ms()))
    finally:
        parts.stopping = True  # /readyz: not ready from the first moment of the stop
        stopping.restore()
        if ingest is not None:
            ingest.stop()
        if service is not None:
            close_service(service, now_ms(), voice)
        store.close()
        if flusher is not None:
            flusher.stop()
            flushed.close()  # the mirror (and the acknowledgements' read connection)
        w.endpoints.stop()
        people.close()
    return ended(voice, stopping.fatal, service.stats if service else "")


def reload_one_site(
    args: argparse.Namespace,
    service: Any,
    ingest: Any,
    dispatch_for: Callable[[Any], Any],
    voice: Voice,
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
    now = now_ms()
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
    readmit_held(fresh, voice)
    return fresh


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


def add_site_files_options(p: argparse.ArgumentParser, *, site: str, sites: str) -> None:
    """``--site SITE.toml`` (repeatable) and ``--sites DIR`` (every site file in DIR): the
    sites a command over one site or a fleet reads (``serve``, ``console``), with the
    command's own ``site`` and ``sites`` help."""
    p.add_argument("--site", action="append", metavar="SITE.toml", help=site)
    p.add_argument("--sites", action="append", metavar="DIR", help=sites)


def add_serve_options(p: argparse.ArgumentParser) -> None:
    """The options of ``siltwatch serve`` (cli.py adds the InfluxDB group)."""
    add_site_files_options(
        p,
        site="a site configuration (repeat it to serve several sites in one process)",
        sites="serve every site file (*.toml with a [site] table) in DIR; SIGHUP re-reads "
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
