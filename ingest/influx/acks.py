"""Acknowledgements into the InfluxDB mirror, so Grafana's alert table says who acknowledged.

People acknowledge in the console, by an SMS reply or by a link; each lands in
the console's book (console/book.py), not among the engine's events the mirror
hears (ingest/influx/mirror.py), so without this Grafana's "Open alerts" table
could not tell an alert someone is handling from one nobody has seen (issue
25). :class:`AckMirror` sits between the mirror and its flusher thread: before
each flush it reads the site's acknowledgements from the book in one query and
queues, once each, the ones not yet copied, onto the episode's own point
(:func:`ingest.influx.line_protocol.ack_line`). A restart copies them all once more;
the writes are idempotent.

The book and the store come in as protocols: ingest does not import the console.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ingest.influx.mirror import InfluxMirror
from ingest.store.queries import StoredAlert


class Acked(Protocol):
    @property
    def by(self) -> str: ...

    @property
    def at_ms(self) -> int: ...


class AckBook(Protocol):
    def acknowledgements(self, sites: Sequence[str]) -> Mapping[tuple[str, str], Acked]: ...


class AlertStore(Protocol):
    def stored_alert(self, site: str, alert_id: str) -> StoredAlert | None: ...

    def close(self) -> None: ...


class AckMirror:
    """The mirror's flush, with the book's new acknowledgements queued first."""

    def __init__(self, mirror: InfluxMirror, book: AckBook, store: AlertStore) -> None:
        self.mirror, self.book, self.store = mirror, book, store
        self.copied: set[str] = set()

    def copy_new(self) -> int:
        """Queue the acknowledgements not yet copied; how many."""
        site = self.mirror.site_id
        count = 0
        for (_, alert_id), ack in self.book.acknowledgements([site]).items():
            if alert_id in self.copied:
                continue
            stored = self.store.stored_alert(site, alert_id)
            if stored is None:
                continue  # an episode this store does not hold (another site's worker)
            self.mirror.acknowledged(stored.alert, ack.by, ack.at_ms)
            self.copied.add(alert_id)
            count += 1
        return count

    def flush(self) -> bool:
        self.copy_new()
        return self.mirror.flush()

    def close(self) -> None:
        """The alerts' read connection, then the mirror (its last writes)."""
        self.store.close()
        self.mirror.close()
