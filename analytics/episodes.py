"""Alert episodes and duties: the engine's books.

An *episode* is one alert from the moment a condition starts until it clears:
one SMS for one plume, not forty. Its id is derived from the data (site, kind,
subject, start time), so the same readings give the same id whether they were
seen live, backfilled or replayed. Severity may change inside an episode; each
change is kept in ``escalations`` and ``severity`` is the highest reached
(docs/replay-contract.md, "Outputs", ALERTS.jsonl).

A *duty* is an inspection the law requires by a deadline; it stays open until
an inspection completes it. A deadline may move later while the duty is open
(:meth:`DutyBook.extend`), never earlier.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from analytics.events import AlertEvent, DutyEvent, EngineEvent
from analytics.timeutil import iso
from siltwatch.schema import Alert, Duty, Escalation
from siltwatch.vocabulary import Severity, severity_rank


def stable_id(prefix: str, *parts: object) -> str:
    """A short id that depends only on ``parts`` (never on arrival order or wall time)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:16]
    return f"{prefix}-{digest}"


@dataclass(slots=True)
class Episode:
    id: str
    kind: str
    subject: str
    opened_at: int
    severity: Severity
    rule: str
    message: str
    evidence: dict[str, Any]
    escalations: list[tuple[int, Severity]] = field(default_factory=list)
    resolved_at: int | None = None

    @property
    def current_severity(self) -> Severity:
        return self.escalations[-1][1]

    def to_alert(self) -> Alert:
        return Alert(
            id=self.id,
            kind=self.kind,
            subject=self.subject,
            severity=self.severity,
            escalations=[Escalation(at=iso(t), severity=s) for t, s in self.escalations],
            opened_at=iso(self.opened_at),
            resolved_at=None if self.resolved_at is None else iso(self.resolved_at),
            rule=self.rule,
            message=self.message,
            evidence=self.evidence,
        )


class AlertBook:
    """Open, escalate and resolve alert episodes; at most one open per (kind, subject).

    A kind is any described alert kind (siltwatch/detections/): the ``kind`` of the
    ``AlertSpec`` that declares it, a string.
    """

    def __init__(self, site_id: str) -> None:
        self.site_id = site_id
        self.episodes: list[Episode] = []
        self._open: dict[tuple[str, str], Episode] = {}
        self.pending: list[EngineEvent] = []

    def get_open(self, kind: str, subject: str) -> Episode | None:
        return self._open.get((kind, subject))

    def is_open(self, kind: str, subject: str) -> bool:
        return (kind, subject) in self._open

    def open(
        self,
        kind: str,
        subject: str,
        at: int,
        severity: Severity,
        *,
        rule: str,
        message: str,
        evidence: dict[str, Any],
    ) -> Episode:
        """Open an episode, or update the one already open for (kind, subject)."""
        current = self._open.get((kind, subject))
        if current is not None:
            self.update(
                kind, subject, at, severity=severity, message=message, evidence=evidence, rule=rule
            )
            return current
        ep = Episode(
            id=stable_id("al", self.site_id, kind, subject, at),
            kind=kind,
            subject=subject,
            opened_at=at,
            severity=severity,
            rule=rule,
            message=message,
            evidence=dict(evidence),
            escalations=[(at, severity)],
        )
        self.episodes.append(ep)
        self._open[(kind, subject)] = ep
        self.pending.append(AlertEvent("opened", at, ep.to_alert()))
        return ep

    def update(
        self,
        kind: str,
        subject: str,
        at: int,
        *,
        severity: Severity | None = None,
        message: str | None = None,
        evidence: dict[str, Any] | None = None,
        rule: str | None = None,
    ) -> Episode | None:
        """Refresh an open episode; a change of severity is recorded and announced."""
        ep = self._open.get((kind, subject))
        if ep is None:
            return None
        if message is not None:
            ep.message = message
        if evidence is not None:
            ep.evidence = dict(evidence)
        if rule is not None:
            ep.rule = rule
        if severity is not None and severity != ep.current_severity:
            ep.escalations.append((at, severity))
            if severity_rank(severity) > severity_rank(ep.severity):
                ep.severity = severity
            self.pending.append(AlertEvent("escalated", at, ep.to_alert()))
        return ep

    def resolve(
        self,
        kind: str,
        subject: str,
        at: int,
        *,
        message: str | None = None,
        evidence: dict[str, Any] | None = None,
    ) -> Episode | None:
        """Close an open episode; its closing message and evidence are an :meth:`update`."""
        ep = self.update(kind, subject, at, message=message, evidence=evidence)
        if ep is None:
            return None
        del self._open[(kind, subject)]
        ep.resolved_at = max(at, ep.opened_at)
        self.pending.append(AlertEvent("resolved", ep.resolved_at, ep.to_alert()))
        return ep

    def alerts(self) -> list[Alert]:
        """Every episode, ordered by opening time then id (the ALERTS.jsonl order)."""
        return [ep.to_alert() for ep in sorted(self.episodes, key=lambda e: (e.opened_at, e.id))]


@dataclass(slots=True)
class DutyRecord:
    id: str
    kind: str
    reason: str
    subject: str
    created_at: int
    due_at: int
    rule: str
    completed_at: int | None = None
    completed_by: str | None = None
    overdue: bool = False

    def to_duty(self) -> Duty:
        return Duty(
            id=self.id,
            kind=self.kind,
            reason=self.reason,
            subject=self.subject,
            created_at=iso(self.created_at),
            due_at=iso(self.due_at),
            completed_at=None if self.completed_at is None else iso(self.completed_at),
            rule=self.rule,
        )


class DutyBook:
    """Duties created by detectors and completed by inspections or the site log.

    A kind or reason is any described one (siltwatch/detections/): the ``kind`` of the
    ``DutySpec`` that declares it, and a member of ``DutyReason`` or of a detection's
    own reason ``StrEnum``.
    """

    def __init__(self, site_id: str) -> None:
        self.site_id = site_id
        self.records: dict[str, DutyRecord] = {}
        self.pending: list[EngineEvent] = []

    def create(
        self,
        *,
        kind: str,
        reason: str,
        subject: str,
        created_at: int,
        due_at: int,
        rule: str,
    ) -> DutyRecord:
        """Create a duty; the same (reason, subject, created_at) twice is the same duty."""
        duty_id = stable_id("du", self.site_id, kind, reason, subject, created_at)
        existing = self.records.get(duty_id)
        if existing is not None:
            return existing
        rec = DutyRecord(duty_id, kind, reason, subject, created_at, due_at, rule)
        self.records[duty_id] = rec
        self.pending.append(DutyEvent("created", created_at, rec.to_duty()))
        return rec

    def open_at(self, t: int) -> list[DutyRecord]:
        """Duties created at or before ``t`` and not completed by then."""
        return [
            r
            for r in self.records.values()
            if r.created_at <= t and (r.completed_at is None or r.completed_at > t)
        ]

    def complete(self, duty_id: str, at: int, inspector: str) -> DutyRecord | None:
        rec = self.records.get(duty_id)
        if rec is None or rec.completed_at is not None:
            return None
        rec.completed_at = at
        rec.completed_by = inspector
        self.pending.append(DutyEvent("completed", at, rec.to_duty()))
        return rec

    def extend(self, duty_id: str, due_at: int, at: int) -> DutyRecord | None:
        """Move an open duty's deadline later, at event time ``at``; None if nothing moved.

        The one case so far: Lake Lure 96.03 counts working days only when the
        weather permits work, and rain days are known only as they are recorded
        (analytics/stabilization.py), so a deadline first computed without them
        moves out as they come. An ``extended`` event carries the new ``due_at``
        to whoever keeps duties (the live store, the InfluxDB mirror). A duty
        that is done or already overdue keeps its deadline, and a deadline
        never moves earlier. The caller watches the new deadline (a timer set for
        the old one must check ``due_at`` when it fires).
        """
        rec = self.records.get(duty_id)
        if rec is None or rec.completed_at is not None or rec.overdue or due_at <= rec.due_at:
            return None
        rec.due_at = due_at
        self.pending.append(DutyEvent("extended", at, rec.to_duty()))
        return rec

    def mark_overdue(self, duty_id: str, at: int) -> DutyRecord | None:
        rec = self.records.get(duty_id)
        if rec is None or rec.completed_at is not None or rec.overdue:
            return None
        rec.overdue = True
        self.pending.append(DutyEvent("overdue", at, rec.to_duty()))
        return rec

    def duties(self) -> list[Duty]:
        """Every duty, ordered by creation time then id (the DUTIES.jsonl order)."""
        return [
            r.to_duty() for r in sorted(self.records.values(), key=lambda r: (r.created_at, r.id))
        ]
