"""``siltwatch serve`` for many sites: ``--sites DIR``, several ``--site``, ``--partition k/N``.

One process, one MQTT session, one store, one engine per site
(ingest/sites.py ``SiteRouter``). Why a module of its own: besides the wiring
of app/serving.py it owns what only a fleet has — which sites this worker
owns (``--partition``: the site's stable hash mod N, so N workers split the
sites without talking to each other), and SIGHUP, which re-reads the site
files: an added site starts (its engine rebuilt from the store, then
subscribed), a removed one stops (unsubscribed, a snapshot left), a changed one
gets a new engine (rebuilt from the store when a rule changed), the others are
not touched, and a file that no longer loads is reported while its site keeps
the configuration it had.

``--notify`` delivers every site's alerts to that site's own people, one
delivery per site with its own outbox file and worker thread, following the
sites through SIGHUP (app/fleet_notify.py). The InfluxDB mirror
(``--influx-url``/``--influx-v2-url``) mirrors every site it serves, one mirror
per site behind one writer and one flusher thread (ingest/influx/fleet.py). The web console (``--http``) shows the sites served at
the start; /metrics gives one sample per site of every metric.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app import serving
from siltwatch.configerrors import ConfigError
from siltwatch.site_files import SiteFiles, read_site_files, site_paths


def fleet_client_id(partition: Any) -> str:
    """The MQTT client id of a fleet worker: stable across restarts and site changes,
    so the broker's persistent session (and what it queued) survives both."""
    if partition is None:
        return "siltwatch-ingest-fleet"
    return f"siltwatch-ingest-part-{partition.index}-of-{partition.count}"


def _shown(ids: list[str]) -> str:
    if len(ids) <= 6:
        return ", ".join(repr(i) for i in ids)
    return ", ".join(repr(i) for i in ids[:4]) + f" and {len(ids) - 4} more"


class _Fleet:
    """The running fleet: its router, MQTT session and the configuration each site runs."""

    def __init__(self, args: argparse.Namespace, voice: serving.Voice, partition: Any) -> None:
        self.args, self.voice, self.partition = args, voice, partition
        self.router: Any = None
        self.ingest: Any = None
        self.configs: dict[str, Any] = {}  # site id -> the SiteConfig it runs
        self.paths: dict[str, Path] = {}  # site id -> its file
        self.mirrors: Any = None  # ingest/influx/fleet.py FleetMirrors, with --influx-…
        self.deliveries: Any = None  # app/fleet_notify.py FleetDeliveries, with --notify
        self.draining: Any = None  # the same, while a standby waits (app/serving.py)

    def read(self) -> SiteFiles:
        """The site files now (ConfigError for a missing --sites folder)."""
        return read_site_files(site_paths(self.args.site or [], self.args.sites or []))

    def mine(self, found: SiteFiles) -> dict[str, Any]:
        return {
            sid: site
            for sid, site in found.sites.items()
            if self.partition is None or self.partition.owns(sid)
        }

    def start_site(self, site: Any, path: Path) -> None:
        serving.readmit_held(self.router.add(site), self.voice)
        self.configs[site.site.id] = site
        self.paths[site.site.id] = path

    def _refusal(self, sid: str, path: Path, new: Any, now: int) -> str | None:
        """Why the reload of ``sid`` is refused (ingest/reload_guard.py), or None."""
        from ingest.reload_guard import RECENT_MS, reload_refusal

        if getattr(self.args, "allow_orphaning", False):
            return None
        recent = self.router.store.recent_sensors(sid, now - RECENT_MS)
        return reload_refusal(path, self.configs[sid], new, recent)

    def reload(self) -> None:
        """SIGHUP: apply what changed in the site files (see the module docstring)."""
        from ingest.mqtt.session import MqttStartError
        from ingest.sites import changed_sites

        voice = self.voice
        try:
            found = self.read()
        except ConfigError as exc:
            voice.err([*exc.lines, "reload: nothing changed"])
            return
        for lines in found.problems.values():
            voice.err([*lines, "reload: that file's site keeps the configuration it runs"])
        kept = {sid for sid, path in self.paths.items() if path in found.problems}
        new = self.mine(found)
        new.update({sid: self.configs[sid] for sid in kept if sid not in new})
        added, removed, changed = changed_sites(self.configs, new)
        now = serving.now_ms()
        for sid in list(changed):
            refusal = self._refusal(sid, found.paths[sid], new[sid], now)
            if refusal is not None:
                voice.err([refusal])
                changed.remove(sid)
        for sid in removed:
            self.ingest.remove_site(sid)
            self.router.remove(sid, now)
            self._drop_site_parts(sid)
            self.configs.pop(sid)
            self.paths.pop(sid, None)
        for sid in changed:
            voice.note(f"site {sid}: configuration changed in {found.paths[sid]}; new engine")
            serving.readmit_held(self.router.replace(new[sid], now), voice)
            self.configs[sid] = new[sid]
            self.paths[sid] = found.paths[sid]
        for sid in list(added):
            self.start_site(new[sid], found.paths[sid])
            try:
                self.ingest.add_site(sid)
            except MqttStartError as exc:
                voice.err([str(exc)])
                self.router.remove(sid, now)
                self._drop_site_parts(sid)
                self.configs.pop(sid)
                self.paths.pop(sid)
                added.remove(sid)
        unchanged = len(self.configs) - len(added) - len(changed)
        voice.say(
            f"reloaded the site files: added {_shown(added) or 'none'}; removed "
            f"{_shown(removed) or 'none'}; changed {_shown(changed) or 'none'}; "
            f"{unchanged} unchanged"
        )

    def _drop_site_parts(self, site_id: str) -> None:
        """The site's mirror and delivery, after its service has stopped (its last events
        are queued, its last alerts in its outbox)."""
        if self.mirrors is not None:
            self.mirrors.remove(site_id)
        if self.deliveries is not None:
            self.deliveries.remove(site_id)


class _FleetDesk:
    """The console's desk over the router: the topic's site picks that site's current service
    (a reload may have replaced it)."""

    def __init__(self, router: Any) -> None:
        self.router = router

    def submit(self, topic: str, payload: bytes) -> None:
        from console.desk import ServiceDesk, for_site_of

        service = for_site_of(topic, self.router.service_for, "this service")
        ServiceDesk(service, serving.now_ms).submit(topic, payload)


def serve_fleet(
    args: argparse.Namespace,
    voice: serving.Voice,
    influx_writer: Callable[[argparse.Namespace], Any] | None = None,
) -> int:
    """Check the options and site files, open the store, then :func:`_run_fleet`.

    ``influx_writer`` is cli.py's builder of the InfluxDB writer the options ask for;
    the sites' mirrors share it (:func:`_fleet_mirrors`).
    """
    from ingest.sites import parse_partition

    if not args.site and not args.sites:
        voice.err(["give --site SITE.toml (once or more) or --sites DIR"])
        return serving.EXIT_FAIL

    def read() -> tuple[Any, Any, serving.People, serving.Endpoints]:
        partition = None if args.partition is None else parse_partition(args.partition)
        # --notify's file is read by serving.People: a ConfigError
        return (
            partition,
            serving.broker_settings(args),
            serving.People(args, None),
            serving.Endpoints(args),
        )

    started = voice.checked(read)
    if started is None:
        return serving.EXIT_FAIL
    partition, broker, people, endpoints = started
    fleet = _Fleet(args, voice, partition)
    try:
        found = fleet.read()
    except ConfigError as exc:
        voice.err(exc.lines)
        return serving.EXIT_FAIL
    if found.problems:
        voice.err(found.lines)
        return serving.EXIT_FAIL
    if not found.sites:
        voice.err([f"no site files in {', '.join(args.sites or args.site)}"])
        return serving.EXIT_FAIL
    try:
        fleet.mirrors = _fleet_mirrors(args, influx_writer)
    except ValueError as exc:
        voice.err([str(exc)])
        return serving.EXIT_FAIL
    claim = "fleet" if partition is None else f"partition {partition}"
    who = f"siltwatch serve for {len(found.sites)} sites"

    def drain() -> None:
        """A standby: its sites' outboxes are sent while it waits (no daily digests: the
        worker that holds the partition sends those)."""
        fleet.draining = _fleet_deliveries(args, people, digests=False)
        for site in fleet.mine(found).values():
            fleet.draining.for_site(site)

    store = serving.store_and_people(args, who, claim, people, voice, drain)
    if store is None:
        return serving.EXIT_FAIL
    return _run_fleet(fleet, found, store, broker, people, endpoints)


def _fleet_mirrors(
    args: argparse.Namespace,
    influx_writer: Callable[[argparse.Namespace], Any] | None,
) -> Any:
    """The fleet's InfluxDB mirrors when an --influx-… option asks for them, else None."""
    writer = None if influx_writer is None else influx_writer(args)  # ValueError: bad options
    if writer is None:
        return None
    from ingest.influx.fleet import FleetMirrors

    return FleetMirrors(writer, args.db)


def _fleet_deliveries(
    args: argparse.Namespace, people: serving.People, *, digests: bool = True
) -> Any:
    """With --notify, every site's delivery (app/fleet_notify.py), over the book
    ``people`` opened and one shared reader of the store for the digests (none with
    ``digests`` False); else None."""
    if people.notify is None:
        return None
    from alerts.digest import DigestSource
    from alerts.notify_config import Delivery, Notify
    from app.fleet_notify import FleetDeliveries, LockedDigests
    from ingest.store.from_url import open_store

    def make(site: Any, notify: Notify, reader: DigestSource) -> Delivery:
        delivery: Delivery = people.delivery_for(site, notify, reader if digests else None, args.db)
        return delivery

    return FleetDeliveries(people.notify, make, LockedDigests(open_store(args.db)))


def _run_fleet(
    fleet: _Fleet, found: SiteFiles, store: Any, broker: Any, people: serving.People, endpoints: Any
) -> int:
    from alerts.dispatch import Dispatcher
    from alerts.sinks import ConsoleSink, JsonlSink, Sink
    from ingest.influx.mirror import EventFanOut
    from ingest.mqtt.alert_topic import AlertTopic, ClientPublisher
    from ingest.mqtt.session import MqttIngest, MqttStartError
    from ingest.ops.health import ServiceParts
    from ingest.service import EventHandler, IngestService
    from ingest.sites import SiteRouter, rebuild_in_parallel

    args, voice = fleet.args, fleet.voice
    sinks: list[Sink] = [ConsoleSink(), JsonlSink(Path(args.alert_log))]

    mirrors = fleet.mirrors
    if fleet.draining is not None:  # it stood by: its outboxes go on from here
        fleet.draining.close()
        fleet.draining = None
    fleet.deliveries = deliveries = _fleet_deliveries(args, people)
    publisher = ClientPublisher()  # each site's siltwatch/v1/{site}/alerts/{id}, once connected
    rebuilt: dict[str, Any] = {}  # site id -> its engine rebuilt by a worker process, once

    def build(site: Any, lock: Any) -> IngestService:
        # A changed site's delivery is replaced here, after its old service has closed.
        own = [] if deliveries is None else [deliveries.for_site(site).sink]
        topic = AlertTopic(site.site.id, publisher)
        handler: EventHandler = EventFanOut([Dispatcher(site, [*sinks, *own]), topic])
        mirror = None if mirrors is None else mirrors.for_site(site)
        if mirror is not None:
            handler = EventFanOut([handler, mirror])
        service: IngestService = serving.site_service(
            args, site, store, handler, mirror, voice, lock, rebuilt.pop(site.site.id, None)
        )
        topic.sync(store.open_alerts(site.site.id))  # a site added by a reload, once connected
        return service

    parts = ServiceParts(
        "", broker_url=broker.url, site_mirrors=mirrors, site_deliveries=deliveries
    )
    if mirrors is not None:
        mirrors.start()
        parts.threads["influx-mirror"] = lambda: bool(mirrors.alive)
        voice.say(f"mirroring every site to {mirrors.what}")
    fleet.router = router = SiteRouter(store, build)
    stopping = serving.Stopping()
    stopping.install()
    ingest = None
    try:
        try:
            endpoints.start(parts, people, voice)
        except OSError as exc:
            voice.err([str(exc)])
            return serving.EXIT_FAIL
        mine = fleet.mine(found)
        rebuilt.update(  # the sites without a usable snapshot, across processes
            rebuild_in_parallel(
                [mine[sid] for sid in sorted(mine)],
                args.db,
                now_ms=serving.now_ms(),
                allowed_lateness_s=args.allowed_lateness_s,
                say=voice.note,
            )
        )
        for sid in sorted(mine):
            fleet.start_site(mine[sid], found.paths[sid])
        parts.sites = router
        ingest = MqttIngest(
            router,
            broker,
            clock_ms=serving.now_ms,
            client_id=args.client_id or fleet_client_id(fleet.partition),
            take_over=args.take_over,
            on_fatal=stopping.on_fatal,
            fleet=True,
        )
        if not serving.connect(ingest, MqttStartError, parts, voice):
            ingest = None
            return serving.EXIT_FAIL
        fleet.ingest = ingest
        publisher.client = ingest.client
        for sid in sorted(fleet.configs):  # the store is the truth: the open episodes again
            AlertTopic(sid, publisher).sync(store.open_alerts(sid))
        ingest.subscribed.wait(10.0)  # the banner means: subscribed, nothing is missed
        console_url = people.serve_console_of(dict(fleet.configs), args.db, _FleetDesk(router))
        voice.say(_banner(fleet, found, broker, console_url, endpoints.url))
        stopping.run(args.tick_s, fleet.reload, lambda: router.tick(serving.now_ms()))
    finally:
        parts.stopping = True
        stopping.restore()
        if ingest is not None:
            ingest.stop()
        router.close(serving.now_ms())
        if deliveries is not None:
            deliveries.close()  # undelivered messages stay in each site's outbox
        store.close()
        if mirrors is not None:
            mirrors.close()
        endpoints.stop()
        people.close()
    return serving.ended(voice, stopping.fatal, router.stats)


def _banner(
    fleet: _Fleet, found: SiteFiles, broker: Any, console_url: str | None, metrics: str | None
) -> str:
    args, ids = fleet.args, sorted(fleet.configs)
    part = "" if fleet.partition is None else f", partition {fleet.partition}"
    if ids:
        what = f"siltwatch serving sites {_shown(ids)} ({len(ids)} of {len(found.sites)}{part})"
    else:
        what = (
            f"siltwatch serving sites: none — partition {fleet.partition} owns none of the "
            f"{len(found.sites)} sites; it waits for SIGHUP or more site files"
        )
    return (
        f"{what} from {broker.url} as {fleet.ingest.client_id}; store {fleet.router.store.where}; "
        f"alert log {args.alert_log}"
        + (f"; alerts by {fleet.deliveries.describe()}" if fleet.deliveries else "")
        + (f"; web console {console_url}" if console_url else "")
        + (f"; metrics {metrics}/metrics" if metrics else "")
        + "; Ctrl-C or SIGTERM to stop, SIGHUP to re-read the site files"
    )
