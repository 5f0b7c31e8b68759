"""A worker killed mid-stream; a standby takes its partition over from PostgreSQL.

Worker A serves six generated sites from a real PostgreSQL (``--db postgresql://``)
behind a real Mosquitto; worker B is started with the same partition and
``--standby`` and waits on the partition's advisory lock. A is killed with
SIGKILL while the stream is being published. B must take over — the lock frees
with A's database session, B rebuilds from the snapshots and readings in the
database, and the broker hands it A's persistent session — and in the end:

* every published reading is stored exactly once (nothing lost, nothing twice);
* the alerts and duties equal those of one uninterrupted worker on SQLite;
* no alert is announced twice across A's and B's alert logs.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest.store.from_url import open_store_read_only
from tests.ingest.fleet_world import stream, write_sites
from tests.ingest.live import SERVICE_USERS, Outgoing, Publisher, ServeProcess
from tests.ingest.test_fleet import (
    MINUTE_MS,
    _broker,
    fleet_args,
    now_minute,
    run_workers,
)

pytestmark = pytest.mark.integration

SITES = 6
TAKEOVER_S = 60.0


def findings(db: str | Path) -> tuple[set[str], set[str], int]:
    """Alerts and duties as JSON records (site included), and the reading count, from any store."""
    store = open_store_read_only(db)
    alerts: set[str] = set()
    duties: set[str] = set()
    readings = 0
    try:
        for site in store.sites():
            readings += store.reading_count(site)
            for stored in store.alert_records(site):
                record = {
                    "site": site,
                    "late": int(stored.late),
                    "withdrawn": int(stored.withdrawn),
                    **json.loads(stored.alert.model_dump_json()),
                }
                alerts.add(json.dumps(record, sort_keys=True))
            for duty in store.duties(site):
                duties.add(
                    json.dumps({"site": site, **json.loads(duty.model_dump_json())}, sort_keys=True)
                )
    finally:
        store.close()
    return alerts, duties, readings


def stored(url: str) -> int:
    """Readings in the database now (a cheap poll while the stream flows)."""
    import psycopg

    with psycopg.connect(url) as con:
        row = con.execute("SELECT count(*) FROM readings").fetchone()
    return 0 if row is None else int(row[0])


def paced_sender(pub: Publisher, messages: Sequence[Outgoing]) -> threading.Thread:
    """Publish ``messages`` in a thread, 20 at a time with 20 ms between (about 2 s for a
    few thousand): slow enough that a fault can be made while the stream flows."""

    def send() -> None:
        for i, message in enumerate(messages):
            pub.publish(message)
            if i % 20 == 19:
                time.sleep(0.02)

    sender = threading.Thread(target=send)
    sender.start()
    return sender


@dataclass(frozen=True)
class Reference:
    """Generated sites, their stream, and what one uninterrupted worker on SQLite finds in
    it: what a worker that meets a fault must find too."""

    sites_dir: Path
    messages: list[Outgoing]
    alerts: set[str]
    duties: set[str]

    def assert_found_in(self, db: str) -> None:
        """Every reading stored once (nothing lost, nothing twice), the same alerts and duties."""
        alerts, duties, readings = findings(db)
        assert readings == len(self.messages)
        assert alerts == self.alerts
        assert duties == self.duties


def reference_run(work: Path, sites: int) -> Reference:
    """``sites`` generated sites in ``work``/sites, two hours of their readings, and the
    findings of one worker that serves them all on SQLite without a fault."""
    sites_dir = work / "sites"
    messages = stream(write_sites(sites_dir, sites), now_minute() - 130 * MINUTE_MS, 120)
    reference = run_workers(work / "reference", sites_dir, messages, [None])
    alerts, duties, readings = findings(reference[0])
    assert readings == len(messages) and alerts and duties
    return Reference(sites_dir, messages, alerts, duties)


def opened_ids(log: Path) -> list[str]:
    if not log.exists():
        return []
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("event") == "opened":
            out.append(str(record.get("id") or record.get("alert", {}).get("id")))
    return out


def test_a_standby_takes_a_killed_workers_partition_over_from_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    reference = reference_run(tmp_path, SITES)
    messages = reference.messages

    work = tmp_path / "failover"
    work.mkdir()
    with _broker() as broker:
        common = ["--sites", str(reference.sites_dir), "--partition", "0/1", "--tick-s", "0"]

        def worker(name: str, *extra: str) -> ServeProcess:
            args = fleet_args(broker, work, name, *common, *extra, db=postgres_url)
            return ServeProcess(args, work / f"{name}.log")

        a, b = worker("a"), worker("b", "--standby")
        try:
            a.start(wait_s=30.0)
            b_started = threading.Thread(target=b.start, kwargs={"wait_s": TAKEOVER_S})
            b_started.start()
            deadline = time.monotonic() + 20
            while "standing by" not in b.output and time.monotonic() < deadline:
                time.sleep(0.1)
            assert "standing by" in b.output, b.output

            # The stream is paced (about 2 s) so that A is killed while it flows.
            pub = Publisher(broker.host, broker.port, "station", SERVICE_USERS["station"], "fo")

            sender = paced_sender(pub, messages)
            deadline = time.monotonic() + 20
            while stored(postgres_url) < len(messages) // 4 and time.monotonic() < deadline:
                time.sleep(0.005)
            a.kill9()  # mid-stream: A dies without a word
            at_kill = stored(postgres_url)
            sender.join(30)
            assert pub.wait_acked(30) and pub.log.refused == 0
            pub.close()
            assert 0 < at_kill < len(messages), at_kill

            b_started.join(TAKEOVER_S + 5)
            assert "siltwatch serving sites" in b.output, b.output
            deadline = time.monotonic() + 60
            while findings(postgres_url)[2] < len(messages) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert b.terminate(timeout=30) == 0, b.output
        finally:
            a.stop_quietly()
            b.stop_quietly()
    assert "Traceback" not in a.output + b.output, a.output + b.output

    reference.assert_found_in(postgres_url)
    told = Counter(opened_ids(work / "a-alerts.jsonl") + opened_ids(work / "b-alerts.jsonl"))
    assert told and max(told.values()) == 1, told
    print(f"killed at {at_kill} of {len(messages)} readings stored; B told {sum(told.values())}")
