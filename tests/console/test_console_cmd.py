"""``siltwatch console``: one web console over every partition of a fleet.

Two real workers ``serve --sites DIR --partition 0/2`` and ``1/2`` on a real
PostgreSQL store and a real Mosquitto, and one ``siltwatch console`` process over
all the sites. An officer's account is made with ``siltwatch users``; the
overview lists the sites of both partitions; an inspection typed for a site of
partition 1 is published to that site's topic and stored by worker 1, not by
the console and not by worker 0. What the wire would refuse is refused at the
form with the wire's reason and nothing is published; with the broker stopped
the form says at once that the broker did not take it.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from analytics.events import Inspection
from console.desk import DeskError
from console.mqtt_desk import MqttDesk
from ingest.mqtt.session import BrokerSettings
from ingest.sites import partition_of
from ingest.store.from_url import open_store_read_only
from siltwatch.config import SiteConfig
from siltwatch.schema import InspectionRecord, SiteLogRecord, inspections_topic, site_log_topic
from siltwatch.vocabulary import SiteEvent
from tests.console.app_world import csrf_of, inspection_form
from tests.ingest.fleet_world import write_sites
from tests.ingest.live import (
    SERVICE_ACL,
    SERVICE_USERS,
    ServeProcess,
    loopback_broker,
    run_cli,
    siltwatch_child,
)
from tests.servers import MosquittoServer, free_port

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "basin-outlet-clear-4"
INSPECTOR = "Jo Whitaker"
# The console's broker account: it may write what people record, nothing else (deploy/k8s).
CONSOLE_USERS = {**SERVICE_USERS, "console": "console-pw"}
CONSOLE_ACL = (
    SERVICE_ACL
    + """
user console
topic write siltwatch/v1/+/inspections
topic write siltwatch/v1/+/log
"""
)


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-console-cmd-", users=CONSOLE_USERS, acl=CONSOLE_ACL)


class ConsoleProcess:
    """``siltwatch console`` as a child process, its output collected in the background."""

    def __init__(self, args: list[str]) -> None:
        self.proc = siltwatch_child("console", *args)
        self.lines: list[str] = []
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if "siltwatch console for" in line:
                self.ready.set()
        self.ready.set()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_ready(self, timeout_s: float = 20.0) -> None:
        assert self.ready.wait(timeout_s) and self.proc.poll() is None, self.output

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=20)
        self.reader.join(timeout=5)
        return code

    def kill_quietly(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)


class Watcher:
    """An MQTT client that records every inspection and site-log entry the broker passes on."""

    def __init__(self, broker: MosquittoServer) -> None:
        self.seen: list[tuple[str, bytes]] = []
        subscribed = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="console-cmd-watcher")
        self.client.username_pw_set("ingest", SERVICE_USERS["ingest"])
        self.client.on_message = lambda c, u, m: self.seen.append((m.topic, bytes(m.payload)))
        self.client.on_subscribe = lambda *a: subscribed.set()
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()
        self.client.subscribe([("siltwatch/v1/+/inspections", 1), ("siltwatch/v1/+/log", 1)])
        assert subscribed.wait(10), "the watcher could not subscribe"

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def worker(broker: MosquittoServer, work: Path, db: str, partition: str) -> ServeProcess:
    name = f"part-{partition.replace('/', '-of-')}"
    return ServeProcess(
        [
            "--sites", str(work / "sites"), "--partition", partition,
            "--broker", f"mqtt://{broker.host}:{broker.port}",
            "--username", "ingest", "--password-file", str(work / "ingest.pw"),
            "--db", db, "--alert-log", str(work / f"{name}-alerts.jsonl"), "--tick-s", "0",
        ],
        work / f"{name}.log",
    )  # fmt: skip


def wait_inspections(db: str, sid: str, timeout_s: float) -> list[Inspection]:
    deadline = time.monotonic() + timeout_s
    while True:
        store = open_store_read_only(db)
        try:
            found = list(store.inspections_after(sid, None))
        finally:
            store.close()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_one_console_over_two_partitions_sends_an_inspection_to_its_sites_worker(
    broker: MosquittoServer, postgres_url: str, tmp_path: Path
) -> None:
    sites = {s.site.id: s for s in write_sites(tmp_path / "sites", 4)}
    by_partition = {k: sorted(s for s in sites if partition_of(s, 2) == k) for k in (0, 1)}
    assert by_partition[0] and by_partition[1], by_partition
    sid = by_partition[1][0]
    zone = sites[sid].site.zone
    (tmp_path / "ingest.pw").write_text(SERVICE_USERS["ingest"], encoding="utf-8")
    (tmp_path / "console.pw").write_text(CONSOLE_USERS["console"], encoding="utf-8")
    (tmp_path / "user.pw").write_text(PASSWORD + "\n", encoding="utf-8")
    with ExitStack() as stack:
        workers = [worker(broker, tmp_path, postgres_url, f"{k}/2") for k in (0, 1)]
        for w in workers:
            stack.callback(w.stop_quietly)
        starting = [threading.Thread(target=w.start, kwargs={"wait_s": 30.0}) for w in workers]
        for t in starting:
            t.start()
        for t in starting:
            t.join()
        roles = [a for s in sorted(sites) for a in ("--role", f"{s}:qualified_inspector")]
        made = run_cli("users", "add", INSPECTOR, "--db", postgres_url,
                   "--password-file", str(tmp_path / "user.pw"), *roles)  # fmt: skip
        assert made.returncode == 0, made.stderr
        port = free_port()
        console = ConsoleProcess(
            [
                "--sites", str(tmp_path / "sites"), "--db", postgres_url,
                "--http", f"127.0.0.1:{port}",
                "--broker", f"mqtt://{broker.host}:{broker.port}",
                "--username", "console", "--password-file", str(tmp_path / "console.pw"),
            ]
        )  # fmt: skip
        stack.callback(console.kill_quietly)
        console.wait_ready()
        watcher = Watcher(broker)
        stack.callback(watcher.close)
        url = f"http://127.0.0.1:{port}"
        assert f"on {url}" in console.output and "postgresql://" in console.output

        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            login = client.get("/login")
            form = {"name": INSPECTOR, "password": PASSWORD, "csrf": csrf_of(login.text)}
            assert client.post("/login", data={**form, "next": "/"}).status_code == 303
            overview = client.get("/")
            assert overview.status_code == 200
            for shown in (*by_partition[0], *by_partition[1]):
                assert shown in overview.text, f"the overview lists {shown}"

            # An inspection of a partition-1 site: published, then stored by worker 1.
            page = client.get(f"/sites/{sid}/duties")
            when = datetime.now(zone) - timedelta(minutes=20)
            posted = client.post(f"/sites/{sid}/inspections",
                                 data=inspection_form(INSPECTOR, csrf_of(page.text), when))  # fmt: skip
            assert posted.status_code == 303, posted.text[-800:]
            assert posted.headers["location"] == f"/sites/{sid}/duties?done=inspection"
            done = client.get(posted.headers["location"])
            assert "Inspection recorded" in done.text
            (stored,) = wait_inspections(postgres_url, sid, 15.0)
            assert stored.inspector == INSPECTOR
            assert stored.t == int(when.replace(second=0, microsecond=0).timestamp() * 1000)
            assert [t for t, _ in watcher.seen] == [inspections_topic(sid)]
            assert json.loads(watcher.seen[0][1])["site"] == sid

            # Dated tomorrow: refused at the form with the reason, nothing published.
            page = client.get(f"/sites/{sid}/duties")
            ahead = client.post(
                f"/sites/{sid}/inspections",
                data=inspection_form(
                    INSPECTOR, csrf_of(page.text), datetime.now(zone) + timedelta(days=1)
                ),
            )
            assert ahead.status_code == 400
            assert "Not recorded: the time is in the future" in ahead.text
            time.sleep(0.5)
            assert len(watcher.seen) == 1, watcher.seen

        # What the form cannot catch, the desk refuses with the wire's reason, before sending.
        desk = MqttDesk(sites, broker_as("console", broker), lambda: int(time.time() * 1000))
        with pytest.raises(DeskError, match=r"^unknown area: 'north-lot' is not an area"):
            desk.submit(site_log_topic(sid), site_log(sid, area="north-lot"))
        with pytest.raises(DeskError, match=r"^clock ahead: inspection time .* at most 300 s"):
            desk.submit(inspections_topic(sid), inspection(sid, ahead_s=3600))
        time.sleep(0.5)
        assert len(watcher.seen) == 1, watcher.seen

        codes = [w.terminate(timeout=30) for w in workers]
        assert codes == [0, 0], [w.output for w in workers]
        assert re.search(r"inspections=0\b", workers[0].output), workers[0].output
        assert re.search(r"inspections=1\b", workers[1].output), workers[1].output

        # The broker stopped: the form says so at once, and the console keeps serving.
        watcher.close()
        broker.stop()
        with httpx.Client(base_url=url, timeout=30) as client:
            login = client.get("/login")
            form = {"name": INSPECTOR, "password": PASSWORD, "csrf": csrf_of(login.text)}
            assert client.post("/login", data={**form, "next": "/"}).status_code == 303
            page = client.get(f"/sites/{sid}/duties")
            started = time.monotonic()
            refused = client.post(
                f"/sites/{sid}/inspections",
                data=inspection_form(INSPECTOR, csrf_of(page.text), datetime.now(zone)),
            )
            assert time.monotonic() - started < 12.0
            assert refused.status_code == 400
            assert "Not recorded: the broker did not take it" in refused.text
            assert "cannot reach the MQTT broker" in refused.text
        assert console.terminate() == 0, console.output
        assert "stopped" in console.output and "Traceback" not in console.output, console.output
        for w in workers:
            assert "Traceback" not in w.output, w.output
    assert len(wait_inspections(postgres_url, sid, 0.0)) == 1


def broker_as(user: str, broker: MosquittoServer) -> BrokerSettings:
    return BrokerSettings(broker.host, broker.port, username=user, password=CONSOLE_USERS[user])


def site_log(sid: str, *, area: str | None = None) -> bytes:
    record = SiteLogRecord(
        site=sid,
        time=datetime.now().astimezone() - timedelta(minutes=5),
        event=SiteEvent.DISTURBED if area else SiteEvent.MILESTONE,
        area=area,
        by=INSPECTOR,
        detail=None if area else "start_of_development",
    )
    return record.model_dump_json(exclude_none=True).encode()


def inspection(sid: str, *, ahead_s: float = -600.0) -> bytes:
    record = InspectionRecord(
        site=sid,
        time=datetime.now().astimezone() + timedelta(seconds=ahead_s),
        inspector=INSPECTOR,
    )
    return record.model_dump_json(exclude_none=True).encode()


# --- the desk alone ---------------------------------------------------------------------------


@pytest.fixture
def fleet(tmp_path: Path) -> dict[str, SiteConfig]:
    return {s.site.id: s for s in write_sites(tmp_path / "sites", 2)}


def test_the_desk_refuses_what_the_wire_refuses_without_touching_the_broker(
    fleet: dict[str, SiteConfig],
) -> None:
    sid, other = sorted(fleet)
    nobody = BrokerSettings("127.0.0.1", free_port())  # nothing listens: a send would say so
    desk = MqttDesk(fleet, nobody, lambda: int(time.time() * 1000))
    with pytest.raises(DeskError, match=r"^wrong topic: inspection for site"):
        desk.submit(inspections_topic(sid), inspection(other))
    with pytest.raises(DeskError, match=r"^no site of this console takes siltwatch/v1/elsewhere/"):
        desk.submit(inspections_topic("elsewhere"), inspection(sid))
    with pytest.raises(DeskError, match=r"^invalid payload"):
        desk.submit(
            inspections_topic(sid), b'{"type": "inspection", "site": "' + sid.encode() + b'"}'
        )
    with pytest.raises(
        DeskError,
        match=r"^the broker did not take it: cannot reach the MQTT broker .*nothing was sent",
    ):
        desk.submit(inspections_topic(sid), inspection(sid))


def test_a_publish_the_broker_refuses_is_refused_with_its_reason_code(
    fleet: dict[str, SiteConfig],
) -> None:
    sid = min(fleet)
    only_inspections = SERVICE_ACL + "\nuser console\ntopic write siltwatch/v1/+/inspections\n"
    with ExitStack() as stack:
        broker = stack.enter_context(
            contextmanager(loopback_broker)(
                "siltwatch-desk-acl-", users=CONSOLE_USERS, acl=only_inspections
            )
        )
        desk = MqttDesk(fleet, broker_as("console", broker), lambda: int(time.time() * 1000))
        desk.submit(inspections_topic(sid), inspection(sid))  # allowed: PUBACK success
        with pytest.raises(
            DeskError, match=r"refused it on siltwatch/v1/.*/log: Not authorized \(may the console"
        ):
            desk.submit(site_log_topic(sid), site_log(sid))
