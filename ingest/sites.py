"""Many sites in one process: one engine per site behind one MQTT session and one store.

Why a router rather than one ``serve`` per site: a town watches tens of sites,
and a process per site means tens of broker connections, store writers and
rebuilds to supervise. :class:`SiteRouter` presents to ingest/mqtt/session.py
what one :class:`~ingest.service.IngestService` presents (``handle_batch``,
``tick``, ``close``, ``stats``, ``site_ids``) but holds one service per site and
routes each message by the site segment of its topic.

The rules that keep it honest:

* **Ack after commit, for every message.** A batch is split by site; each
  site's part is committed by its own service (one transaction each), and only
  when every part is committed is ``on_committed`` called (the PUBACKs). Then
  each engine judges its part.
* **One site's failure stops no other.** A part whose commit raises is retried
  message by message; a message that still raises gets a stored, counted
  rejection (``internal error``) and the rest flows on. A judge that raises
  leaves the site's engine suspect, so it is rebuilt from the store (the store
  is the truth). Only a store that cannot even take a rejection stops the batch
  unacknowledged (the broker delivers it again).
* **A message for a site this worker does not own** (an old subscription of a
  persistent session, a stray publish) gets a stored, counted rejection.
* **One lock.** All services share one :class:`~ingest.store.sqlite.SqliteStore` and
  its one connection, whose transaction is one at a time; they share the
  router's lock, so a tick of one site never writes inside another's commit.

Partitioning (``serve --partition k/N``) is :func:`partition_of`: the site's
stable hash modulo N.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from analytics.events import EngineEvent
from ingest.service import Committed, Incoming, IngestService, IngestStats, Rebuilt
from ingest.store.from_url import open_store_read_only
from ingest.store.queries import StoreUnreachable
from ingest.store.sqlite import SqliteStore
from siltwatch.config import SiteConfig
from siltwatch.schema import ResendRequest

log = logging.getLogger(__name__)

NOT_OWNED = "not a site of this worker"
INTERNAL = "internal error"


# --- partitions ------------------------------------------------------------------------


def site_hash(site_id: str) -> int:
    """The site's stable hash: the first 8 bytes of SHA-256 of its id (UTF-8), big-endian.

    Not Python's ``hash()``, which is salted per process: every worker, on every
    host and every release, must agree on who owns a site.
    """
    return int.from_bytes(hashlib.sha256(site_id.encode("utf-8")).digest()[:8], "big")


@dataclass(frozen=True)
class Partition:
    """Worker ``index`` of ``count`` (``--partition k/N``): it owns the sites whose
    :func:`site_hash` modulo ``count`` is ``index``."""

    index: int
    count: int

    def owns(self, site_id: str) -> bool:
        return partition_of(site_id, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def partition_of(site_id: str, count: int) -> int:
    """Which of ``count`` workers owns ``site_id``."""
    return site_hash(site_id) % count


_PARTITION = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_partition(text: str) -> Partition:
    """``k/N`` with 0 <= k < N; ValueError says what was expected."""
    m = _PARTITION.match(text)
    if m is None:
        raise ValueError(
            f"--partition {text!r}: expected k/N, this worker's number k and the number of "
            "workers N (e.g. 0/3)"
        )
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1:
        raise ValueError(f"--partition {text!r}: the number of workers N must be at least 1")
    if not 0 <= index < count:
        raise ValueError(
            f"--partition {text!r}: the worker number k must be 0 to {count - 1} for {count} "
            "workers (a StatefulSet's ordinal)"
        )
    return Partition(index, count)


# --- the router --------------------------------------------------------------------------

ServiceFactory = Callable[[SiteConfig, threading.RLock], IngestService]
"""Builds (and so rebuilds from the store) one site's service, sharing the router's lock."""


def site_of_topic(topic: str) -> str | None:
    """The site segment of ``siltwatch/v1/{site}/...``; None for another shape."""
    parts = topic.split("/")
    if len(parts) < 4 or parts[0] != "siltwatch" or parts[1] != "v1":
        return None
    return parts[2]


class SiteRouter:
    """One :class:`IngestService` per site, one store, one lock (see the module docstring)."""

    def __init__(self, store: SqliteStore, build: ServiceFactory) -> None:
        self.store = store
        self.lock = threading.RLock()
        self._build = build
        self._services: dict[str, IngestService] = {}
        self.own = IngestStats()  # what was refused before reaching a site: not ours, errors
        self.errors: list[str] = []
        self._retired = IngestStats()  # counters of removed or rebuilt services

    # --- the set of sites ------------------------------------------------------------

    @property
    def site_ids(self) -> list[str]:
        with self.lock:
            return sorted(self._services)

    def services(self) -> dict[str, IngestService]:
        """Each site's current service (a copy: a reload may replace them)."""
        with self.lock:
            return dict(self._services)

    def service_for(self, site_id: str) -> IngestService | None:
        with self.lock:
            return self._services.get(site_id)

    def add(self, site: SiteConfig) -> IngestService:
        """Start serving ``site`` (its engine restored or rebuilt from the store)."""
        with self.lock:
            service = self._build(site, self.lock)
            old = self._services.get(site.site.id)
            if old is not None:
                self._retired.add(old.stats)
            self._services[site.site.id] = service
            return service

    def replace(self, site: SiteConfig, now_ms: int) -> IngestService:
        """A site whose configuration changed: a new service for it over the store.

        The old one leaves a snapshot first (pending late data applied). When a rule
        changed, that snapshot's fingerprint (analytics/engine.py) no longer matches,
        so the new engine is rebuilt from the store and what the new rules no longer
        find is withdrawn; a contact's change restores the snapshot, which is quick.
        """
        with self.lock:
            old = self._services.get(site.site.id)
            if old is not None:
                _close_quietly(site.site.id, old, now_ms)
            return self.add(site)

    def remove(self, site_id: str, now_ms: int) -> None:
        """Stop serving ``site_id``: pending late data applied, a snapshot left."""
        with self.lock:
            service = self._services.pop(site_id, None)
            if service is None:
                return
            self._retired.add(service.stats)
            service.close(now_ms)

    # --- what MqttIngest calls ---------------------------------------------------------

    def handle_batch(
        self, messages: Sequence[Incoming], on_committed: Callable[[], None] | None = None
    ) -> list[EngineEvent]:
        """Commit every site's part (and refuse what is no site's), acknowledge, then judge."""
        with self.lock:
            parts: dict[str, list[Incoming]] = {}
            strays: list[Incoming] = []
            for msg in messages:
                sid = site_of_topic(msg.topic)
                if sid is not None and sid in self._services:
                    parts.setdefault(sid, []).append(msg)
                else:
                    strays.append(msg)
            committed = {sid: self._commit_part(sid, part) for sid, part in parts.items()}
            if strays:
                self._refuse_strays(strays)
            if on_committed is not None:
                on_committed()
            events: list[EngineEvent] = []
            for sid, fresh in committed.items():
                events += self._judge_part(sid, fresh)
            return events

    def _commit_part(self, site_id: str, part: list[Incoming]) -> Committed:
        service = self._services[site_id]
        try:
            return service.commit_batch(part)
        except StoreUnreachable:
            raise  # not this site's data: nothing can be stored, nothing is acknowledged
        except Exception as exc:  # a bug on this site's data: the others go on
            log.exception("site %s: a batch of %d messages failed; one by one", site_id, len(part))
            self.errors.append(f"{site_id}: {exc!r}")
        fresh: Committed = []
        for msg in part:
            try:
                fresh += service.commit_batch([msg])
            except StoreUnreachable:
                raise
            except Exception as exc:
                log.exception("site %s: message on %r failed", site_id, msg.topic[:200])
                self._reject(msg, f"{INTERNAL}: {exc!r}"[:500], site_id, service.stats)
        return fresh

    def _judge_part(self, site_id: str, fresh: Committed) -> list[EngineEvent]:
        service = self._services[site_id]
        try:
            return service.judge_committed(fresh)
        except StoreUnreachable:
            raise  # the engine is not suspect: the next start rebuilds it from the store
        except Exception as exc:  # stored and acknowledged; the engine is what is suspect
            log.exception("site %s: judging failed; rebuilding its engine from the store", site_id)
            self.errors.append(f"{site_id}: {exc!r}")
            try:
                self.add(service.site)
            except Exception:
                log.exception("site %s: the rebuild failed too; the old engine stays", site_id)
            return []

    def _refuse_strays(self, strays: list[Incoming]) -> None:
        with self.store.transaction():
            for msg in strays:
                sid = site_of_topic(msg.topic)
                what = f"site {sid!r}" if sid is not None else "no site in the topic"
                self._reject(msg, f"{NOT_OWNED}: {what}", sid, self.own)

    def _reject(self, msg: Incoming, reason: str, site_id: str | None, stats: IngestStats) -> None:
        """A stored, counted rejection (raises only when the store itself fails)."""
        stats.messages += 1
        stats.count_rejection(reason)
        log.warning("rejected message on %r: %s", msg.topic[:200], reason)
        with self.store.transaction():
            self.store.insert_rejection(msg.topic, reason, msg.payload, msg.received_at, site_id)

    def completeness_due(self, now_ms: int) -> list[ResendRequest]:
        """Every site's due resend requests (ingest/gaps.py)."""
        return [
            q
            for _sid, service in sorted(self.services().items())
            for q in service.completeness_due(now_ms)
        ]

    def tick(self, now_ms: int) -> list[EngineEvent]:
        """Every site's clock; one site's failure is logged and the others tick on."""
        events: list[EngineEvent] = []
        with self.lock:
            for sid, service in sorted(self._services.items()):
                try:
                    events += service.tick(now_ms)
                except StoreUnreachable:
                    raise
                except Exception as exc:
                    log.exception("site %s: tick failed", sid)
                    self.errors.append(f"{sid}: {exc!r}")
        return events

    def close(self, now_ms: int) -> None:
        """Every site: pending late data applied, a snapshot left (SIGTERM, Ctrl-C)."""
        with self.lock:
            for sid, service in sorted(self._services.items()):
                _close_quietly(sid, service, now_ms)

    @property
    def stats(self) -> IngestStats:
        """The sum over every site (and what was refused before reaching one)."""
        with self.lock:
            total = IngestStats()
            for stats in (self._retired, self.own, *(s.stats for s in self._services.values())):
                total.add(stats)
            return total


def _close_quietly(site_id: str, service: IngestService, now_ms: int) -> None:
    """Close a site's service, leaving a snapshot if the store takes one: a failure is
    logged (a snapshot is a cache; the next start rebuilds from the store)."""
    try:
        service.close(now_ms)
    except StoreUnreachable as exc:
        log.warning("site %s: no snapshot left: %s", site_id, exc)
    except Exception:
        log.exception("site %s: could not leave a snapshot", site_id)


# --- a fleet's restart: sites rebuilt in parallel ----------------------------------------

# A site with fewer stored readings is rebuilt by its own service (about a second's work).
PARALLEL_MIN_READINGS = 200_000


def rebuild_in_parallel(
    sites: Sequence[SiteConfig],
    db: str,
    *,
    now_ms: int,
    allowed_lateness_s: float,
    station_idle_s: float | None = None,
    processes: int | None = None,
    min_readings: int = PARALLEL_MIN_READINGS,
    say: Callable[[str], None] | None = None,
) -> dict[str, Rebuilt]:
    """Each site's engine rebuilt from the store ``db`` in a pool of worker processes.

    Why: a rebuild is CPU work in one interpreter (a year of a site is seconds), and
    a fleet restarting after a release or a rule change rebuilt its sites one after
    another on one core. The workers only read the store (the store is the truth,
    engine state a cache): each answers with its site's engine state and the events
    its history raised (:class:`~ingest.service.Rebuilt`), or nothing when a usable
    snapshot makes a rebuild needless; the services store and tell the events as a
    rebuild of their own would (``IngestService(rebuilt=...)``). At most
    ``processes`` (default: the cores) at a time; a site whose rebuild fails is
    named and rebuilt by its own service, and the others go on. Only sites of at
    least ``min_readings`` stored readings are sent (a smaller one rebuilds in less
    time than a worker takes to start), and only when there are two or more.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    tell = say or (lambda line: log.warning("%s", line))
    store = open_store_read_only(db)
    try:
        sites = [s for s in sites if store.reading_count(s.site.id) >= min_readings]
    finally:
        store.close()
    if len(sites) < 2:
        return {}
    count = max(1, min(processes or os.cpu_count() or 1, len(sites)))
    out: dict[str, Rebuilt] = {}
    # spawn, not fork: the serving process has threads (the console, the mirrors).
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=count, mp_context=context) as pool:
        futures = {
            pool.submit(
                rebuild_site, site, db, now_ms, allowed_lateness_s, station_idle_s
            ): site.site.id
            for site in sites
        }
        for future in as_completed(futures):
            sid = futures[future]
            try:
                rebuilt = future.result()
            except Exception as exc:
                tell(
                    f"site {sid}: its rebuild in a worker process failed ({exc!r}); it is rebuilt by its service"
                )
                continue
            if rebuilt is not None:
                out[sid] = rebuilt
    return out


def rebuild_site(
    site: SiteConfig,
    db: str,
    now_ms: int | None,
    allowed_lateness_s: float,
    station_idle_s: float | None,
) -> Rebuilt | None:
    """A worker process's part of :func:`rebuild_in_parallel`: one site, the store only read."""
    store = open_store_read_only(db)
    try:
        marks = store.marks()  # before reading: what is stored later is caught up by the service
        service = IngestService(
            site,
            store,
            allowed_lateness_s=allowed_lateness_s,
            station_idle_s=station_idle_s,
            now_ms=now_ms,
            history_only=True,
        )
        return service.rebuilt(marks)
    finally:
        store.close()


def changed_sites(
    old: Mapping[str, SiteConfig], new: Mapping[str, SiteConfig]
) -> tuple[list[str], list[str], list[str]]:
    """(added, removed, changed) site ids between two configurations, each sorted.

    "Changed" compares the whole configuration: a rule change rebuilds the engine
    from the store (the snapshot's fingerprint no longer matches); a contact change
    only rebuilds the service around the restored snapshot, which is quick.
    """
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed = sorted(sid for sid in set(old) & set(new) if old[sid] != new[sid])
    return added, removed, changed


def owned(sites: Iterable[SiteConfig], partition: Partition | None) -> list[SiteConfig]:
    """The sites this worker owns, in id order."""
    return sorted(
        (s for s in sites if partition is None or partition.owns(s.site.id)),
        key=lambda s: s.site.id,
    )
