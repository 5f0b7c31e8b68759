"""Readings a broker loses after acknowledging them are fetched back from the station.

Issue 23, item 1: a broker stopped with SIGTERM for 40 s mid-stream lost 14,169
readings it had PUBACKed to the stations (who then considered them sent).

The fault, made the way it happens. The broker runs the production queue settings of
deploy/mosquitto/mosquitto.conf (``max_inflight_messages 20``, ``max_queued_messages
0``) with **Mosquitto's own default ``persistence false``**: what a broker runs when
its config says nothing about persistence (the upstream ``eclipse-mosquitto`` image's
shipped config leaves it commented out). A SIGTERM then drops every session: the
services' subscriptions are gone until they are back. (With ``persistence true``
Mosquitto 2.0.11 saves a connected session's queue at a clean exit: a probe kept 100
of 100 queued messages over a SIGTERM; there the loss needs a crash between
autosaves, a lost volume or a failover to another node.) The stations stream (10
readings a second each) through their outboxes; the services are connected; the
broker is stopped with SIGTERM for 40 s and started again, and everyone reconnects
on their own: nothing is paused, no file removed. The stations sit on the broker's
LAN and retry every 0.05–0.1 s; the services reach it over a WAN link (0.15 s each
way, ``SlowLink``), so the stations are back first and flush their 40 s backlog into
a broker that acknowledges it and has no subscriber for it yet. (A connected service
holds what it was sent but has not acknowledged, up to its receive maximum of
10,000 messages, so the SIGTERM itself takes nothing from it.)

One real broker, one outage, two sites side by side:

* site ``lg-a``: its ingest service does *not* watch for gaps: the loss shows and is
  counted (the test asserts that readings ARE lost, so the repair below is what
  makes the difference);
* site ``lg-b``: its service watches each sensor's seqs (ingest/gaps.py), asks the
  stations on their command topic, and they answer from their outboxes (edge
  retention). Station ``up-1`` keeps a week: every reading it produced is stored.
  Station ``down-1`` keeps only 10 sent readings: what it can no longer give is a
  stored ``data_gap``, shown on the console's station-health table, and every other
  reading of it is stored.

Real parts throughout: Mosquitto 2.0.11 with the ACL ``siltwatch broker-acl``
generates (so only the service writes a resend request and only its station reads
it), the edge agent (sampler threads, SQLite outbox, paho publisher), the ingest
service ``serve`` builds (IngestService on MqttIngest, in this process so that one
site can run without the repair) with a SQLite store. Bounded: about 75 s.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console.views import station_rows
from edge.agent import Agent
from edge.config import load_config
from edge.outbox import Outbox
from ingest.gaps import GapPolicy
from ingest.mqtt.session import BrokerSettings, MqttIngest
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.brokeraccess import SiteStations, acl_text, station_user
from siltwatch.config import SiteConfig, load_site
from tests.conftest import require_server
from tests.ingest.live import EXAMPLES, QUIET_LOG
from tests.servers import MosquittoServer, SlowLink

OUTAGE_S = 40.0
BEFORE_S = 6.0  # streaming before the stop
WAN_S = 0.15  # one way, between the services and the broker (the stations are on its LAN)
AFTER_S = 4.0  # streaming after the restart, before looking
SETTLE_S = 30.0  # at most, for the resends to arrive (the stations go on streaming)
# deploy/mosquitto/mosquitto.conf's queue settings; persistence is left at Mosquitto's
# default (false), see the module's docstring.
DEPLOY_QUEUES = ("max_queued_messages 0", "max_inflight_messages 20")
STATIONS = {"up-1": "turb-up", "down-1": "turb-down"}
SITES = ("lg-a", "lg-b")
INGEST_PW = "ingest-pw"
POLICY = GapPolicy(first_request_s=2.0, retry_base_s=3.0, retry_cap_s=10.0, deadline_s=120.0)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _site_file(folder: Path, site_id: str) -> Path:
    """The Lake George example under another site id (two sites on one broker)."""
    text = (EXAMPLES / "lake-george-site.toml").read_text()
    assert text.count('id = "lg-route9n"') == 1
    path = folder / f"{site_id}.toml"
    path.write_text(text.replace('id = "lg-route9n"', f'id = "{site_id}"'))
    return path


def _agent_file(
    folder: Path, port: int, site: str, station: str, sensor: str, *, retain_max: int
) -> Path:
    path = folder / f"{site}-{station}.toml"
    path.write_text(
        f"""
site = "{site}"
station = "{station}"
drain_timeout_s = 20.0

[broker]
host = "127.0.0.1"
port = {port}
username = "{station_user(site, station)}"
password = "{site}-{station}-pw"
backoff_min_s = 0.05
backoff_max_s = 0.1
connect_timeout_s = 3.0

[outbox]
path = "{folder / f"{site}-{station}.sqlite"}"
batch_max = 200
retention_max_readings = {retain_max}

[health]
interval_s = 2.0
clock_check = "year"

[[sensors]]
id = "{sensor}"
unit = "NTU"
interval_s = 0.1
[sensors.driver]
kind = "simulated"
quantity = "turbidity_ntu"
noise = 1.0
seed = 7
"""
    )
    return path


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    """Mosquitto with production queue settings, default persistence, the generated ACL."""
    require_server("mosquitto", MosquittoServer.available())
    workdir = Path(tempfile.mkdtemp(prefix="siltwatch-broker-loss-"))
    users = {"ingest": INGEST_PW}
    users |= {station_user(s, st): f"{s}-{st}-pw" for s in SITES for st in STATIONS}
    acl = acl_text([SiteStations(s, tuple(STATIONS)) for s in SITES], command="(test)")
    try:
        with MosquittoServer(
            workdir,
            users=users,
            acl=acl,
            persistence=False,
            extra_config=DEPLOY_QUEUES,
            log_types=QUIET_LOG,
        ) as server:
            yield server
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class _Station:
    """One edge agent in a thread, as ``python -m edge`` runs it."""

    def __init__(self, config: Path) -> None:
        self.config = load_config(config)
        self.agent = Agent(self.config)
        self.thread = threading.Thread(target=self.agent.run, name=f"agent-{config.stem}")

    def stop(self) -> None:
        self.agent.stop()
        self.thread.join(timeout=40)
        assert not self.thread.is_alive(), "the agent did not stop"

    def produced(self) -> dict[str, int]:
        outbox = Outbox(self.config.outbox.path)
        try:
            return outbox.next_seqs()
        finally:
            outbox.close()


def _stored_seqs(store: SqliteStore, site: str, sensor: str) -> set[int]:
    return {r.seq for r in store.readings(site, sensor) if r.seq is not None}


@pytest.mark.integration
def test_readings_the_broker_lost_are_fetched_back_or_recorded(
    tmp_path: Path, broker: MosquittoServer
) -> None:
    started = time.monotonic()
    sites: dict[str, SiteConfig] = {s: load_site(_site_file(tmp_path, s)) for s in SITES}
    link = SlowLink(broker.port, WAN_S).__enter__()
    settings = BrokerSettings(broker.host, link.port, username="ingest", password=INGEST_PW)
    stores = {s: SqliteStore(tmp_path / f"{s}.db") for s in SITES}
    services = {
        s: IngestService(
            sites[s],
            stores[s],
            None,
            now_ms=_now_ms(),
            completeness=POLICY if s == "lg-b" else None,
        )
        for s in SITES
    }
    ingests = {
        s: MqttIngest(
            services[s],
            settings,
            clock_ms=_now_ms,
            client_id=f"ingest-{s}",
        )
        for s in SITES
    }
    stations = {
        (s, st): _Station(
            _agent_file(
                tmp_path,
                broker.port,
                s,
                st,
                sensor,
                retain_max=10 if (s, st) == ("lg-b", "down-1") else 500_000,
            )
        )
        for s in SITES
        for st, sensor in STATIONS.items()
    }
    try:
        for ingest in ingests.values():
            ingest.start()
            assert ingest.subscribed.wait(10)
        for station in stations.values():
            station.thread.start()
        time.sleep(BEFORE_S)
        at_stop = {
            s: (
                services[s].stats.readings_stored,
                sum(
                    st.agent.publisher.stats.acked_readings
                    for (x, _), st in stations.items()
                    if x == s
                ),
            )
            for s in SITES
        }
        broker.stop()  # SIGTERM, mid-stream, with the services connected
        time.sleep(OUTAGE_S)
        broker.start()  # without the sessions: persistence is off
        time.sleep(AFTER_S)

        def repaired() -> bool:
            """lg-b's holes asked for and filled or recorded, while the stations run."""
            service, store = services["lg-b"], stores["lg-b"]
            with service.lock:
                recorded = store.data_gaps("lg-b")
                up = _stored_seqs(store, "lg-b", "turb-up")
                tracker = service.gaps
                open_gaps = tracker.open_gaps() if tracker is not None else [None]
            return bool(recorded) and not open_gaps and up == set(range(max(up, default=0) + 1))

        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline and not repaired():
            time.sleep(0.5)
        for station_ in stations.values():
            station_.stop()
        produced = {key: st.produced() for key, st in stations.items()}

        def expected(site: str) -> dict[str, set[int]]:
            return {
                sensor: set(range(n))
                for (s, _st), seqs in produced.items()
                if s == site
                for sensor, n in seqs.items()
            }

        time.sleep(2.0)  # the stations' last readings land
    finally:
        for station in stations.values():
            if station.thread.is_alive():
                station.stop()
        for ingest in ingests.values():
            ingest.stop(drain_s=5)
        link.__exit__()

    figures: dict[str, dict[str, Any]] = {}
    for s in SITES:
        want = expected(s)
        got = {sensor: _stored_seqs(stores[s], s, sensor) for sensor in want}
        lost_rows = stores[s].data_gaps(s)
        recorded = {
            sensor: {
                q for g in lost_rows if g.sensor == sensor for q in range(g.seq_from, g.seq_to + 1)
            }
            for sensor in want
        }
        figures[s] = {
            "produced": sum(len(v) for v in want.values()),
            "pubacked": sum(
                st.agent.publisher.stats.acked_readings
                for (site, _), st in stations.items()
                if site == s
            ),
            "stored": sum(len(v) for v in got.values()),
            "missing": {sensor: len(want[sensor] - got[sensor]) for sensor in want},
            "refetched": sum(
                st.agent.publisher.stats.resent_readings
                for (site, _), st in stations.items()
                if site == s
            ),
            "requests": services[s].stats.resend_requests,
            "data_gaps": len(lost_rows),
            "recorded_lost": {sensor: len(v) for sensor, v in recorded.items()},
            "unaccounted": {
                sensor: len(want[sensor] - got[sensor] - recorded[sensor]) for sensor in want
            },
        }
    rows = {r.id: r for r in station_rows(sites["lg-b"], stores["lg-b"])}
    print(
        f"\nbroker loss ({OUTAGE_S:.0f} s SIGTERM of Mosquitto, {time.monotonic() - started:.0f} s):"
    )
    for s, (stored, acked) in at_stop.items():
        print(f"  {s} at the SIGTERM: PUBACKed {acked}, stored {stored}")
    for s, f in figures.items():
        print(
            f"  {s}: published {f['produced']}, PUBACKed by the broker {f['pubacked']} "
            f"(resends included), stored {f['stored']}, refetched {f['refetched']} "
            f"({f['requests']} requests), missing {f['missing']}, data_gap rows "
            f"{f['data_gaps']} covering {f['recorded_lost']}, unaccounted {f['unaccounted']}"
        )
    for st in STATIONS:
        print(f"  lg-b station health {st}: lost {rows[st].lost!r}, complete {rows[st].complete!r}")
    for s in SITES:
        for store in (stores[s],):
            store.close()

    a, b = figures["lg-a"], figures["lg-b"]
    # Without refetching, the restart loses acknowledged readings: the mechanism matters.
    assert sum(a["missing"].values()) > 0, a
    assert a["data_gaps"] == 0 and a["requests"] == 0
    # With it, every reading of the station that kept a week is stored ...
    assert b["missing"]["turb-up"] == 0, b
    assert b["refetched"] > 0 and b["requests"] > 0
    # ... and the one whose retention was too short: its gap is recorded and shown, and
    # nothing else of it is lost.
    assert b["data_gaps"] >= 1 and b["recorded_lost"]["turb-down"] > 0, b
    assert b["unaccounted"] == {"turb-up": 0, "turb-down": 0}, b
    assert "lost" in rows["down-1"].lost and rows["up-1"].lost == "—"
    assert rows["up-1"].complete.startswith("100.0 %"), rows["up-1"]
    assert not rows["down-1"].complete.startswith("100.0 %"), rows["down-1"]
