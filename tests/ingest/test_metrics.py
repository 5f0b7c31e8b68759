"""``serve --metrics``: what Prometheus scrapes is what was published, and what the store holds.

The live test runs the real ``siltwatch serve`` against a real Mosquitto with
``--metrics`` and ``--log-json``: /readyz says "not ready" (with the reason)
before the service can take messages and 200 after; /healthz is 200; good
readings, a duplicate and hostile payloads of distinct reasons are published;
the scrape, parsed with prometheus_client's own parser, counts exactly those,
the store holds the same numbers, and every line the process wrote is JSON.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import paho.mqtt.client as mqtt
import pytest
import yaml
from paho.mqtt.enums import CallbackAPIVersion
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from alerts.notify_config import Delivery, load_notify
from alerts.worker import OutboxSink
from app.cli import build_parser
from dashboards.build import TAGS
from dashboards.provisioning import PrometheusSource
from dashboards.service import PROMETHEUS_UID, build_service_dashboard, queries
from ingest.ops.health import ServiceParts
from ingest.ops.http import ops_app
from ingest.ops.metrics import ServiceCollector, exposition, service_registry
from ingest.store.sqlite import SqliteStore
from siltwatch.logjson import JsonFormatter
from siltwatch.schema import reading_topic
from siltwatch.service_metrics import SERVICE_METRICS
from tests.alerts.helpers import OFFICER, note
from tests.console.app_world import SITE
from tests.ingest.live import EXAMPLES, SERVICE_USERS, loopback_broker, password_file
from tests.servers import MosquittoServer, free_port

ROOT = Path(__file__).resolve().parents[2]
SID = "lg-route9n"
LATENESS_S = 120.0


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-metrics-")


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a /metrics answer, keyed by (name, sorted labels)."""
    answer = httpx.get(f"{url}/metrics", timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


def site_sample(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> float:
    return samples[(name, (("site", SID),))]


def payload(
    sensor: str, minute_ago: float, seq: int, value: float, unit: str = "NTU", station: str = "up-1"
) -> bytes:
    t = datetime.fromtimestamp(time.time() - minute_ago * 60, UTC)
    return json.dumps(
        {
            "type": "reading",
            "site": SID,
            "station": station,
            "sensor": sensor,
            "time": t.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "seq": seq,
            "value": value,
            "unit": unit,
        }
    ).encode()


def serve(
    broker: MosquittoServer, tmp_path: Path, metrics_port: int, http_port: int
) -> subprocess.Popen[str]:
    secret = password_file(tmp_path, SERVICE_USERS["ingest"])
    return subprocess.Popen(
        [
            sys.executable, "-m", "app.cli", "serve",
            "--site", str(EXAMPLES / "lake-george-site.toml"),
            "--broker", f"mqtt://{broker.host}:{broker.port}",
            "--username", "ingest", "--password-file", str(secret),
            "--db", str(tmp_path / "site.sqlite3"),
            "--alert-log", str(tmp_path / "alerts.jsonl"),
            "--client-id", f"metrics-test-{tmp_path.name}",
            "--allowed-lateness-s", str(LATENESS_S),
            "--metrics", f"127.0.0.1:{metrics_port}",
            "--http", f"127.0.0.1:{http_port}",
            "--log-json",
        ],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def probes_until_ready(url: str, proc: subprocess.Popen[str]) -> list[tuple[int, dict[str, str]]]:
    """Every /readyz answer from the first one the listener gives until a 200."""
    seen: list[tuple[int, dict[str, str]]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            answer = httpx.get(f"{url}/readyz", timeout=5)
        except httpx.TransportError:
            time.sleep(0.02)  # not listening yet
            continue
        seen.append((answer.status_code, answer.json()))
        if answer.status_code == 200:
            return seen
        time.sleep(0.02)
    raise AssertionError(f"serve never became ready: {seen}")


@pytest.mark.integration
def test_serve_metrics_count_what_was_published_and_what_the_store_holds(
    broker: MosquittoServer, tmp_path: Path
) -> None:
    port, http_port = free_port(), free_port()
    url, console = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{http_port}"
    proc = serve(broker, tmp_path, port, http_port)
    others = [("down-1", "turb-down", "NTU", 6.0), ("basin-1", "rain-1", "in", 0.0)]
    upstream = 6  # turb-up readings, a minute apart
    good = upstream + len(others)
    hostile = {  # what a person would send by mistake, and the reason the service gives
        "not JSON": (reading_topic(SID, "up-1", "turb-up"), b"{not json"),
        "wrong unit": (reading_topic(SID, "up-1", "turb-up"), payload("turb-up", 1, 900, 4.0, "mg/L")),
        "unknown sensor": (reading_topic(SID, "up-1", "ghost"), payload("ghost", 1, 0, 4.0)),
    }  # fmt: skip
    try:
        seen = probes_until_ready(url, proc)
        # Listening starts before the rebuild and the broker connection, so the first
        # answers say why the service is not ready yet.
        assert seen[0][0] == 503, seen
        assert seen[0][1]["status"] == "not ready" and seen[0][1]["reason"], seen
        assert seen[-1] == (200, {"status": "ready", "site": SID})
        health = httpx.get(f"{url}/healthz", timeout=5)
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "threads": {"ingest": "alive"}}
        # --http answers the same endpoints beside the console, whose pages now answer.
        assert httpx.get(f"{console}/readyz", timeout=5).status_code == 200
        assert httpx.get(f"{console}/login", timeout=5).status_code == 200

        pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"metrics-pub-{tmp_path.name}")
        pub.username_pw_set("station", SERVICE_USERS["station"])
        pub.connect(broker.host, broker.port)
        pub.loop_start()
        try:
            topic = reading_topic(SID, "up-1", "turb-up")
            messages = [
                (topic, payload("turb-up", upstream - i, i, 5.0 + i)) for i in range(upstream)
            ]
            # Every station of the site speaks, so the engine's watermark is known.
            for station, sensor, unit, value in others:
                body = payload(sensor, 1, 0, value, unit, station)
                messages.append((reading_topic(SID, station, sensor), body))
            messages.append(messages[2])  # the same reading again: a duplicate
            for on, body in messages:
                pub.publish(on, body, qos=1).wait_for_publish(5)
            for bad_topic, body in hostile.values():
                pub.publish(bad_topic, body, qos=1).wait_for_publish(5)
        finally:
            pub.loop_stop()
            pub.disconnect()
        sent = len(messages) + len(hostile)
        deadline = time.monotonic() + 30
        samples = scrape(url)
        while site_sample(samples, "siltwatch_messages_received_total") < sent:
            assert time.monotonic() < deadline, samples
            time.sleep(0.1)
            samples = scrape(url)
        moving = ("siltwatch_engine_lag_seconds", (("site", SID),))  # follows the wall clock
        on_console = scrape(console)
        assert on_console.keys() == samples.keys()
        assert {k: v for k, v in on_console.items() if k != moving} == {
            k: v for k, v in samples.items() if k != moving
        }
    finally:
        proc.send_signal(2)
        output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, output

    assert site_sample(samples, "siltwatch_messages_received_total") == sent, output
    assert site_sample(samples, "siltwatch_readings_stored_total") == good, output
    assert site_sample(samples, "siltwatch_duplicate_readings_total") == 1
    rejected = {
        dict(labels)["reason"]: value
        for (name, labels), value in samples.items()
        if name == "siltwatch_rejected_messages_total"
    }
    assert rejected == {reason: 1 for reason in hostile}
    assert site_sample(samples, "siltwatch_ready") == 1
    assert site_sample(samples, "siltwatch_mqtt_connected") == 1
    assert site_sample(samples, "siltwatch_engine_allowed_lateness_seconds") == LATENESS_S
    # The watermark trails the newest reading by at least the allowed lateness.
    lag = site_sample(samples, "siltwatch_engine_lag_seconds")
    assert LATENESS_S <= lag < LATENESS_S + 3600, lag

    # The store holds what the metrics counted.
    store = SqliteStore(tmp_path / "site.sqlite3")
    try:
        assert store.reading_count(SID) == site_sample(samples, "siltwatch_readings_stored_total")
        stored_reasons: dict[str, float] = {}
        for _topic, reason in store.rejections():
            key = reason.split(":", 1)[0]
            stored_reasons[key] = stored_reasons.get(key, 0) + 1
        assert stored_reasons == rejected
    finally:
        store.close()

    # --log-json: every line the process wrote is one JSON object with the fields,
    # and the stop summary (the service's own counters) agrees with the scrape.
    records = [json.loads(line) for line in output.splitlines() if line.strip()]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    (stopped,) = [r["message"] for r in records if r["message"].startswith("stopped:")]
    for counter, metric in (
        ("messages", "siltwatch_messages_received_total"),
        ("readings_stored", "siltwatch_readings_stored_total"),
        ("duplicates", "siltwatch_duplicate_readings_total"),
        ("late_readings", "siltwatch_late_readings_total"),
        ("rebuilds", "siltwatch_engine_rebuilds_total"),
    ):
        found = re.search(rf"\b{counter}=(\d+)", stopped)
        assert found is not None, stopped
        assert int(found.group(1)) == site_sample(samples, metric), counter


def test_healthz_names_the_worker_that_stopped_and_readyz_says_why_not() -> None:
    parts = ServiceParts(SID, broker_url="mqtt://127.0.0.1:1")
    parts.threads = {"ingest": lambda: True, "delivery": lambda: False}
    with TestClient(ops_app(parts, lambda: 0)) as client:
        health = client.get("/healthz")
        assert health.status_code == 503
        assert health.json()["down"] == ["delivery"]
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["reason"] == "rebuilding the engine from the store"
        parts.stopping = True
        assert client.get("/readyz").json()["reason"] == "stopping"


def test_readyz_waits_for_the_web_console_when_there_is_one() -> None:
    attached = False
    parts = ServiceParts(SID, broker_url="mqtt://127.0.0.1:1")
    parts.service = cast(Any, object())  # rebuilt from the store
    parts.mqtt = cast(Any, SimpleNamespace(connected=True))
    parts.console_attached = lambda: attached
    with TestClient(ops_app(parts, lambda: 0)) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["reason"] == "attaching the web console"
        attached = True
        assert client.get("/readyz").status_code == 200
        parts.console_attached = None  # no --http: nothing to wait for
        assert client.get("/readyz").status_code == 200


def test_delivery_failures_by_channel_and_the_outbox_depth_are_scraped(tmp_path: Path) -> None:
    # A webhook to a loopback port nobody listens on: a real connection refused.
    (tmp_path / "notify.toml").write_text(
        f'outbox = "outbox.sqlite3"\n\n[webhook]\nurl = "http://127.0.0.1:{free_port()}/hook"\n'
        "allow_insecure_http = true\ntimeout_s = 2\n\n[retry]\ndelays_s = [600]\n",
        encoding="utf-8",
    )
    delivery = Delivery(load_notify(tmp_path / "notify.toml"), SITE, time.time)
    try:
        OutboxSink(delivery.outbox, delivery.channels, time.time).send(note(recipients=(OFFICER,)))
        assert delivery.worker.run_once() == 1
        parts = ServiceParts(SID, delivery=delivery)
        text = exposition(service_registry(parts, lambda: 0)).decode()
    finally:
        delivery.stop()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert (
        samples[("siltwatch_delivery_failures_total", (("channel", "webhook"), ("site", SID)))] == 1
    )
    assert samples[("siltwatch_outbox_pending", (("site", SID),))] == 1  # waiting for its retry


def test_json_log_lines_parse_with_their_fields() -> None:
    formatter = JsonFormatter()
    log = logging.getLogger("siltwatch.test")
    records = [
        log.makeRecord(log.name, logging.WARNING, __file__, 1, "rejected %s: %s", ("t", "x"), None),
        log.makeRecord(
            log.name, logging.INFO, __file__, 2, 'quote " and\nnewline', (), None,
            extra={"site": SID, "count": 3, "when": datetime(2026, 5, 4, tzinfo=UTC)},
        ),
    ]  # fmt: skip
    try:
        raise ValueError("broken")
    except ValueError:
        records.append(
            log.makeRecord(log.name, logging.ERROR, __file__, 3, "failed", (), sys.exc_info())
        )
    lines = [formatter.format(r) for r in records]
    assert all("\n" not in line for line in lines)
    first, second, third = (json.loads(line) for line in lines)
    assert first["message"] == "rejected t: x" and first["level"] == "WARNING"
    assert first["logger"] == "siltwatch.test"
    assert datetime.fromisoformat(first["time"].replace("Z", "+00:00")).tzinfo is not None
    assert first["time"].endswith("Z")
    assert second["message"] == 'quote " and\nnewline'
    assert (second["site"], second["count"]) == (SID, 3)
    assert second["when"].startswith("2026-05-04")
    assert "ValueError: broken" in third["exception"]


def exported_samples() -> set[str]:
    """The sample names the collector exports, from the collector itself."""
    collector = ServiceCollector(ServiceParts(SID), lambda: 0)
    return {
        family.name + ("_total" if family.type == "counter" else "")
        for family in collector.describe()
    }


def test_service_dashboard_queries_only_metrics_the_collector_exports() -> None:
    board = build_service_dashboard()
    exported = exported_samples()
    assert len(exported) == len(SERVICE_METRICS)
    exprs = [t["expr"] for p in board["panels"] if p["type"] != "row" for t in p.get("targets", [])]
    assert exprs == queries()
    named = {name for expr in exprs for name in re.findall(r"\bsiltwatch_[a-z_]+", expr)}
    named |= set(re.findall(r"\bsiltwatch_[a-z_]+", board["templating"]["list"][0]["query"]))
    assert named <= exported, named - exported
    assert named == exported, f"no panel shows {exported - named}"
    for p in board["panels"]:
        if p["type"] != "row":
            assert p["datasource"]["uid"] == PROMETHEUS_UID, p["title"]
    assert set(TAGS) <= set(board["tags"])


def test_deploy_scrapes_every_serve_metrics_listener_and_grafana_reads_that_prometheus() -> None:
    deploy = ROOT / "deploy"
    compose = yaml.safe_load((deploy / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    parser = build_parser()
    listeners = set()
    for name, svc in services.items():
        if "command" in svc:
            args = parser.parse_args(svc["command"])
            assert args.metrics, f"{name}: serve without --metrics is not scraped"
            listeners.add(f"{name}:{args.metrics.rpartition(':')[2]}")
    config = yaml.safe_load((deploy / "prometheus" / "prometheus.yml").read_text(encoding="utf-8"))
    targets = {
        target
        for job in config["scrape_configs"]
        for static in job["static_configs"]
        for target in static["targets"]
    }
    assert targets == listeners
    mounted = {v.split(":")[0] for v in services["prometheus"]["volumes"]}
    assert "./prometheus/prometheus.yml" in mounted
    sources = yaml.safe_load(
        (deploy / "grafana/provisioning/datasources/siltwatch.yaml").read_text(encoding="utf-8")
    )["datasources"]
    (prom,) = [s for s in sources if s["uid"] == PROMETHEUS_UID]
    assert prom == PrometheusSource().datasource()
    assert prom["url"].split("//")[1].split(":")[0] in services


def test_operations_doc_lists_every_exported_metric() -> None:
    doc = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(siltwatch_[a-z_]+)`", doc, flags=re.MULTILINE))
    assert listed == exported_samples()


def test_a_taken_metrics_port_is_one_error_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable, "-m", "app.cli", "serve",
                "--site", str(EXAMPLES / "lake-george-site.toml"),
                "--db", str(tmp_path / "site.sqlite3"),
                "--alert-log", str(tmp_path / "alerts.jsonl"),
                "--metrics", f"127.0.0.1:{port}",
            ],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1
    assert f"error: --metrics 127.0.0.1:{port}: cannot listen there" in done.stderr
