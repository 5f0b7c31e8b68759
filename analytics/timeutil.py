"""Event time as integer milliseconds since the Unix epoch (UTC).

The analytics never read the wall clock: every time comes in with the data.
Integers keep the hot path cheap and make ordering and hashing exact.
"""

from __future__ import annotations

from datetime import UTC, datetime

from siltwatch.timefmt import utc_iso

MS_PER_S = 1000
MS_PER_MIN = 60_000
MS_PER_H = 3_600_000
MS_PER_DAY = 86_400_000


def to_ms(value: datetime) -> int:
    """An aware datetime as epoch milliseconds (naive times are refused, not guessed)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value!r}: event times must carry a zone")
    return round(value.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def iso(ms: int) -> str:
    """ISO 8601 UTC with ``Z`` and whole seconds unless milliseconds are present."""
    return utc_iso(ms)
