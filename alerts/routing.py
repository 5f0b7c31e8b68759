"""Who hears about what: the officer at 11 pm gets one clear message, not forty.

Episodes already collapse a plume into one alert; routing decides the people.
The site operator and the qualified inspector hear every opening, change of
severity and resolution. The town's officer hears only what the law makes the
town's business, as each kind's description says (``Officer`` in
siltwatch/detections/base.py): a missed legal deadline such as an inspection
overdue from its opening, a regulatory alert once it reached ``critical`` —
once when it does, and once when it clears.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from siltwatch.config import Contact, SiteConfig
from siltwatch.detections import alert_spec
from siltwatch.detections.base import Officer
from siltwatch.schema import Alert
from siltwatch.vocabulary import Severity


class NoticeEvent(StrEnum):
    """Why a person is told: the episode's own events, and the two follow-ups."""

    OPENED = "opened"
    ESCALATED = "escalated"  # the severity rose
    RESOLVED = "resolved"
    REMINDER = "reminder"  # still critical and nobody acknowledged (alerts/followups.py)
    UNACKNOWLEDGED = "unacknowledged"  # the next step of the chain: nobody answered in time


@dataclass(frozen=True)
class Notification:
    """One message to send: the event, the alert as it stands, and who gets it."""

    event: NoticeEvent
    at: str
    alert: Alert
    recipients: tuple[Contact, ...]
    # These recipients hear of the episode for the first time in this message (a chain
    # that reached them only once the episode had ended): their email opens a thread.
    first_told: bool = False


def officer_policy(alert: Alert) -> Officer:
    """When the officer hears this kind, from its description (siltwatch/detections/);
    a kind this release does not know is not the officer's business."""
    spec = alert_spec(alert.kind)
    return Officer.NEVER if spec is None else spec.officer


def officer_cares(alert: Alert) -> bool:
    """The episode is the town's business: a kind the officer hears from its opening,
    or one heard on critical that reached it (``severity`` is the highest it reached)."""
    policy = officer_policy(alert)
    return policy in (Officer.ON_OPEN, Officer.ONCE) or (
        policy == Officer.ON_CRITICAL and alert.severity == Severity.CRITICAL
    )


def first_officer_event(event: NoticeEvent, alert: Alert) -> bool:
    """This event is the one at which the episode became the officer's business.

    Derived from the episode itself (its escalations), not from memory, so a
    restarted service neither repeats nor forgets the officer's messages.
    """
    if not officer_cares(alert):
        return False
    if officer_policy(alert) in (Officer.ON_OPEN, Officer.ONCE) or event == NoticeEvent.OPENED:
        return event == NoticeEvent.OPENED
    if event != NoticeEvent.ESCALATED:
        return False
    criticals = [e for e in alert.escalations if e.severity == Severity.CRITICAL]
    last = alert.escalations[-1]
    return last.severity == Severity.CRITICAL and len(criticals) == 1


def announced(event: NoticeEvent, alert: Alert) -> bool:
    """Whether anyone is told of this event: a fact heard once (``Officer.ONCE``, e.g. a
    missed notice) closes as it opens, so its "resolved" is kept, not announced."""
    return not (event == NoticeEvent.RESOLVED and officer_policy(alert) == Officer.ONCE)


def first_roles(site: SiteConfig) -> frozenset[str]:
    """The roles told at once: everyone without a chain, else the chain's first steps."""
    chain = site.notifications.escalation
    if not chain:
        return frozenset(("operator", "qualified_inspector", "officer"))
    return frozenset(s.role for s in chain if s.after_min == 0)


def officer_waits_for_chain(site: SiteConfig, alert: Alert) -> bool:
    """The officer hears this episode through the chain, not at once.

    Only a sensor judgment (``Officer.ON_CRITICAL``: a plume, a full trap) waits:
    the operator may fix it within the chain's minutes. A missed legal deadline
    or a missed notice (``ON_OPEN``, ``ONCE``) is a fact the town hears at once.
    """
    return officer_policy(alert) == Officer.ON_CRITICAL and "officer" not in first_roles(site)


def route(site: SiteConfig, event: NoticeEvent, at: str, alert: Alert) -> Notification:
    """The recipients of one alert event (see the module docstring for the policy).

    With an escalation chain (``[notifications] escalation`` in the site file)
    only its first roles are named here; alerts/followups.py tells the later
    steps when nobody acknowledged in time.
    """
    first = first_roles(site)
    people: list[Contact] = [
        c
        for c in site.contacts
        if c.role in ("operator", "qualified_inspector") and c.role in first
    ]
    officers = [c for c in site.contacts if c.role == "officer"]
    cleared = event == NoticeEvent.RESOLVED and officer_policy(alert) != Officer.ONCE
    if (first_officer_event(event, alert) or (cleared and officer_cares(alert))) and not (
        officer_waits_for_chain(site, alert)
    ):
        people += officers
    return Notification(event, at, alert, tuple(people))
