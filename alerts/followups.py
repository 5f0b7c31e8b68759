"""Follow-ups: the next person of the chain, and the critical alert said again.

Nobody answering is itself news. Two follow-ups are scheduled when an alert is
announced, kept in the outbox file (so they survive a restart) and checked
against acknowledgements (alerts/acks.py) when they fall due:

- **Escalation chain** (``[notifications] escalation`` in the site file): e.g.
  the operator at once, the qualified inspector after 30 min, the officer after
  60 min. A later step is told (event ``unacknowledged``) only if nobody has
  acknowledged the episode by then and it is still open; for the officer, only
  if it is the town's business (alerts/routing.py ``officer_cares``), e.g. a
  plume that is still critical.
- **Repeats**: a critical alert is said again (event ``reminder``) every
  ``repeat_critical_min`` to everyone who has heard it, until acknowledged or
  resolved.

Whatever happens to a follow-up is an audit row next to the deliveries'
(channel ``escalation`` or ``repeat``): ``scheduled``, ``notified``, or
``not_sent`` with the reason ("acknowledged by Dana Ruiz at …"). So the town can
ask afterwards why the officer was, or was not, called.

When an alert resolves, the people a follow-up reached hear that too.

**Found late.** An episode raised from backfilled readings may be opened and
already ended in one go (siltwatch/latemarks.py): nobody could acknowledge it
in time, so waiting for an answer that cannot come would cancel the chain and
the town would never hear of a critical plume. Its end instead goes once to
every step of the chain still pending (the officer only when it is the town's
business, as above), audited ``notified`` with "found late, already ended".
A withdrawn episode is not: there was nothing to tell.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from alerts.acks import AckLookup
from alerts.outbox import NewDelivery, Outbox
from alerts.routing import (
    NoticeEvent,
    Notification,
    first_roles,
    officer_cares,
    officer_waits_for_chain,
    route,
)
from alerts.sinks import Sink
from siltwatch.config import Contact, SiteConfig
from siltwatch.latemarks import found_late, withdrawn_reason
from siltwatch.schema import Alert
from siltwatch.timefmt import duration, local_time, utc_iso
from siltwatch.vocabulary import Severity

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS followups (
    id TEXT PRIMARY KEY,
    site TEXT NOT NULL,
    alert_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('escalation', 'repeat')),
    step INTEGER NOT NULL,
    role TEXT NOT NULL,
    due_at REAL NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'cancelled')),
    alert TEXT NOT NULL,
    created_at REAL NOT NULL,
    settled_at REAL,
    why TEXT
);
CREATE INDEX IF NOT EXISTS followups_due ON followups (state, due_at);
CREATE INDEX IF NOT EXISTS followups_alert ON followups (site, alert_id);
"""


class FollowUpKind(StrEnum):
    ESCALATION = "escalation"
    REPEAT = "repeat"


@dataclass(frozen=True)
class FollowUp:
    id: str
    site: str
    alert_id: str
    kind: FollowUpKind
    step: int
    role: str
    due_at: float
    state: str
    alert: Alert


def _ident(site: str, alert_id: str, kind: FollowUpKind, step: int) -> str:
    key = "\x1f".join((site, alert_id, kind.value, str(step)))
    return "fu-" + hashlib.sha256(key.encode()).hexdigest()[:28]


class FollowUps:
    """A Sink in front of the outbox sink that schedules and sends the follow-ups.

    ``send`` passes the notification on, then plans; ``run_due`` (the delivery
    worker calls it) settles what fell due. Time is the injected clock (epoch s).
    """

    def __init__(
        self,
        outbox: Outbox,
        site: SiteConfig,
        sink: Sink,
        acks: AckLookup,
        clock: Callable[[], float],
    ) -> None:
        self.outbox = outbox
        self.site = site
        self.sink = sink
        self.acks = acks
        self.clock = clock
        with outbox.transaction() as db:  # executescript would commit the transaction
            for statement in _statements():
                db.execute(statement)

    # --- planning ------------------------------------------------------------------

    def send(self, note: Notification) -> None:
        self.sink.send(note)
        now = self.clock()
        if note.event in (NoticeEvent.OPENED, NoticeEvent.ESCALATED):
            self._plan(note.alert, now)
        elif note.event == NoticeEvent.RESOLVED:
            self._settle_resolved(note, now)

    def _plan(self, alert: Alert, now: float) -> None:
        n = self.site.notifications
        sid = self.site.site.id
        planned: list[tuple[FollowUpKind, int, str, float]] = [
            (FollowUpKind.ESCALATION, i, step.role, now + step.after_min * 60)
            for i, step in enumerate(n.escalation)
            if step.after_min > 0 and step.role not in first_roles(self.site)
        ]
        if alert.severity == Severity.CRITICAL and n.repeat_critical_min > 0:
            planned.append((FollowUpKind.REPEAT, 1, "", now + n.repeat_critical_min * 60))
        text = alert.model_dump_json()
        with self.outbox.transaction() as db:
            db.execute(
                "UPDATE followups SET alert = ? WHERE site = ? AND alert_id = ? AND state = 'pending'",
                (text, sid, alert.id),
            )
            for kind, step, role, due in planned:
                if kind == FollowUpKind.REPEAT and self._has_repeat(db, alert.id):
                    continue
                self._insert(db, alert, kind, step, role, due, now)

    def _has_repeat(self, db: sqlite3.Connection, alert_id: str) -> bool:
        row = db.execute(
            "SELECT 1 FROM followups WHERE site = ? AND alert_id = ? AND kind = 'repeat' LIMIT 1",
            (self.site.site.id, alert_id),
        ).fetchone()
        return row is not None

    def _insert(
        self,
        db: sqlite3.Connection,
        alert: Alert,
        kind: FollowUpKind,
        step: int,
        role: str,
        due: float,
        now: float,
    ) -> None:
        sid = self.site.site.id
        ident = _ident(sid, alert.id, kind, step)
        cur = db.execute(
            "INSERT OR IGNORE INTO followups (id, site, alert_id, kind, step, role, due_at, "
            "state, alert, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
            (ident, sid, alert.id, kind.value, step, role, due, alert.model_dump_json(), now),
        )
        if cur.rowcount == 1:
            when = local_time(int(due * 1000), self.site.site.zone)
            what = f"{role or 'everyone told'} at {when} unless acknowledged"
            self._audit(db, ident, kind, role, alert, "scheduled", what, now)

    def _settle_resolved(self, note: Notification, now: float) -> None:
        """Cancel what is pending; tell the people a follow-up reached that it is over
        (and, for an episode found late, every pending step of the chain: see above)."""
        sid = self.site.site.id
        with self.outbox.transaction() as db:
            earlier = {c.name for c in self._reached(db, note.alert.id)}
            for f in self._rows(
                db, "site = ? AND alert_id = ? AND state = 'pending'", (sid, note.alert.id)
            ):
                if self._found_late_step(f, note.alert):
                    ended = local_time(note.alert.resolved_at or note.at, self.site.site.zone)
                    why = f"found late, already ended at {ended}: told once"
                    self._settle(db, f, "sent", "notified", why, now)
                else:
                    resolved = local_time(note.at, self.site.site.zone)
                    self._settle(db, f, "cancelled", "not_sent", f"resolved at {resolved}", now)
            reached = self._reached(db, note.alert.id)
        told = {c.name for c in note.recipients}
        # Reached before: they had the chain's message, this one answers it. Reached
        # now (a step that hears an episode found already ended): this is their first.
        again = tuple(c for c in reached if c.name not in told and c.name in earlier)
        first = tuple(c for c in reached if c.name not in told and c.name not in earlier)
        for people, first_told in ((again, False), (first, True)):
            if people:
                self.sink.send(
                    Notification(note.event, note.at, note.alert, people, first_told=first_told)
                )

    @staticmethod
    def _found_late_step(f: FollowUp, alert: Alert) -> bool:
        """A pending step of the chain that hears an episode found already ended."""
        if f.kind != FollowUpKind.ESCALATION or not found_late(alert):
            return False
        if withdrawn_reason(alert) is not None:
            return False
        return f.role != "officer" or officer_cares(alert)

    # --- settling ------------------------------------------------------------------

    def next_due(self) -> float | None:
        with self.outbox.transaction() as db:
            (t,) = db.execute(
                "SELECT MIN(due_at) FROM followups WHERE state = 'pending'"
            ).fetchone()
        return None if t is None else float(t)

    def run_due(self) -> int:
        """Settle every follow-up due now; returns how many were sent."""
        now = self.clock()
        with self.outbox.transaction() as db:
            due = self._rows(db, "state = 'pending' AND due_at <= ?", (now,))
        sent = 0
        for f in due:
            sent += self._fire(f, now)
        return sent

    def _fire(self, f: FollowUp, now: float) -> int:
        ack = self.acks.acknowledged(f.site, f.alert_id)
        if ack is not None:
            zone = self.site.site.zone
            why = f"acknowledged by {ack.by} at {local_time(ack.at_ms, zone)} ({ack.via})"
            with self.outbox.transaction() as db:
                self._settle(db, f, "cancelled", "not_sent", why, now)
            log.info("%s of %s to %s not sent: %s", f.kind, f.alert_id, f.role or "all", why)
            return 0
        if f.kind == FollowUpKind.ESCALATION:
            return self._escalate(f, now)
        return self._repeat(f, now)

    def _escalate(self, f: FollowUp, now: float) -> int:
        people = tuple(c for c in self.site.contacts if c.role == f.role)
        why = ""
        if not people:
            why = f"no contact of the site has the role {f.role}"
        elif f.role == "officer" and not officer_cares(f.alert):
            why = f"not the town's business while {f.alert.severity}"
        if why:
            with self.outbox.transaction() as db:
                self._settle(db, f, "cancelled", "not_sent", why, now)
            return 0
        waited = duration(now - self._announced_at(f))
        note = Notification(NoticeEvent.UNACKNOWLEDGED, utc_iso(int(now * 1000)), f.alert, people)
        self.sink.send(note)
        with self.outbox.transaction() as db:
            self._settle(db, f, "sent", "notified", f"not acknowledged after {waited}", now)
        return 1

    def _repeat(self, f: FollowUp, now: float) -> int:
        with self.outbox.transaction() as db:
            people = self._heard(db, f.alert)
        note = Notification(NoticeEvent.REMINDER, utc_iso(int(now * 1000)), f.alert, people)
        self.sink.send(note)
        every = self.site.notifications.repeat_critical_min * 60
        with self.outbox.transaction() as db:
            self._settle(db, f, "sent", "notified", f"still critical, repeat {f.step}", now)
            self._insert(db, f.alert, FollowUpKind.REPEAT, f.step + 1, "", now + every, now)
        return 1

    def _announced_at(self, f: FollowUp) -> float:
        with self.outbox.transaction() as db:
            row = db.execute(
                "SELECT MIN(created_at) FROM followups WHERE site = ? AND alert_id = ?",
                (f.site, f.alert_id),
            ).fetchone()
        return float(row[0]) if row and row[0] is not None else f.due_at

    def _reached(self, db: sqlite3.Connection, alert_id: str) -> tuple[Contact, ...]:
        """The contacts an escalation step reached for this episode."""
        roles = {
            str(r[0])
            for r in db.execute(
                "SELECT role FROM followups WHERE site = ? AND alert_id = ? "
                "AND kind = 'escalation' AND state = 'sent'",
                (self.site.site.id, alert_id),
            )
        }
        return tuple(c for c in self.site.contacts if c.role in roles)

    def _heard(self, db: sqlite3.Connection, alert: Alert) -> tuple[Contact, ...]:
        """Everyone told of the episode so far: whom routing named, and the steps reached."""
        named = {c.name for c in route(self.site, NoticeEvent.OPENED, "", alert).recipients}
        if officer_cares(alert) and not officer_waits_for_chain(self.site, alert):
            named |= {c.name for c in self.site.contacts if c.role == "officer"}
        named |= {c.name for c in self._reached(db, alert.id)}
        return tuple(c for c in self.site.contacts if c.name in named)

    # --- rows ----------------------------------------------------------------------

    def followups(self, alert_id: str | None = None) -> list[FollowUp]:
        with self.outbox.transaction() as db:
            if alert_id is None:
                return self._rows(db, "1 = 1", ())
            return self._rows(db, "alert_id = ?", (alert_id,))

    @staticmethod
    def _rows(db: sqlite3.Connection, where: str, args: Sequence[object]) -> list[FollowUp]:
        rows = db.execute(
            "SELECT id, site, alert_id, kind, step, role, due_at, state, alert FROM followups "
            f"WHERE {where} ORDER BY due_at, id",
            tuple(args),
        ).fetchall()
        return [
            FollowUp(
                str(i), str(s), str(a), FollowUpKind(str(k)), int(n), str(r), float(d), str(st),
                Alert.model_validate(json.loads(str(al))),
            )
            for i, s, a, k, n, r, d, st, al in rows
        ]  # fmt: skip

    def _settle(
        self, db: sqlite3.Connection, f: FollowUp, state: str, result: str, why: str, now: float
    ) -> None:
        db.execute(
            "UPDATE followups SET state = ?, settled_at = ?, why = ? WHERE id = ?",
            (state, now, why, f.id),
        )
        self._audit(db, f.id, f.kind, f.role, f.alert, result, why, now)

    def _audit(
        self,
        db: sqlite3.Connection,
        ident: str,
        kind: FollowUpKind,
        role: str,
        alert: Alert,
        result: str,
        why: str,
        now: float,
    ) -> None:
        names = [c.name for c in self.site.contacts if c.role == role] if role else []
        who = ", ".join(names) or (role or "everyone told")
        event = (
            NoticeEvent.UNACKNOWLEDGED if kind == FollowUpKind.ESCALATION else NoticeEvent.REMINDER
        )
        row = NewDelivery(
            id=ident,
            channel=kind.value,
            address=role or "all",
            recipient=who,
            alert_id=alert.id,
            event=event,
            event_at=utc_iso(int(now * 1000)),
            kind=alert.kind,
            severity=alert.severity,
            subject=alert.subject,
            rule=alert.rule,
            message={},
        )
        self.outbox.audit_event(db, row, now, result, why)


def _statements() -> list[str]:
    return [s.strip() for s in SCHEMA.split(";") if s.strip()]
