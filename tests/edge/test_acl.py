"""A station's credentials cannot publish under another station's topics.

Against a real Mosquitto with an ACL: the agent is configured as station
``st2`` but holds ``st1``'s credentials. Mosquitto answers each QoS 1 publish
with PUBACK reason code 135 (Not authorized) under MQTT v5; the agent must log
that clearly with the topic, keep the readings (quarantine) and count them —
not delete them as if delivered.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import pytest

from tests.edge.helpers import (
    SITE,
    Collector,
    run_agent,
    station_broker,
    station_config,
)


@pytest.mark.integration
def test_publishing_another_stations_topic_is_refused_logged_and_quarantined(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outbox = tmp_path / "outbox.sqlite"
    with station_broker(tmp_path / "mosquitto", persistence=False) as broker:
        config = station_config(
            tmp_path,
            broker.port,
            outbox=outbox,
            station="st2",
            sensors=2,
            interval_s=0.1,
            drain_timeout_s=2.0,
        )
        spy = Collector(broker, f"siltwatch/v1/{SITE}/#", client_id="spy")
        try:
            assert spy.subscribed.wait(5)
            with caplog.at_level(logging.INFO):
                agent = run_agent(config, 1.5)
            time.sleep(0.3)
            seen = spy.counts()
        finally:
            spy.close()

    stats = agent.publisher.stats
    assert stats.acked_readings == 0
    assert stats.refused_readings > 0
    assert all(
        r.startswith("135 Not authorized on siltwatch/v1/site1/st2/") for r in stats.refusals
    ), stats.refusals
    refused = [r for r in caplog.records if "REFUSED" in r.getMessage()]
    assert refused and refused[0].levelno == logging.ERROR
    assert "siltwatch/v1/site1/st2/s" in refused[0].getMessage()
    assert "reason code 135" in refused[0].getMessage()
    status_refused = [r for r in caplog.records if "refused the station status" in r.getMessage()]
    assert status_refused, "the refused status message must be logged too"

    with sqlite3.connect(outbox) as conn:
        quarantined = conn.execute("SELECT COUNT(*), MIN(reason) FROM quarantine").fetchone()
        counter = conn.execute("SELECT value FROM counters WHERE name='quarantined'").fetchone()
        stored = sum(n for (n,) in conn.execute("SELECT next_seq FROM sequences"))
        left = conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
    assert quarantined[0] == counter[0] == stats.refused_readings
    assert quarantined[1] == "135 Not authorized"
    # every stored reading is either quarantined (refused) or still waiting: none vanished
    assert quarantined[0] + left == stored
    assert not seen, f"the broker delivered readings it should have refused: {seen}"
    print(
        f"\nACL test: {stats.refused_readings} readings refused with 135, "
        f"{left} still queued, {stored} stored"
    )
