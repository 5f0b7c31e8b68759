"""Detections are functions of event-time data (design.md): properties over generated sites.

For a generated recording (plumes, debris, gaps, faults, frozen probes, storms)
on a site with a turbidity pair and rain, level and sediment sensors:

* any arrival order within the allowed lateness, any chunking of the feed
  calls and any injected duplicates give byte-identical ALERTS and DUTIES
  JSON lines;
* a snapshot/restore (pickle round trip) at any point of the feed, continued
  on the restored engine, gives byte-identical output too.

The reference is the recording fed in event-time order in one call.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable
from datetime import datetime
from typing import Any

from hypothesis import Phase, event, find, given, settings
from hypothesis import strategies as st

from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.timeutil import MS_PER_MIN
from tests.analytics.strategies import CUTS, PROPERTY_SETTINGS, SEEDS, Recording, recordings

LATENESS_S = 600.0
LATENESS_MS = round(LATENESS_S * 1000)


def outputs(engine: Engine) -> tuple[str, str]:
    """ALERTS.jsonl and DUTIES.jsonl as the replay writes them."""
    alerts = "".join(a.model_dump_json() + "\n" for a in engine.alerts())
    duties = "".join(d.model_dump_json() + "\n" for d in engine.duties())
    return alerts, duties


def reference(rec: Recording) -> tuple[str, str]:
    engine = Engine(rec.site, allowed_lateness_s=LATENESS_S)
    engine.feed(rec.readings)
    engine.finish(rec.end)
    return outputs(engine)


def arrivals(rec: Recording, seed: int, duplicates: int) -> list[SensorReading]:
    """The readings as a broker might deliver them: each delayed by less than the lateness.

    Duplicates are copies of random readings with delays of up to three times
    the lateness: a re-sent message may come much later and must be dropped.
    """
    rng = random.Random(seed)
    timed = [(r.t + rng.randrange(LATENESS_MS), i, r) for i, r in enumerate(rec.readings)]
    base = len(timed)
    if rec.readings:
        for k in range(duplicates):
            r = rng.choice(rec.readings)
            timed.append((r.t + rng.randrange(3 * LATENESS_MS), base + k, r))
    timed.sort(key=lambda item: (item[0], item[1]))
    return [r for _, _, r in timed]


def chunks(items: list[SensorReading], seed: int, max_chunk: int) -> list[list[SensorReading]]:
    rng = random.Random(seed)
    out: list[list[SensorReading]] = []
    i = 0
    while i < len(items):
        size = rng.randint(1, max_chunk)
        out.append(items[i : i + size])
        i += size
    return out


def label(alerts: str, duties: str) -> None:
    """Hypothesis statistics (pytest --hypothesis-show-statistics) show what was exercised."""
    for kind in ("turbidity_contrast", "sensor_offline", "data_quality", "drain_time"):
        if f'"kind":"{kind}"' in alerts:
            event(f"has {kind}")
    if not alerts:
        event("no alerts")
    if '"reason":"storm"' in duties:
        event("has a storm duty")


@PROPERTY_SETTINGS
@given(
    rec=recordings(),
    seed=SEEDS,
    duplicates=st.integers(min_value=0, max_value=30),
    max_chunk=st.sampled_from([1, 7, 100, 5000]),
)
def test_arrival_order_chunking_and_duplicates_do_not_change_the_output(
    rec: Recording, seed: int, duplicates: int, max_chunk: int
) -> None:
    expected = reference(rec)
    label(*expected)
    engine = Engine(rec.site, allowed_lateness_s=LATENESS_S)
    for part in chunks(arrivals(rec, seed, duplicates), seed + 1, max_chunk):
        engine.feed(part)
    engine.finish(rec.end)
    assert outputs(engine) == expected, rec.plan
    assert engine.stats.late_processed == 0  # nothing arrived beyond the lateness
    assert engine.stats.duplicates + engine.stats.late_dropped == duplicates


@PROPERTY_SETTINGS
@given(rec=recordings(), seed=SEEDS, cut=CUTS)
def test_snapshot_and_restore_at_any_point_do_not_change_the_output(
    rec: Recording, seed: int, cut: float
) -> None:
    expected = reference(rec)
    label(*expected)
    delivered = arrivals(rec, seed, duplicates=5)
    parts = chunks(delivered, seed + 1, 50)
    at = round(cut * len(parts))
    engine = Engine(rec.site, allowed_lateness_s=LATENESS_S)
    for part in parts[:at]:
        engine.feed(part)
    restored = Engine.restore(rec.site, engine.snapshot())
    for part in parts[at:]:
        restored.feed(part)
    restored.finish(rec.end)
    assert outputs(restored) == expected, rec.plan


# --- the generator is not vacuous ---------------------------------------------------------

# Generate only: the first example that shows the episode is enough (no shrinking).
_FIND = settings(max_examples=300, deadline=None, database=None, phases=[Phase.generate])


def _finds(kind: str) -> Callable[[Recording], bool]:
    return lambda rec: f'"kind":"{kind}"' in reference(rec)[0]


def _values(rec: Recording, sensor: str, start: int, end: int) -> list[float]:
    """The raw values ``sensor`` reported with ``start < t <= end``, in time order."""
    return [r.value for r in rec.readings if r.sensor == sensor and start < r.t <= end]


def _turbidity_plume_in_readings(rec: Recording, alert: dict[str, Any]) -> bool:
    """The raw probes show the plume: over the 15 minutes before the alert opened,
    downstream exceeds the limit the site is governed by (its own 25 NTU over
    background, or NCG01's 50 NTU stream cap with no increase above it)."""
    pair = next(p for p in rec.site.turbidity_pairs if p.id == alert["subject"])
    opened = _ms(alert["opened_at"])
    up = _values(rec, pair.upstream, opened - 15 * MS_PER_MIN, opened)
    down = _values(rec, pair.downstream, opened - 15 * MS_PER_MIN, opened)
    if not up or not down:
        return False
    up_level, down_level = statistics.median(up), statistics.median(down)
    if pair.limit is not None:
        return down_level - up_level > float(pair.limit["over_background_ntu"])
    return down_level > up_level and (down_level > 50.0 or up_level > 50.0)


def _silence_in_readings(rec: Recording, alert: dict[str, Any]) -> bool:
    """The sensor really was silent: no reading in the two intervals before the alert opened."""
    opened = _ms(alert["opened_at"])
    interval_ms = round(rec.site.sensor(alert["subject"]).interval_s * 1000)
    return not _values(rec, alert["subject"], opened - 2 * interval_ms - 1, opened)


def _usable(rec: Recording, sensor: str) -> list[tuple[int, bool]]:
    """Each reading's time and whether a person would trust it: not far below 0 NTU
    (no water reads that) and not the 60th or later identical value in a row (a
    frozen probe)."""
    out: list[tuple[int, bool]] = []
    previous, run = None, 0
    for r in rec.readings:
        if r.sensor != sensor:
            continue
        run = run + 1 if r.value == previous else 1
        previous = r.value
        out.append((r.t, r.value > -10.0 and run < 60))
    return out


def _bad_data_in_readings(rec: Recording, alert: dict[str, Any]) -> bool:
    """A probe alert: the probe had sent an untrustworthy reading by the time it opened.
    A pair alert: in the 30 minutes before it opened, one of its probes sent fewer than
    two thirds of its readings in a usable state (the pair could not be judged)."""
    opened = _ms(alert["opened_at"])
    pair = next((p for p in rec.site.turbidity_pairs if p.id == alert["subject"]), None)
    if pair is None:
        return any(not ok for t, ok in _usable(rec, alert["subject"]) if t <= opened)
    for sensor in (pair.upstream, pair.downstream):
        expected = 30 * MS_PER_MIN / (rec.site.sensor(sensor).interval_s * 1000)
        usable = sum(ok for t, ok in _usable(rec, sensor) if opened - 30 * MS_PER_MIN < t <= opened)
        if usable < 2 / 3 * expected:
            return True
    return False


def _ms(iso: str) -> int:
    return round(datetime.fromisoformat(iso).timestamp() * 1000)


_IN_THE_READINGS: dict[str, Callable[[Recording, dict[str, Any]], bool]] = {
    "turbidity_contrast": _turbidity_plume_in_readings,
    "sensor_offline": _silence_in_readings,
    "data_quality": _bad_data_in_readings,
}


def test_generated_recordings_do_produce_plumes_gaps_and_faults() -> None:
    """Each kind of episode appears in some generated recording (else the properties are
    vacuous), and each is real: the raw readings, checked here without the detectors,
    show the plume, the silence or the bad data the alert reports."""
    for kind, in_the_readings in _IN_THE_READINGS.items():
        rec = find(recordings(), _finds(kind), settings=_FIND)
        alerts = [json.loads(line) for line in reference(rec)[0].splitlines()]
        found = [a for a in alerts if a["kind"] == kind]
        assert found, rec.plan
        for alert in found:
            assert in_the_readings(rec, alert), (
                kind,
                alert["subject"],
                alert["opened_at"],
                rec.plan,
            )
