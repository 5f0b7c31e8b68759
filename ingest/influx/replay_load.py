"""A replay loaded into InfluxDB, so the Grafana dashboards can be tried on recorded data.

The points are the ones the live mirror writes (ingest/influx/line_protocol.py through
:class:`~ingest.influx.mirror.InfluxMirror`): every reading of the recording, and every
change of an alert or a duty as the engine reported it. A dashboard therefore
shows a replayed storm exactly as it would have shown it live.

Unlike the live mirror, which must never hold up ingest and so keeps what it
cannot write for later, a replay is a batch job a person is watching: it writes
chunk by chunk, tries a failed chunk a few times with backoff, and then stops
and says how much was written — a half-loaded database is named, not hidden.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

from analytics.events import EngineEvent, SensorReading
from ingest.influx.mirror import InfluxMirror
from siltwatch import backoff
from siltwatch.config import SiteConfig

CHUNK = 5_000  # points per write: InfluxDB's own advice is batches of 5,000 lines
ATTEMPTS = 4


class ReplayLoadError(Exception):
    """InfluxDB kept refusing or failing; the message says how far the load got."""


@dataclass(frozen=True)
class Loaded:
    """What went into InfluxDB."""

    readings: int
    events: int  # alert and duty points (one per change the engine reported)
    refused: int  # lines InfluxDB refused as bad data (logged by the mirror)


def _chunks(items: Iterable[SensorReading], size: int) -> Iterator[list[SensorReading]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


class _Loader:
    """Writes through the mirror and insists a little, as a batch job may."""

    def __init__(self, mirror: InfluxMirror, sleep: Callable[[float], None]) -> None:
        self.mirror = mirror
        self.sleep = sleep

    def write(self, done: int, total_hint: str) -> None:
        for attempt in range(ATTEMPTS):
            if self.mirror.flush(force=True):
                return
            if attempt + 1 < ATTEMPTS:
                self.sleep(backoff.delay(attempt, 1.0, 8.0))
        raise ReplayLoadError(
            f"InfluxDB did not take the replay after {ATTEMPTS} attempts "
            f"({done:,} {total_hint} written before): {self.mirror.stats.last_error}"
        )


def load_replay(
    mirror: InfluxMirror,
    site: SiteConfig,
    readings: Iterable[SensorReading],
    events: Sequence[EngineEvent],
    *,
    chunk: int = CHUNK,
    sleep: Callable[[float], None] = time.sleep,
) -> Loaded:
    """Write a replay's readings, then its alert and duty changes, through ``mirror``.

    ``mirror`` must not flush by itself (``auto_flush=False``): this function
    decides when a chunk is written and whether a failure ends the load.
    """
    station_of = site.station_of()
    loader = _Loader(mirror, sleep)
    refused_before = mirror.stats.refused
    n = 0
    for part in _chunks(readings, chunk):
        mirror(site.site.id, [(station_of.get(r.sensor, ""), r) for r in part])
        loader.write(n, "readings")
        n += len(part)
    written_before = mirror.stats.written
    mirror.handle(events)
    loader.write(n, "readings")
    return Loaded(
        readings=n,
        events=mirror.stats.written - written_before,
        refused=mirror.stats.refused - refused_before,
    )
