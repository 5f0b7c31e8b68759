"""``siltwatch demo``: the whole system on its embedded defaults, on a scripted storm.

No set-up: an in-process MQTT broker (amqtt), the ingest service for each of
the two reference sites (examples/), a SQLite store, and simulated stations
that publish each site's scripted storm week over MQTT in the wire format
(five minutes of data a message, the batch form of the schema). The detections run on event time, so the
week's alerts come out in seconds; each is printed as the people it is routed
to would get it and appended to a JSONL alert log. One malformed payload is
sent on purpose to show that a bad message is a counted, stored rejection that
does not stop the pipeline.

Like the CLI, this module wires packages together; nothing else in
``siltwatch`` may.
"""

from __future__ import annotations

import secrets
import signal
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from alerts.acklinks import Links
from alerts.dispatch import Dispatcher
from alerts.messages import SiteLabel
from alerts.sinks import ConsoleSink, JsonlSink
from alerts.sms_preview import SmsPreview
from analytics.timeutil import MS_PER_MIN, from_ms
from console.book import ConsoleBook
from console.server import parse_listen
from ingest.broker import EmbeddedBroker
from ingest.mqtt_ingest import BrokerSettings, MqttIngest
from ingest.recording import RecordingError, read_csv_readings, read_inspections, read_site_log
from ingest.service import IngestService
from ingest.store import SqliteStore
from siltwatch.config import SiteConfig, load_site
from siltwatch.configerrors import ConfigError
from siltwatch.schema import (
    InspectionRecord,
    ReadingBatch,
    ReadingItem,
    SiteLogRecord,
    inspections_topic,
    reading_topic,
    site_log_topic,
)
from siltwatch.vocabulary import SiteEvent

SITES = ("lake-george", "lake-lure")
BATCH_MS = 5 * MS_PER_MIN  # well inside the engine's allowed lateness (15 min)


def _now_ms() -> int:
    return int(time.time() * 1000)


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
    then served over the week's store until Ctrl-C or SIGTERM."""
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "alert-log.jsonl"
    db_path = out / "siltwatch.sqlite3"
    for stale in (log_path, db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
        stale.unlink(missing_ok=True)
    try:
        listen = parse_listen(web) if web is not None else parse_listen(DEFAULT_WEB)
        sites = {name: load_site(examples / f"{name}-site.toml") for name in SITES}
    except ValueError as exc:
        print(f"error: --web: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
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
    print(f"  SMS: each text printed as sent (links to {base_url}), with its segment count")
    print("=" * 78)
    store = SqliteStore(db_path)
    book = ConsoleBook(db_path)
    services: dict[str, IngestService] = {}
    previews: list[SmsPreview] = []
    status = 0
    try:
        for name, site in sites.items():
            preview = SmsPreview(
                SiteLabel.of(site),
                _links(book.link_secret(), site, base_url),
            )
            previews.append(preview)
            failed, services[site.site.id] = _run_site(
                name, site, store, broker, examples, out, log_path, preview
            )
            status |= failed
        broker.stop()
        notes = sum(1 for _ in log_path.open(encoding="utf-8")) if log_path.exists() else 0
        counts = [n for p in previews for n in p.counts]
        print(
            f"\ndone: {notes} notifications in {log_path.resolve()}; "
            f"episodes and duties in {out.resolve()}/"
        )
        print(SmsPreview.summarise(counts))
        if web is not None and status == 0:
            status = _serve_console(sites, services, book, db_path, listen)
    finally:
        book.close()
        store.close()
        broker.stop()
    return status


def _run_site(
    name: str,
    site: SiteConfig,
    store: SqliteStore,
    broker: EmbeddedBroker,
    examples: Path,
    out: Path,
    log_path: Path,
    preview: SmsPreview,
) -> tuple[int, IngestService]:
    """One site's scripted week through MQTT, its alerts and duties written out; (exit
    status, the site's service, which the console's field desk then writes through)."""
    info = site.site
    print(f"\n## {info.name or info.id} ({info.id}) — rule packs: {', '.join(info.rule_packs)}")
    dispatcher = Dispatcher(site, [ConsoleSink(), preview, JsonlSink(log_path)])
    service = IngestService(site, store, dispatcher)
    # amqtt speaks MQTT 3.1.1 only (clean_session=False keeps the session).
    settings = BrokerSettings(broker.host, broker.port, protocol=MQTTProtocolVersion.MQTTv311)
    ingest = MqttIngest(service, settings, clock_ms=_now_ms, client_id=f"siltwatch-demo-{info.id}")
    ingest.start()
    if not ingest.subscribed.wait(10):
        print("error: the ingest service could not subscribe to the broker", file=sys.stderr)
        return 1, service
    station = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"demo-stations-{info.id}")
    station.connect(broker.host, broker.port)
    station.loop_start()
    try:
        sent = _publish_site(station, site, examples, name)
    except RecordingError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        return 1, service
    deadline = time.monotonic() + 120
    while service.stats.messages < sent and time.monotonic() < deadline:
        time.sleep(0.05)
    station.loop_stop()
    station.disconnect()
    ingest.stop()
    last = max((r.t for r in store.readings(info.id, next(iter(site.sensors())))), default=None)
    service.finish(last)
    s = service.stats
    status = 0
    if s.messages < sent:
        print(f"error: only {s.messages} of {sent} messages arrived within 120 s", file=sys.stderr)
        status = 1
    print(
        f"-> {s.readings_stored:,} readings stored, {s.duplicates} duplicates, {s.rejected} rejected "
        f"({'; '.join(r for _, r in store.rejections()[-1:])}); "
        f"{len(store.alerts(info.id))} alert episodes, {len(store.duties(info.id))} duties; "
        + preview.summary()
    )
    with (out / f"{name}-duties.jsonl").open("w", encoding="utf-8") as fh:
        for duty in store.duties(info.id):
            fh.write(duty.model_dump_json() + "\n")
            state = (
                "open" if duty.completed_at is None else f"done {duty.completed_at:%Y-%m-%d %H:%M}Z"
            )
            print(
                f"   duty: {duty.kind} ({duty.reason}) of {duty.subject}, due "
                f"{duty.due_at:%Y-%m-%d %H:%M}Z ({state}) — {duty.rule}"
            )
    with (out / f"{name}-alerts.jsonl").open("w", encoding="utf-8") as fh:
        for alert in store.alerts(info.id):
            fh.write(alert.model_dump_json() + "\n")
    return status, service


def _serve_console(
    sites: dict[str, SiteConfig],
    services: dict[str, IngestService],
    book: ConsoleBook,
    db_path: Path,
    listen: tuple[str, int],
) -> int:
    """The web console over the week's store until Ctrl-C or SIGTERM; a demo operator
    account (a fresh random password, printed) may act on both sites."""
    from console.app import make_app
    from console.desk import ServiceDesk, SiteDesks
    from console.server import ConsoleServer

    password = secrets.token_urlsafe(12)
    now = _now_ms()
    book.accounts.add(DEMO_USER, password, now)
    for site in sites.values():
        book.accounts.grant(DEMO_USER, site.site.id, "operator")
    desk = SiteDesks({sid: ServiceDesk(service, _now_ms) for sid, service in services.items()})
    app = make_app({s.site.id: s for s in sites.values()}, db_path, desk=desk)
    server = ConsoleServer(app, *listen)
    try:
        server.start()
    except OSError as exc:
        print(f"error: --web {listen[0]}:{listen[1]}: cannot listen: {exc}", file=sys.stderr)
        app.state.console.close()
        return 1
    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda _s, _f: stop.set())
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    print("=" * 78)
    print(f"web console: {server.url}/")
    print(f"  log in as {DEMO_USER!r} with password {password!r} (operator of both sites)")
    print("  serving until Ctrl-C")
    print("=" * 78, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
        app.state.console.close()
    print("web console stopped", flush=True)
    return 0
