"""The durable outbox: every reading is on the SD card before anyone tries to send it.

Why SQLite (WAL, ``synchronous=FULL``): a reading is committed before
``append`` returns, survives a power cut or SIGKILL, and the sampler threads
and the publisher can share the file. The per-sensor sequence number is
allocated *in the same transaction* that inserts the reading, so a crash can
never leave a gap or reuse a number: ingest dedupes on (site, sensor, seq).

A reading stops being *pending* only when the broker acknowledged it (PUBACK
with a success reason code) — :meth:`ack` — or when the broker refused it for
good (e.g. 135 Not authorized) — :meth:`quarantine`, which keeps it in a side
table and counts it. The outbox is bounded: at ``max_readings`` the oldest
pending readings are evicted and counted in ``dropped`` (reported in station
health), so a week-long outage cannot fill the SD card.

**A PUBACK is not the end** (design.md, "Wire format"): a broker may lose what it
acknowledged (Mosquitto 2.0.11 keeps nothing for a session that was connected
when it stopped). So an acknowledged reading is *retained* (``acked = 1``) for
``retain_s`` seconds and at most ``retain_max`` readings, oldest evicted first
(counted in ``expired``); the ingest service, which sees the hole in a sensor's
sequence numbers, asks for it again and :meth:`resend` makes it pending once
more. :meth:`held` says what is still there (the station's status reports it),
so the service knows what can no longer be fetched back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from hardware.base import Sample
from hardware.sqlite_state import open_state_db
from siltwatch.schema import QualityFlag, iso_utc

log = logging.getLogger(__name__)

# A reading's columns: the same in the outbox and in quarantine (where a reading the
# broker refused for good is moved, with the topic and the reason).
_READING_COLUMNS = """\
    sensor TEXT NOT NULL,
    seq INTEGER NOT NULL,
    time TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    raw REAL,
    quality TEXT NOT NULL,"""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
{_READING_COLUMNS}
    UNIQUE (sensor, seq)
);
CREATE TABLE IF NOT EXISTS sequences (sensor TEXT PRIMARY KEY, next_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS quarantine (
    id INTEGER PRIMARY KEY,
{_READING_COLUMNS}
    topic TEXT NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL
);
INSERT OR IGNORE INTO counters(name, value) VALUES ('backlog', 0), ('dropped', 0),
    ('quarantined', 0), ('retained', 0), ('expired', 0);
"""

_COLUMNS = "id, sensor, seq, time, value, unit, raw, quality"


@dataclass(frozen=True)
class Row:
    """One stored reading, as the publisher sends it."""

    id: int
    sensor: str
    seq: int
    time: str  # ISO 8601 UTC with Z, exactly as stored
    value: float
    unit: str
    raw: float | None
    quality: list[str]


@dataclass(frozen=True)
class Held:
    """What the outbox still holds of one sensor (sent or not)."""

    sensor: str
    oldest_seq: int  # == next_seq when nothing is held
    oldest_time: str | None
    next_seq: int


class Outbox:
    """One connection to the outbox file. Use one instance per thread.

    ``retain_s`` and ``retain_max``: how long and how many acknowledged readings are
    kept for a resend request (0 for either: deleted at the PUBACK, as before).
    """

    def __init__(
        self,
        path: Path | str,
        max_readings: int = 2_000_000,
        *,
        check_same_thread: bool = True,
        retain_s: float = 0.0,
        retain_max: int = 0,
    ) -> None:
        self.path = Path(path)
        self.max_readings = max_readings
        self.retain_s = retain_s
        self.retain_max = retain_max
        self.conn = open_state_db(path, check_same_thread=check_same_thread)
        self.conn.executescript(_SCHEMA)
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(outbox)")}
        if "acked" not in columns:  # an outbox written before retention: add it in place
            self.conn.execute("ALTER TABLE outbox ADD COLUMN acked INTEGER NOT NULL DEFAULT 0")
        self.conn.execute("CREATE INDEX IF NOT EXISTS outbox_pending ON outbox(acked, id)")
        # expiry by age reads only the expired rows, not the whole retained table
        self.conn.execute("CREATE INDEX IF NOT EXISTS outbox_retained ON outbox(acked, time)")

    @property
    def retaining(self) -> bool:
        return self.retain_s > 0 and self.retain_max > 0

    # -- writing (sampler threads) ---------------------------------------------------

    def append(
        self, sensor: str, time: datetime, sample: Sample, extra_quality: Sequence[QualityFlag] = ()
    ) -> int:
        """Store one reading; return its sequence number. One transaction, all or nothing."""
        quality = sorted({*sample.quality, *extra_quality})
        conn = self.conn
        with self._transaction():
            row = conn.execute(
                "SELECT next_seq FROM sequences WHERE sensor = ?", (sensor,)
            ).fetchone()
            seq = int(row[0]) if row else 0
            conn.execute(
                "INSERT INTO outbox(sensor, seq, time, value, unit, raw, quality) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    sensor,
                    seq,
                    iso_utc(time),
                    sample.value,
                    sample.unit,
                    sample.raw,
                    json.dumps([str(q) for q in quality]),
                ),
            )
            conn.execute(
                "INSERT INTO sequences(sensor, next_seq) VALUES (?, ?) "
                "ON CONFLICT(sensor) DO UPDATE SET next_seq = excluded.next_seq",
                (sensor, seq + 1),
            )
            self._move(1, into="backlog")
            if sample.commit is not None:
                sample.commit(conn)
            self._evict_over_cap()
        return seq

    def _evict_over_cap(self) -> None:
        backlog = self._counter("backlog")
        excess = backlog - self.max_readings
        if excess <= 0:
            return
        cur = self.conn.execute(
            "DELETE FROM outbox WHERE id IN "
            "(SELECT id FROM outbox WHERE acked = 0 ORDER BY id LIMIT ?)",
            (excess,),
        )
        evicted = cur.rowcount
        self._move(evicted, out_of="backlog", into="dropped")
        dropped = self._counter("dropped")
        if dropped == evicted or dropped % 1000 < evicted:
            log.warning(
                "outbox full (%d readings): evicted the oldest; %d readings lost so far",
                self.max_readings,
                dropped,
            )

    # -- reading and settling (publisher thread) -------------------------------------

    def pending(self, after_id: int = 0, limit: int = 500) -> list[Row]:
        """The oldest stored readings with ``id > after_id``, oldest first."""
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM outbox WHERE acked = 0 AND id > ? ORDER BY id LIMIT ?",
            (after_id, limit),
        ).fetchall()
        return [Row(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7])) for r in rows]

    def ack(self, ids: Sequence[int]) -> int:
        """The broker has them: no longer pending (kept for a resend when retaining, else
        deleted). Returns how many were still pending."""
        if not ids:
            return 0
        with self._transaction():
            if self.retaining:
                removed = self._by_ids("UPDATE outbox SET acked = 1 WHERE acked = 0 AND id IN", ids)
                self._move(removed, out_of="backlog", into="retained")
                self._evict_retained_over_cap()
            else:
                removed = self._delete(ids)
                self._move(removed, out_of="backlog")
        return removed

    def _evict_retained_over_cap(self) -> None:
        excess = self._counter("retained") - self.retain_max
        if excess > 0:
            self._expire(
                "DELETE FROM outbox WHERE id IN "
                "(SELECT id FROM outbox WHERE acked = 1 ORDER BY id LIMIT ?)",
                (excess,),
            )

    def _expire(self, sql: str, args: tuple[object, ...]) -> int:
        gone = self.conn.execute(sql, args).rowcount
        self._move(gone, out_of="retained", into="expired")
        return gone

    def expire_retained(self, now: datetime) -> int:
        """Delete acknowledged readings older than the retention window; how many."""
        if not self.retaining:
            return 0
        cutoff = iso_utc(now - timedelta(seconds=self.retain_s))
        with self._transaction():
            return self._expire("DELETE FROM outbox WHERE acked = 1 AND time < ?", (cutoff,))

    def resend(self, sensor: str, seq_from: int, seq_to: int) -> int:
        """Make the retained readings of ``sensor`` with ``seq_from <= seq <= seq_to``
        pending again (a resend request); how many. They get new ids, so the publisher
        takes them after what it is sending now, and the backlog counts them again."""
        conn = self.conn
        with self._transaction():
            where = "FROM outbox WHERE sensor = ? AND seq BETWEEN ? AND ? AND acked = 1"
            args = (sensor, seq_from, seq_to)
            conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS resend_rows AS SELECT * FROM outbox WHERE 0"
            )
            conn.execute("DELETE FROM resend_rows")
            conn.execute(f"INSERT INTO resend_rows SELECT * {where} ORDER BY seq", args)
            moved = conn.execute(f"DELETE {where}", args).rowcount
            cols = "sensor, seq, time, value, unit, raw, quality"
            conn.execute(
                f"INSERT INTO outbox({cols}, acked) SELECT {cols}, 0 FROM resend_rows ORDER BY seq"
            )
            conn.execute("DELETE FROM resend_rows")
            self._move(moved, out_of="retained", into="backlog")
        return moved

    def held(self) -> list[Held]:
        """Per sensor, the oldest reading still in the outbox and the next seq."""
        out = []
        for sensor, next_seq in sorted(self.next_seqs().items()):
            row = self.conn.execute(  # one step down the (sensor, seq) index per sensor
                "SELECT seq, time FROM outbox WHERE sensor = ? ORDER BY seq LIMIT 1", (sensor,)
            ).fetchone()
            if row is None:
                out.append(Held(sensor, next_seq, None, next_seq))
            else:
                out.append(Held(sensor, int(row[0]), str(row[1]), next_seq))
        return out

    def quarantine(self, ids: Sequence[int], topic: str, reason: str, at: datetime) -> int:
        """The broker refused them for good: move to the quarantine table and count."""
        if not ids:
            return 0
        marks = ",".join("?" * len(ids))
        with self._transaction():
            self.conn.execute(
                f"INSERT OR REPLACE INTO quarantine({_COLUMNS}, topic, reason, at) "
                f"SELECT {_COLUMNS}, ?, ?, ? FROM outbox WHERE id IN ({marks})",
                (topic, reason, iso_utc(at), *ids),
            )
            moved = self._delete(ids)
            self._move(moved, out_of="backlog", into="quarantined")
        return moved

    def _delete(self, ids: Sequence[int]) -> int:
        return self._by_ids("DELETE FROM outbox WHERE id IN", ids)

    def _by_ids(self, statement: str, ids: Sequence[int]) -> int:
        """Run ``statement (?, ?, ...)`` over ``ids`` in chunks of 500 (SQLite's
        bound-parameter limit is 999 on older builds); how many rows it changed."""
        changed = 0
        for start in range(0, len(ids), 500):
            chunk = tuple(ids[start : start + 500])
            changed += self.conn.execute(
                f"{statement} ({','.join('?' * len(chunk))})", chunk
            ).rowcount
        return changed

    # -- transactions ----------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction, all or nothing: ``BEGIN IMMEDIATE`` takes the write lock
        up front, so a sampler thread and the publisher wait for each other (busy timeout)
        instead of failing on a lock upgrade half-way."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # -- counters --------------------------------------------------------------------

    def _move(self, n: int, *, out_of: str | None = None, into: str | None = None) -> None:
        """``n`` readings leave the counter ``out_of`` and/or join the counter ``into``
        (in the caller's transaction, so the counters always match the tables)."""
        if out_of is not None:
            self.conn.execute("UPDATE counters SET value = value - ? WHERE name = ?", (n, out_of))
        if into is not None:
            self.conn.execute("UPDATE counters SET value = value + ? WHERE name = ?", (n, into))

    def _counter(self, name: str) -> int:
        row = self.conn.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else 0

    def backlog(self) -> int:
        return self._counter("backlog")

    def dropped(self) -> int:
        return self._counter("dropped")

    def quarantined(self) -> int:
        return self._counter("quarantined")

    def retained(self) -> int:
        """Acknowledged readings kept for a resend request."""
        return self._counter("retained")

    def expired(self) -> int:
        """Acknowledged readings evicted from retention (age or count)."""
        return self._counter("expired")

    def next_seqs(self) -> dict[str, int]:
        """Per sensor, the next sequence number (= how many readings were ever stored)."""
        return {s: int(n) for s, n in self.conn.execute("SELECT sensor, next_seq FROM sequences")}

    def close(self) -> None:
        self.conn.close()
