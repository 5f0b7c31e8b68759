"""Line protocol through a real InfluxDB 1.x and back by InfluxQL.

The escaping is property-tested: any alert subject and message (spaces, commas,
equals signs, quotes, backslashes, line breaks, non-ASCII) written by the
writer must read back as written — the message exactly, the subject as
``stored_tag`` documents (ingest/influx/line_protocol.py).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analytics.events import SensorReading
from ingest.influx.line_protocol import alert_line, duty_line, escape_tag, reading_line, stored_tag
from ingest.influx.mirror import InfluxV1Writer, InfluxWriteError, RetryPolicy
from siltwatch.schema import Alert
from tests.alerts.helpers import duty
from tests.servers import InfluxDBServer

pytestmark = pytest.mark.integration

T0 = 1_777_867_200_000  # 2026-05-04T04:00:00Z
_times = itertools.count(T0, 1000)

WEIRD = st.text(
    alphabet=st.sampled_from(list("ab Z9 ,=\"\\'\n\t\r{}é水-_./")), min_size=1, max_size=30
)


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the first statement as dicts (no series: no rows)."""
    [statement] = result["results"]
    assert "error" not in statement, statement
    out = []
    for series in statement.get("series", []):
        cols = series["columns"]
        out += [dict(zip(cols, values, strict=True)) for values in series["values"]]
    return out


def ms(t: int) -> datetime:
    return datetime.fromtimestamp(t / 1000, tz=UTC)


def alert(subject: str, message: str, t: int, *, resolved: int | None = None) -> Alert:
    return Alert(
        id=f"al-{t}",
        kind="turbidity_contrast",
        subject=subject,
        severity="critical",
        escalations=[],
        opened_at=ms(t),
        resolved_at=None if resolved is None else ms(resolved),
        rule="Lake George §148-9 B",
        message=message,
        evidence={},
    )


@pytest.fixture(scope="module")
def db(influxdb: InfluxDBServer) -> str:
    influxdb.create_database("roundtrip")
    return "roundtrip"


def v1(influxdb: InfluxDBServer, db: str) -> InfluxV1Writer:
    return InfluxV1Writer(influxdb.url, db, retry=RetryPolicy(attempts=1))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subject=WEIRD, message=st.text(min_size=0, max_size=60))
def test_any_subject_and_message_round_trip(
    influxdb: InfluxDBServer, db: str, subject: str, message: str
) -> None:
    t = next(_times)
    v1(influxdb, db).write_lines([alert_line("prop-site", alert(subject, message, t))])
    [row] = rows(influxdb.query(db, f'SELECT * FROM "alert" WHERE time = {t}ms'))
    assert row["message"] == message
    expected = stored_tag(subject)
    assert row.get("subject") == (expected or None)
    assert row["site"] == "prop-site" and row["kind"] == "turbidity_contrast"


def test_escape_tag_examples() -> None:
    assert escape_tag("a b,c=d") == "a\\ b\\,c\\=d"
    assert escape_tag('say "hi"') == 'say\\ "hi"'
    assert escape_tag("end\\") == "end/"  # unrepresentable: the parsers have no \\ in tags
    assert escape_tag("mid\\x") == "mid\\x"
    assert escape_tag("two\nlines") == "two\\ lines"


def test_readings_alerts_and_duties_read_back_with_their_types(
    influxdb: InfluxDBServer, db: str
) -> None:
    t = next(_times)
    r = SensorReading("turb-up", t, 12.25, seq=41, flags=frozenset({"spike", "backfilled"}))
    no_seq = SensorReading("turb-up", t + 60_000, 3.0)
    a = alert("outfall-a", "plume at outfall-a", t, resolved=t + 3_600_000)
    d = duty(
        subject="rt-site", created_at=ms(t), due_at=ms(t + 86_400_000), rule="NCG01 Part III §A"
    )
    v1(influxdb, db).write_lines(
        [
            reading_line("rt-site", "up-1", "turbidity", "NTU", r),
            reading_line("rt-site", "up-1", "turbidity", "NTU", no_seq),
            alert_line("rt-site", a),
            duty_line("rt-site", d, overdue=True),
        ]
    )
    got = rows(influxdb.query(db, 'SELECT * FROM "reading" WHERE "site" = \'rt-site\''))
    assert got == [
        {
            "time": t,
            "flags": "backfilled,spike",
            "kind": "turbidity",
            "seq": 41,
            "sensor": "turb-up",
            "site": "rt-site",
            "station": "up-1",
            "unit": "NTU",
            "value": 12.25,
        },
        {
            "time": t + 60_000,
            "flags": "",
            "kind": "turbidity",
            "seq": None,
            "sensor": "turb-up",
            "site": "rt-site",
            "station": "up-1",
            "unit": "NTU",
            "value": 3.0,
        },
    ]
    keys = rows(influxdb.query(db, 'SHOW FIELD KEYS FROM "reading"'))
    assert {k["fieldKey"]: k["fieldType"] for k in keys} == {
        "flags": "string",
        "seq": "integer",
        "value": "float",
    }
    [al] = rows(influxdb.query(db, 'SELECT * FROM "alert" WHERE "site" = \'rt-site\''))
    assert al["state"] == "resolved" and al["resolved_ms"] == t + 3_600_000
    assert al["opened_ms"] == t and al["severity"] == "critical"
    [du] = rows(influxdb.query(db, 'SELECT * FROM "duty" WHERE "site" = \'rt-site\''))
    assert du["state"] == "overdue" and du["due_ms"] == t + 86_400_000
    assert du.get("completed_ms") is None


def test_an_alert_rewritten_at_its_opening_time_replaces_itself(
    influxdb: InfluxDBServer, db: str
) -> None:
    t = next(_times)
    w = v1(influxdb, db)
    w.write_lines([alert_line("upd-site", alert("outfall-a", "opened", t))])
    w.write_lines([alert_line("upd-site", alert("outfall-a", "cleared", t, resolved=t + 5))])
    got = rows(influxdb.query(db, 'SELECT * FROM "alert" WHERE "site" = \'upd-site\''))
    assert [(g["message"], g["state"]) for g in got] == [("cleared", "resolved")]


def test_v1_errors_name_the_servers_reason(influxdb: InfluxDBServer) -> None:
    w = InfluxV1Writer(influxdb.url, "no-such-db", retry=RetryPolicy(attempts=1))
    with pytest.raises(InfluxWriteError) as caught:
        w.write_lines(["reading,site=s value=1.0 1"])
    assert caught.value.status == 404 and 'database not found: "no-such-db"' in str(caught.value)

    influxdb.create_database("conflict")
    w = InfluxV1Writer(influxdb.url, "conflict", retry=RetryPolicy(attempts=1))
    w.write_lines(["reading,site=s value=1.0 1"])
    with pytest.raises(InfluxWriteError) as caught:
        w.write_lines(['reading,site=s value="text" 2'])
    assert caught.value.data_error and "field type conflict" in str(caught.value)
