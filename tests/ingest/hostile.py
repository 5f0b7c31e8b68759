"""Deterministic hostile and valid MQTT messages for one site.

``hostile_payloads`` yields messages ingest must refuse, each tagged with its
hostile class; ``valid_payloads`` yields messages it must store, each with the
readings it carries. Both are seeded (the same seed gives the same messages)
and fast, so a fuzz test can publish 100,000 of them over a real broker.

Every topic is publishable: valid UTF-8, at most 65,535 bytes, no NUL and no
``+``/``#`` wildcards (a broker would refuse those before ingest saw them).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, NamedTuple

from analytics.events import SensorReading
from analytics.timeutil import to_ms
from ingest.decode import MAX_PAYLOAD_BYTES
from siltwatch.config import Sensor, SiteConfig
from siltwatch.schema import inspections_topic, reading_topic, status_topic

T0 = datetime(2026, 5, 4, 0, 0, tzinfo=UTC)

# hostile class -> the reason categories decode_message may give it (the text before ':')
EXPECTED_REASONS: dict[str, frozenset[str]] = {
    "overflow": frozenset({"invalid payload", "impossible value"}),
    "deep-nesting": frozenset({"too deeply nested"}),
    "oversize": frozenset({"too large"}),
    "wrong-json-type": frozenset({"invalid payload"}),
    "wrong-unit": frozenset({"wrong unit"}),
    "impossible-value": frozenset({"impossible value"}),
    "unknown-sensor": frozenset({"unknown sensor"}),
    "other-station-sensor": frozenset({"unknown sensor"}),
    "wrong-topic": frozenset(
        {"wrong topic", "unknown station", "unknown sensor", "invalid payload"}
    ),
    "unicode-garbage": frozenset({"not JSON", "not UTF-8", "invalid payload"}),
    "truncated-json": frozenset({"not JSON"}),
    "extra-field": frozenset({"invalid payload"}),
    "bad-in-batch": frozenset(
        {"invalid payload", "wrong unit", "impossible value", "unknown sensor"}
    ),
    "non-finite": frozenset({"not JSON", "impossible value"}),
    "duplicate-key": frozenset({"invalid payload"}),
    "bad-time": frozenset({"invalid payload"}),
}
HOSTILE_CATEGORIES = tuple(EXPECTED_REASONS)

# Relative frequencies after the first round (which yields every class once). The big
# payloads are rare so that publishing 100,000 messages stays cheap.
_WEIGHTS: dict[str, float] = {c: 10.0 for c in HOSTILE_CATEGORIES} | {
    "oversize": 0.01,
    "deep-nesting": 0.5,
    "bad-in-batch": 5.0,
}

_SAFE_FLAGS = ("backfilled", "simulated", "spike", "clock_unsynced")
_LEVEL_GARBAGE = (
    "🌧️",
    "ñandú",
    "x" * 65,
    "up 1",
    "ü",
    "\u202eevil",
    "日本",
    "-",
    ".",
    "ghost-station",
)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def _good_value(kind: str, unit: str, rng: random.Random) -> float:
    """A plausible reading in the sensor's declared unit, exact through JSON."""
    if kind == "turbidity":
        return round(rng.uniform(0.0, 500.0), 2)
    if kind == "rain":
        mm = rng.choice((0.0, 0.0, 0.254, 0.508, round(rng.uniform(0, 5), 3)))
        return round(mm / 25.4, 4) if unit == "in" else mm
    metres = rng.uniform(-0.5, 2.0)
    per_metre = {"m": 1.0, "ft": 1 / 0.3048, "in": 1 / 0.0254, "mm": 1000.0}.get(unit, 1.0)
    return round(metres * per_metre, 3)


def _impossible_value(kind: str, unit: str, rng: random.Random) -> float:
    """A value outside its sensor kind's bounds (siltwatch/sensorkinds/) for ``kind`` in ``unit``."""
    if kind == "turbidity":
        return rng.choice((10_000.5, 1e6, 1e308, -50.5, -1e308))
    if kind == "rain":
        per_mm = {"in": 1 / 25.4}.get(unit, 1.0)
        return rng.choice((-0.01, -1.0, round(301 * per_mm, 3) + 0.01, 1e6, 1e308))
    per_metre = {"m": 1.0, "ft": 1 / 0.3048, "in": 1 / 0.0254, "mm": 1000.0}.get(unit, 1.0)
    return rng.choice((1001 * per_metre, -1001 * per_metre, 1e308, -1e308))


@dataclass(frozen=True)
class _Ctx:
    site: SiteConfig
    site_id: str
    sensors: list[tuple[str, Sensor]]  # (station, sensor)
    by_station: dict[str, list[Sensor]]
    oversize: bytes
    deep: dict[str, bytes]
    times: list[str]  # a pool of valid times (formatting one per message is slow)
    values: dict[str, list[float]]  # sensor -> a pool of plausible values

    def pick(self, rng: random.Random) -> tuple[str, Sensor]:
        return self.sensors[int(rng.random() * len(self.sensors))]

    def topic(self, station: str, sensor: str) -> str:
        return reading_topic(self.site_id, station, sensor)

    def reading(self, rng: random.Random, station: str, sensor: Sensor) -> dict[str, Any]:
        return {
            "v": 1,
            "type": "reading",
            "site": self.site_id,
            "station": station,
            "sensor": sensor.id,
            "time": self.times[int(rng.random() * len(self.times))],
            "seq": int(rng.random() * 1e9),
            "value": self.values[sensor.id][int(rng.random() * 64)],
            "unit": sensor.unit,
            "quality": [],
        }

    def item(self, rng: random.Random, sensor: Sensor) -> dict[str, Any]:
        item = self.reading(rng, "", sensor)
        for key in ("v", "type", "site", "station"):
            del item[key]
        return item

    def single(self, rng: random.Random) -> tuple[str, dict[str, Any]]:
        station, sensor = self.pick(rng)
        return self.topic(station, sensor.id), self.reading(rng, station, sensor)


def _context(site: SiteConfig) -> _Ctx:
    sensors = [(st.id, s) for st in site.stations for s in st.sensors]
    if not sensors:
        raise ValueError("the site has no sensors to aim hostile messages at")
    site_id = site.site.id
    station, sensor = sensors[0]
    # A real-looking reading padded past the cap: one byte too many.
    head = json.dumps({"v": 1, "type": "reading", "site": site_id, "station": station})[:-1]
    pad_key = ', "notes": "'
    room = MAX_PAYLOAD_BYTES + 1 - len(head) - len(pad_key) - 2
    oversize = (head + pad_key + "x" * room + '"}').encode()
    assert len(oversize) == MAX_PAYLOAD_BYTES + 1
    deep = {
        "arrays-10k": b"[" * 10_000 + b"]" * 10_000,
        "arrays-100k": b"[" * 100_000 + b"]" * 100_000,
        "objects-10k": b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
        "unclosed-100k": b"[" * 100_000,
        "in-value-10k": (
            json.dumps({"site": site_id, "station": station, "sensor": sensor.id})[:-1]
            + ', "value": '
            + "[" * 10_000
            + "]" * 10_000
            + "}"
        ).encode(),
    }
    by_station = {st.id: list(st.sensors) for st in site.stations}
    pool = random.Random(0)
    times = [_iso(to_ms(T0) + pool.randrange(0, 10**9) * 1000) for _ in range(512)]
    values = {s.id: [_good_value(s.kind, s.unit, pool) for _ in range(64)] for _, s in sensors}
    return _Ctx(site, site_id, sensors, by_station, oversize, deep, times, values)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


Builder = Callable[[_Ctx, random.Random], tuple[str, bytes]]


def _overflow(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    topic, r = ctx.single(rng)
    choice = rng.randrange(8)
    if choice == 0:
        r["seq"] = rng.choice((2**63, 2**64, 2**63 + rng.randrange(10**6), 10**30))
    elif choice == 1:
        r["seq"] = rng.choice((-1, -(2**63), -(2**64)))
    elif choice == 2:
        r["value"] = rng.choice((1e308, -1e308, 1.7976931348623157e308))
    elif choice == 3:
        r["time"] = rng.choice(
            ("9999-12-31T23:00-05:00", "9999-12-31T23:59:59-00:01", "9999-12-31T20:00:00-12:00")
        )
    elif choice == 4:
        r["time"] = rng.choice(
            ("0001-01-01T00:00:00+05:00", "0001-01-01T00:00:00Z", "0001-01-01T00:30+01:00")
        )
    elif choice == 5:
        r["time"] = "9999-12-31T23:59:59.999999Z"
    elif choice == 6:  # an integer far beyond 64 bits, as digits on the wire
        text = json.dumps(r).replace(
            f'"seq": {r["seq"]}', '"seq": ' + "9" * rng.randrange(20, 4000)
        )
        return topic, text.encode()
    else:
        r["value"] = 10**400  # a JSON integer no float can hold
    return topic, _dumps(r)


def _deep(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    station, sensor = ctx.pick(rng)
    key = rng.choice(sorted(ctx.deep))
    return ctx.topic(station, sensor.id), ctx.deep[key]


def _oversize(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    station, sensor = ctx.sensors[0]
    return ctx.topic(station, sensor.id), ctx.oversize


def _wrong_json_type(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    topic, r = ctx.single(rng)
    field, bad = rng.choice(
        (
            ("value", str(r["value"])),
            ("value", True),
            ("value", False),
            ("value", None),
            ("value", [r["value"]]),
            ("value", {"v": r["value"]}),
            ("seq", str(r["seq"])),
            ("seq", float(r["seq"]) + 0.5),
            ("seq", True),
            ("seq", None),
            ("time", 1_700_000_000),
            ("time", None),
            ("time", ["2026-05-04T13:00:00Z"]),
            ("quality", "backfilled"),
            ("quality", [1]),
            ("unit", 5),
            ("unit", None),
            ("sensor", None),
            ("v", True),
            ("v", "1"),
            ("v", 1.5),
            ("raw", "1.0"),
            ("raw", False),
            ("(payload)", [r]),
            ("(payload)", "reading"),
            ("(payload)", 42),
            ("(payload)", None),
        )
    )
    if field == "(payload)":
        return topic, _dumps(bad)
    r[field] = bad
    return topic, _dumps(r)


_WRONG_UNITS = ("NTU", "FNU", "ntu", "in", "mm", "ft", "m", "FT", "In", "°C", "mg/L", "cm", "µm")


def _wrong_unit(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    topic, r = ctx.single(rng)
    r["unit"] = rng.choice([u for u in _WRONG_UNITS if u != r["unit"]])
    return topic, _dumps(r)


def _impossible(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    station, sensor = ctx.pick(rng)
    r = ctx.reading(rng, station, sensor)
    r["value"] = _impossible_value(sensor.kind, sensor.unit, rng)
    return ctx.topic(station, sensor.id), _dumps(r)


def _ghost_id(rng: random.Random) -> str:
    return rng.choice(("ghost", "turb-x", "rain-99", "sensor.1", "A" * 64)) + str(
        rng.randrange(100)
    )


def _unknown_sensor(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    station, sensor = ctx.pick(rng)
    if rng.random() < 0.5:  # on the topic and in the payload
        ghost = _ghost_id(rng)[:64]
        r = ctx.reading(rng, station, sensor)
        r["sensor"] = ghost
        return ctx.topic(station, ghost), _dumps(r)
    item = ctx.item(rng, sensor)  # in a batch on a valid topic
    item["sensor"] = _ghost_id(rng)[:64]
    batch = {"type": "batch", "site": ctx.site_id, "station": station, "readings": [item]}
    return ctx.topic(station, sensor.id), _dumps(batch)


def _other_station(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    stations = [s for s, sensors in ctx.by_station.items() if sensors]
    if len(stations) < 2:
        return _unknown_sensor(ctx, rng)
    here, there = rng.sample(stations, 2)
    foreign = rng.choice(ctx.by_station[there])
    if rng.random() < 0.5:  # the topic's station with another station's sensor
        r = ctx.reading(rng, here, foreign)
        return ctx.topic(here, foreign.id), _dumps(r)
    own = rng.choice(ctx.by_station[here])
    items = [ctx.item(rng, own), ctx.item(rng, foreign)]
    batch = {"type": "batch", "site": ctx.site_id, "station": here, "readings": items}
    return ctx.topic(here, own.id), _dumps(batch)


def _wrong_topic(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    station, sensor = ctx.pick(rng)
    r = ctx.reading(rng, station, sensor)
    payload = _dumps(r)
    site, sid = ctx.site_id, sensor.id
    garbage = rng.choice(_LEVEL_GARBAGE)
    topic = rng.choice(
        (
            f"siltwatch/v1/other-site/{station}/{sid}/reading",
            f"siltwatch/v1/{garbage}/{station}/{sid}/reading",
            f"siltwatch/v1/{site}/{garbage}/{sid}/reading",
            f"siltwatch/v1/{site}/{station}/{garbage}/reading",
            f"siltwatch/v1/{site}/{station}/reading",
            f"siltwatch/v1/{site}/{station}/{sid}/readings",
            f"siltwatch/v1/{site}/{station}/{sid}/reading/extra",
            f"siltwatch/v1/{site}//{sid}/reading",
            f"siltwatch/v1/{site}/{station}/{sid}/reading/",
            f"siltwatch/v1//{station}/{sid}/reading",
            f"siltwatch/v2/{site}/{station}/{sid}/reading",
            f"/siltwatch/v1/{site}/{station}/{sid}/reading",
            f"SILTWATCH/v1/{site}/{station}/{sid}/reading",
            "siltwatch",
            "/",
            "🌧️/💧/🌊",
            f"siltwatch/v1/{site}/{station}/status",  # a reading is no status
            f"siltwatch/v1/{site}/inspections",  # nor an inspection
            f"siltwatch/v1/{site}/{'n' * 60_000}/{sid}/reading",
        )
    )
    if rng.random() < 0.2:  # a valid topic, but the payload names another place
        r["site"] = "other-site"
        return ctx.topic(station, sid), _dumps(r)
    if rng.random() < 0.1:
        topic = status_topic(site, "ghost-station")
        status = {"type": "status", "site": site, "station": "ghost-station", "state": "online"}
        return topic, _dumps(status)
    return topic, payload


def _unicode_garbage(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    topic, r = ctx.single(rng)
    choice = rng.randrange(6)
    if choice == 0:  # text, not JSON
        text = "".join(
            chr(rng.choice((0x1F327, 0x1F4A7, 0xF1, 0x202E, 0x30C6, 0x7, 0x41)))
            for _ in range(rng.randrange(1, 40))
        )
        return topic, text.encode()
    if choice == 1:  # bytes that are not UTF-8 (no brackets, so the depth check passes)
        body = bytes(
            rng.choice(b"\xff\xfe\xc3\x80abc\x00\xed\xa0\x80") for _ in range(rng.randrange(1, 60))
        )
        return topic, b"\xff" + body
    if choice == 2:  # JSON in UTF-16
        return topic, json.dumps(r).encode("utf-16")
    if choice == 3:  # a byte-order mark in front
        return topic, b"\xef\xbb\xbf" + _dumps(r)
    if choice == 4:  # a lone surrogate escape in an inspection's free text
        ins = {
            "type": "inspection",
            "site": ctx.site_id,
            "time": _iso(to_ms(T0)),
            "inspector": "Jo \\ud800",
        }
        return inspections_topic(ctx.site_id), json.dumps(ins).replace(
            "\\\\ud800", "\\ud800"
        ).encode()
    # an overlong UTF-8 encoding of '{' (0xC0 0xBB): refused as not UTF-8
    return topic, b"\xc0\xbb" + _dumps(r)[1:]


def _truncated(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    topic, r = ctx.single(rng)
    if rng.random() < 0.3:
        station, _ = ctx.pick(rng)
        items = [ctx.item(rng, s) for s in rng.choices(ctx.by_station[station], k=5)]
        r = {"type": "batch", "site": ctx.site_id, "station": station, "readings": items}
        topic = ctx.topic(station, items[0]["sensor"])
    payload = _dumps(r)
    return topic, payload[: rng.randrange(0, len(payload))]


_EXTRA_NAMES = ("colour", "Value", "seq ", "__proto__", "site_id", "ts", "é", "v2", "")


def _extra_field(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    station, sensor = ctx.pick(rng)
    name = rng.choice(_EXTRA_NAMES)
    where = rng.randrange(4)
    if where == 0:
        r = ctx.reading(rng, station, sensor)
        r[name] = rng.choice((1, "x", None, [], {}))
        return ctx.topic(station, sensor.id), _dumps(r)
    if where == 1:
        item = ctx.item(rng, sensor)
        item[name] = 1
        batch = {"type": "batch", "site": ctx.site_id, "station": station, "readings": [item]}
        return ctx.topic(station, sensor.id), _dumps(batch)
    if where == 2:
        ins = {
            "type": "inspection",
            "site": ctx.site_id,
            "time": _iso(to_ms(T0)),
            "inspector": "Jo",
        }
        ins[name] = "x"
        return inspections_topic(ctx.site_id), _dumps(ins)
    status = {"type": "status", "site": ctx.site_id, "station": station, "state": "online"}
    status[name] = "x"
    return status_topic(ctx.site_id, station), _dumps(status)


def _bad_in_batch(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    station = rng.choice([s for s, sensors in ctx.by_station.items() if sensors])
    own = ctx.by_station[station]
    size = rng.randrange(2, 40)
    items = [ctx.item(rng, rng.choice(own)) for _ in range(size)]
    bad_at = rng.randrange(size)
    bad = items[bad_at]
    sensor = next(s for s in own if s.id == bad["sensor"])
    choice = rng.randrange(6)
    if choice == 0:
        bad["unit"] = rng.choice([u for u in _WRONG_UNITS if u != sensor.unit])
    elif choice == 1:
        bad["value"] = str(bad["value"])
    elif choice == 2:
        bad["value"] = _impossible_value(sensor.kind, sensor.unit, rng)
    elif choice == 3:
        bad["sensor"] = _ghost_id(rng)[:64]
    elif choice == 4:
        bad["time"] = "9999-12-31T23:00-05:00"
    else:
        bad["seq"] = -1
    batch = {"type": "batch", "site": ctx.site_id, "station": station, "readings": items}
    topic = ctx.topic(station, items[0]["sensor"] if bad_at else own[0].id)
    return topic, _dumps(batch)


def _non_finite(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    topic, r = ctx.single(rng)
    literal = rng.choice(("NaN", "Infinity", "-Infinity", "1e999", "-1e400"))
    field = rng.choice(("value", "raw"))
    r[field] = 0.5
    return topic, _dumps(r).replace(f'"{field}":0.5'.encode(), f'"{field}":{literal}'.encode())


def _duplicate_key(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    topic, r = ctx.single(rng)
    key = rng.choice(("value", "seq", "sensor", "unit", "time"))
    text = _dumps(r)[:-1] + b"," + json.dumps(key).encode() + b":" + _dumps(r[key]) + b"}"
    return topic, text


def _bad_time(ctx: _Ctx, rng: random.Random) -> tuple[str, bytes]:
    topic, r = ctx.single(rng)
    r["time"] = rng.choice(
        (
            "1969-12-31T23:59:59Z",
            "2200-01-01T00:00:00Z",
            "2500-06-01T12:00:00+02:00",
            "2026-05-04T13:00:00",  # naive
            "2026-05-04",
            "yesterday",
            "1700000000",
            "2026-05-04T13:00:00+24:00",
            "2026-13-01T00:00:00Z",
            "",
        )
    )
    return topic, _dumps(r)


_BUILDERS: dict[str, Builder] = {
    "overflow": _overflow,
    "deep-nesting": _deep,
    "oversize": _oversize,
    "wrong-json-type": _wrong_json_type,
    "wrong-unit": _wrong_unit,
    "impossible-value": _impossible,
    "unknown-sensor": _unknown_sensor,
    "other-station-sensor": _other_station,
    "wrong-topic": _wrong_topic,
    "unicode-garbage": _unicode_garbage,
    "truncated-json": _truncated,
    "extra-field": _extra_field,
    "bad-in-batch": _bad_in_batch,
    "non-finite": _non_finite,
    "duplicate-key": _duplicate_key,
    "bad-time": _bad_time,
}
assert set(_BUILDERS) == set(HOSTILE_CATEGORIES)


def hostile_payloads(site: SiteConfig, n: int, seed: int) -> Iterator[tuple[str, bytes, str]]:
    """``n`` messages ingest must refuse, as (topic, payload, hostile class).

    The first ``len(HOSTILE_CATEGORIES)`` messages are one of each class, so any
    ``n`` at least that large covers them all; the rest are drawn with weights
    that keep the multi-megabyte ones rare.
    """
    rng = random.Random(seed)
    ctx = _context(site)
    names = list(HOSTILE_CATEGORIES)
    weights = [_WEIGHTS[c] for c in names]
    for i in range(n):
        category = names[i] if i < len(names) else rng.choices(names, weights)[0]
        topic, payload = _BUILDERS[category](ctx, rng)
        yield topic, payload, category


class ValidMessage(NamedTuple):
    topic: str
    payload: bytes
    readings: tuple[tuple[str, SensorReading], ...]  # what decode_message must return


def valid_payloads(
    site: SiteConfig, n: int, seed: int, *, batch_share: float = 0.1, max_batch: int = 20
) -> Iterator[ValidMessage]:
    """``n`` valid single readings and batches, each with the (station, reading) pairs it carries.

    Per sensor, ``seq`` increases by one per reading from a seeded start and the
    time is ``T0 + (seq - start) * interval_s``, so (sensor, time) and (sensor,
    seq) pairs are unique over the whole run. Batches hold one station's
    readings, oldest first, and go out on their first reading's topic.
    """
    rng = random.Random(seed)
    rand = rng.random
    site_id = site.site.id
    stations = {st.id: list(st.sensors) for st in site.stations if st.sensors}
    if not stations:
        raise ValueError("the site has no sensors")
    station_ids = sorted(stations)
    start = {s.id: rng.randrange(0, 2**40) for st in stations.values() for s in st}
    next_seq = dict(start)
    step = {s.id: round(s.interval_s * 1000) for st in stations.values() for s in st}
    topics = {s.id: reading_topic(site_id, st, s.id) for st, ss in stations.items() for s in ss}
    t0 = to_ms(T0)
    zones = [timezone(timedelta(hours=-4)), timezone(timedelta(hours=5, minutes=30))]
    values = {
        s.id: [_good_value(s.kind, s.unit, rng) for _ in range(256)]
        for st in stations.values()
        for s in st
    }
    gmtime, strftime = time.gmtime, time.strftime

    def one(sensor: Sensor) -> tuple[dict[str, Any], SensorReading]:
        sid = sensor.id
        seq = next_seq[sid]
        next_seq[sid] = seq + 1
        t = t0 + (seq - start[sid]) * step[sid]
        if rand() < 0.8:
            text = strftime("%Y-%m-%dT%H:%M:%SZ", gmtime(t // 1000))
        else:  # an offset other than Z: converted to UTC on the way in
            text = datetime.fromtimestamp(t / 1000, tz=zones[rand() < 0.5]).isoformat()
        value = values[sid][int(rand() * 256)]
        item: dict[str, Any] = {
            "sensor": sid,
            "time": text,
            "seq": seq,
            "value": value,
            "unit": sensor.unit,
        }
        if rand() < 0.15:
            flag = _SAFE_FLAGS[int(rand() * len(_SAFE_FLAGS))]
            item["quality"] = [flag]
            if rand() < 0.5:
                item["raw"] = round(rand() * 5, 4)
            return item, SensorReading(sid, t, value, seq, frozenset((flag,)))
        return item, SensorReading(sid, t, value, seq)

    for _ in range(n):
        station = station_ids[int(rand() * len(station_ids))]
        sensors = stations[station]
        if rand() < batch_share:
            size = 2 + int(rand() * (max_batch - 1))
            pairs = [one(sensors[int(rand() * len(sensors))]) for _ in range(size)]
            pairs.sort(key=lambda p: p[1].t)
            batch = {
                "v": 1,
                "type": "batch",
                "site": site_id,
                "station": station,
                "readings": [p[0] for p in pairs],
            }
            yield ValidMessage(
                topics[pairs[0][1].sensor],
                _dumps(batch),
                tuple((station, p[1]) for p in pairs),
            )
        else:
            item, reading = one(sensors[int(rand() * len(sensors))])
            payload = {"v": 1, "type": "reading", "site": site_id, "station": station, **item}
            yield ValidMessage(topics[reading.sensor], _dumps(payload), ((station, reading),))
