"""Replay benchmark: a month of a 40-sensor site through siltwatch, against pandas alone.

Run: ``.venv/bin/python -m benchmarks.replay`` (``--days 3`` for a quick look).

Builds, in a temporary directory, a site with 20 turbidity pairs (40 probes,
1-minute readings) and 30 days of readings with a few plumes per pair: 1.73 M
rows of ``time,sensor,value`` CSV (the replay contract's recording format).
Then times

(a) siltwatch: parsing the CSV into readings (``ingest.recording.read_recording``)
    and the engine run (``ingest.replay.replay_site``: ordering, the health
    screen, 20 turbidity-contrast detectors with 15-minute rolling medians on
    both probes, alert episodes);
(b) pandas alone: ``read_csv`` of the same file, time parsing, and the same
    rolling medians (group by sensor, 15-minute time-based rolling median) —
    the floor a vectorised batch job would set, with no detection at all.

Benchmarks may read the clock (``time.perf_counter``); the analytics never do.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analytics.timeutil import MS_PER_MIN, iso, to_ms
from siltwatch.config import SiteConfig

PAIRS = 20
START = datetime(2026, 5, 1, tzinfo=UTC)


def bench_site(pairs: int = PAIRS) -> SiteConfig:
    stations: list[dict[str, Any]] = []
    turbidity_pairs: list[dict[str, Any]] = []
    for p in range(pairs):
        for side in ("up", "down"):
            stations.append(
                {
                    "id": f"{side}-{p:02d}",
                    "sensors": [
                        {
                            "id": f"turb-{side}-{p:02d}",
                            "kind": "turbidity",
                            "unit": "NTU",
                            "interval_s": 60,
                        }
                    ],
                }
            )
        turbidity_pairs.append(
            {
                "id": f"outfall-{p:02d}",
                "upstream": f"turb-up-{p:02d}",
                "downstream": f"turb-down-{p:02d}",
                "receiving_water": "brook",
                "travel_time_s": 120,
                "limit": {"over_background_ntu": 25},
            }
        )
    return SiteConfig.model_validate(
        {
            "site": {
                "id": "bench-site",
                "name": "Benchmark site",
                "timezone": "America/New_York",
                "rule_packs": ["ny-lake-george"],
            },
            "receiving_waters": [{"id": "brook", "name": "Brook", "class": "stream"}],
            "stations": stations,
            "turbidity_pairs": turbidity_pairs,
        }
    )


def write_recording(path: Path, days: int, pairs: int = PAIRS, seed: int = 7) -> int:
    """1-minute readings of every probe; each pair gets a few 1-2 h plumes. Returns the rows."""
    rng = random.Random(seed)
    minutes = days * 24 * 60
    t0 = to_ms(START)
    times = [iso(t0 + m * MS_PER_MIN) for m in range(minutes)]
    plumes = {
        p: [
            (rng.randrange(minutes), rng.randint(60, 120), rng.uniform(40.0, 300.0))
            for _ in range(max(1, days // 10))
        ]
        for p in range(pairs)
    }
    rows = 0
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(("time", "sensor", "value"))
        for m, stamp in enumerate(times):
            for p in range(pairs):
                bg = 6.0 + 2.0 * math.sin(m / 1440.0 * 2 * math.pi)
                up = bg + rng.gauss(0.0, 0.3)
                down = bg + 1.0 + rng.gauss(0.0, 0.4)
                for start, length, amplitude in plumes[p]:
                    if start <= m < start + length:
                        down += amplitude
                out.writerow((stamp, f"turb-up-{p:02d}", f"{up:.2f}"))
                out.writerow((stamp, f"turb-down-{p:02d}", f"{down:.2f}"))
                rows += 2
    return rows


def run_siltwatch(site: SiteConfig, path: Path) -> tuple[float, float, int, int]:
    """(parse s, engine s, readings, alerts)."""
    from ingest.recording import read_recording
    from ingest.replay import replay_site

    t = time.perf_counter()
    capture = read_recording(path, site.sensors())
    parsed = time.perf_counter() - t
    t = time.perf_counter()
    result = replay_site(site, capture.readings)
    engine = time.perf_counter() - t
    return parsed, engine, len(capture.readings), len(result.alerts)


def run_pandas(path: Path) -> tuple[float, int]:
    """(seconds, rolling medians computed): read, parse times, 15-min rolling median per sensor."""
    import pandas as pd

    t = time.perf_counter()
    frame = pd.read_csv(path)
    frame["time"] = pd.to_datetime(frame["time"], format="ISO8601", utc=True)
    frame = frame.sort_values(["sensor", "time"])
    medians = (
        frame.set_index("time")
        .groupby("sensor", sort=False)["value"]
        .rolling("15min")  # (t - 15 min, t], as the detector's window
        .median()
    )
    elapsed = time.perf_counter() - t
    return elapsed, int(medians.notna().sum())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args(argv)
    site = bench_site()
    with tempfile.TemporaryDirectory(prefix="siltwatch-bench-") as tmp:
        path = Path(tmp) / "recording.csv"
        t = time.perf_counter()
        rows = write_recording(path, args.days)
        made = time.perf_counter() - t
        size_mb = path.stat().st_size / 1e6
        print(
            f"recording: {PAIRS * 2} sensors x 1 min x {args.days} days = {rows:,} readings, "
            f"{size_mb:.0f} MB CSV (written in {made:.1f} s)"
        )
        parse_s, engine_s, readings, alerts = run_siltwatch(site, path)
        pandas_s, medians = run_pandas(path)
    total = parse_s + engine_s
    table = [
        ("siltwatch: parse CSV", parse_s, readings / parse_s),
        ("siltwatch: engine run", engine_s, readings / engine_s),
        ("siltwatch: parse + engine", total, readings / total),
        ("pandas: read + rolling medians", pandas_s, readings / pandas_s),
    ]
    print()
    print(f"| {'step':<32} | {'seconds':>8} | {'readings/s':>12} |")
    print(f"|{'-' * 34}|{'-' * 10}|{'-' * 14}|")
    for name, seconds, rate in table:
        print(f"| {name:<32} | {seconds:8.2f} | {rate:12,.0f} |")
    print()
    print(f"ratio siltwatch / pandas: {total / pandas_s:.1f}x the time")
    print(f"alerts: {alerts} episodes; pandas computed {medians:,} rolling medians")
    return 0


if __name__ == "__main__":
    sys.exit(main())
