"""The delivery outbox and audit log: one SQLite file (WAL) that survives restarts.

Why a database and not a queue in memory: an alert the law makes the town's
business must not vanish because the service restarted during a storm, and the
town must be able to ask afterwards "who was told what, when, and did it arrive?".

Each row of ``deliveries`` is one rendered message for one (channel, address),
written *before* any attempt to send it. Its state moves::

    pending --claim--> sending --> sent
       ^                  |   \\--> failed   (permanent error, or attempts used up)
       \\---- retry ------/
    pending --fold--> folded --> sent | failed   (with the SMS summary it went into)

Every change is also appended to ``audit`` (who, what, when, channel, result,
error text); nothing is deleted.

Delivery guarantee: **at least once**. A send and the record of it cannot be one
atomic act (the SMTP server or gateway is not in our transaction). The row is
marked ``sending`` (committed) before the attempt and ``sent`` after it; if the
process dies in between, the next worker finds the row still ``sending``, audits
it as ``interrupted`` and sends it again. So after such a crash a recipient may
get the message twice; never zero times. Duplicates are bounded to that window
and identifiable: the delivery id (:func:`alerts.channel.delivery_id`, a hash of
alert id, event, event time, channel and address) is the email's Message-ID, the
webhook's ``X-Siltwatch-Delivery`` header and body field. A row marked ``sent``
is never claimed again, and enqueueing the same delivery id twice (a replayed or
re-dispatched event) is a no-op, so the outbox itself never records a delivery id
as sent twice. One worker per outbox file is assumed (the serve process).

No secrets: an address is what a channel's ``addresses`` returns, and the webhook
channel returns its URL redacted (alerts/http.py ``redact_url``), since a chat
service's webhook URL is a credential. A file written before that change is
scrubbed when opened: raw URLs in ``address`` and in error texts are replaced by
their redacted form, with SQLite's ``secure_delete`` so the old bytes are zeroed.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from alerts.channel import Message
from alerts.http import redact_url
from alerts.routing import NoticeEvent
from siltwatch.timefmt import utc_iso

SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    recipient TEXT NOT NULL,
    alert_id TEXT NOT NULL,
    event TEXT NOT NULL,
    event_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    severity TEXT NOT NULL,
    subject TEXT NOT NULL,
    rule TEXT NOT NULL,
    message TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'folded')),
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    next_attempt_at REAL NOT NULL,
    sent_at REAL,
    last_error TEXT,
    folded_into TEXT
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (state, next_attempt_at);
CREATE INDEX IF NOT EXISTS deliveries_sent ON deliveries (channel, address, sent_at);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    at_utc TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    recipient TEXT NOT NULL,
    alert_id TEXT NOT NULL,
    event TEXT NOT NULL,
    severity TEXT NOT NULL,
    result TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    error TEXT
);
CREATE INDEX IF NOT EXISTS audit_delivery ON audit (delivery_id);
"""


class DeliveryState(StrEnum):
    """Where a row stands (the diagram above). Stored as its value in ``deliveries.state``,
    whose CHECK lists the same words, so an outbox written before this enum reads the same."""

    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    FOLDED = "folded"


class Composed(StrEnum):
    """The messages the delivery composes itself, beside the notices routing hands it."""

    SUMMARY = "summary"  # held SMS notices folded into one (alerts/worker.py)
    DIGEST = "digest"  # the daily digest email (alerts/digest.py)


# What a row tells, stored as its value in ``deliveries.event`` and ``audit.event``.
DeliveryEvent = NoticeEvent | Composed


def delivery_event(text: str) -> DeliveryEvent:
    """The event of a stored row (ValueError for a word this release does not know)."""
    return Composed(text) if text in Composed._value2member_map_ else NoticeEvent(text)


@dataclass(frozen=True)
class NewDelivery:
    """A rendered message for one (channel, address), ready to be written."""

    id: str
    channel: str
    address: str
    recipient: str
    alert_id: str
    event: DeliveryEvent
    event_at: str
    kind: str
    severity: str
    subject: str
    rule: str
    message: Message
    # Not sent before this (epoch s): a person's quiet hours (alerts/quiet.py).
    not_before: float = field(default=0.0, kw_only=True)
    held_why: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class Delivery(NewDelivery):
    state: DeliveryState
    attempts: int
    created_at: float
    next_attempt_at: float
    sent_at: float | None
    last_error: str | None
    folded_into: str | None


@dataclass(frozen=True)
class AuditEntry:
    at: float
    delivery_id: str
    channel: str
    address: str
    recipient: str
    alert_id: str
    event: str
    severity: str
    # queued | duplicate | sent | retry | failed | deferred | folded | interrupted, and for
    # follow-ups (channel "escalation"/"repeat"): scheduled | notified | not_sent
    result: str
    attempt: int
    error: str | None


SUMMARY = "summary"  # the alert_id of a summary row (it speaks for the rows folded into it)

_COLUMNS = (
    "id, channel, address, recipient, alert_id, event, event_at, kind, severity, subject, "
    "rule, message, state, attempts, created_at, next_attempt_at, sent_at, last_error, folded_into"
)


def utc_text(t: float) -> str:
    """Epoch seconds as ISO 8601 UTC with ``Z`` (the audit log's readable time)."""
    return utc_iso(datetime.fromtimestamp(t, UTC), timespec="milliseconds")


class Outbox:
    """The SQLite outbox; safe to share between the dispatching and the delivery thread."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit is on disk before we tell anyone (or send anything); alerts are few.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=10000")
        # Overwritten or deleted content is zeroed, not left in free pages (see scrubbing).
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._redact_stored_urls()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _redact_stored_urls(self) -> None:
        """Replace webhook URLs stored by older versions (as addresses) by their redacted form."""
        with self._tx() as db:
            found = {
                str(address)
                for table in ("deliveries", "audit")
                for (address,) in db.execute(
                    f"SELECT DISTINCT address FROM {table} "
                    "WHERE address LIKE 'http://%' OR address LIKE 'https://%'"
                )
            }
            urls = sorted((a for a in found if "(redacted" not in a), key=len, reverse=True)
            for url in urls:
                shown = redact_url(url)
                for table, error in (("deliveries", "last_error"), ("audit", "error")):
                    db.execute(f"UPDATE {table} SET address = ? WHERE address = ?", (shown, url))
                    db.execute(
                        f"UPDATE {table} SET {error} = replace({error}, ?, ?) "
                        f"WHERE instr({error}, ?) > 0",
                        (url, shown, url),
                    )
        if urls:  # move the rewritten pages out of the WAL into the main file now
            with self._lock:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction on the outbox file, for the tables beside it (follow-ups)."""
        return self._tx()

    def audit_event(
        self, db: sqlite3.Connection, d: NewDelivery, at: float, result: str, why: str
    ) -> None:
        """An audit row that is not a send attempt (a follow-up sent, held or not sent)."""
        self._audit(db, d, at, result, 0, why)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- rows ------------------------------------------------------------------------

    @staticmethod
    def _row(r: Sequence[object]) -> Delivery:
        (ident, channel, address, recipient, alert_id, event, event_at, kind, severity, subject,
         rule, message, state, attempts, created, next_at, sent_at, error, folded) = r  # fmt: skip
        return Delivery(
            id=str(ident),
            channel=str(channel),
            address=str(address),
            recipient=str(recipient),
            alert_id=str(alert_id),
            event=delivery_event(str(event)),
            event_at=str(event_at),
            kind=str(kind),
            severity=str(severity),
            subject=str(subject),
            rule=str(rule),
            message=dict(json.loads(str(message))),
            state=DeliveryState(str(state)),
            attempts=int(str(attempts)),
            created_at=float(str(created)),
            next_attempt_at=float(str(next_at)),
            sent_at=None if sent_at is None else float(str(sent_at)),
            last_error=None if error is None else str(error),
            folded_into=None if folded is None else str(folded),
        )

    def _get(self, db: sqlite3.Connection, ident: str) -> Delivery | None:
        r = db.execute(f"SELECT {_COLUMNS} FROM deliveries WHERE id = ?", (ident,)).fetchone()
        return None if r is None else self._row(r)

    def get(self, ident: str) -> Delivery | None:
        with self._lock:
            return self._get(self._db, ident)

    def _audit(
        self,
        db: sqlite3.Connection,
        d: NewDelivery,
        at: float,
        result: str,
        attempt: int,
        error: str | None = None,
    ) -> None:
        db.execute(
            "INSERT INTO audit (at, at_utc, delivery_id, channel, address, recipient, alert_id, "
            "event, severity, result, attempt, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (at, utc_text(at), d.id, d.channel, d.address, d.recipient, d.alert_id, d.event,
             d.severity, result, attempt, error),
        )  # fmt: skip

    # -- writing ---------------------------------------------------------------------

    def _insert(self, db: sqlite3.Connection, d: NewDelivery, now: float) -> bool:
        cur = db.execute(
            "INSERT OR IGNORE INTO deliveries (id, channel, address, recipient, alert_id, event, "
            "event_at, kind, severity, subject, rule, message, state, attempts, created_at, "
            "next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)",
            (d.id, d.channel, d.address, d.recipient, d.alert_id, d.event, d.event_at, d.kind,
             d.severity, d.subject, d.rule, json.dumps(d.message, ensure_ascii=False), now,
             max(now, d.not_before)),
        )  # fmt: skip
        return cur.rowcount == 1

    def enqueue(self, items: Iterable[NewDelivery], now: float) -> list[str]:
        """Write deliveries (one transaction); returns the ids that were new.

        An id already present (sent, pending or failed) is left alone and audited
        as ``duplicate``: the same notification is never queued twice.
        """
        new = []
        with self._tx() as db:
            for d in items:
                if self._insert(db, d, now):
                    self._audit(db, d, now, "queued", 0, d.held_why)
                    new.append(d.id)
                else:
                    self._audit(db, d, now, "duplicate", 0, "already in the outbox")
        return new

    def recover(self, now: float) -> list[str]:
        """Rows left ``sending`` by a worker that died: back to ``pending``, due now.

        This is the at-least-once step: the message may or may not have gone out.
        """
        with self._tx() as db:
            rows = [
                self._row(r)
                for r in db.execute(
                    f"SELECT {_COLUMNS} FROM deliveries WHERE state = 'sending'"
                ).fetchall()
            ]
            for d in rows:
                db.execute(
                    "UPDATE deliveries SET state = 'pending', next_attempt_at = ? WHERE id = ?",
                    (now, d.id),
                )
                self._audit(
                    db,
                    d,
                    now,
                    "interrupted",
                    d.attempts,
                    "the worker stopped during a send; sending again (may duplicate)",
                )
        return [d.id for d in rows]

    def claim(self, ident: str, now: float) -> Delivery | None:
        """``pending`` -> ``sending`` and count the attempt; None if it is not pending."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE deliveries SET state = 'sending', attempts = attempts + 1 "
                "WHERE id = ? AND state = 'pending'",
                (ident,),
            )
            if cur.rowcount != 1:
                return None
            return self._get(db, ident)

    def _finish(
        self, ident: str, now: float, state: DeliveryState, result: str, error: str | None
    ) -> bool:
        with self._tx() as db:
            d = self._get(db, ident)
            if d is None or d.state != DeliveryState.SENDING:
                return False
            db.execute(
                "UPDATE deliveries SET state = ?, sent_at = ?, last_error = ? WHERE id = ?",
                (state, now if state == DeliveryState.SENT else None, error, ident),
            )
            self._audit(db, d, now, result, d.attempts, error)
            self._settle_folded(db, d, now, state, error)
            return True

    def _settle_folded(
        self,
        db: sqlite3.Connection,
        summary: Delivery,
        now: float,
        state: DeliveryState,
        error: str | None,
    ) -> None:
        """Notifications folded into a summary share its fate, each with its own audit row."""
        rows = db.execute(
            f"SELECT {_COLUMNS} FROM deliveries WHERE folded_into = ? AND state = 'folded'",
            (summary.id,),
        ).fetchall()
        for r in rows:
            d = self._row(r)
            db.execute(
                "UPDATE deliveries SET state = ?, sent_at = ?, last_error = ? WHERE id = ?",
                (state, now if state == DeliveryState.SENT else None, error, d.id),
            )
            note = f"in summary {summary.id}" + (f": {error}" if error else "")
            self._audit(db, d, now, state, d.attempts, note)
            self._settle_folded(db, d, now, state, error)  # a summary folded into a summary

    def mark_sent(self, ident: str, now: float) -> bool:
        """Record success; False (and nothing recorded) unless the row was ``sending``."""
        return self._finish(ident, now, DeliveryState.SENT, "sent", None)

    def mark_failed(self, ident: str, now: float, error: str) -> bool:
        return self._finish(ident, now, DeliveryState.FAILED, "failed", error)

    def mark_retry(self, ident: str, now: float, next_at: float, error: str) -> bool:
        with self._tx() as db:
            d = self._get(db, ident)
            if d is None or d.state != DeliveryState.SENDING:
                return False
            db.execute(
                "UPDATE deliveries SET state = 'pending', next_attempt_at = ?, last_error = ? "
                "WHERE id = ?",
                (next_at, error, ident),
            )
            self._audit(db, d, now, "retry", d.attempts, f"{error}; next try {utc_text(next_at)}")
            return True

    def defer(self, idents: Sequence[str], until: float, now: float, why: str) -> None:
        """Hold pending rows until ``until`` without counting an attempt (rate limit)."""
        with self._tx() as db:
            for ident in idents:
                d = self._get(db, ident)
                if d is None or d.state != DeliveryState.PENDING:
                    continue
                db.execute("UPDATE deliveries SET next_attempt_at = ? WHERE id = ?", (until, ident))
                self._audit(db, d, now, "deferred", d.attempts, f"{why}; until {utc_text(until)}")

    def fold(self, idents: Sequence[str], summary: NewDelivery, now: float) -> str:
        """Replace pending rows by one summary row, atomically; returns the summary id."""
        with self._tx() as db:
            if not self._insert(db, summary, now):
                raise ValueError(f"summary {summary.id} already exists")
            self._audit(db, summary, now, "queued", 0, f"summary of {len(idents)}")
            for ident in idents:
                d = self._get(db, ident)
                if d is None or d.state != DeliveryState.PENDING:
                    raise ValueError(f"cannot fold {ident}: not pending")
                db.execute(
                    "UPDATE deliveries SET state = 'folded', folded_into = ? WHERE id = ?",
                    (summary.id, ident),
                )
                self._audit(db, d, now, "folded", d.attempts, f"into summary {summary.id}")
        return summary.id

    # -- reading ---------------------------------------------------------------------

    def due(self, now: float) -> list[Delivery]:
        """Pending rows whose time has come, oldest first."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM deliveries WHERE state = 'pending' "
                "AND next_attempt_at <= ? ORDER BY next_attempt_at, created_at, id",
                (now,),
            ).fetchall()
        return [self._row(r) for r in rows]

    def folded(self, summary_id: str) -> list[Delivery]:
        """The notifications a summary carries, summaries in it expanded."""
        with self._lock:
            rows = [
                self._row(r)
                for r in self._db.execute(
                    f"SELECT {_COLUMNS} FROM deliveries WHERE folded_into = ? "
                    "ORDER BY created_at, id",
                    (summary_id,),
                ).fetchall()
            ]
        out: list[Delivery] = []
        for d in rows:
            out.extend(self.folded(d.id) if d.alert_id == SUMMARY else [d])
        return out

    def next_due(self) -> float | None:
        """When the earliest pending row is due (None: nothing to do)."""
        with self._lock:
            (t,) = self._db.execute(
                "SELECT MIN(next_attempt_at) FROM deliveries WHERE state = 'pending'"
            ).fetchone()
        return None if t is None else float(t)

    def sent_times(self, channel: str, address: str, since: float) -> list[float]:
        """When messages went to ``address`` on ``channel`` after ``since`` (rate limits)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT sent_at FROM deliveries WHERE channel = ? AND address = ? "
                "AND state = 'sent' AND folded_into IS NULL AND sent_at > ? ORDER BY sent_at",
                (channel, address, since),
            ).fetchall()
        return [float(r[0]) for r in rows]

    def deliveries(self, state: DeliveryState | None = None) -> list[Delivery]:
        with self._lock:
            if state is None:
                rows = self._db.execute(
                    f"SELECT {_COLUMNS} FROM deliveries ORDER BY created_at, id"
                ).fetchall()
            else:
                rows = self._db.execute(
                    f"SELECT {_COLUMNS} FROM deliveries WHERE state = ? ORDER BY created_at, id",
                    (state,),
                ).fetchall()
        return [self._row(r) for r in rows]

    def counts(self) -> dict[DeliveryState, int]:
        with self._lock:
            rows = self._db.execute(
                "SELECT state, COUNT(*) FROM deliveries GROUP BY state"
            ).fetchall()
        return {DeliveryState(str(s)): int(n) for s, n in rows}

    def audit(self, delivery_id: str | None = None) -> list[AuditEntry]:
        """The audit log in order (optionally of one delivery)."""
        sql = (
            "SELECT at, delivery_id, channel, address, recipient, alert_id, event, severity, "
            "result, attempt, error FROM audit"
        )
        args: tuple[str, ...] = ()
        if delivery_id is not None:
            sql += " WHERE delivery_id = ?"
            args = (delivery_id,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY seq", args).fetchall()
        return [
            AuditEntry(
                float(at), str(di), str(ch), str(ad), str(rc), str(al), str(ev), str(sv),
                str(res), int(att), None if err is None else str(err),
            )
            for at, di, ch, ad, rc, al, ev, sv, res, att, err in rows
        ]  # fmt: skip
