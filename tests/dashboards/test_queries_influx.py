"""The dashboards' own InfluxQL, run against a real InfluxDB 1.x with data the
siltwatch writer wrote: the numbers a site operator would see.

Queries are taken from the built dashboard JSON (not rebuilt here), Grafana's
macros filled in as Grafana fills them (tests/dashboards/grafana_macros.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from analytics.events import SensorReading
from dashboards.build import build_dashboard
from ingest.influx.line_protocol import alert_line, duty_line, reading_lines
from ingest.influx.mirror import InfluxV1Writer, RetryPolicy
from ingest.recordings.replay import ReplayResult, replay_file
from siltwatch.config import load_site
from siltwatch.rulemath import TrapGeometry
from siltwatch.units import to_metres
from tests.dashboards.grafana_macros import panel, render, rows
from tests.servers import InfluxDBServer

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LG = load_site(EXAMPLES / "lake-george-site.toml")
SITE = LG.site.id
T0 = 1_777_867_200_000  # 2026-05-04T04:00:00Z, on the hour
MIN, HOUR = 60_000, 3_600_000
_dbs = itertools.count()


def write(influxdb: InfluxDBServer, readings: list[tuple[str, SensorReading]]) -> str:
    db = f"dash{next(_dbs)}"
    influxdb.create_database(db)
    kinds = {s.id: (s.kind, s.unit) for s in LG.sensors().values()}
    writer = InfluxV1Writer(influxdb.url, db, retry=RetryPolicy(attempts=1), batch_size=1000)
    writer.write_lines(reading_lines(SITE, readings, kinds))
    return db


def run(
    influxdb: InfluxDBServer, db: str, query: str, frm: int, to: int, interval: str
) -> list[dict[str, Any]]:
    q = render(query, from_ms=frm, to_ms=to, interval=interval, site=SITE)
    return rows(influxdb.query(db, q))


def target(p: dict[str, Any], ref: str) -> str:
    [q] = [str(t["query"]) for t in p["targets"] if t["refId"] == ref]
    return q


def test_turbidity_medians_of_a_plume_and_the_delta_limit(influxdb: InfluxDBServer) -> None:
    data = []
    for i in range(60):
        up_ntu = 500.0 if i == 7 else 10.0 + (i % 3) * 0.5  # one debris spike upstream
        down_ntu = 3.0 if i < 30 else 41.0  # the plume arrives at minute 30
        data += [
            ("up-1", SensorReading("turb-up", T0 + i * MIN, up_ntu, seq=i)),
            ("down-1", SensorReading("turb-down", T0 + i * MIN, down_ntu, seq=i)),
        ]
    db = write(influxdb, data)
    p = panel(build_dashboard(LG), "Turbidity outfall-a")
    span = (T0, T0 + 59 * MIN, p["interval"])  # the panel's minimum interval: 900s
    up = run(influxdb, db, target(p, "A"), *span)
    down = run(influxdb, db, target(p, "B"), *span)
    limit = run(influxdb, db, target(p, "C"), *span)
    assert [r["upstream"] for r in up] == [10.5, 10.5, 10.5, 10.5]  # the spike is not a level
    assert [r["downstream"] for r in down] == [3.0, 3.0, 41.0, 41.0]
    assert [r["limit: upstream + 25"] for r in limit] == [35.5, 35.5, 35.5, 35.5]
    assert [r["time"] for r in down] == [T0 + k * 15 * MIN for k in range(4)]


def test_rain_bars_and_the_24_hour_rolling_total(influxdb: InfluxDBServer) -> None:
    # 5-minute readings for 3 days; each hour h rains 0.01 in per reading in 1 of every
    # 4 hours (so 0.12 in in a wet hour, nothing in a dry one).
    data = []
    for k in range(3 * 24 * 12):
        t = T0 + k * 5 * MIN
        wet = (k // 12) % 4 == 0
        data.append(("basin-1", SensorReading("rain-1", t, 0.01 if wet else 0.0, seq=k)))
    db = write(influxdb, data)
    p = panel(build_dashboard(LG), "Rain gauge-1")
    frm, to = T0 + 24 * HOUR, T0 + 48 * HOUR
    bars = run(influxdb, db, target(p, "A"), frm, to, "1h")
    assert [round(r["rain"], 6) for r in bars[:4]] == [0.12, 0.0, 0.0, 0.0]
    rolling = run(influxdb, db, target(p, "B"), frm, to, "1h")
    by_time = {r["time"]: r["24 h total"] for r in rolling}

    def expected(bucket: int) -> float:  # rain in [bucket - 23 h, bucket + 1 h)
        return sum(r.value for _, r in data if bucket - 23 * HOUR <= r.t < bucket + HOUR)

    for hour in (24, 30, 37, 47):
        t = T0 + hour * HOUR
        assert by_time[t] == pytest.approx(expected(t)), hour
    assert by_time[T0 + 30 * HOUR] == pytest.approx(0.72)  # 6 wet hours in any 24


def test_level_and_sediment_panels_read_their_sensor(influxdb: InfluxDBServer) -> None:
    data = [
        ("basin-1", SensorReading("lvl-basin-a", T0 + i * 5 * MIN, 1.0 + i, seq=i))
        for i in range(6)
    ]
    data += [("basin-1", SensorReading("sed-trap-1", T0 + i * HOUR, 1.5, seq=i)) for i in range(2)]
    db = write(influxdb, data)
    board = build_dashboard(LG)
    level = run(
        influxdb, db, target(panel(board, "Water level basin-a"), "A"), T0, T0 + HOUR, "30m"
    )
    assert [r["level"] for r in level] == [3.5, None, None]  # mean of 1..6 in the first bucket
    trap = panel(board, "Sediment trap trap-1: storage lost")
    sed = run(influxdb, db, target(trap, "A"), T0, T0 + HOUR, "1h")
    # The share of the design storage lost, as the console's chart and the analytics count it.
    (t,) = LG.sediment_traps
    lost = 100 * TrapGeometry.of(LG, t).fraction_lost(
        to_metres(1.5, LG.sensor(t.depth_sensor).unit)
    )
    assert [r["storage lost"] for r in sed] == [pytest.approx(lost), pytest.approx(lost)]
    assert 30 < lost < 40 and trap["fieldConfig"]["defaults"]["unit"] == "percent"


@dataclass(frozen=True)
class Replayed:
    """The Lake George storm replayed (``result``), its alerts and duties written by the
    writer into database ``db``."""

    influxdb: InfluxDBServer
    db: str
    result: ReplayResult

    def query(
        self, query: str, frm: int = 0, to: int = 0, interval: str = "1m"
    ) -> list[dict[str, Any]]:
        return run(self.influxdb, self.db, query, frm, to, interval)

    def table(self, title: str) -> list[dict[str, Any]]:
        """The rows of the dashboard's panel ``title`` (its query ``A``, no time range)."""
        return self.query(target(panel(build_dashboard(LG), title), "A"))


@pytest.fixture(scope="module")
def replayed(influxdb: InfluxDBServer) -> Replayed:
    result = replay_file(
        LG,
        EXAMPLES / "lake-george-storm.csv",
        EXAMPLES / "lake-george-inspections.csv",
        site_log=EXAMPLES / "lake-george-site-log.csv",  # its disturbance starts the routine duty
    )
    db = f"dash{next(_dbs)}"
    influxdb.create_database(db)
    lines = [alert_line(SITE, a) for a in result.alerts]
    lines += [duty_line(SITE, d) for d in result.duties]
    InfluxV1Writer(influxdb.url, db).write_lines(lines)
    return Replayed(influxdb, db, result)


def test_open_alerts_table_lists_exactly_the_unresolved_episodes(replayed: Replayed) -> None:
    got = replayed.table("Open alerts")
    expected = [a for a in replayed.result.alerts if a.resolved_at is None]
    assert expected, "the storm leaves an alert open (drain time at basin-a)"
    assert [(r["id"], r["kind"], r["subject"], r["severity"]) for r in got] == [
        (a.id, a.kind, a.subject, a.severity) for a in expected
    ]


def test_duties_table_lists_open_duties_with_their_deadlines(replayed: Replayed) -> None:
    got = replayed.table("Duties and deadlines")
    expected = [d for d in replayed.result.duties if d.completed_at is None]
    assert expected, "the example week leaves duties open (the routine inspection, pad-b)"
    assert [(r["id"], r["due_ms"], r["state"]) for r in got] == [
        (d.id, round(d.due_at.timestamp() * 1000), "open") for d in expected
    ]


def test_alert_annotations_mark_every_opening_in_the_range(replayed: Replayed) -> None:
    alerts = replayed.result.alerts
    [anno] = [a for a in build_dashboard(LG)["annotations"]["list"] if "query" in a]
    first = min(a.opened_at for a in alerts)
    frm = round(first.timestamp() * 1000)
    got = replayed.query(anno["target"]["query"], frm, frm + 7 * 24 * HOUR)
    assert sorted(r["time"] for r in got) == sorted(
        round(a.opened_at.timestamp() * 1000) for a in alerts
    )
    assert all(r[anno["textColumn"]] for r in got)
    tags = anno["tagsColumn"].split(",")
    assert all(r[t] for r in got for t in tags)
