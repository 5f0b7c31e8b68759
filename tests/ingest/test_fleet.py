"""Many sites in one ``serve``, and ``--partition k/N``: what an operator of a fleet relies on.

* Three workers ``--partition 0/3``, ``1/3``, ``2/3`` over 30 generated sites on one
  real Mosquitto store exactly the alerts and duties one worker ``--sites DIR``
  stores, and each site lands in exactly one worker's store.
* SIGHUP re-reads the site files: a changed site is rebuilt from the store, an added
  one starts, a removed one stops, and the other sites' readings are stored and
  acknowledged throughout.
* The partition hash is the same in every process; bad options are refused in one line.
* In process: a message for a site the worker does not own, or one that breaks a
  site's service, gets a stored, counted rejection and the other sites go on.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ingest.ops.health import ServiceParts
from ingest.ops.metrics import exposition, service_registry
from ingest.service import Incoming, IngestService
from ingest.sites import NOT_OWNED, SiteRouter, parse_partition, partition_of, site_hash
from ingest.store.sqlite import SqliteStore
from tests.ingest.fleet_world import (
    findings,
    site_id,
    stored_readings,
    stream,
    write_site,
    write_sites,
)
from tests.ingest.live import (
    ROOT,
    SERVICE_USERS,
    Outgoing,
    Publisher,
    ServeProcess,
    loopback_broker,
)
from tests.ingest.test_operations import run_serve
from tests.servers import MosquittoServer

SITES = 30
MINUTE_MS = 60_000
STORE_S = 30.0  # bound on the whole stream reaching the stores


def now_minute() -> int:
    return int(time.time() * 1000) // MINUTE_MS * MINUTE_MS


def fleet_args(
    broker: MosquittoServer, work: Path, name: str, *extra: str, db: str | None = None
) -> list[str]:
    """``serve``'s arguments for a worker ``name`` in ``work``: its own SQLite file there,
    or the store at ``db`` (a postgresql:// URL that workers share)."""
    secret = work / "ingest.pw"
    secret.write_text(SERVICE_USERS["ingest"], encoding="utf-8")
    return [
        "--broker", f"mqtt://{broker.host}:{broker.port}",
        "--username", "ingest",
        "--password-file", str(secret),
        "--db", db or str(work / f"{name}.sqlite3"),
        "--alert-log", str(work / f"{name}-alerts.jsonl"),
        *extra,
    ]  # fmt: skip


def publish(broker: MosquittoServer, messages: Sequence[Outgoing], name: str) -> Publisher:
    pub = Publisher(broker.host, broker.port, "station", SERVICE_USERS["station"], name)
    for message in messages:
        pub.publish(message)
    assert pub.wait_acked(STORE_S), "the broker did not acknowledge every reading"
    assert pub.log.refused == 0
    return pub


def wait_stored(dbs: Sequence[Path], count: int, serves: Sequence[ServeProcess]) -> None:
    deadline = time.monotonic() + STORE_S
    while sum(stored_readings(db) for db in dbs) < count:
        if time.monotonic() > deadline:
            outputs = "\n".join(s.output[-3000:] for s in serves)
            raise AssertionError(
                f"{sum(stored_readings(db) for db in dbs)} of {count} stored\n{outputs}"
            )
        time.sleep(0.1)


def sighup(serve: ServeProcess, within_s: float = 20.0) -> None:
    """SIGHUP, then wait for the reload's summary line."""
    assert serve.proc is not None
    serve.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + within_s
    while "reloaded the site files" not in serve.output:
        assert time.monotonic() < deadline, serve.output
        time.sleep(0.1)


def sites_stored(db: Path) -> set[str]:
    with sqlite3.connect(db) as con:
        return {row[0] for row in con.execute("SELECT DISTINCT site FROM readings")}


def run_workers(
    work: Path, sites_dir: Path, messages: Sequence[Outgoing], partitions: Sequence[str | None]
) -> list[Path]:
    """Serve ``sites_dir`` with one worker per partition on a fresh broker; publish; stop."""
    work.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        broker = stack.enter_context(_broker())
        serves: list[ServeProcess] = []
        dbs = []
        for partition in partitions:
            name = "one" if partition is None else f"part-{partition.replace('/', '-of-')}"
            extra = ["--sites", str(sites_dir), "--tick-s", "0"]
            if partition is not None:
                extra += ["--partition", partition]
            serve = ServeProcess(fleet_args(broker, work, name, *extra), work / f"{name}.log")
            serves.append(serve)
            stack.callback(serve.stop_quietly)
            dbs.append(work / f"{name}.sqlite3")
        threads = [threading.Thread(target=s.start, kwargs={"wait_s": 30.0}) for s in serves]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s in serves:
            assert "siltwatch serving sites" in s.output, s.output
        pub = publish(broker, messages, f"fleet-pub-{len(partitions)}")
        wait_stored(dbs, len(messages), serves)
        pub.close()
        for s in serves:
            assert s.terminate(timeout=30) == 0, s.output
            assert "Traceback" not in s.output, s.output
        return dbs


@contextmanager
def _broker() -> Iterator[MosquittoServer]:
    """A fresh Mosquitto (no session, lease or retained message from another run)."""
    yield from loopback_broker("siltwatch-fleet-")


@pytest.mark.integration
def test_three_partitioned_workers_find_what_one_worker_finds(tmp_path: Path) -> None:
    sites_dir = tmp_path / "sites"
    sites = write_sites(sites_dir, SITES)
    ids = {s.site.id for s in sites}
    messages = stream(sites, now_minute() - 130 * MINUTE_MS, 120)

    one = run_workers(tmp_path / "one", sites_dir, messages, [None])
    three = run_workers(tmp_path / "three", sites_dir, messages, ["0/3", "1/3", "2/3"])

    # Every site is owned by exactly one partition: the one its stable hash names.
    owned = [sites_stored(db) for db in three]
    assert set().union(*owned) == ids == sites_stored(one[0])
    assert sum(len(o) for o in owned) == SITES
    for k, sids in enumerate(owned):
        assert sids and all(partition_of(sid, 3) == k for sid in sids), (k, sids)
    # ... and the three find exactly what one finds.
    alerts_one, duties_one = findings(one)
    alerts_three, duties_three = findings(three)
    plumes = {json.loads(a)["site"] for a in alerts_one}
    assert plumes == {site_id(n) for n in range(SITES) if n % 4 == 1}
    assert alerts_three == alerts_one
    assert duties_one and duties_three == duties_one


@pytest.mark.integration
def test_sighup_rebuilds_a_changed_site_adds_and_removes_while_others_flow(
    tmp_path: Path,
) -> None:
    sites_dir = tmp_path / "sites"
    sites = write_sites(sites_dir, 3)  # fleet-00 (calm), fleet-01 (a plume), fleet-02
    base = now_minute() - 130 * MINUTE_MS
    first = stream(sites, base, 60)
    with ExitStack() as stack:
        broker = stack.enter_context(_broker())
        serve = ServeProcess(
            fleet_args(broker, tmp_path, "hup", "--sites", str(sites_dir), "--tick-s", "0.5"),
            tmp_path / "hup.log",
        )
        stack.callback(serve.stop_quietly)
        serve.start(wait_s=30.0)
        db = tmp_path / "hup.sqlite3"
        publish(broker, first, "hup-pub-1").close()
        wait_stored([db], len(first), [serve])

        # The change: fleet-01's limit, fleet-02 gone, fleet-03 new.
        write_site(sites_dir, 1, limit_ntu=30)
        (sites_dir / f"{site_id(2)}.toml").unlink()
        added = write_sites(tmp_path / "new", 4)[3]
        write_site(sites_dir, 3)
        # fleet-00 keeps publishing (its second hour) while the reload runs.
        calm = [m for m in stream(sites, base, 120) if f"/{site_id(0)}/" in m.topic][
            len([m for m in first if f"/{site_id(0)}/" in m.topic]) :
        ]
        pub = Publisher(broker.host, broker.port, "station", SERVICE_USERS["station"], "hup-2")
        sender = threading.Thread(target=pub.publish_all, args=(calm, 200.0))
        sender.start()
        time.sleep(0.3)
        sighup(serve)
        sender.join(timeout=30)
        assert pub.wait_acked(STORE_S) and pub.log.refused == 0
        pub.close()
        newcomer = stream([added], base, 30)
        publish(broker, newcomer, "hup-pub-3").close()
        wait_stored([db], len(first) + len(calm) + len(newcomer), [serve])
        assert serve.terminate(timeout=30) == 0, serve.output
    out = serve.output
    reload_line = next(ln for ln in out.splitlines() if "reloaded the site files" in ln)
    assert "added 'fleet-03'" in reload_line, reload_line
    assert "removed 'fleet-02'" in reload_line, reload_line
    assert "changed 'fleet-01'" in reload_line and "1 unchanged" in reload_line, reload_line
    rebuilds = [ln for ln in out.splitlines() if ln.startswith("rebuilding the engine of")]
    assert len(rebuilds) == 1 and "fleet-01" in rebuilds[0], out
    assert "site configuration changed" in rebuilds[0], rebuilds[0]
    store = SqliteStore(db)
    try:
        assert store.reading_count(site_id(0)) == len(
            [m for m in first if f"/{site_id(0)}/" in m.topic]
        ) + len(calm)
        assert store.reading_count(site_id(3)) == len(newcomer)
    finally:
        store.close()


# --- the partition hash and the options -------------------------------------------------------


def test_the_partition_hash_is_the_same_in_another_process() -> None:
    ids = [site_id(n) for n in range(SITES)] + ["lg-route9n", "ll-hwy64"]
    here = [partition_of(sid, 3) for sid in ids]
    code = (
        "import json, sys; from ingest.sites import partition_of; "
        "print(json.dumps([partition_of(s, 3) for s in json.loads(sys.argv[1])]))"
    )
    there = subprocess.run(
        [sys.executable, "-c", code, json.dumps(ids)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"},
    )
    assert json.loads(there.stdout) == here
    assert site_hash("lg-route9n") == int.from_bytes(
        __import__("hashlib").sha256(b"lg-route9n").digest()[:8], "big"
    )
    assert set(here) == {0, 1, 2}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("3/3", "the worker number k must be 0 to 2"),
        ("1/0", "N must be at least 1"),
        ("one/3", "expected k/N"),
        ("-1/3", "expected k/N"),
    ],
)
def test_a_bad_partition_is_refused_with_what_was_expected(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        parse_partition(text)
    assert parse_partition("2/3").owns(
        next(s for s in map(site_id, range(30)) if partition_of(s, 3) == 2)
    )


def _serve(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return run_serve(args, timeout=30)


def test_fleet_options_are_refused_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    sites_dir = tmp_path / "sites"
    write_sites(sites_dir, 2)
    base = ["--db", str(tmp_path / "x.sqlite3"), "--broker", "mqtt://127.0.0.1:1"]
    cases = {
        ("--sites", str(sites_dir), "--partition", "3/3"): "--partition '3/3'",
        # A fleet delivers with --notify (tests/ingest/test_fleet_notify.py); a notify file
        # that cannot be read is refused as for one site.
        ("--sites", str(sites_dir), "--notify", str(tmp_path / "n.toml")): (
            f"{tmp_path / 'n.toml'}: file not found"
        ),
        # A fleet mirrors to InfluxDB (tests/ingest/test_influx_fleet.py); a half setting
        # is refused as for one site.
        ("--sites", str(sites_dir), "--influx-url", "http://127.0.0.1:9"): (
            "--influx-url needs --influx-db"
        ),
        ("--sites", str(tmp_path / "nowhere")): "not a folder of site files",
        (): "give --site SITE.toml (once or more) or --sites DIR",
    }
    for extra, said in cases.items():
        done = _serve([*extra, *base])
        assert done.returncode == 1, done
        assert "Traceback" not in done.stderr, done.stderr
        assert said in done.stderr, done.stderr
        assert "--influx-url serves one site" not in done.stderr, done.stderr
    # A bad site file names the file and the key, and nothing starts.
    bad = sites_dir / "fleet-01.toml"
    bad.write_text(bad.read_text().replace("over_background_ntu = 25", 'over_background_ntu = "x"'))
    done = _serve(["--sites", str(sites_dir), *base])
    assert done.returncode == 1
    assert f"{bad}: turbidity_pairs[0].limit.over_background_ntu" in done.stderr, done.stderr
    assert not (tmp_path / "x.sqlite3").exists()


# --- the router in process ------------------------------------------------------------------


def test_a_stray_message_and_a_broken_site_are_rejected_and_the_rest_flows(
    tmp_path: Path,
) -> None:
    sites = write_sites(tmp_path / "sites", 3)
    store = SqliteStore(tmp_path / "r.sqlite3")
    now = now_minute()
    router = SiteRouter(store, lambda site, lock: IngestService(site, store, now_ms=now, lock=lock))
    for site in sites[:2]:
        router.add(site)
    broken = router.service_for(site_id(1))
    assert broken is not None

    def explode(messages: Sequence[Incoming]) -> list[object]:
        raise RuntimeError("a bug in this site's path")

    broken.commit_batch = explode  # type: ignore[assignment,method-assign]
    messages = stream(sites, now - 30 * MINUTE_MS, 10)
    acked: list[int] = []
    router.handle_batch(
        [Incoming(m.topic, m.payload, now) for m in messages],
        on_committed=lambda: acked.append(len(messages)),
    )
    per_site = {sid: sum(f"/{sid}/" in m.topic for m in messages) for sid in map(site_id, range(3))}
    assert acked == [len(messages)]  # every message acknowledged once, after the commits
    assert store.reading_count(site_id(0)) == per_site[site_id(0)]
    assert store.reading_count(site_id(1)) == 0
    reasons = [reason for _topic, reason, *_ in store.rejections()]
    assert (
        sum(r.startswith("internal error: RuntimeError") for r in reasons) == per_site[site_id(1)]
    )
    assert reasons.count(f"{NOT_OWNED}: site 'fleet-02'") == per_site[site_id(2)]
    stats = router.stats
    assert stats.rejected == per_site[site_id(1)] + per_site[site_id(2)]
    assert stats.readings_stored == per_site[site_id(0)]
    # /metrics: each site's rejections under its label, the strays under no site.
    scraped = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(
            exposition(service_registry(ServiceParts("", sites=router), lambda: now)).decode()
        )
        for sample in family.samples
    }

    def rejected(site: str, reason: str) -> float:
        key = (("reason", reason), ("site", site))
        return scraped.get(("siltwatch_rejected_messages_total", key), 0.0)

    assert rejected("", NOT_OWNED) == per_site[site_id(2)]
    assert rejected(site_id(1), "internal error") == per_site[site_id(1)]
    assert rejected(site_id(0), NOT_OWNED) == 0
    assert scraped[("siltwatch_messages_received_total", (("site", ""),))] == per_site[site_id(2)]
    router.close(now)
    store.close()
