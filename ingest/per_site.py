"""Each served site's one running part (its InfluxDB mirror, its delivery), for a fleet's threads.

Why a class of its own: ``serve`` over a fleet keeps one mirror per site
(ingest/influx/fleet.py) and one delivery per site (app/fleet_notify.py), and a
SIGHUP adds and removes sites while ``/metrics``, ``/healthz`` and the mirrors'
flusher read them from other threads. Both need the same few moves under one
lock, and the same rule: a removed site's part is taken out under the lock (so
the readers stop seeing it at once) and ended (flushed, stopped) outside it, so a
slow flush or stop never holds up the readers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerSite(Generic[T]):
    """Site id -> that site's running part, safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: dict[str, T] = {}

    def get(self, site_id: str) -> T | None:
        with self._lock:
            return self._parts.get(site_id)

    def put(self, site_id: str, part: T) -> None:
        with self._lock:
            self._parts[site_id] = part

    def get_or_make(self, site_id: str, make: Callable[[], T]) -> tuple[T, bool]:
        """The site's part, made (under the lock, so once) if it has none; and whether it
        was made now."""
        with self._lock:
            part = self._parts.get(site_id)
            if part is not None:
                return part, False
            part = self._parts[site_id] = make()
            return part, True

    def take(self, site_id: str) -> T | None:
        """Out of the table (the caller ends it, outside the lock), or None."""
        with self._lock:
            return self._parts.pop(site_id, None)

    def take_all(self) -> dict[str, T]:
        """Every site's part, out of the table: at the stop."""
        with self._lock:
            parts, self._parts = self._parts, {}
            return parts

    def copy(self) -> dict[str, T]:
        """Each site's part now (a copy: a reload may add or remove some)."""
        with self._lock:
            return dict(self._parts)
