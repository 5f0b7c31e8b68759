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

import random
from collections.abc import Callable

from hypothesis import Phase, event, find, given, settings
from hypothesis import strategies as st

from analytics.engine import Engine
from analytics.events import SensorReading
from tests.analytics.strategies import PROPERTY_SETTINGS, Recording, recordings

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
    seed=st.integers(min_value=0, max_value=2**32 - 1),
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
@given(
    rec=recordings(),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    cut=st.floats(min_value=0.0, max_value=1.0),
)
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


def test_generated_recordings_do_produce_plumes_gaps_and_faults() -> None:
    """Each kind of episode appears in some generated recording (else the properties are vacuous)."""
    for kind in ("turbidity_contrast", "sensor_offline", "data_quality"):
        rec = find(recordings(), _finds(kind), settings=_FIND)
        assert f'"kind":"{kind}"' in reference(rec)[0]
