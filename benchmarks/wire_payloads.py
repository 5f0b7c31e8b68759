"""Wire-payload generators benchmark: how fast the test generators make messages.

Run: ``.venv/bin/python -m benchmarks.wire_payloads`` (``--count 100000``, ``--repeat 3``).

tests/ingest/hostile.py makes the messages the decode and fuzz tests throw at
ingest: ``hostile_payloads`` (one of each hostile class first, then drawn with
weights that keep the multi-megabyte ones rare) and ``valid_payloads`` (single
readings and batches of the example site). The fuzz tests draw tens of thousands
of them per run, so a generator that slows down slows the whole suite. This was
a timed assertion in tests/ingest/test_decode.py (under 5 s for 100,000 each),
which failed on a loaded machine; the test keeps the determinism check, and the
timing is measured here, as the median of ``--repeat`` runs, with the rate.

Benchmarks may read the clock (``time.perf_counter``); the analytics never do.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from siltwatch.config import SiteConfig, load_site
from tests.ingest.hostile import hostile_payloads, valid_payloads

SITE_FILE = Path(__file__).resolve().parent.parent / "examples" / "lake-george-site.toml"
BUDGET_S = 5.0  # the old test's bound for 100,000 of each, kept as the table's reference


def drain_seconds(generate: Callable[[], Iterator[object]]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) to draw every message of one run: on a
    shared machine the wall time includes waiting for a core, the CPU time does not."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in generate():
        pass
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="messages per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per generator")
    args = parser.parse_args(argv)
    site: SiteConfig = load_site(SITE_FILE)
    generators: dict[str, Callable[[], Iterator[object]]] = {
        "hostile_payloads": lambda: hostile_payloads(site, args.count, seed=1),
        "valid_payloads": lambda: valid_payloads(site, args.count, seed=1),
    }
    budget = BUDGET_S * args.count / 100_000
    print(f"\n{args.count:,} messages per run, median of {args.repeat} runs; "
          f"reference: {budget:.1f} s (the old test's 5 s per 100,000)\n")  # fmt: skip
    print(f"| {'generator':<16} | {'wall s':>7} | {'CPU s':>7} | {'messages/CPU s':>14} | "
          f"{'CPU of reference':>16} |")  # fmt: skip
    print(f"|{'-' * 18}|{'-' * 9}|{'-' * 9}|{'-' * 16}|{'-' * 18}|")
    for name, generate in generators.items():
        runs = [drain_seconds(generate) for _ in range(args.repeat)]
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"| {name:<16} | {wall:>7.2f} | {cpu:>7.2f} | {args.count / cpu:>14,.0f} | "
              f"{cpu / budget:>16.0%} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
