"""After a long InfluxDB outage the mirror copies what it had to drop back from the store.

The live pipeline (IngestService into a real SQLite file) feeds a mirror whose
InfluxDB is down and whose queue is small, so most points are dropped; then a
real InfluxDB comes up on that address and the dashboards' database ends up
with every stored reading and the alert in its stored state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics.events import AlertEvent
from ingest.influx.line_protocol import alert_line, reading_line
from ingest.influx.mirror import EventFanOut, InfluxMirror, InfluxV1Writer, RetryPolicy
from ingest.influx.recopy import DroppedSpan, StoreRecopy
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch import measurements as m
from siltwatch.schema import reading_topic
from tests.alerts.helpers import FakeClock, alert
from tests.ingest.test_service import SITE, T0, reading
from tests.servers import InfluxDBServer, free_port

SITE_ID = "lg-route9n"


def test_a_dropped_span_keeps_the_reading_times_and_notes_episodes() -> None:
    from analytics.events import SensorReading

    span = DroppedSpan()
    assert not span
    early = reading_line(SITE_ID, "up-1", "turbidity", "NTU", SensorReading("turb-up", T0, 1.0))
    late = reading_line(
        SITE_ID, "up-1", "turbidity", "NTU", SensorReading("turb-up", T0 + 5_000, 1.0)
    )
    span.add([late, early])
    assert (span.first_ms, span.last_ms, span.episodes) == (T0, T0 + 5_000, False)
    span.add([alert_line(SITE_ID, alert())])
    assert span.episodes and span


@pytest.mark.integration
def test_what_the_mirror_dropped_in_an_outage_is_copied_again_from_the_store(
    influxdb: InfluxDBServer, tmp_path: Path
) -> None:
    del influxdb  # the session's server only proves influxd is here; this test owns its own
    port = free_port()
    db = tmp_path / "store.sqlite3"
    store = SqliteStore(db)
    clock = FakeClock(0.0)
    mirror = InfluxMirror(
        SITE,
        InfluxV1Writer(f"http://127.0.0.1:{port}", "recopy", retry=RetryPolicy(attempts=1)),
        clock=clock,
        auto_flush=False,
        max_pending=50,
        recopy=StoreRecopy(db, SITE_ID, chunk=40),
    )
    service = IngestService(SITE, store, EventFanOut([mirror]), mirror=mirror)

    # An alert the engine raised, stored, and queued for the mirror: it will be dropped.
    episode = alert()
    store.save_alert(SITE_ID, episode)
    mirror.handle([AlertEvent("opened", T0, episode)])
    topic = reading_topic(SITE_ID, "up-1", "turb-up")
    for minute in range(200):
        service.handle_message(topic, reading("turb-up", "up-1", minute, 5.0 + minute), T0)
        if minute % 60 == 0:
            clock.advance(100.0)
            assert mirror.flush() is False  # nobody listens on the port yet
    assert mirror.stats.dropped == 151 and len(mirror.pending) == 50
    stored = store.reading_count(SITE_ID)
    assert stored == 200

    with InfluxDBServer(tmp_path / "influx", port=port) as server:
        server.create_database("recopy")
        for _ in range(60):
            clock.advance(100.0)
            if mirror.flush():
                break
        else:
            pytest.fail(f"the mirror never caught up: {mirror.stats.as_dict()}")
        [st] = server.query("recopy", f'SELECT count("value") FROM "{m.READING}"')["results"]
        [row] = st["series"][0]["values"]
        alerts = server.query("recopy", f'SELECT "id", "state" FROM "{m.ALERT}"')["results"]
    assert row[1] == stored
    assert alerts[0]["series"][0]["values"][0][1:] == [episode.id, m.ALERT_OPEN]
    assert mirror.stats.recopied >= 151
    assert not mirror.recopy or not mirror.recopy.busy
    store.close()
