"""Every message gets an answer: decode_message returns Decoded or Rejected, never raises.

One test per hostile class asserts the reason a person reads; property tests
throw arbitrary bytes, JSON and topics at it, and check that valid readings of
the example site decode to exactly what was sent.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import ingest.decode as decode_module
from analytics.events import Inspection, SensorReading, StationReport
from analytics.timeutil import to_ms
from ingest.decode import (
    MAX_DEPTH,
    MAX_PAYLOAD_BYTES,
    Decoded,
    Rejected,
    decode_message,
    nesting_depth,
    to_station_report,
)
from ingest.recordings.formats import parse_payload
from siltwatch.config import load_site
from siltwatch.schema import (
    QualityFlag,
    ReadingBatch,
    ReadingItem,
    StationHealth,
    StationStatus,
    alerts_topic,
    inspections_topic,
    reading_topic,
    status_topic,
)
from siltwatch.sensorkinds import impossible, sensor_kinds
from tests.ingest.hostile import (
    EXPECTED_REASONS,
    HOSTILE_CATEGORIES,
    hostile_payloads,
    valid_payloads,
)

SITE = load_site(Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml")
SITE_ID = "lg-route9n"
TURB = reading_topic(SITE_ID, "down-1", "turb-down")
RAIN = reading_topic(SITE_ID, "basin-1", "rain-1")
T0_TEXT = "2026-05-05T18:01:00Z"
T0 = to_ms(datetime(2026, 5, 5, 18, 1, tzinfo=UTC))


def reading(**change: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "v": 1,
        "type": "reading",
        "site": SITE_ID,
        "station": "down-1",
        "sensor": "turb-down",
        "time": T0_TEXT,
        "seq": 48213,
        "value": 131.4,
        "unit": "NTU",
        "quality": [],
    }
    return base | change


def rain(**change: Any) -> dict[str, Any]:
    return reading(station="basin-1", sensor="rain-1", unit="in", value=0.01) | change


def item(seq: int, **change: Any) -> dict[str, Any]:
    base = {"sensor": "turb-down", "time": T0_TEXT, "seq": seq, "value": 12.0, "unit": "NTU"}
    return base | change


def batch(items: list[dict[str, Any]], station: str = "down-1") -> dict[str, Any]:
    return {"v": 1, "type": "batch", "site": SITE_ID, "station": station, "readings": items}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def reason(topic: str, payload: bytes) -> str:
    out = decode_message(topic, payload, SITE)
    assert isinstance(out, Rejected), out
    return out.reason


# --- what is accepted -----------------------------------------------------------------


def test_a_valid_reading_decodes_like_recording_does() -> None:
    out = decode_message(TURB, dumps(reading(quality=["backfilled"])), SITE)
    assert isinstance(out, Decoded)
    assert out.topic.kind == "reading" and out.topic.station == "down-1"
    assert out.readings == [
        ("down-1", SensorReading("turb-down", T0, 131.4, 48213, frozenset({"backfilled"})))
    ]
    assert out.inspections == [] and out.status is None
    # capture replay (parse_payload) shares the conversion
    assert parse_payload(TURB, reading(quality=["backfilled"])) == (
        [out.readings[0][1]],
        [],
    )


def test_a_batch_decodes_in_order_on_any_of_its_stations_topics() -> None:
    items = [item(1), item(2, value=13), item(3, time="2026-05-05T14:02:00-04:00")]
    out = decode_message(TURB, dumps(batch(items)), SITE)
    assert isinstance(out, Decoded)
    assert [(st, r.seq, r.value, r.t) for st, r in out.readings] == [
        ("down-1", 1, 12.0, T0),
        ("down-1", 2, 13.0, T0),
        ("down-1", 3, 12.0, T0 + 60_000),
    ]
    basin = [
        {**item(1), "sensor": "rain-1", "unit": "in", "value": 0.02},
        {**item(2), "sensor": "sed-trap-1", "unit": "ft", "value": 0.4},
    ]
    out = decode_message(
        reading_topic(SITE_ID, "basin-1", "lvl-basin-a"), dumps(batch(basin, "basin-1")), SITE
    )
    assert isinstance(out, Decoded) and len(out.readings) == 2


def test_inspection_status_and_alert_decode() -> None:
    ins = {
        "type": "inspection",
        "site": SITE_ID,
        "time": "2026-05-05T09:30:00-04:00",
        "inspector": "Jo",
    }
    out = decode_message(inspections_topic(SITE_ID), dumps(ins), SITE)
    assert isinstance(out, Decoded)
    assert out.inspections == [Inspection(to_ms(datetime(2026, 5, 5, 13, 30, tzinfo=UTC)), "Jo")]
    status = {
        "type": "status",
        "site": SITE_ID,
        "station": "up-1",
        "state": "online",
        "health": {"battery_v": 12.6, "backlog": 0, "clock_synced": True},
    }
    out = decode_message(status_topic(SITE_ID, "up-1"), dumps(status), SITE)
    assert isinstance(out, Decoded) and out.status is not None
    assert out.status.health is not None and out.status.health.battery_v == 12.6
    assert out.readings == [] and out.inspections == []
    alert: dict[str, Any] = {
        "type": "alert",
        "site": SITE_ID,
        "id": "a1",
        "kind": "turbidity",
        "subject": "outfall-a",
        "severity": "warning",
        "escalations": [],
        "opened_at": T0_TEXT,
        "resolved_at": None,
        "rule": "r",
        "message": "m",
        "evidence": {},
    }
    out = decode_message(alerts_topic(SITE_ID), dumps(alert), SITE)
    assert isinstance(out, Decoded)
    assert (out.readings, out.inspections, out.status) == ([], [], None)


def test_a_status_report_carries_every_health_field_the_station_sent() -> None:
    sent: dict[str, Any] = {
        "battery_v": 12.6,
        "cpu_temp_c": 41.5,
        "disk_free_mb": 900,
        "backlog": 3,
        "dropped": 1,
        "quarantined": 2,
        "clock_synced": False,
        "clock_offset_s": -0.25,
    }
    # what the station holds goes to the gap tracker (ingest/gaps.py), not the engine
    outbox: dict[str, Any] = {
        "retention_s": 604_800.0,
        "held": [{"sensor": "turb-up", "oldest_seq": 0, "next_seq": 9}],
    }
    assert set(sent) | set(outbox) == set(StationHealth.model_fields)  # none left untested
    health = StationHealth(**sent, **outbox)
    status = StationStatus(site=SITE_ID, station="up-1", state="online", health=health)
    expected = StationReport("up-1", T0, "online", timed=False, **sent)
    assert to_station_report(status, T0) == expected
    offline = StationStatus(site=SITE_ID, station="up-1", state="offline")
    assert to_station_report(offline, T0) == StationReport("up-1", T0, "offline", timed=False)


def test_physical_bounds_are_inclusive_and_in_the_declared_unit() -> None:
    for value in (-50, 0, 10_000):
        assert isinstance(decode_message(TURB, dumps(reading(value=value)), SITE), Decoded)
    assert isinstance(decode_message(RAIN, dumps(rain(value=11.8)), SITE), Decoded)  # 299.7 mm
    assert isinstance(decode_message(RAIN, dumps(rain(value=0)), SITE), Decoded)
    assert impossible("rain", 300.0, "mm") is None
    assert impossible("rain", 300.01, "mm") is not None
    assert impossible("water_level", -3280.0, "ft") is None  # -999.7 m
    assert impossible("water_level", 3282.0, "ft") is not None
    assert impossible("sediment_depth", 1_000_000.0, "mm") is None
    assert (
        impossible("turbidity", 5.0, "ft")
        == "'ft' is not a unit of a turbidity sensor (expected one of NTU, FNU)"
    )
    assert set(sensor_kinds()) == {"turbidity", "rain", "water_level", "sediment_depth"}


def test_a_full_batch_of_10000_readings_fits_under_the_cap() -> None:
    start = datetime(2026, 5, 4, 13, 0, 0, 123456, tzinfo=UTC)
    items = [
        ReadingItem(
            sensor="turb-down",
            time=start + timedelta(seconds=i, microseconds=i),
            seq=10**12 + i,
            value=131.40000000000001,
            unit="NTU",
            raw=1.2345678901234567,
            quality=[QualityFlag.BACKFILLED],
        )
        for i in range(10_000)
    ]
    payload = (
        ReadingBatch(site=SITE_ID, station="down-1", readings=items).model_dump_json().encode()
    )
    assert 1_000_000 < len(payload) < MAX_PAYLOAD_BYTES
    out = decode_message(TURB, payload, SITE)
    assert isinstance(out, Decoded) and len(out.readings) == 10_000
    # the worst the edge agent can send: 64-character ids and every quality flag
    widest = [
        item.model_copy(
            update={
                "sensor": "s" * 64,
                "quality": list(QualityFlag),
                "raw": -1.2345678901234567e-100,
                "value": -1.2345678901234567e-100,
            }
        )
        for item in items
    ]
    size = len(ReadingBatch(site="s" * 64, station="s" * 64, readings=widest).model_dump_json())
    assert size < MAX_PAYLOAD_BYTES


# --- one test per hostile class -------------------------------------------------------


def test_seq_beyond_64_bits_is_refused_not_an_overflow() -> None:
    assert reason(TURB, dumps(reading(seq=2**63))) == (
        "invalid payload: field 'seq': Input should be less than 9223372036854775808; "
        "got 9223372036854775808 (seq is a 64-bit signed integer: 0 .. 2**63-1)"
    )
    assert reason(TURB, dumps(reading(seq=2**64))).startswith("invalid payload: field 'seq'")
    assert reason(TURB, dumps(reading(seq=-1))) == (
        "invalid payload: field 'seq': Input should be greater than or equal to 0; got -1 "
        "(seq is a 64-bit signed integer: 0 .. 2**63-1)"
    )
    assert isinstance(decode_message(TURB, dumps(reading(seq=2**63 - 1)), SITE), Decoded)


def test_times_that_overflow_or_leave_1970_2200_name_the_field() -> None:
    assert reason(TURB, dumps(reading(time="9999-12-31T23:00-05:00"))) == (
        "invalid payload: field 'time': time 9999-12-31T23:00:00-05:00 cannot be converted "
        "to UTC (it falls outside years 1..9999)"
    )
    assert reason(TURB, dumps(reading(time="0001-01-01T00:00:00+05:00"))).startswith(
        "invalid payload: field 'time': time 0001-01-01T00:00:00+05:00 cannot be converted"
    )
    assert reason(TURB, dumps(reading(time="0001-01-01T00:00:00Z"))) == (
        "invalid payload: field 'time': time 0001-01-01T00:00:00Z is outside "
        "1970-01-01T00:00:00Z .. 2200-01-01T00:00:00Z"
    )
    assert "is outside 1970" in reason(TURB, dumps(reading(time="1969-12-31T23:59:59Z")))
    assert "is outside 1970" in reason(TURB, dumps(reading(time="2200-01-01T00:00:00Z")))
    assert reason(TURB, dumps(reading(time=1_700_000_000))) == (
        "invalid payload: field 'time': time must be an ISO 8601 string such as "
        "2026-05-04T13:00:00Z, not a JSON number"
    )
    assert reason(TURB, dumps(reading(time="2026-05-04T13:00:00"))) == (
        "invalid payload: field 'time': time must carry a UTC offset or 'Z' "
        "(naive times are ambiguous)"
    )
    ins = {
        "type": "inspection",
        "site": SITE_ID,
        "time": "9999-12-31T23:00-05:00",
        "inspector": "Jo",
    }
    assert reason(inspections_topic(SITE_ID), dumps(ins)).startswith(
        "invalid payload: field 'time': time 9999-12-31T23:00:00-05:00 cannot be converted"
    )


def test_deep_nesting_is_refused_before_parsing() -> None:
    assert reason(TURB, b"[" * 100_000 + b"]" * 100_000) == (
        "too deeply nested: arrays/objects nest 100,000 levels deep; at most 32 are read "
        "(a batch of readings nests 3)"
    )
    assert reason(TURB, b'{"a":' * 10_000).startswith(
        "too deeply nested: arrays/objects nest 10,000"
    )
    # brackets inside strings are text, not nesting
    deep_text = dumps(reading(unit="[" * 100 + "{" * 100))
    assert nesting_depth(deep_text) == 2
    assert reason(TURB, deep_text).startswith("invalid payload: field 'unit'")
    assert nesting_depth(b'{"a": "\\"[[[", "b": [[1]]}') == 3
    assert nesting_depth(b'"unterminated \\" [[[[') == 0
    ok = {"v": 1, "a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}
    assert nesting_depth(dumps(ok)) == MAX_DEPTH
    assert reason(TURB, dumps(ok)).startswith("invalid payload")  # parsed, then refused


def test_oversize_is_refused_before_parsing() -> None:
    payload = b" " * MAX_PAYLOAD_BYTES + b"{}"
    assert reason(TURB, payload) == (
        f"too large: the payload is {MAX_PAYLOAD_BYTES + 2:,} bytes; at most "
        f"{MAX_PAYLOAD_BYTES:,} bytes are read (4 MiB: room for a batch of 10,000 readings)"
    )
    digits = b'{"seq": ' + b"9" * 5000 + b"}"
    assert reason(TURB, digits) == (
        "too large: a number has more than 4300 digits; no reading needs that many"
    )


def test_bytes_that_are_not_utf8_or_not_json() -> None:
    assert reason(TURB, b"\x80abc") == (
        "not UTF-8: byte 0x80 at position 0 is not UTF-8 (invalid start byte); "
        "payloads are UTF-8 JSON text"
    )
    assert reason(TURB, json.dumps(reading()).encode("utf-16")).startswith("not UTF-8:")
    assert reason(TURB, dumps(reading())[:40]).startswith("not JSON: ")
    assert reason(TURB, b"") == "not JSON: the payload is empty (expected a JSON object)"
    assert reason(TURB, b"\xef\xbb\xbf{}").startswith(
        "not JSON: the payload starts with a byte-order mark"
    )
    nan = dumps(reading()).replace(b"131.4", b"NaN")
    assert reason(TURB, nan) == "not JSON: NaN is not a JSON value (JSON numbers are finite)"
    huge = dumps(reading()).replace(b"131.4", b"1e400")
    assert reason(TURB, huge) == (
        "impossible value: the number '1e400' is beyond the range of a 64-bit float (about 1.8e308)"
    )


def test_numbers_must_be_json_numbers() -> None:
    assert reason(TURB, dumps(reading(value="12.5"))) == (
        "invalid payload: field 'value': Input should be a valid number; got the string '12.5' "
        "(a number must be a JSON number, not a string)"
    )
    assert reason(TURB, dumps(reading(value=True))) == (
        "invalid payload: field 'value': Input should be a valid number; got true "
        "(true/false is not a number)"
    )
    assert reason(TURB, dumps(reading(value=None))) == (
        "invalid payload: field 'value': Input should be a valid number; got null"
    )
    assert reason(TURB, dumps(reading(seq="5"))).startswith(
        "invalid payload: field 'seq': Input should be a valid integer; got the string '5'"
    )
    assert reason(TURB, dumps(reading(seq=5.0))) == (
        "invalid payload: field 'seq': Input should be a valid integer; got 5.0 "
        "(a whole JSON number without a fraction or exponent)"
    )
    assert reason(TURB, dumps(reading(v=True))) == (
        "invalid payload: field 'v': must be the integer 1, not a JSON boolean"
    )
    assert (
        reason(TURB, dumps([reading()]))
        == "invalid payload: expected a JSON object, got an array of 1 item"
    )
    status = {
        "type": "status",
        "site": SITE_ID,
        "station": "up-1",
        "state": "online",
        "health": {"backlog": "3"},
    }
    assert reason(status_topic(SITE_ID, "up-1"), dumps(status)).startswith(
        "invalid payload: field 'health.backlog': Input should be a valid integer"
    )
    # an integer where a float goes is a number all the same
    assert isinstance(decode_message(TURB, dumps(reading(value=131)), SITE), Decoded)


def test_a_reading_in_another_unit_than_declared_is_refused() -> None:
    assert reason(TURB, dumps(reading(unit="mm"))) == (
        "wrong unit: sensor 'turb-down' is declared in NTU, the reading says 'mm'"
    )
    assert reason(TURB, dumps(reading(unit="ntu"))) == (
        "wrong unit: sensor 'turb-down' is declared in NTU, the reading says 'ntu'"
    )
    assert reason(RAIN, dumps(rain(unit="mm"))) == (
        "wrong unit: sensor 'rain-1' is declared in in, the reading says 'mm'"
    )


def test_physically_impossible_values_are_refused() -> None:
    assert reason(TURB, dumps(reading(value=1e308))) == (
        "impossible value: sensor 'turb-down' reads 1e+308 NTU, impossible for turbidity "
        "(possible: -50 .. 10000 NTU)"
    )
    assert reason(RAIN, dumps(rain(value=1e6))) == (
        "impossible value: sensor 'rain-1' reads 1e+06 in = 2.54e+07 mm, impossible for rain "
        "fallen in one reading (possible: 0 .. 300 mm)"
    )
    assert reason(RAIN, dumps(rain(value=-0.01))).startswith(
        "impossible value: sensor 'rain-1' reads -0.01 in = -0.254 mm"
    )
    level = reading_topic(SITE_ID, "basin-1", "lvl-basin-a")
    payload = reading(station="basin-1", sensor="lvl-basin-a", unit="ft", value=3300.0)
    assert reason(level, dumps(payload)) == (
        "impossible value: sensor 'lvl-basin-a' reads 3300 ft = 1005.84 m, impossible for "
        "a water level (possible: -1000 .. 1000 m)"
    )


def test_unknown_sensors_and_sensors_of_another_station() -> None:
    ghost = reading_topic(SITE_ID, "down-1", "ghost")
    assert reason(ghost, dumps(reading(sensor="ghost"))) == (
        "unknown sensor: the topic names sensor 'ghost', which is not a sensor of station "
        "'down-1' in the site config (its sensors: turb-down)"
    )
    other = reading_topic(SITE_ID, "up-1", "turb-down")
    assert reason(other, dumps(reading(station="up-1"))) == (
        "unknown sensor: the topic names sensor 'turb-down', which belongs to station 'down-1', "
        "not to station 'up-1' whose topic it came on"
    )
    in_batch = batch([item(1), item(2, sensor="turb-up")])
    assert reason(TURB, dumps(in_batch)) == (
        "unknown sensor: sensor 'turb-up', which belongs to station 'up-1', not to station "
        "'down-1' whose topic it came on (in 'readings.1', counting from 0; the whole batch "
        "of 2 readings is refused)"
    )
    assert reason(status_topic(SITE_ID, "ghost-station"), b"{}") == (
        "unknown station: 'ghost-station' is not a station of site 'lg-route9n' "
        "(its stations: up-1, down-1, basin-1)"
    )


def test_wrong_topics() -> None:
    assert reason("siltwatch/v1/other/down-1/turb-down/reading", dumps(reading())) == (
        "wrong topic: the topic is for site 'other'; this service ingests 'lg-route9n'"
    )
    assert reason("siltwatch/v1/lg-route9n//turb-down/reading", dumps(reading())) == (
        "wrong topic: topic 'siltwatch/v1/lg-route9n//turb-down/reading' has an empty level"
    )
    assert reason("siltwatch/v1/lg-route9n/down-1/reading", dumps(reading())).startswith(
        "wrong topic: topic 'siltwatch/v1/lg-route9n/down-1/reading' matches none of"
    )
    assert (
        reason("🌧️/💧", dumps(reading())) == "wrong topic: topic '🌧️/💧' is not under siltwatch/v1/"
    )
    long = f"siltwatch/v1/{SITE_ID}/{'n' * 70_000}/x/reading"
    assert (
        reason(long, dumps(reading()))
        == f"wrong topic: the topic is {len(long):,} bytes; MQTT allows 65,535"
    )
    assert reason("", b"{}") == "wrong topic: the topic is empty"
    assert reason(TURB, dumps(reading(site="other"))) == (
        "wrong topic: reading of other/down-1/turb-down published on "
        "siltwatch/v1/lg-route9n/down-1/turb-down/reading"
    )
    status = {"type": "status", "site": SITE_ID, "station": "down-1", "state": "online"}
    assert reason(status_topic(SITE_ID, "up-1"), dumps(status)) == (
        "wrong topic: status of lg-route9n/down-1 published on siltwatch/v1/lg-route9n/up-1/status"
    )


def test_extra_fields_duplicate_keys_and_lone_surrogates() -> None:
    assert reason(TURB, dumps(reading(colour="brown"))) == (
        "invalid payload: field 'colour' is not a field of a reading (unknown fields are refused)"
    )
    assert reason(TURB, dumps(batch([item(1, colour="brown")]))) == (
        "invalid payload: field 'readings.0.colour' is not a field of a batch (unknown fields "
        "are refused) (the whole batch of 1 readings is refused)"
    )
    twice = dumps(reading())[:-1] + b', "value": "x"}'
    assert reason(TURB, twice) == (
        "invalid payload: key 'value' appears twice in one object (which one counts would be "
        "a guess; send each key once)"
    )
    ins = b'{"type": "inspection", "site": "lg-route9n", "time": "2026-05-05T18:01:00Z", "inspector": "Jo \\udc00"}'
    assert reason(inspections_topic(SITE_ID), ins) == (
        "invalid payload: field 'inspector': holds a lone UTF-16 surrogate escape (e.g. \\ud800), "
        "which is not a character; strings must be valid Unicode"
    )
    pair = ins.replace(b"\\udc00", b"\\ud83c\\udf27")  # a valid pair: an emoji
    assert isinstance(decode_message(inspections_topic(SITE_ID), pair, SITE), Decoded)


def test_one_bad_reading_refuses_the_whole_batch_and_says_so() -> None:
    items = [item(i) for i in range(5)]
    items[3] = item(3, value="12.5")
    assert reason(TURB, dumps(batch(items))) == (
        "invalid payload: field 'readings.3.value': Input should be a valid number; got the "
        "string '12.5' (a number must be a JSON number, not a string) (the whole batch of 5 "
        "readings is refused)"
    )
    items[3] = item(3, unit="mm")
    assert reason(TURB, dumps(batch(items))) == (
        "wrong unit: sensor 'turb-down' is declared in NTU, the reading says 'mm' (in "
        "'readings.3', counting from 0; the whole batch of 5 readings is refused)"
    )
    items[3] = item(3, value=1e308)
    assert "the whole batch of 5 readings is refused" in reason(TURB, dumps(batch(items)))
    assert reason(TURB, dumps(batch(items, station="up-1"))).startswith(
        "wrong topic: batch for lg-route9n/up-1 published on"
    )


def test_the_last_resort_turns_any_exception_into_a_rejection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(decode_module, "validate_payload", boom)
    assert reason(TURB, dumps(reading())) == (
        "undecodable: RuntimeError while decoding ('a bug'); please report this"
    )

    def deep(*args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(decode_module, "validate_payload", deep)
    assert reason(TURB, dumps(reading())).startswith("too deeply nested:")

    def overflow(*args: object) -> None:
        raise OverflowError("date value out of range")

    monkeypatch.setattr(decode_module, "validate_payload", overflow)
    assert reason(TURB, dumps(reading())).startswith(
        "impossible value: a number or time overflowed"
    )


def test_capture_replay_shares_the_strict_wire_checks() -> None:
    with pytest.raises(ValidationError):
        parse_payload(TURB, reading(value="12.5"))
    with pytest.raises(ValueError, match="published on"):
        parse_payload(TURB, reading(site="other"))


# --- the generators ----------------------------------------------------------------------


def test_every_hostile_message_is_rejected_with_its_expected_category() -> None:
    seen: Counter[str] = Counter()
    for topic, payload, category in hostile_payloads(SITE, 20_000, seed=7):
        out = decode_message(topic, payload, SITE)
        assert isinstance(out, Rejected), (category, topic[:100], payload[:200], out)
        assert out.reason and out.category in EXPECTED_REASONS[category], (category, out.reason)
        if category == "bad-in-batch":
            assert "the whole batch of" in out.reason, out.reason
        seen[category] += 1
    assert set(seen) == set(HOSTILE_CATEGORIES)


def test_generated_topics_are_publishable() -> None:
    for topic, _, _ in hostile_payloads(SITE, 5_000, seed=3):
        assert 0 < len(topic.encode("utf-8")) <= 65_535
        assert not any(c in topic for c in "\x00+#")
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in topic)


def test_valid_messages_decode_to_exactly_the_readings_sent() -> None:
    seqs: dict[str, list[int]] = {}
    times: set[tuple[str, int]] = set()
    batches = 0
    for message in valid_payloads(SITE, 20_000, seed=11):
        out = decode_message(message.topic, message.payload, SITE)
        assert isinstance(out, Decoded), (out, message.payload[:300])
        assert tuple(out.readings) == message.readings
        batches += len(message.readings) > 1
        for _, r in message.readings:
            seqs.setdefault(r.sensor, []).append(r.seq or 0)
            assert (r.sensor, r.t) not in times
            times.add((r.sensor, r.t))
    assert batches > 1_000
    for sensor, numbers in seqs.items():
        assert sorted(numbers) == list(range(numbers[0], numbers[0] + len(numbers))), sensor
    assert set(seqs) == set(SITE.sensors())


def test_generators_are_deterministic() -> None:
    """The same seed makes the same messages, another seed others. (How fast they are made
    is measured by benchmarks/wire_payloads.py, not asserted here: a timed test fails on a
    loaded machine.)"""
    first = list(hostile_payloads(SITE, 2_000, seed=5))
    assert first == list(hostile_payloads(SITE, 2_000, seed=5))
    assert first != list(hostile_payloads(SITE, 2_000, seed=6))
    valid = list(valid_payloads(SITE, 500, seed=5))
    assert valid == list(valid_payloads(SITE, 500, seed=5))
    assert valid != list(valid_payloads(SITE, 500, seed=6))


# --- properties --------------------------------------------------------------------------

SITE_TOPICS = st.sampled_from(
    [
        TURB,
        RAIN,
        reading_topic(SITE_ID, "up-1", "turb-up"),
        reading_topic(SITE_ID, "up-1", "turb-down"),
        inspections_topic(SITE_ID),
        alerts_topic(SITE_ID),
        status_topic(SITE_ID, "up-1"),
    ]
)
# Mostly the site's own topics (so the payload is what gets tested), and wrong ones.
TOPICS = st.one_of(
    SITE_TOPICS,
    SITE_TOPICS,
    SITE_TOPICS,
    st.sampled_from(
        [
            reading_topic("other", "down-1", "turb-down"),
            "siltwatch/v1/lg-route9n//x/reading",
            "not/a/siltwatch/topic",
            "",
        ]
    ),
    st.text(max_size=80),
    st.text(max_size=20).map(lambda level: f"siltwatch/v1/{SITE_ID}/{level}/turb-down/reading"),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**62, max_value=2**80),
    st.floats(),  # NaN and infinities too: json.dumps writes them as NaN/Infinity
    st.text(max_size=20),
    st.sampled_from(
        ["12.5", "NTU", "mm", "2026-05-04T13:00:00Z", "9999-12-31T23:00-05:00", "\ud800"]
    ),
)
JSONISH = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = (
    "v",
    "type",
    "site",
    "station",
    "sensor",
    "time",
    "seq",
    "value",
    "unit",
    "raw",
    "quality",
)


@st.composite
def near_valid(draw: st.DrawFn) -> bytes:
    """A valid reading or batch with some fields replaced by arbitrary JSON."""
    payload: dict[str, Any] = reading() if draw(st.booleans()) else batch([item(1), item(2)])
    target = (
        payload
        if payload.get("type") == "reading"
        else draw(st.sampled_from([payload, *payload["readings"]]))
    )
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        target[name] = draw(JSONISH)
    return json.dumps(payload).encode("utf-8", "surrogatepass")


PAYLOADS = st.one_of(
    st.binary(max_size=200),
    JSONISH.map(lambda v: json.dumps(v).encode("utf-8", "surrogatepass")),
    near_valid(),
    st.integers(min_value=1, max_value=200).map(lambda n: b"[" * n + b"]" * n),
    st.text(max_size=50).map(lambda s: s.encode("utf-8", "surrogatepass")),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TOPICS, PAYLOADS)
def test_decode_never_raises_and_always_answers(topic: str, payload: bytes) -> None:
    out = decode_message(topic, payload, SITE)
    assert isinstance(out, Decoded | Rejected)
    if isinstance(out, Rejected):
        assert out.reason.strip() and ":" in out.reason
        assert out.category != "undecodable", out.reason  # no exception escaped the checks
        out.reason.encode("utf-8")  # storable as text


def _value_range(kind: str, unit: str) -> tuple[float, float]:
    bounds = sensor_kinds()[kind]
    factor = bounds.to_base(1.0, unit)
    shrink = 1 - 1e-9
    return bounds.low / factor * shrink, bounds.high / factor * shrink


ZONES = [
    UTC,
    timezone(timedelta(hours=5, minutes=30)),
    timezone(timedelta(hours=-12)),
    timezone(timedelta(hours=14)),
]


@st.composite
def valid_message(draw: st.DrawFn) -> tuple[str, bytes, list[tuple[str, SensorReading]]]:
    station = draw(st.sampled_from([s for s in SITE.stations if s.sensors]))
    count = draw(st.integers(min_value=1, max_value=6))
    as_batch = count > 1 or draw(st.booleans())
    items: list[dict[str, Any]] = []
    expected: list[tuple[str, SensorReading]] = []
    for _ in range(count):
        sensor = draw(st.sampled_from(station.sensors))
        low, high = _value_range(sensor.kind, sensor.unit)
        value = draw(st.floats(min_value=low, max_value=high, allow_nan=False))
        when = draw(
            st.datetimes(
                min_value=datetime(1970, 1, 2),
                max_value=datetime(2199, 12, 30),
                timezones=st.sampled_from(ZONES),
            )
        )
        seq = draw(st.integers(min_value=0, max_value=2**63 - 1))
        flags = draw(st.lists(st.sampled_from(list(QualityFlag)), unique=True, max_size=3))
        entry = {
            "sensor": sensor.id,
            "time": when.isoformat(),
            "seq": seq,
            "value": value,
            "unit": sensor.unit,
            "quality": [str(f) for f in flags],
        }
        items.append(entry)
        expected.append(
            (
                station.id,
                SensorReading(sensor.id, to_ms(when), value, seq, frozenset(str(f) for f in flags)),
            )
        )
    topic = reading_topic(SITE_ID, station.id, items[0]["sensor"])
    if as_batch:
        return topic, dumps(batch(items, station.id)), expected
    single = {"v": 1, "type": "reading", "site": SITE_ID, "station": station.id, **items[0]}
    return topic, dumps(single), expected


@settings(max_examples=300, deadline=None)
@given(valid_message())
def test_valid_readings_decode_to_exactly_the_readings_sent(
    message: tuple[str, bytes, list[tuple[str, SensorReading]]],
) -> None:
    topic, payload, expected = message
    out = decode_message(topic, payload, SITE)
    assert isinstance(out, Decoded), out
    assert out.readings == expected
    assert all(math.isfinite(r.value) for _, r in out.readings)
