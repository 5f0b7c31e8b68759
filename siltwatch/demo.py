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

import sys
import time
from collections import defaultdict
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from alerts.dispatch import Dispatcher
from alerts.sinks import ConsoleSink, JsonlSink
from analytics.timeutil import MS_PER_MIN, from_ms
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


def run_demo(out: Path, *, examples: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "alert-log.jsonl"
    db_path = out / "siltwatch.sqlite3"
    for stale in (log_path, db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
        stale.unlink(missing_ok=True)
    try:
        sites = {name: load_site(examples / f"{name}-site.toml") for name in SITES}
    except ConfigError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        return 1
    broker = EmbeddedBroker()
    broker.start()
    print("=" * 78)
    print("siltwatch demo — embedded defaults")
    print(f"  MQTT broker (amqtt, in-process): mqtt://{broker.host}:{broker.port}")
    print(f"  store (SQLite):                  {db_path.resolve()}")
    print(f"  alert log (JSONL):               {log_path.resolve()}")
    print("  stations: simulated, replaying a scripted storm week per reference site")
    print("=" * 78)
    store = SqliteStore(db_path)
    status = 0
    try:
        for name, site in sites.items():
            info = site.site
            print(
                f"\n## {info.name or info.id} ({info.id}) — rule packs: {', '.join(info.rule_packs)}"
            )
            dispatcher = Dispatcher(site, [ConsoleSink(), JsonlSink(log_path)])
            service = IngestService(site, store, dispatcher)
            # amqtt speaks MQTT 3.1.1 only (clean_session=False keeps the session).
            settings = BrokerSettings(
                broker.host, broker.port, protocol=MQTTProtocolVersion.MQTTv311
            )
            ingest = MqttIngest(
                service, settings, clock_ms=_now_ms, client_id=f"siltwatch-demo-{info.id}"
            )
            ingest.start()
            if not ingest.subscribed.wait(10):
                print(
                    "error: the ingest service could not subscribe to the broker", file=sys.stderr
                )
                return 1
            station = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"demo-stations-{info.id}")
            station.connect(broker.host, broker.port)
            station.loop_start()
            try:
                sent = _publish_site(station, site, examples, name)
            except RecordingError as exc:
                for line in exc.lines:
                    print(f"error: {line}", file=sys.stderr)
                return 1
            deadline = time.monotonic() + 120
            while service.stats.messages < sent and time.monotonic() < deadline:
                time.sleep(0.05)
            station.loop_stop()
            station.disconnect()
            ingest.stop()
            last = max(
                (r.t for r in store.readings(info.id, next(iter(site.sensors())))), default=None
            )
            service.finish(last)
            s = service.stats
            if s.messages < sent:
                print(
                    f"error: only {s.messages} of {sent} messages arrived within 120 s",
                    file=sys.stderr,
                )
                status = 1
            print(
                f"-> {s.readings_stored:,} readings stored, {s.duplicates} duplicates, {s.rejected} rejected "
                f"({'; '.join(r for _, r in store.rejections()[-1:])}); "
                f"{len(store.alerts(info.id))} alert episodes, {len(store.duties(info.id))} duties"
            )
            with (out / f"{name}-duties.jsonl").open("w", encoding="utf-8") as fh:
                for duty in store.duties(info.id):
                    fh.write(duty.model_dump_json() + "\n")
                    state = (
                        "open"
                        if duty.completed_at is None
                        else f"done {duty.completed_at:%Y-%m-%d %H:%M}Z"
                    )
                    print(
                        f"   duty: {duty.kind} ({duty.reason}) of {duty.subject}, due "
                        f"{duty.due_at:%Y-%m-%d %H:%M}Z ({state}) — {duty.rule}"
                    )
            with (out / f"{name}-alerts.jsonl").open("w", encoding="utf-8") as fh:
                for alert in store.alerts(info.id):
                    fh.write(alert.model_dump_json() + "\n")
    finally:
        store.close()
        broker.stop()
    notes = sum(1 for _ in log_path.open(encoding="utf-8")) if log_path.exists() else 0
    print(
        f"\ndone: {notes} notifications in {log_path.resolve()}; episodes and duties in {out.resolve()}/"
    )
    return status
