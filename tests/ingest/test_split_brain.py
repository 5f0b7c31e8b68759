"""Split brain: a ``serve`` frozen past its keepalive wakes to find itself replaced, and stops.

Against a real Mosquitto and two real ``serve`` processes, each with its own store
(issue 23, item 3). ``serve`` A is frozen with SIGSTOP; after its keepalive the
broker publishes its last will, which clears A's lease; ``serve`` B starts for
the same site and takes readings; A resumes with SIGCONT. Before, A reconnected,
published its lease over B's and went on: both served, each storing every
reading. Now A checks its lease before any write, finds B's (a newer token), says
so and stops: 0 readings written by A after it woke.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ingest.live import ServeProcess, loopback_broker
from tests.ingest.test_operations import (
    now_minute,
    plain_url,
    publish,
    readings_at,
    recent_times,
    retained_lease,
    serve_args,
    start_subscribed,
    stored_count,
    wait_stored,
)
from tests.servers import MosquittoServer

WILL_S = 60.0  # bound on the broker noticing the frozen client (keepalive 30 s x 1.5) + slack


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-split-", log_types=("all",))


@pytest.fixture
def serves() -> Iterator[list[ServeProcess]]:
    started: list[ServeProcess] = []
    yield started
    for serve in started:
        if serve.proc is not None and serve.proc.poll() is None:
            os.kill(serve.proc.pid, signal.SIGCONT)  # a frozen one cannot die of SIGKILL late
        serve.stop_quietly()


@pytest.mark.integration
def test_a_frozen_owner_wakes_replaced_and_stops_without_writing(
    broker: MosquittoServer, tmp_path: Path, serves: list[ServeProcess]
) -> None:
    base = now_minute()
    db_a, db_b = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = start_subscribed(
        serves, serve_args(plain_url(broker), tmp_path / "a", db_a), tmp_path / "a", broker
    )
    assert first.proc is not None
    publish(broker, readings_at(recent_times(base, [30, 29, 28])))
    wait_stored(db_a, 3)
    token_a = json.loads(retained_lease(broker) or b"{}").get("token", 0)

    os.kill(first.proc.pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + WILL_S
        while retained_lease(broker, wait_s=0.3) is not None:
            assert time.monotonic() < deadline, "the last will did not clear the frozen lease"
            time.sleep(1.0)
        args_b = serve_args(
            plain_url(broker), tmp_path / "b", db_b, extra=["--client-id", "siltwatch-ingest-b"]
        )
        second = ServeProcess(args_b, tmp_path / "b" / "serve.log")
        serves.append(second)
        second.start(wait_s=30.0)
        publish(broker, readings_at(recent_times(base, [20, 19, 18, 17])))
        wait_stored(db_b, 4)
        lease_b = json.loads(retained_lease(broker) or b"{}")
        assert lease_b["client_id"] == "siltwatch-ingest-b"
    finally:
        os.kill(first.proc.pid, signal.SIGCONT)
    code = first.proc.wait(timeout=60)
    out = first.output
    print(f"A exit {code}; A stored {stored_count(db_a)}; B stored {stored_count(db_b)}")
    assert code == 1, out
    assert "was taken over by client 'siltwatch-ingest-b'" in out, out
    assert "it stops without writing or acknowledging anything more" in out, out
    assert "Traceback" not in out, out
    assert stored_count(db_a) == 3, "the frozen owner wrote nothing after it woke"
    assert second.proc is not None and second.proc.poll() is None, second.output
    publish(broker, readings_at(recent_times(base, [10])))
    wait_stored(db_b, 5)
    assert json.loads(retained_lease(broker) or b"{}")["client_id"] == "siltwatch-ingest-b"
    assert stored_count(db_a) == 3
    assert lease_b["token"] > token_a, "the newer claim carries the larger fencing token"
