"""Silences and maintenance windows: planned work is held from people, never from the record.

A trap being cleaned out or a probe being serviced will alert. People record a
silence (now, until an end) or a maintenance window (from a start to an end)
in the console for a station, a practice or a sensor, with a reason
(console/silences.py, stored in the console's book). The engine still raises
and stores every alert, the alert log still writes it and the console shows it
marked "silenced"; only the messages to people are held, here, in front of
the delivery side (the follow-ups and the outbox: alerts/notify_config.py
``Delivery``), so a held opening schedules no repeat and no escalation step.

What is never held: a regulatory duty or fact the town must hear of
(:func:`may_be_silenced`): a missed legal deadline (every ``*_overdue`` kind),
a missing milestone notice, a violation or work during one, a disturbed area
over its limit. Those are ``Officer.ON_OPEN`` or ``Officer.ONCE`` in their
descriptions (siltwatch/detections/): no maintenance makes them not happen.
A kind this release does not know is not held either.

An episode's end is held when its opening was (nobody was told it began); an
escalation after the silence ended goes out as usual.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

from alerts.routing import NoticeEvent, Notification
from alerts.sinks import Sink
from siltwatch.detections import alert_spec, descriptions
from siltwatch.detections.base import Officer

log = logging.getLogger(__name__)


class SilenceLookup(Protocol):
    """Who knows the silences (the console's book: console/book.py)."""

    def silence_covering(self, site: str, subject: str, kind: str, at_ms: int) -> str | None:
        """The silence holding alerts of ``kind`` on ``subject`` at ``at_ms``, in words
        ("probe serviced (Dana Ruiz, until ...)"), or None."""
        ...


def may_be_silenced(kind: str) -> bool:
    """Whether alerts of ``kind`` may be held by a silence (see the module docstring)."""
    spec = alert_spec(kind)
    if spec is None or kind in duty_overdue_kinds():
        return False  # a missed duty is the law's, whoever hears it
    return not spec.regulatory or spec.officer == Officer.ON_CRITICAL


def duty_overdue_kinds() -> frozenset[str]:
    """Every ``<duty kind>_overdue`` alert kind the registry describes."""
    return frozenset(
        duty.overdue.kind for d in descriptions() for duty in d.duties if duty.overdue is not None
    )


def _ms(value: str | datetime) -> int:
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    return round(when.timestamp() * 1000)


def held_by(silences: SilenceLookup, site: str, note: Notification) -> str | None:
    """Why this notification is held from people, or None to send it."""
    alert = note.alert
    if not may_be_silenced(alert.kind):
        return None
    times = [_ms(note.at.replace("Z", "+00:00"))]
    if note.event == NoticeEvent.RESOLVED:
        times.append(_ms(alert.opened_at))
    for at in times:
        why = silences.silence_covering(site, alert.subject, alert.kind, at)
        if why is not None:
            return why
    return None


class HeldInSilence:
    """A Sink in front of the delivery side that holds what a silence covers."""

    def __init__(self, inner: Sink, site: str, silences: SilenceLookup) -> None:
        self.inner = inner
        self.site = site
        self.silences = silences
        self.held = 0

    def send(self, note: Notification) -> None:
        try:
            why = held_by(self.silences, self.site, note)
        except Exception:  # the book unreachable: people are told rather than not
            log.exception("cannot read the silences of %s; delivering %s", self.site, note.alert.id)
            why = None
        if why is not None:
            self.held += 1
            log.info("%s of alert %s held from people: %s", note.event, note.alert.id, why)
            return
        self.inner.send(note)
