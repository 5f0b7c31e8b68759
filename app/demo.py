"""``siltwatch demo``: the whole system on its embedded defaults, on a scripted storm.

No set-up: an in-process MQTT broker (amqtt), the ingest service for each of
the two reference sites (examples/), a SQLite store, and simulated stations
that publish each site's scripted storm week over MQTT in the wire format
(five minutes of data a message, the batch form of the schema). The detections run on event time, so the
week's alerts come out in seconds; each is printed as the people it is routed
to would get it and appended to a JSONL alert log. One malformed payload is
sent on purpose to show that a bad message is a counted, stored rejection that
does not stop the pipeline.

The demo lives in its own time (app/demo_clock.py): its clock starts at
the end of the week and runs on from there, so "now" in the console and the
messages is the demo's now. With ``--web`` the services keep running behind
the console (ticked every second, the stations sending a quiet day's
readings in the demo's time, app/demo_stations.py, and their status every
minute): an inspection or a site-log entry submitted in the console completes
its duty within seconds, a deadline that passes while you look raises its
alert, and no sensor goes offline.

Like the CLI, this module wires packages together; nothing else in
``siltwatch`` may.
"""

from __future__ import annotations

import secrets
import socket
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from alerts.acklinks import Links
from alerts.dispatch import Dispatcher
from alerts.messages import SiteLabel
from alerts.sinks import ConsoleSink, JsonlSink
from alerts.sms_preview import SmsPreview
from analytics.timeutil import MS_PER_MIN, from_ms
from app.demo_clock import DemoClock
from app.demo_stations import LiveStations, quiet_ms
from app.serving import Stopping
from console.book import ConsoleBook
from console.server import parse_listen
from ingest.mqtt.embedded_broker import EmbeddedBroker
from ingest.mqtt.session import BrokerSettings, MqttIngest
from ingest.recordings.csv_rows import RecordingError
from ingest.recordings.formats import read_csv_readings, read_inspections, read_site_log
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import SiteConfig, load_site
from siltwatch.configerrors import ConfigError
from siltwatch.naming import duty_name, names_of
from siltwatch.schema import (
    InspectionRecord,
    ReadingBatch,
    ReadingItem,
    SiteLogRecord,
    StationHealth,
    StationStatus,
    inspections_topic,
    reading_topic,
    site_log_topic,
    status_topic,
)
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import SiteEvent

SITES = ("lake-george", "lake-lure")
BATCH_MS = 5 * MS_PER_MIN  # well inside the engine's allowed lateness (15 min)
TICK_S = 1.0  # how often the services' clock ticks behind the console
STATUS_EVERY_S = 60.0  # the simulated stations' status interval (the edge agent's default)


def week_end_ms(sites: dict[str, SiteConfig], examples: Path) -> int:
    """The newest event time of the demo's recordings: where the demo's clock starts."""
    ends = [
        max(r.t for r in read_csv_readings(examples / f"{name}-storm.csv", site.sensors()))
        for name, site in sites.items()
    ]
    return max(ends)


def port_problem(host: str, port: int) -> str | None:
    """Why the console could not listen on ``host:port`` (checked before the week's
    run, not after it), or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def send_status(client: mqtt.Client, site: SiteConfig, now_ms: int) -> None:
    """Each station of the site says it is online, with its health, as the edge agent
    does every minute (edge/): station health is then known, not "unknown"."""
    for station in site.stations:
        status = StationStatus(
            site=site.site.id,
            station=station.id,
            state="online",
            time=from_ms(now_ms),
            firmware="demo",
            health=StationHealth(
                battery_v=12.7, cpu_temp_c=38.0, disk_free_mb=5200.0, backlog=0,
                dropped=0, quarantined=0, clock_synced=True, clock_offset_s=0.0,
            ),
        )  # fmt: skip
        client.publish(
            status_topic(site.site.id, station.id),
            status.model_dump_json().encode(),
            qos=1,
            retain=True,
        ).wait_for_publish(timeout=10)


def _publish_site(client: mqtt.Client, site: SiteConfig, examples: Path, name: str) -> int:
    """Publish the site's scripted week as its stations would after an LTE outage.

    Each station sends its readings oldest first, five minutes of data a
    message (the batch form of the wire schema, as a station on a power-saving
    LTE schedule does), with per-sensor sequence numbers; inspections go on the
    site's inspections topic and the site log on its log topic. Returns the number
    of messages sent.
    """
    sensors = site.sensors()
    station_of = site.station_of()
    readings = sorted(
        read_csv_readings(examples / f"{name}-storm.csv", sensors), key=lambda r: (r.t, r.sensor)
    )
    sid = site.site.id
    seq: dict[str, int] = defaultdict(int)
    batches: dict[tuple[str, int], list[ReadingItem]] = defaultdict(list)
    for r in readings:
        seq[r.sensor] += 1
        item = ReadingItem(
            sensor=r.sensor,
            time=from_ms(r.t),
            seq=seq[r.sensor],
            value=r.value,
            unit=sensors[r.sensor].unit,
        )
        batches[(station_of[r.sensor], r.t // BATCH_MS)].append(item)
    messages: list[tuple[int, str, bytes]] = []
    for (station, slot), items in batches.items():
        batch = ReadingBatch(site=sid, station=station, readings=items)
        messages.append(
            (
                slot * BATCH_MS,
                reading_topic(sid, station, items[0].sensor),
                batch.model_dump_json().encode(),
            )
        )
    for ins in read_inspections(examples / f"{name}-inspections.csv"):
        rec = InspectionRecord(
            site=sid, time=from_ms(ins.t), inspector=ins.inspector, duty=ins.duty
        )
        messages.append((ins.t, inspections_topic(sid), rec.model_dump_json().encode()))
    # The site log, as the field tablet (or `siltwatch log`) publishes it.
    for entry in read_site_log(examples / f"{name}-site-log.csv", [a.id for a in site.areas]):
        row = SiteLogRecord(
            site=sid,
            time=from_ms(entry.t),
            event=SiteEvent(entry.event),
            area=entry.area,
            by=entry.by,
            detail=entry.detail or None,
        )
        messages.append((entry.t, site_log_topic(sid), row.model_dump_json().encode()))
    messages.sort(key=lambda m: m[0])
    for _, topic, payload in messages:
        client.publish(topic, payload, qos=1).wait_for_publish(timeout=30)
    # One bad payload, on purpose: a counted, stored rejection that stops nothing.
    first = site.stations[0]
    client.publish(reading_topic(sid, first.id, first.sensors[0].id), b'{"value": "muddy"}', qos=1)
    return len(messages) + 1


DEMO_USER = "demo"
DEFAULT_WEB = "127.0.0.1:8080"  # where links point when the demo does not serve the console


def _links(book_secret: bytes, site: SiteConfig, base_url: str) -> Links:
    return Links(base_url, book_secret, site.site.id, tuple(c.name for c in site.contacts))


def run_demo(out: Path, *, examples: Path, web: str | None = None) -> int:
    """The scripted week of both reference sites; with ``web`` (HOST:PORT) the console is
    then served over the week's store, the services running behind it, until Ctrl-C or
    SIGTERM."""
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "alert-log.jsonl"
    db_path = out / "siltwatch.sqlite3"
    for stale in (log_path, db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
        stale.unlink(missing_ok=True)
    try:
        listen = parse_listen(web) if web is not None else parse_listen(DEFAULT_WEB)
        sites = {name: load_site(examples / f"{name}-site.toml") for name in SITES}
        clock = DemoClock(week_end_ms(sites, examples))
    except ValueError as exc:
        print(f"error: --web: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        return 1
    except RecordingError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        return 1
    busy = port_problem(*listen) if web is not None else None
    if busy is not None:
        print(f"error: --web {web}: {busy} (choose another, e.g. PORT=8081 make demo)",
              file=sys.stderr)  # fmt: skip
        return 1
    base_url = f"http://{listen[0]}:{listen[1]}"
    broker = EmbeddedBroker()
    broker.start()
    print("=" * 78)
    print("siltwatch demo — embedded defaults")
    print(f"  MQTT broker (amqtt, in-process): mqtt://{broker.host}:{broker.port}")
    print(f"  store (SQLite):                  {db_path.resolve()}")
    print(f"  alert log (JSONL):               {log_path.resolve()}")
    print("  stations: simulated, replaying a scripted storm week per reference site")
    print(
        f"  the demo's clock: starts at the end of the week, {from_ms(clock.now_ms()):%Y-%m-%d %H:%M}Z"
    )
    print(f"  SMS: each text printed as sent (links to {base_url}), with its segment count")
    print("=" * 78)
    store = SqliteStore(db_path)
    book = ConsoleBook(db_path)
    runs: list[_SiteRun] = []
    previews: list[SmsPreview] = []
    status = 0
    try:
        for name, site in sites.items():
            preview = SmsPreview(
                SiteLabel.of(site), _links(book.link_secret(), site, base_url), clock.seconds
            )
            previews.append(preview)
            # Each site's service on a connection of its own: the two sites' MQTT sessions
            # and the ticker write at the same time while the stations run on (one shared
            # sqlite3 connection fails with "SQL statements in progress").
            run = _SiteRun(name, site, SqliteStore(db_path), broker, clock, preview)
            runs.append(run)
            status |= run.publish_week(examples, log_path)
        for run in runs:
            engine = run.service.engine
            clock.quiet(
                quiet_ms(engine.station_idle_ms, engine.allowed_lateness_ms, run.live.step_ms())
            )
        for run in runs:
            run.settle(out)
        notes = sum(1 for _ in log_path.open(encoding="utf-8")) if log_path.exists() else 0
        counts = [n for p in previews for n in p.counts]
        print(
            f"\ndone: {notes} notifications in {log_path.resolve()}; "
            f"episodes and duties in {out.resolve()}/"
        )
        print(SmsPreview.summarise(counts))
        if web is not None and status == 0:
            status = _serve_console(sites, runs, book, db_path, listen, clock)
    finally:
        for run in runs:
            run.stop()
        book.close()
        store.close()
        broker.stop()
    return status


class _SiteRun:
    """One site of the demo: its service and MQTT ingest, and its simulated stations."""

    def __init__(
        self,
        name: str,
        site: SiteConfig,
        store: SqliteStore,
        broker: EmbeddedBroker,
        clock: DemoClock,
        preview: SmsPreview,
    ) -> None:
        self.name, self.site, self.store, self.broker = name, site, store, broker
        self.clock, self.preview = clock, preview
        self.sent = 0
        self.ingest: MqttIngest | None = None
        self.stations: mqtt.Client | None = None
        self.service: IngestService
        self.live: LiveStations

    def publish_week(self, examples: Path, log_path: Path) -> int:
        """The scripted week through MQTT; the exit status (1: it did not all arrive)."""
        info = self.site.site
        print(f"\n## {info.name or info.id} ({info.id}) — rule packs: {', '.join(info.rule_packs)}")
        dispatcher = Dispatcher(self.site, [ConsoleSink(), self.preview, JsonlSink(log_path)])
        self.service = IngestService(self.site, self.store, dispatcher)
        # amqtt speaks MQTT 3.1.1 only (clean_session=False keeps the session).
        settings = BrokerSettings(
            self.broker.host, self.broker.port, protocol=MQTTProtocolVersion.MQTTv311
        )
        self.ingest = MqttIngest(
            self.service,
            settings,
            clock_ms=self.clock.arrival_ms,
            client_id=f"siltwatch-demo-{info.id}",
        )
        self.ingest.start()
        if not self.ingest.subscribed.wait(10):
            print("error: the ingest service could not subscribe to the broker", file=sys.stderr)
            return 1
        self.stations = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=f"demo-stations-{info.id}"
        )
        self.stations.connect(self.broker.host, self.broker.port)
        self.stations.loop_start()
        try:
            self.sent = _publish_site(self.stations, self.site, examples, self.name)
            self.live = LiveStations(self.site, examples, self.name)
        except RecordingError as exc:
            for line in exc.lines:
                print(f"error: {line}", file=sys.stderr)
            return 1
        deadline = time.monotonic() + 120
        while self.service.stats.messages < self.sent and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.service.stats.messages < self.sent:
            print(
                f"error: only {self.service.stats.messages} of {self.sent} messages arrived "
                "within 120 s",
                file=sys.stderr,
            )
            return 1
        return 0

    def send_status(self) -> None:
        """The stations' status, as the edge agent sends it every minute."""
        if self.stations is not None:
            send_status(self.stations, self.site, self.clock.now_ms())

    def send_readings(self) -> int:
        """The stations' readings after their week, up to the service's clock
        (app/demo_stations.py); the number of messages sent."""
        if self.stations is None:
            return 0
        return self.live.publish_due(self.stations, self.clock.arrival_ms())

    def tick(self) -> None:
        self.service.tick(self.clock.arrival_ms())

    def settle(self, out: Path) -> None:
        """The week judged up to the demo's now (the stations on to their quiet day after
        it, their status sent); its alerts and duties written out and printed."""
        info, store, service = self.site.site, self.store, self.service
        expected = service.stats.messages
        # The catch-up a minute a round; one client, so the rounds arrive in this order.
        while not self.live.caught_up(self.clock.arrival_ms()):
            expected += self.send_readings()
        self.send_status()
        expected += len(self.site.stations)
        deadline = time.monotonic() + 30
        while service.stats.messages < expected and time.monotonic() < deadline:
            time.sleep(0.02)
        self.tick()
        s = service.stats
        print(
            f"\n## {info.name or info.id}: as of the demo's now, "
            f"{from_ms(self.clock.now_ms()):%Y-%m-%d %H:%M}Z\n"
            f"-> {s.readings_stored:,} readings stored, {s.duplicates} duplicates, "
            f"{s.rejected} rejected ({'; '.join(r for _, r in store.rejections()[-1:])}); "
            f"{len(store.alerts(info.id))} alert episodes, {len(store.duties(info.id))} duties; "
            + self.preview.summary()
        )
        names, zone = names_of(self.site), info.zone
        with (out / f"{self.name}-duties.jsonl").open("w", encoding="utf-8") as fh:
            for duty in store.duties(info.id):
                fh.write(duty.model_dump_json() + "\n")
                # People's words and the site's time, as the console and the texts say it.
                what = duty_name(duty.kind, duty.reason, duty.subject, names, zone)
                state = (
                    "open"
                    if duty.completed_at is None
                    else "done " + local_time(duty.completed_at, zone)
                )
                print(f"   {what}: due {local_time(duty.due_at, zone)} ({state}) — {duty.rule}")
        with (out / f"{self.name}-alerts.jsonl").open("w", encoding="utf-8") as fh:
            for alert in store.alerts(info.id):
                fh.write(alert.model_dump_json() + "\n")

    def stop(self) -> None:
        self._stop_clients()
        self.store.close()

    def _stop_clients(self) -> None:
        if self.stations is not None:
            self.stations.loop_stop()
            self.stations.disconnect()
            self.stations = None
        if self.ingest is not None:
            self.ingest.stop()
            self.ingest = None


class _Ticker:
    """The services' clock behind the console: a tick every second, the stations' status
    every minute, in the demo's time. One failing tick is printed, not fatal."""

    def __init__(self, runs: list[_SiteRun], jobs: Sequence[tuple[float, Callable[[], object]]]):
        self.runs = runs
        self.jobs = jobs
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="demo-ticker", daemon=True)

    def _run(self) -> None:
        due = [time.monotonic() + every for every, _ in self.jobs]
        while not self.stop.wait(0.2):
            now = time.monotonic()
            for i, (every, job) in enumerate(self.jobs):
                if now >= due[i]:
                    due[i] = now + every
                    try:
                        job()
                    except Exception as exc:  # the demo goes on; the error is shown
                        print(f"error: demo clock: {exc}", file=sys.stderr, flush=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def _serve_console(
    sites: dict[str, SiteConfig],
    runs: list[_SiteRun],
    book: ConsoleBook,
    db_path: Path,
    listen: tuple[str, int],
    clock: DemoClock,
) -> int:
    """The web console over the week's store until Ctrl-C or SIGTERM, the services running
    behind it in the demo's time; a demo operator account (a fresh random password,
    printed) may act on both sites."""
    from console.app import make_app
    from console.desk import ServiceDesk, SiteDesks
    from console.server import ConsoleServer

    password = secrets.token_urlsafe(12)
    book.accounts.add(DEMO_USER, password, clock.now_ms())
    for site in sites.values():
        book.accounts.grant(DEMO_USER, site.site.id, "operator")
    desk = SiteDesks({r.site.site.id: ServiceDesk(r.service, clock.arrival_ms) for r in runs})
    app = make_app({s.site.id: s for s in sites.values()}, db_path, desk=desk, clock=clock.seconds)
    server = ConsoleServer(app, *listen)
    try:
        server.start()
    except OSError as exc:
        print(f"error: --web {listen[0]}:{listen[1]}: cannot listen: {exc}", file=sys.stderr)
        app.state.console.close()
        return 1
    ticker = _Ticker(
        runs,
        [(TICK_S, r.send_readings) for r in runs]
        + [(TICK_S, r.tick) for r in runs]
        + [(STATUS_EVERY_S, r.send_status) for r in runs],
    )
    ticker.start()
    stopping = Stopping(Stopping.ENDING)
    stopping.install()
    print("=" * 78)
    print(f"web console: {server.url}/")
    print(f"  log in as {DEMO_USER!r} with password {password!r} (operator of both sites)")
    print(f"  the demo's time runs on from {from_ms(clock.anchor_ms):%Y-%m-%d %H:%M}Z; "
          "what you record there is judged within seconds")  # fmt: skip
    print("  serving until Ctrl-C")
    print("=" * 78, flush=True)
    try:
        stopping.wait()
    finally:
        stopping.restore()
        ticker.close()
        server.stop()
        app.state.console.close()
    print("web console stopped", flush=True)
    return 0
