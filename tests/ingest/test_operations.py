"""``siltwatch serve`` as an operator meets it: what it says when it cannot start, and why.

Every test here runs the real command (``python -m app.cli serve``) against a
real Mosquitto and asserts what a person sees: the one ``error: ...`` line on stderr
and exit code 1 for a start that cannot go on (wrong password, no broker, a site
already served, a store already served or unreadable, a TLS certificate nobody
vouches for), exit 0 and ``stopped:`` for SIGTERM, a one-line reason when a changed
site configuration forces a rebuild. Every wait is bounded, so a hang fails fast.

Two tests run in-process, no broker: a pickle planted in the snapshots table is
never executed (the service rebuilds from the store and drops the row), and a
JSON snapshot naming a class outside the analytics package is refused.
"""

from __future__ import annotations

import json
import pathlib
import pickle
import re
import sqlite3
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.reasoncodes import ReasonCode

from analytics import statecodec
from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.statecodec import SnapshotError
from ingest.mqtt.session import owner_topic
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from tests.ingest.live import (
    EXAMPLES,
    SERVICE_USERS,
    ServeProcess,
    loopback_broker,
    reading_messages,
    run_cli,
)
from tests.servers import MosquittoServer, free_port

SITE_FILE = EXAMPLES / "lake-george-site.toml"
SITE_ID = "lg-route9n"
INGEST_CLIENT = f"siltwatch-ingest-{SITE_ID}"
USERS = SERVICE_USERS
START_S = 20.0  # bound on a serve that should start (or refuse to)
STOP_S = 25.0  # bound on a SIGTERM drain
STORE_S = 10.0  # bound on a published reading reaching the store
MINUTE_MS = 60_000


# --- fixtures ---------------------------------------------------------------------------


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    """A fresh broker per test: no lease, session or retained message leaks between tests."""
    yield from loopback_broker("siltwatch-ops-", log_types=("all",))


@pytest.fixture
def tls_broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-ops-", tls=True, log_types=("all",))


@pytest.fixture
def serves() -> Iterator[list[ServeProcess]]:
    """Every ServeProcess a test starts; any still running at the end is killed."""
    started: list[ServeProcess] = []
    yield started
    for serve in started:
        serve.stop_quietly()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The store of the serve under test."""
    return tmp_path / "site.sqlite3"


@pytest.fixture
def args(broker: MosquittoServer, tmp_path: Path, db: Path) -> list[str]:
    """``serve`` arguments for that store, through the plain-text ``broker``."""
    return serve_args(plain_url(broker), tmp_path, db)


# --- helpers ----------------------------------------------------------------------------


def serve_args(
    url: str,
    work: Path,
    db: Path,
    *,
    password: str = USERS["ingest"],
    site: Path = SITE_FILE,
    extra: Sequence[str] = (),
) -> list[str]:
    secret = work / "ingest.pw"
    secret.write_text(password, encoding="utf-8")
    return [
        "--site", str(site),
        "--broker", url,
        "--username", "ingest",
        "--password-file", str(secret),
        "--db", str(db),
        "--alert-log", str(work / f"{db.stem}-alerts.jsonl"),
        "--tick-s", "0.5",
        *extra,
    ]  # fmt: skip


def plain_url(broker: MosquittoServer) -> str:
    return f"mqtt://{broker.host}:{broker.port}"


def run_serve(args: Sequence[str], timeout: float = START_S) -> subprocess.CompletedProcess[str]:
    """A serve expected to end by itself (a refused start); stdout and stderr kept apart."""
    return run_cli("serve", *args, timeout=timeout)


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The single ``error:`` line of a refused start (asserting exit 1, no traceback)."""
    everything = done.stdout + done.stderr
    assert done.returncode == 1, everything
    assert "Traceback" not in everything, everything
    assert "serving" not in everything, everything
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one stderr line, got:\n{done.stderr}"
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def start_serve(serves: list[ServeProcess], args: Sequence[str], work: Path) -> ServeProcess:
    serve = ServeProcess(args, work / "serve.log")
    serves.append(serve)
    serve.start(wait_s=START_S)
    return serve


def subacks(broker: MosquittoServer) -> int:
    """How often the broker confirmed the ingest client's (not a probe's) subscription."""
    pattern = rf"Sending SUBACK to {re.escape(INGEST_CLIENT)}$"
    return len(re.findall(pattern, broker.log_text(), flags=re.MULTILINE))


def start_subscribed(
    serves: list[ServeProcess], args: Sequence[str], work: Path, broker: MosquittoServer
) -> ServeProcess:
    """Start serve and wait until the broker has its subscription (so nothing is missed)."""
    before = subacks(broker)
    serve = start_serve(serves, args, work)
    deadline = time.monotonic() + 10.0
    while subacks(broker) <= before:
        assert time.monotonic() < deadline, f"serve never subscribed:\n{serve.output}"
        time.sleep(0.05)
    return serve


def readings_at(times: Sequence[int], sensor: str = "turb-up") -> list[SensorReading]:
    return [SensorReading(sensor, t, 6.0 + i) for i, t in enumerate(times)]


def recent_times(base_ms: int, minutes_ago: Sequence[int]) -> list[int]:
    """Readings dated in the past (the service flags those >300 s ahead of its clock)."""
    return [base_ms - m * MINUTE_MS for m in minutes_ago]


def now_minute() -> int:
    return int(time.time() * 1000) // MINUTE_MS * MINUTE_MS


def _client(client_id: str, user: str) -> mqtt.Client:
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2, client_id=client_id, protocol=MQTTProtocolVersion.MQTTv5
    )
    client.username_pw_set(user, USERS[user])
    return client


def _connect(client: mqtt.Client, broker: MosquittoServer) -> None:
    connected = threading.Event()
    codes: list[ReasonCode] = []

    def on_connect(c: mqtt.Client, u: object, f: object, rc: ReasonCode, p: object) -> None:
        codes.append(rc)
        connected.set()

    client.on_connect = on_connect
    client.connect(broker.host, broker.port)
    client.loop_start()
    if not connected.wait(5.0) or codes[0].is_failure:
        client.loop_stop()
        raise AssertionError(f"test client could not connect: {codes}")


def publish(broker: MosquittoServer, readings: Sequence[SensorReading]) -> None:
    """Publish as a station, QoS 1, and wait for every PUBACK."""
    site = load_site(SITE_FILE)
    client = _client(f"ops-station-{time.monotonic_ns()}", "station")
    _connect(client, broker)
    try:
        for message in reading_messages(site, readings):
            info = client.publish(message.topic, message.payload, qos=1)
            info.wait_for_publish(timeout=5.0)
            assert info.is_published(), f"no PUBACK for {message.topic}"
    finally:
        client.disconnect()
        client.loop_stop()


def retained_lease(broker: MosquittoServer, wait_s: float = 0.5) -> bytes | None:
    """The retained lease on the site's owner topic (None when there is none)."""
    got: list[bytes] = []
    client = _client(f"ops-lease-{time.monotonic_ns()}", "ingest")
    client.on_message = lambda c, u, msg: got.append(bytes(msg.payload))
    _connect(client, broker)
    try:
        client.subscribe(owner_topic(SITE_ID), qos=1)
        time.sleep(wait_s)
    finally:
        client.disconnect()
        client.loop_stop()
    return got[0] if got else None


def stored_count(db: Path) -> int:
    """Readings in the store, read-only (never contends with the serving writer)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
        try:
            (count,) = con.execute(
                "SELECT count(*) FROM readings WHERE site = ?", (SITE_ID,)
            ).fetchone()
            return int(count)
        finally:
            con.close()
    except sqlite3.Error:
        return -1


def wait_stored(db: Path, expected: int, timeout_s: float = STORE_S) -> None:
    deadline = time.monotonic() + timeout_s
    count = stored_count(db)
    while count < expected and time.monotonic() < deadline:
        time.sleep(0.1)
        count = stored_count(db)
    assert count == expected, f"{db}: {count} readings stored, expected {expected}"


def stop(serve: ServeProcess) -> str:
    """SIGTERM; assert exit 0 and the ``stopped:`` line; return this run's output."""
    code = serve.terminate(timeout=STOP_S)
    out = serve.outputs[-1]
    assert code == 0, out
    assert "stopped:" in out, out
    assert "Traceback" not in out, out
    return out


# --- refused starts -----------------------------------------------------------------------


@pytest.mark.integration
def test_wrong_password_exits_1_naming_the_broker_and_the_refusal(
    broker: MosquittoServer, tmp_path: Path
) -> None:
    args = serve_args(plain_url(broker), tmp_path, tmp_path / "s.sqlite3", password="wrong")
    started = time.monotonic()
    done = run_serve(args)
    elapsed = time.monotonic() - started
    line = refusal(done)
    assert elapsed < 15.0, f"took {elapsed:.1f} s to refuse"
    assert plain_url(broker) in line and "refused the login" in line, line


@pytest.mark.integration
def test_unreachable_broker_exits_1_naming_the_url(tmp_path: Path) -> None:
    url = f"mqtt://127.0.0.1:{free_port()}"
    done = run_serve(serve_args(url, tmp_path, tmp_path / "s.sqlite3"))
    line = refusal(done)
    assert url in line and "cannot reach" in line, line


@pytest.mark.integration
def test_second_serve_for_the_site_refuses_and_the_first_keeps_ingesting(
    broker: MosquittoServer, tmp_path: Path, serves: list[ServeProcess]
) -> None:
    db1, db2 = tmp_path / "first.sqlite3", tmp_path / "second.sqlite3"
    first = start_subscribed(serves, serve_args(plain_url(broker), tmp_path, db1), tmp_path, broker)
    assert first.proc is not None
    lease = retained_lease(broker)
    assert lease is not None and json.loads(lease)["pid"] == first.proc.pid

    line = refusal(run_serve(serve_args(plain_url(broker), tmp_path, db2)))
    assert "already served by" in line and f"pid {first.proc.pid}" in line, line
    assert repr(SITE_ID) in line, line

    assert first.proc.poll() is None, first.output
    publish(broker, readings_at(recent_times(now_minute(), [3, 2, 1])))
    wait_stored(db1, 3)
    assert stored_count(db2) == 0
    stop(first)


@pytest.mark.integration
def test_second_serve_on_the_same_store_refuses_with_the_lock_holder(
    tmp_path: Path, serves: list[ServeProcess], db: Path, args: list[str]
) -> None:
    first = start_serve(serves, args, tmp_path)
    assert first.proc is not None

    line = refusal(run_serve(args))
    assert line.startswith(f"error: {db}: already served by"), line
    assert f"pid {first.proc.pid}" in line, line
    assert first.proc.poll() is None, first.output
    stop(first)


@pytest.mark.integration
def test_after_kill_9_the_last_will_clears_the_lease_and_a_new_serve_starts(
    broker: MosquittoServer, tmp_path: Path, serves: list[ServeProcess], db: Path, args: list[str]
) -> None:
    base = now_minute()
    first = start_subscribed(serves, args, tmp_path, broker)
    publish(broker, readings_at(recent_times(base, [10, 9, 8])))
    wait_stored(db, 3)

    first.kill9()
    deadline = time.monotonic() + 5.0
    while (lease := retained_lease(broker, wait_s=0.2)) is not None:
        assert time.monotonic() < deadline, f"the lease outlived its holder: {lease!r}"

    second = start_serve(serves, args, tmp_path)
    assert "taking over" not in second.outputs[-1], second.outputs[-1]
    publish(broker, readings_at(recent_times(base, [4, 3, 2])))
    wait_stored(db, 6)
    stop(second)


# --- an orderly stop, a broken store --------------------------------------------------------


@pytest.mark.integration
def test_sigterm_drains_exits_0_and_leaves_a_snapshot(
    broker: MosquittoServer, tmp_path: Path, serves: list[ServeProcess], db: Path, args: list[str]
) -> None:
    serve = start_subscribed(serves, args, tmp_path, broker)
    publish(broker, readings_at(recent_times(now_minute(), [3, 2, 1])))
    wait_stored(db, 3)
    out = stop(serve)
    assert "readings_stored=3" in out, out

    store = SqliteStore(db)
    try:
        rows = store.snapshots(SITE_ID)
        assert rows, "no snapshot after SIGTERM"
        Engine.restore(load_site(SITE_FILE), rows[0].blob)  # a usable one
    finally:
        store.close()
    assert retained_lease(broker) is None, "SIGTERM left the lease behind"


@pytest.mark.integration
def test_corrupt_store_exits_1_with_one_line_naming_the_file(db: Path, args: list[str]) -> None:
    db.write_bytes(b"this is not a SQLite database \x00\xff" * 256)
    line = refusal(run_serve(args))
    assert str(db) in line and "not a usable siltwatch SQLite store" in line, line


# --- a changed site configuration ---------------------------------------------------------


@pytest.mark.integration
def test_site_change_rebuilds_only_when_a_rule_changes(
    broker: MosquittoServer, tmp_path: Path, serves: list[ServeProcess], db: Path, args: list[str]
) -> None:
    url = plain_url(broker)
    text = SITE_FILE.read_text(encoding="utf-8")
    serve = start_subscribed(serves, args, tmp_path, broker)
    publish(broker, readings_at(recent_times(now_minute(), [5, 4, 3, 2])))
    wait_stored(db, 4)
    stop(serve)

    # (a) a contact's phone number: who hears an alert, not what is found — no rebuild.
    phone = tmp_path / "phone-changed.toml"
    assert 'phone = "+15185550101"' in text
    phone.write_text(text.replace('phone = "+15185550101"', 'phone = "+15185550142"'))
    serve = start_serve(serves, serve_args(url, tmp_path, db, site=phone), tmp_path)
    assert "rebuilding" not in serve.outputs[-1], serve.outputs[-1]
    stop(serve)

    # (b) a rule value: the snapshot no longer describes this site — one line says so.
    rule = tmp_path / "limit-changed.toml"
    assert "limit = { over_background_ntu = 25 }" in text
    rule.write_text(text.replace("over_background_ntu = 25", "over_background_ntu = 30"))
    serve = start_serve(serves, serve_args(url, tmp_path, db, site=rule), tmp_path)
    out = serve.outputs[-1]
    reasons = [ln for ln in out.splitlines() if "site configuration changed" in ln]
    assert len(reasons) == 1, out
    assert "rebuilding" in reasons[0] and SITE_ID in reasons[0], reasons[0]
    assert "Traceback" not in out, out
    stop(serve)
    assert stored_count(db) == 4


# --- snapshots are data, never code -----------------------------------------------------------


class _Touch:
    """A pickle that, if ever unpickled, creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[Path]]:
        return (pathlib.Path.touch, (self.marker,))


@pytest.mark.parametrize("protocol", [0, pickle.HIGHEST_PROTOCOL])
def test_a_pickled_snapshot_is_never_executed_and_the_store_rebuilds(
    tmp_path: Path, protocol: int
) -> None:
    # The payload is live: unpickling it does create its file.
    control = tmp_path / "control-marker"
    pickle.loads(pickle.dumps(_Touch(control), protocol=protocol))
    assert control.exists()

    marker = tmp_path / "pwned-marker"
    site = load_site(SITE_FILE)
    t0 = 1_714_560_000_000  # 2024-05-01T10:40Z
    times = [t0 + i * MINUTE_MS for i in range(5)]
    store = SqliteStore(tmp_path / "site.sqlite3")
    try:
        store.add_readings(SITE_ID, [("up-1", r) for r in readings_at(times)], times[-1])
        store.save_snapshot(
            SITE_ID,
            pickle.dumps(_Touch(marker), protocol=protocol),
            times[-1],
            processed_to=times[-1],
            marks=(0, 0),
        )
        said: list[str] = []
        service = IngestService(site, store, now_ms=times[-1] + 3_600_000, say=said.append)

        assert not marker.exists(), "a pickled snapshot was executed"
        assert store.snapshots(SITE_ID) == [], "the bad snapshot row was kept"
        assert service.engine.stats.readings_in == 5
        (line,) = said
        assert line.startswith(f"rebuilding the engine of {SITE_ID} from the store (5 readings): ")
        assert "snapshot" in line or "pickle" in line, line
    finally:
        store.close()


@pytest.mark.parametrize("name", ["os:system", "builtins:eval", "pathlib:Path", "subprocess:Popen"])
def test_a_json_snapshot_naming_a_foreign_class_is_refused(name: str) -> None:
    site = load_site(SITE_FILE)
    doc = json.loads(zlib.decompress(Engine(site).snapshot()))
    doc["state"]["$dict"].append(["_planted", {"$obj": name, "fields": {}}])
    planted = zlib.compress(json.dumps(doc).encode())
    with pytest.raises(SnapshotError, match=re.escape(name)):
        Engine.restore(site, planted)
    with pytest.raises(SnapshotError, match="not a class a snapshot may hold"):
        statecodec.decode_state({"$obj": name, "fields": {"command": "touch /tmp/x"}})


# --- TLS ------------------------------------------------------------------------------------


@pytest.mark.integration
def test_tls_with_the_ca_ingests_and_without_it_refuses(
    tls_broker: MosquittoServer, tmp_path: Path, serves: list[ServeProcess], db: Path
) -> None:
    assert tls_broker.ca_path is not None
    url = f"mqtts://127.0.0.1:{tls_broker.tls_port}"
    serve = start_subscribed(
        serves,
        serve_args(url, tmp_path, db, extra=["--ca-file", str(tls_broker.ca_path)]),
        tmp_path,
        tls_broker,
    )
    assert f"from {url}" in serve.outputs[-1], serve.outputs[-1]
    publish(tls_broker, readings_at(recent_times(now_minute(), [1])))
    wait_stored(db, 1)
    stop(serve)

    line = refusal(run_serve(serve_args(url, tmp_path, tmp_path / "no-ca.sqlite3")))
    assert url in line and "CERTIFICATE_VERIFY_FAILED" in line, line
