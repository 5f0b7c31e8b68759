"""100,000 hostile payloads over a real Mosquitto, among valid traffic, to a real ``serve``.

Every hostile message the service receives gets one rejection row with a
reason of the category its class calls for; every valid reading is stored;
the service never stops (it still drains and exits 0 on SIGTERM afterwards).
Messages whose topic the service does not subscribe to (another site, a
malformed topic) never reach it: the broker's routing is the first filter,
and they are counted apart.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from paho.mqtt.client import topic_matches_sub

from ingest.recordings.formats import read_csv_readings
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from siltwatch.schema import inspections_topic, readings_subscription, statuses_subscription
from tests.ingest.hostile import EXPECTED_REASONS, hostile_payloads
from tests.ingest.live import (
    EXAMPLES,
    Outgoing,
    Publisher,
    ServeProcess,
    loopback_broker,
    reading_messages,
)
from tests.servers import MosquittoServer

SITE_FILE = EXAMPLES / "lake-george-site.toml"
HOSTILE = 100_000
VALID = 20_000
USERS = {"ingest": "ingest-pw", "fuzzer": "fuzzer-pw"}
ACL = """
user ingest
topic readwrite siltwatch/#

user fuzzer
topic write #
"""


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-fuzz-", users=USERS, acl=ACL)


@pytest.mark.integration
def test_hostile_traffic_gets_reasons_valid_traffic_is_stored_serve_keeps_going(
    broker: MosquittoServer, tmp_path: Path
) -> None:
    site = load_site(SITE_FILE)
    subscribed = (
        readings_subscription(site.site.id),
        inspections_topic(site.site.id),
        statuses_subscription(site.site.id),  # hostile statuses reach the service too
    )
    hostile = list(hostile_payloads(site, HOSTILE, seed=8))
    # Valid traffic as a site sends it: the storm week's readings, in time order.
    storm = sorted(
        read_csv_readings(EXAMPLES / "lake-george-storm.csv", site.sensors()),
        key=lambda r: (r.t, r.sensor),
    )
    valid = reading_messages(site, storm[:VALID])[::-1]
    delivered = [h for h in hostile if any(topic_matches_sub(s, h[0]) for s in subscribed)]
    every = max(1, HOSTILE // VALID)
    stream: list[Outgoing] = []
    for i, (topic, payload, _category) in enumerate(hostile):
        stream.append(Outgoing(topic, payload, ()))
        if i % every == 0 and valid:
            stream.append(valid.pop())
    want_readings = {k for m in stream for k in m.keys}
    password = tmp_path / "pw"
    password.write_text(USERS["ingest"], encoding="utf-8")
    db = tmp_path / "store.sqlite3"
    args = [
        "--site",
        str(SITE_FILE),
        "--broker",
        f"mqtt://{broker.host}:{broker.port}",
        "--username",
        "ingest",
        "--password-file",
        str(password),
        "--db",
        str(db),
        "--alert-log",
        str(tmp_path / "alerts.jsonl"),
        "--tick-s",
        "0",
    ]
    serve = ServeProcess(args, tmp_path / "serve.log")
    serve.start()
    publisher = Publisher(broker.host, broker.port, "fuzzer", USERS["fuzzer"], "fuzzer")
    try:
        started = time.monotonic()
        for message in stream:
            publisher.publish(message)
        assert publisher.wait_acked(300), "the broker did not take every message"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            store = SqliteStore(db)
            try:
                answered = store.rejection_count() + store.reading_count(site.site.id)
            finally:
                store.close()
            if answered >= len(delivered) + len(want_readings):
                break
            assert serve.proc is not None and serve.proc.poll() is None, serve.output[-3000:]
            time.sleep(0.5)
        elapsed = time.monotonic() - started
        assert serve.proc is not None and serve.proc.poll() is None, "serve stopped"
        code = serve.terminate()
    finally:
        publisher.close()
        serve.stop_quietly()
    assert code == 0, serve.output[-3000:]
    store = SqliteStore(db)
    try:
        rows = store.db.execute("SELECT reason FROM rejections ORDER BY id").fetchall()
        stored = {
            (str(s), int(t))
            for s, t in store.db.execute(
                "SELECT sensor, t FROM readings WHERE site = ?", (site.site.id,)
            )
        }
    finally:
        store.close()
    reasons = [str(r[0]) for r in rows]
    by_category = Counter(r.split(":", 1)[0] for r in reasons)
    print(
        f"\nfuzz: {len(stream):,} messages in {elapsed:.1f} s; {len(hostile):,} hostile, "
        f"{len(delivered):,} of them on subscribed topics; {len(reasons):,} rejection rows "
        f"{dict(by_category)}; {len(stored):,} readings stored of {len(want_readings):,} sent"
    )
    assert stored == want_readings, "every valid reading is stored, and nothing else"
    assert len(reasons) == len(delivered), "one rejection row per hostile message received"
    allowed = set().union(*EXPECTED_REASONS.values())
    assert set(by_category) <= allowed, by_category
    assert "undecodable" not in by_category
    per_class = Counter(c for _t, _p, c in delivered)
    assert len(per_class) >= len(EXPECTED_REASONS) - 1, per_class  # every class but wrong-topic
