"""Replay benchmark: a month of a 40-sensor site through siltwatch, against pandas alone.

Run: ``.venv/bin/python -m benchmarks.replay`` (``--days 5`` for a quick look).

Builds, in a temporary directory, a site with 20 turbidity pairs (40 probes,
1-minute readings) and 30 days of readings with a few plumes per pair: 1.73 M
rows of ``time,sensor,value`` CSV (the replay contract's recording format).
Then runs, each in a fresh Python process of its own (so that each side's peak
resident memory is its own: ``ru_maxrss`` of that process),

(a) siltwatch: parsing the CSV into readings (``ingest.recordings.formats.read_recording``:
    column-wise with pandas' C parser) and the engine run
    (``ingest.recordings.replay.replay_site``: ordering, the health screen, 20
    turbidity-contrast detectors with 15-minute rolling medians on both probes,
    alert episodes — the batch path of analytics/batch.py);
(b) pandas alone: ``read_csv`` of the same file, time parsing, and the same
    rolling medians (group by sensor, 15-minute time-based rolling median) —
    the floor a vectorised batch job would set, with no detection at all.

Each side imports its modules before its clock starts (pandas included: the
siltwatch side uses it too), so the times are of the work, not of imports.
``--row-wise`` times siltwatch's per-reading path instead (the csv module, and
the engine without its batch path), the reference the batch path must equal.

Benchmarks may read the clock (``time.perf_counter``); the analytics never do.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analytics.timeutil import MS_PER_MIN, iso, to_ms
from benchmarks.sides import peak_rss_mb, side_in_subprocess
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


def run_siltwatch(
    site: SiteConfig, path: Path, *, row_wise: bool = False
) -> tuple[float, float, int, int]:
    """(parse s, engine s, readings, alerts)."""
    import pyarrow.csv  # noqa: F401 - the column reader's, as pandas is the baseline's

    from ingest.recordings import columns  # noqa: F401 - imported before the clock starts
    from ingest.recordings.csv_rows import read_csv_rows
    from ingest.recordings.formats import read_recording
    from ingest.recordings.replay import replay_site

    t = time.perf_counter()
    readings = (
        read_csv_rows(path, site.sensors())
        if row_wise
        else read_recording(path, site.sensors()).readings
    )
    parsed = time.perf_counter() - t
    t = time.perf_counter()
    result = replay_site(site, readings, batch=not row_wise)
    engine = time.perf_counter() - t
    return parsed, engine, len(readings), len(result.alerts)


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


def side(argv: list[str]) -> int:
    """One side of the benchmark, in this process: prints its result as one JSON line."""
    which, path = argv[0], Path(argv[1])
    if which == "pandas":
        import pandas  # noqa: F401 - before the clock starts

        seconds, medians = run_pandas(path)
        out: dict[str, Any] = {"seconds": seconds, "medians": medians}
    else:
        parse_s, engine_s, readings, alerts = run_siltwatch(
            bench_site(), path, row_wise=which == "row-wise"
        )
        out = {"parse": parse_s, "engine": engine_s, "readings": readings, "alerts": alerts}
    out["rss_mb"] = peak_rss_mb()
    print(json.dumps(out))
    return 0


def _in_subprocess(which: str, path: Path) -> dict[str, Any]:
    return side_in_subprocess("benchmarks.replay", which, str(path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument(
        "--row-wise",
        action="store_true",
        help="time siltwatch's per-reading path (csv module, no batch path) instead",
    )
    parser.add_argument("--side", nargs=2, metavar=("SIDE", "CSV"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        return side(args.side)
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
        silt = _in_subprocess("row-wise" if args.row_wise else "siltwatch", path)
        pand = _in_subprocess("pandas", path)
    readings = silt["readings"]
    parse_s, engine_s, pandas_s = silt["parse"], silt["engine"], pand["seconds"]
    total = parse_s + engine_s
    label = "siltwatch (row-wise)" if args.row_wise else "siltwatch"
    table = [
        (f"{label}: parse CSV", parse_s, readings / parse_s, ""),
        (f"{label}: engine run", engine_s, readings / engine_s, ""),
        (f"{label}: parse + engine", total, readings / total, f"{silt['rss_mb']:,.0f}"),
        ("pandas: read + rolling medians", pandas_s, readings / pandas_s, f"{pand['rss_mb']:,.0f}"),
    ]
    print()
    print(f"| {'step':<36} | {'seconds':>8} | {'readings/s':>12} | {'peak RSS MB':>11} |")
    print(f"|{'-' * 38}|{'-' * 10}|{'-' * 14}|{'-' * 13}|")
    for name, seconds, rate, rss in table:
        print(f"| {name:<36} | {seconds:8.2f} | {rate:12,.0f} | {rss:>11} |")
    print()
    print(f"ratio siltwatch / pandas: {total / pandas_s:.1f}x the time")
    print(f"peak RSS siltwatch / pandas: {silt['rss_mb'] / pand['rss_mb']:.1f}x")
    print(f"alerts: {silt['alerts']} episodes; pandas computed {pand['medians']:,} rolling medians")
    return 0


if __name__ == "__main__":
    sys.exit(main())
