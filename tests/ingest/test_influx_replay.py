"""``siltwatch replay … --influx…``: a recorded storm in a real InfluxDB, as the dashboards read it.

The expectations come from the replay itself (its alerts and duties) and from the
recording (its readings), never from numbers written here.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from analytics.events import SensorReading
from app.cli import main
from ingest.influx.mirror import InfluxMirror, InfluxV1Writer, RetryPolicy
from ingest.influx.replay_load import ReplayLoadError, load_replay
from ingest.recordings.replay import replay_file
from siltwatch import measurements as m
from siltwatch.config import load_site
from tests.dashboards.grafana_macros import rows
from tests.servers import InfluxDBServer, free_port

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SITE = EXAMPLES / "lake-george-site.toml"
STORM = EXAMPLES / "lake-george-storm.csv"


def _count(influxdb: InfluxDBServer, db: str, q: str) -> int:
    [statement] = influxdb.query(db, q)["results"]
    assert "error" not in statement, statement
    series = statement.get("series", [])
    return int(series[0]["values"][0][1]) if series else 0


def _rows(influxdb: InfluxDBServer, db: str, q: str) -> list[dict[str, Any]]:
    return rows(influxdb.query(db, q))


def _replay(tmp_path: Path, *influx: str) -> int:
    """``siltwatch replay`` of the example storm, outputs in ``tmp_path``, with ``influx``."""
    outs = ["--alerts-out", str(tmp_path / "alerts.jsonl")]
    outs += ["--duties-out", str(tmp_path / "duties.jsonl")]
    return main(["replay", str(STORM), "--site", str(SITE), *outs, *influx])


def _recorded_rows() -> int:
    with STORM.open(encoding="utf-8") as fh:
        return sum(1 for _ in csv.DictReader(fh))


def test_replay_loads_the_storm_and_its_episodes_into_influxdb(
    influxdb: InfluxDBServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = "replay_cli"
    influxdb.create_database(db)
    alerts_out = tmp_path / "alerts.jsonl"
    code = _replay(tmp_path, "--influx-url", influxdb.url, "--influx-db", db)
    out = capsys.readouterr().out
    assert code == 0, out
    expected = replay_file(SITE, STORM)
    assert alerts_out.read_text(encoding="utf-8") == expected.alerts_jsonl()

    readings = _count(influxdb, db, f'SELECT count("{m.READING_VALUE}") FROM "{m.READING}"')
    assert readings == _recorded_rows()
    assert f"loaded into InfluxDB: {readings:,} readings" in out

    # One point per episode and per duty, rewritten as they changed: the last state stays.
    alerts = _rows(influxdb, db, f'SELECT * FROM "{m.ALERT}"')
    assert expected.alerts, "the example storm must raise alerts for this test to mean anything"
    assert {(a["id"], a["state"]) for a in alerts} == {
        (a.id, m.ALERT_RESOLVED if a.resolved_at is not None else m.ALERT_OPEN)
        for a in expected.alerts
    }
    duties = _rows(influxdb, db, f'SELECT * FROM "{m.DUTY}"')
    assert {d["id"] for d in duties} == {d.id for d in expected.duties}


def test_the_replay_and_the_live_mirror_write_the_same_reading_points(
    influxdb: InfluxDBServer, tmp_path: Path
) -> None:
    """What a replay loads is what serve's mirror would have written for the same readings."""
    site = load_site(SITE)
    replay_db, live_db = "replay_same", "live_same"
    for db in (replay_db, live_db):
        influxdb.create_database(db)
    recorded: list[Any] = []
    result = replay_file(site, STORM, recorded=recorded.append)
    readings: list[SensorReading] = list(recorded[0])[:3000]
    mirror = InfluxMirror(site, InfluxV1Writer(influxdb.url, replay_db), auto_flush=False)
    load_replay(mirror, site, readings, [], chunk=700)

    # The live path: the service hands (station, reading) rows to the mirror's hook.
    live = InfluxMirror(site, InfluxV1Writer(influxdb.url, live_db))
    station_of = site.station_of()
    live(site.site.id, [(station_of[r.sensor], r) for r in readings])
    live.close()

    q = f'SELECT * FROM "{m.READING}" GROUP BY *'
    assert _rows(influxdb, replay_db, q) == _rows(influxdb, live_db, q)
    assert len(_rows(influxdb, replay_db, q)) == len(readings)
    assert result.alerts  # the recording is a storm, not an empty file


def test_an_unreachable_influxdb_ends_the_load_and_says_how_far_it_got() -> None:
    site = load_site(SITE)
    dead = f"http://127.0.0.1:{free_port()}"
    mirror = InfluxMirror(
        site, InfluxV1Writer(dead, "nowhere", retry=RetryPolicy(attempts=1)), auto_flush=False
    )
    recorded: list[Any] = []
    replay_file(site, STORM, recorded=recorded.append)
    waits: list[float] = []
    with pytest.raises(ReplayLoadError, match=r"after 4 attempts \(0 readings written before\)"):
        load_replay(mirror, site, recorded[0], [], sleep=waits.append)
    assert len(waits) == 3 and waits == sorted(waits)  # backed off, longer each time


def test_influx_options_are_checked_before_the_replay_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _replay(tmp_path, "--influx-url", "http://127.0.0.1:1")
    assert code == 1
    assert "--influx-url needs --influx-db" in capsys.readouterr().err
    assert not (tmp_path / "alerts.jsonl").exists()  # nothing half-done
