"""siltwatch's storm segmentation against PWD's own on a real rain record.

Record: Philadelphia Water Department SMP 250-1-1, rain gauge 9, 15-minute
totals 2016-02 to 2018-08 (tests/fixtures/pwd_smp_250-1-1, MIT, see its
PROVENANCE.md). ``rainfall_in`` is the depth of the 15 min ending at the time
stamp (blank = 0); ``rain_event_uid`` is the event pwdgsi ``marsDetectEvents``
assigned: 6-hour inter-event time, events under 0.10 in dropped, 15-minute
steps assumed.

siltwatch is run with the same parameters: gap 6 h, interval 15 min, minimum
storm 0.10 in. Matching criterion: a siltwatch storm and a PWD event *match*
when their rain periods overlap in time (start of the first wet interval to
the end of the last). Measured: 137 of 137 siltwatch storms match a PWD event
and 137 of 137 PWD events match a siltwatch storm; moreover all 137 have
identical start and end and the same depth. The assertion threshold is 95 %
both ways (and >= 95 % identical boundaries), so a regression that shifts
boundaries on a handful of storms fails.

Why they agree exactly: pwdgsi starts a new event when two wet time stamps
are at least ``iet + 15 min`` apart, i.e. when the dry period between the end
of one wet interval and the start of the next is at least 6 h — siltwatch's
rule with ``interval_s = 900``. Where they could differ, and why they do not
here (docs/storm-segmentation.md): pwdgsi assumes 15-min steps whatever the
data (siltwatch uses the sensor's declared interval); pwdgsi keeps events
whose float sum is within 1e-7 in of 0.10 (siltwatch sums exact integers, so
a 0.10 in event made of 0.009 + 0.001 + ... is kept by both); and siltwatch in
the engine accumulates nanometres, so 0.001 in readings do not drift.
"""

from __future__ import annotations

import csv
import gzip
from datetime import datetime
from pathlib import Path

from analytics.engine import Engine
from analytics.events import SensorReading
from analytics.rain import RainDetector, StormSpan, segment_storms
from analytics.timeutil import MS_PER_H, MS_PER_MIN, iso, to_ms
from siltwatch.config import SiteConfig

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "pwd_smp_250-1-1"
    / "smp_250-1-1_OW1_level_rain_2016-02_2018-08.csv.gz"
)
Q = 15 * MS_PER_MIN
Window = tuple[int, int]


def load() -> tuple[list[tuple[int, float]], dict[int, list[tuple[int, float]]]]:
    """(t, depth in) for every row (blank = 0), and PWD's events: uid -> its wet rows."""
    series: list[tuple[int, float]] = []
    events: dict[int, list[tuple[int, float]]] = {}
    with gzip.open(FIXTURE, "rt", newline="") as fh:
        for row in csv.DictReader(fh):
            t = to_ms(datetime.fromisoformat(row["datetime_utc"].replace("Z", "+00:00")))
            depth = float(row["rainfall_in"]) if row["rainfall_in"] else 0.0
            series.append((t, depth))
            if row["rain_event_uid"]:
                events.setdefault(int(row["rain_event_uid"]), []).append((t, depth))
    return series, events


def pwd_windows(events: dict[int, list[tuple[int, float]]]) -> list[Window]:
    # Same convention as siltwatch: from the start of the first 15-min interval to the last stamp.
    return sorted(
        (min(t for t, _ in rows) - Q, max(t for t, _ in rows)) for rows in events.values()
    )


def overlaps(a: Window, b: Window) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def agreement(ours: list[Window], theirs: list[Window]) -> tuple[int, int, int]:
    ours_matched = sum(any(overlaps(o, p) for p in theirs) for o in ours)
    theirs_matched = sum(any(overlaps(p, o) for o in ours) for p in theirs)
    identical = len(set(ours) & set(theirs))
    return ours_matched, theirs_matched, identical


def check(ours: list[Window], theirs: list[Window], label: str) -> None:
    ours_matched, theirs_matched, identical = agreement(ours, theirs)
    print(
        f"{label}: siltwatch storms matched {ours_matched}/{len(ours)}, "
        f"PWD events matched {theirs_matched}/{len(theirs)}, identical boundaries {identical}"
    )
    for w in sorted(set(ours) ^ set(theirs)):
        side = "siltwatch only" if w in ours else "PWD only"
        print(f"  {side}: {iso(w[0])} - {iso(w[1])}")
    assert len(theirs) == 137
    assert ours_matched >= 0.95 * len(ours)
    assert theirs_matched >= 0.95 * len(theirs)
    assert identical >= 0.95 * len(theirs)


def test_pure_segmentation_agrees_with_pwd_rain_event_uid() -> None:
    series, events = load()
    spans: list[StormSpan] = segment_storms(
        series, gap_ms=6 * MS_PER_H, interval_ms=Q, min_depth=0.10
    )
    check([(s.start, s.end) for s in spans], pwd_windows(events), "segment_storms")
    # Same depths too (float sums of the same rows).
    depth = {(s.start, s.end): s.depth for s in spans}
    for uid, rows in events.items():
        window = (min(t for t, _ in rows) - Q, max(t for t, _ in rows))
        assert abs(depth[window] - sum(d for _, d in rows)) < 1e-9, uid


def test_engine_rain_detector_agrees_with_pwd_rain_event_uid() -> None:
    """The same segmentation inside the engine (readings fed in arrival chunks)."""
    site = SiteConfig.model_validate(
        {
            "site": {"id": "pwd-250", "timezone": "America/New_York", "rule_packs": []},
            "stations": [
                {
                    "id": "gage-9",
                    "sensors": [
                        {
                            "id": "rain",
                            "kind": "rain",
                            "unit": "in",
                            "tip_in": 0.01,
                            "interval_s": 900,
                        }
                    ],
                }
            ],
            "rain_gauges": [{"id": "gage-9", "sensor": "rain"}],
            "rule_overrides": {"rain.min_storm_in": 0.10},
        }
    )
    series, events = load()
    engine = Engine(site)
    readings = [SensorReading("rain", t, d) for t, d in series]
    for i in range(0, len(readings), 5000):
        engine.feed(readings[i : i + 5000])
    engine.finish()
    det = engine.detectors["rain"]
    assert isinstance(det, RainDetector)
    check([(s.start, s.end) for s in det.storms()], pwd_windows(events), "RainDetector")
