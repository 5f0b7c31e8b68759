"""The shared PostgreSQL restarts under a worker mid-stream: nothing is lost or doubled.

A database restart is a fault that happens (a failover of the database, an
upgrade, an operator). The worker cannot commit while the database is gone; it
must not acknowledge what it did not store, must say in one line what happened,
and must stop, so that its supervisor (Kubernetes) starts it again. The broker
keeps the unacknowledged messages in the worker's persistent session, and the
restarted worker rebuilds from the store. In the end every published reading is
stored exactly once, and the alerts and duties equal those of a worker that never
saw the fault.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import require_server
from tests.ingest.live import SERVICE_USERS, Publisher, ServeProcess
from tests.ingest.test_failover import paced_sender, reference_run, stored
from tests.ingest.test_fleet import _broker, fleet_args
from tests.servers import PostgresServer

pytestmark = pytest.mark.integration

SITES = 4


def test_a_database_restart_mid_stream_loses_and_repeats_nothing(tmp_path: Path) -> None:
    require_server("postgres", PostgresServer.available())
    reference = reference_run(tmp_path, SITES)
    messages = reference.messages

    work = tmp_path / "restart"
    work.mkdir()
    with PostgresServer() as database, _broker() as broker:
        url = database.create_database("siltwatch_restart")
        sites = ("--sites", str(reference.sites_dir))
        args = fleet_args(broker, work, "w", *sites, "--tick-s", "0", db=url)
        worker = ServeProcess(args, work / "w.log")
        pub = Publisher(broker.host, broker.port, "station", SERVICE_USERS["station"], "pg-r")
        try:
            worker.start(wait_s=30.0)

            sender = paced_sender(pub, messages)
            deadline = time.monotonic() + 20
            while stored(url) < len(messages) // 4 and time.monotonic() < deadline:
                time.sleep(0.005)
            database.stop()  # a fast shutdown: the worker's session is ended under it
            assert worker.proc is not None
            exited = worker.proc.wait(timeout=60)
            database.start()
            sender.join(60)
            assert pub.wait_acked(60) and pub.log.refused == 0
            first_run = worker.outputs[0]
            assert exited != 0, first_run
            assert "Traceback" not in first_run, first_run
            said = [line for line in first_run.splitlines() if "error:" in line]
            assert said, first_run
            assert any("store" in line and "postgresql://" in line for line in said), said

            worker.start(wait_s=60.0)  # its supervisor starts it again
            deadline = time.monotonic() + 60
            while stored(url) < len(messages) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert worker.terminate(timeout=30) == 0, worker.output
        finally:
            pub.close()
            worker.stop_quietly()
        reference.assert_found_in(url)
