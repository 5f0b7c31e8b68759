"""The shared formatters (siltwatch/timefmt.py) and backoff (siltwatch/backoff.py)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from siltwatch import backoff
from siltwatch.timefmt import duration, local_time, utc_iso

NY = ZoneInfo("America/New_York")
MS = 1_778_001_960_000  # 2026-05-05T17:26:00Z


def test_local_time_reads_the_site_clock() -> None:
    assert local_time(MS, NY) == "2026-05-05 13:26 EDT"
    assert local_time(MS, NY, weekday=True) == "Tue 2026-05-05 13:26 EDT"
    assert local_time("2026-05-05T17:26:00Z", NY, short=True) == "05-05 13:26 EDT"
    assert local_time(datetime(2026, 5, 5, 17, 26), NY) == "2026-05-05 13:26 EDT"  # naive = UTC
    assert local_time(None, NY) == "—"
    assert local_time("soon", NY) == "soon"


def test_utc_iso() -> None:
    assert utc_iso(MS) == "2026-05-05T17:26:00Z"
    assert utc_iso(MS + 5) == "2026-05-05T17:26:00.005Z"
    assert utc_iso(datetime(2026, 5, 5, 17, 26, tzinfo=UTC), timespec="milliseconds") == (
        "2026-05-05T17:26:00.000Z"
    )


def test_duration() -> None:
    assert duration(45 * 60) == "45 min"
    assert duration(8 * 3600 + 32 * 60) == "8 h 32 min"
    assert duration(84 * 3600) == "3.5 days"


def test_backoff_delay() -> None:
    assert [backoff.delay(n, 0.5, 30.0) for n in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert backoff.delay(5000, 1.0, 60.0) == 60.0  # no overflow
    assert [backoff.delay(k, 60.0, factor=3) for k in range(3)] == [60.0, 180.0, 540.0]
    rng = random.Random(3)
    for n in range(12):
        wait = min(60.0, 2.0**n)
        assert wait / 2 <= backoff.delay(n, 1.0, 60.0, jitter_fraction=0.5, rng=rng) <= wait
