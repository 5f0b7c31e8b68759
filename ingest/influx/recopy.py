"""What the InfluxDB mirror had to drop, copied again from the store once InfluxDB is back.

The mirror's queue is bounded (``max_pending``): in a long InfluxDB outage the
oldest points are dropped so that the service's memory stays flat. The store
(SQLite, the record) still holds every one of them, so nothing is lost — but the
dashboards would show a hole. The mirror therefore remembers *what* it dropped
(the event-time span of the readings, and whether any alert or duty point was
among them) and, once a write has emptied its queue again, copies that span back
from the store, one chunk per flush, so a recovering InfluxDB is never flooded
and ingest never waits.

Writing a point again is harmless: InfluxDB identifies a point by measurement,
tags and time, so a re-copied reading that did reach InfluxDB replaces itself,
and an alert or duty point (one per episode or duty, at its opening or creation
time) is rewritten in its latest state.

The span is kept in memory: a restart of ``serve`` during the outage forgets it
(the points stay in the store; ``siltwatch replay --influx…`` or a new copy
fills the dashboard again).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from analytics.events import SensorReading
from ingest.influx.line_protocol import alert_line, duty_line, reading_lines
from ingest.store.from_url import open_store_read_only
from ingest.store.queries import SqlStore
from siltwatch import measurements as m

CHUNK = 20_000  # readings copied again per flush


@dataclass
class DroppedSpan:
    """The event-time span of dropped reading points, and whether episodes were dropped."""

    first_ms: int | None = None
    last_ms: int | None = None
    episodes: bool = False

    def add(self, lines: Iterable[str]) -> None:
        """Note dropped line-protocol lines (``measurement,tags fields time``)."""
        for text in lines:
            measurement = text.split(",", 1)[0]
            if measurement != m.READING:
                self.episodes = True
                continue
            t = int(text.rsplit(" ", 1)[1])
            self.first_ms = t if self.first_ms is None else min(self.first_ms, t)
            self.last_ms = t if self.last_ms is None else max(self.last_ms, t)

    def merge(self, other: DroppedSpan) -> None:
        for t in (other.first_ms, other.last_ms):
            if t is not None:
                self.first_ms = t if self.first_ms is None else min(self.first_ms, t)
                self.last_ms = t if self.last_ms is None else max(self.last_ms, t)
        self.episodes = self.episodes or other.episodes

    def __bool__(self) -> bool:
        return self.first_ms is not None or self.episodes


class StoreRecopy:
    """Reads a dropped span back from the store, chunk by chunk, as line protocol.

    It opens the store read-only for each span (never creates or migrates it) and
    closes it when the span is done, so it holds nothing open in normal times.
    """

    def __init__(self, db: Path | str, site: str, *, chunk: int = CHUNK) -> None:
        self.db = db  # a SQLite path or a postgresql:// URL (ingest/store/from_url.py)
        self.site = site
        self.chunk = chunk
        self.todo = DroppedSpan()
        self._current = DroppedSpan()  # the span being copied
        self._rows: Iterator[list[tuple[str, SensorReading]]] | None = None
        self._store: SqlStore | None = None

    @property
    def busy(self) -> bool:
        return bool(self.todo) or self._rows is not None

    def add(self, span: DroppedSpan) -> None:
        """More was dropped: widen what is to be copied (a copy under way starts again
        over the whole, merged span: nothing of it is skipped)."""
        self.todo.merge(span)
        if self._rows is not None and self.todo.first_ms is not None:
            self.todo.merge(self._current)
            self._close()

    def next_lines(self, kinds: Mapping[str, tuple[str, str]]) -> list[str]:
        """The next chunk to queue; [] once the span is copied."""
        if self._rows is None:
            if not self.todo:
                return []
            store = open_store_read_only(self.db)  # may raise: the span stays to do
            span, self.todo = self.todo, DroppedSpan()
            self._current = DroppedSpan(span.first_ms, span.last_ms)
            self._store = store
            lines = self._episodes(store) if span.episodes else []
            if span.first_ms is not None and span.last_ms is not None:
                self._rows = store.readings_between(
                    self.site, span.first_ms, span.last_ms + 1, chunk=self.chunk
                )
            else:
                self._close()
            if lines:
                return lines
        if self._rows is None:
            return []
        rows = next(self._rows, None)
        if rows is None:
            self._close()
            return self.next_lines(kinds)
        return reading_lines(self.site, rows, kinds)

    def _episodes(self, store: SqlStore) -> list[str]:
        """Every alert and duty point of the site, in its stored (latest) state.

        A duty past due and not completed is written ``overdue`` when the store's
        newest reading is past its deadline: the engine's clock is event time, and
        the newest stored reading is where it stood.
        """
        newest = store.newest_reading_t(self.site)
        now = None if newest is None else datetime.fromtimestamp(newest / 1000, tz=UTC)
        lines = [alert_line(self.site, a) for a in store.alerts(self.site)]
        for duty in store.duties(self.site):
            overdue = duty.completed_at is None and now is not None and duty.due_at < now
            lines.append(duty_line(self.site, duty, overdue=overdue))
        return lines

    def _close(self) -> None:
        self._rows = None
        store, self._store = self._store, None
        if store is not None:
            store.close()
