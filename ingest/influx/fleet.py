"""The InfluxDB mirror of a fleet: one mirror per site, one writer and one flusher for all.

Why per site: a site's mirror carries that site's sensor kinds (the tags Grafana's
site dashboard filters on), its own queue, backoff and ``max_pending`` drops, and
its own :class:`~ingest.influx.recopy.StoreRecopy` over that site's rows, so one
site's burst or drop never makes another site's points wait or be copied again.
Why one writer and one flusher thread: a fleet of tens of sites would otherwise
open tens of threads and clients to the same InfluxDB; the shared writer still
makes one HTTP request per batch, as the one-site mirror does.

The mirrors follow the sites: :meth:`FleetMirrors.for_site` is called when a
site's service is built (at the start, on a SIGHUP add or change, and on a
rebuild after a failed judge, which keeps the site's queue), and
:meth:`FleetMirrors.remove` when a site is removed (its queue flushed, then
closed). ``siltwatch serve`` reads each site's counters through
:meth:`FleetMirrors.mirrors` for /metrics (ingest/ops/health.py ``per_site``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from ingest.influx.mirror import InfluxMirror, LineWriter, MirrorFlusher
from ingest.influx.recopy import StoreRecopy
from ingest.per_site import PerSite
from siltwatch.config import SiteConfig

log = logging.getLogger(__name__)


class SharedWriter:
    """One writer for every site's mirror: writes one at a time, closed once, by the fleet.

    A site's mirror closes its writer when the site is removed; that must not end
    the other sites' writes, so :meth:`close` here does nothing and
    :meth:`FleetMirrors.close` closes the real writer at the end.
    """

    def __init__(self, writer: LineWriter) -> None:
        self.writer = writer
        self.what: str = getattr(writer, "what", "InfluxDB")
        self._lock = threading.Lock()  # a removed site's last flush meets the flusher's

    def write_lines(self, lines: Sequence[str]) -> None:
        with self._lock:
            self.writer.write_lines(lines)

    def close(self) -> None:
        """A site's mirror is done; the writer goes on for the others."""


class FleetMirrors:
    """Every served site's :class:`InfluxMirror` (see the module docstring)."""

    def __init__(self, writer: LineWriter, db: Path | str, *, interval_s: float = 1.0) -> None:
        self.writer = SharedWriter(writer)
        self._real = writer
        self.db = db  # each site's StoreRecopy reads its dropped spans back from here
        self._mirrors: PerSite[InfluxMirror] = PerSite()
        self.flusher = MirrorFlusher(self, interval_s)
        self._started = False

    @property
    def what(self) -> str:
        return self.writer.what

    def start(self) -> None:
        self.flusher.start()
        self._started = True

    def for_site(self, site: SiteConfig) -> InfluxMirror:
        """The site's mirror, made on its first start; a changed site keeps its queue and
        takes the new configuration's sensor kinds."""
        sid = site.site.id
        mirror, made = self._mirrors.get_or_make(
            sid,
            lambda: InfluxMirror(
                site, self.writer, auto_flush=False, recopy=StoreRecopy(self.db, sid)
            ),
        )
        if not made:
            mirror.kinds = {s.id: (s.kind, s.unit) for s in site.sensors().values()}
        return mirror

    def remove(self, site_id: str) -> None:
        """The site is no longer served: write what it queued (a few tries), then drop it."""
        mirror = self._mirrors.take(site_id)
        if mirror is not None:
            mirror.close()

    def mirrors(self) -> dict[str, InfluxMirror]:
        """Each served site's mirror (a copy: a reload may add or remove some)."""
        return self._mirrors.copy()

    def flush(self) -> bool:
        """The flusher's call: every site's queue, one after the other; True when all empty.

        One site's failure is logged and the others are still flushed.
        """
        done = True
        for sid, mirror in sorted(self.mirrors().items()):
            try:
                done = mirror.flush() and done
            except Exception:
                log.exception("InfluxDB mirror of site %s: flush failed", sid)
                done = False
        return done

    @property
    def alive(self) -> bool:
        return self.flusher.alive

    def close(self) -> None:
        """At the stop: the flusher ends, every site's queue is written, the writer closed."""
        if self._started:
            self.flusher.stop()
        for _sid, mirror in sorted(self._mirrors.take_all().items()):
            mirror.close()
        self._real.close()
