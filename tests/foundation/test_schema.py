"""The wire schema: payloads validate, bad payloads say why, topics round-trip."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from siltwatch.schema import (
    InspectionRecord,
    Reading,
    ReadingBatch,
    StationStatus,
    parse_topic,
    reading_topic,
    status_topic,
)

GOOD = {
    "site": "lg-route9n",
    "station": "up-1",
    "sensor": "turb-up",
    "time": "2026-05-04T09:00:00-04:00",
    "seq": 17,
    "value": 8.2,
    "unit": "NTU",
}


def test_reading_round_trip_normalises_time_to_utc() -> None:
    r = Reading.model_validate(GOOD)
    assert r.time.isoformat() == "2026-05-04T13:00:00+00:00"
    again = Reading.model_validate_json(r.model_dump_json())
    assert again == r
    assert '"time":"2026-05-04T13:00:00Z"' in r.model_dump_json()


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"time": "2026-05-04T09:00:00"}, "UTC offset"),
        ({"value": float("nan")}, "finite"),
        ({"seq": -1}, "greater than or equal to 0"),
        ({"sensor": "turb up"}, "pattern"),
        ({"colour": "brown"}, "Extra inputs"),
        ({"quality": ["wet"]}, "clock_unsynced"),
    ],
)
def test_bad_readings_say_why(change: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        Reading.model_validate({**GOOD, **change})
    assert fragment in str(info.value)


def test_batch_expands_in_order_and_status_inspection_validate() -> None:
    items = [
        {k: v for k, v in GOOD.items() if k not in ("site", "station")} | {"seq": s}
        for s in (1, 2, 3)
    ]
    batch = ReadingBatch.model_validate(
        {"site": "lg-route9n", "station": "up-1", "readings": items}
    )
    assert [r.seq for r in batch.expand()] == [1, 2, 3]
    assert all(r.site == "lg-route9n" for r in batch.expand())
    with pytest.raises(ValidationError):
        ReadingBatch.model_validate({"site": "lg-route9n", "station": "up-1", "readings": []})
    StationStatus.model_validate({"site": "s", "station": "up-1", "state": "offline"})
    ins = InspectionRecord.model_validate(
        {"site": "s", "time": "2026-05-05T09:30:00-04:00", "inspector": "Jo", "duty": ""}
    )
    assert ins.duty is None


def test_topics() -> None:
    topic = reading_topic("lg-route9n", "up-1", "turb-up")
    assert topic == "siltwatch/v1/lg-route9n/up-1/turb-up/reading"
    parts = parse_topic(topic)
    assert (parts.kind, parts.site, parts.station, parts.sensor) == (
        "reading",
        "lg-route9n",
        "up-1",
        "turb-up",
    )
    assert parse_topic(status_topic("s", "up-1")).kind == "status"
    assert parse_topic("siltwatch/v1/s/inspections").kind == "inspections"
    for bad in ("other/v1/s/a/b/reading", "siltwatch/v1/s//b/reading", "siltwatch/v1/s/a/b/c/d"):
        with pytest.raises(ValueError):
            parse_topic(bad)
    with pytest.raises(ValueError):
        reading_topic("s", "up/1", "x")
