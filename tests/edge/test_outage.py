"""The headline guarantee: a station never loses a reading, through broker outages
and agent crashes (SIGKILL), against a real Mosquitto with persistence.

4 simulated sensors at 20 Hz. The broker is stopped and started three times,
the agent is SIGKILLed and restarted six times (during outages and while
flushing its backlog). A persistent-session MQTT v5 subscriber must then hold
every (sensor, seq) that was ever stored, exactly once after dedupe by seq,
and the outbox must be empty.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edge.outbox import Outbox
from tests.edge.helpers import AgentProcess, Collector, station_broker, station_config
from tests.servers import MosquittoServer


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MosquittoServer]:
    with station_broker(tmp_path / "mosquitto", persistence=True) as server:
        yield server


@pytest.mark.integration
def test_no_reading_lost_or_duplicated_through_outages_and_sigkill(
    tmp_path: Path, broker: MosquittoServer
) -> None:
    outbox_path = tmp_path / "outbox.sqlite"
    config = station_config(tmp_path, broker.port, outbox=outbox_path, interval_s=0.05)
    collector = Collector(broker)
    agent = AgentProcess(config, tmp_path / "agent.log")
    started = time.monotonic()
    try:
        assert collector.subscribed.wait(5), "collector did not connect"
        agent.start()
        time.sleep(2.0)
        for _ in range(3):
            broker.stop()  # outage: the agent keeps sampling into its outbox
            time.sleep(0.8)
            agent.kill()  # crash during the outage
            agent.start()
            time.sleep(0.8)
            broker.start()
            time.sleep(0.6)  # agent reconnects and is flushing its backlog...
            agent.kill()  # ...when it crashes again
            agent.start()
            time.sleep(1.5)
        code = agent.terminate(timeout=30)
        assert code == 0, f"agent exit code {code}"

        outbox = Outbox(outbox_path)
        try:
            stored = outbox.next_seqs()
            backlog = outbox.backlog()
            # unsent rows (acknowledged ones are kept for resend requests: retention)
            left = outbox.conn.execute("SELECT COUNT(*) FROM outbox WHERE acked = 0").fetchone()[0]
            dropped = outbox.dropped()
        finally:
            outbox.close()
        expected = {(sensor, seq) for sensor, n in stored.items() for seq in range(n)}

        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not expected <= set(collector.counts()):
            time.sleep(0.2)
        counts = collector.counts()
        conflicting = collector.conflicting()
    finally:
        agent.cleanup()
        collector.close()
    got = set(counts)
    lost = expected - got
    unexpected = got - expected
    raw_duplicates = sum(n - 1 for n in counts.values())
    print(
        f"\noutage test: {len(stored)} sensors, {len(expected)} readings stored, "
        f"{sum(counts.values())} received raw, {len(got)} distinct, lost {len(lost)}, "
        f"duplicated after dedupe 0 (raw duplicates {raw_duplicates}), "
        f"unexpected {len(unexpected)}, outbox left {left} (backlog counter {backlog}), "
        f"dropped {dropped}, agent starts {agent.starts}, broker restarts 3, "
        f"{time.monotonic() - started:.1f} s"
    )
    assert len(stored) == 4 and all(n > 100 for n in stored.values()), stored
    assert not conflicting, f"one seq carried different readings: {conflicting[:20]}"
    assert not lost, f"lost readings: {sorted(lost)[:20]} ..."
    assert not unexpected, f"readings never stored: {sorted(unexpected)[:20]}"
    assert left == 0 and backlog == 0
    assert dropped == 0
