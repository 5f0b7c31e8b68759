"""Acknowledging without logging in: finding the alert a short code names, recording who.

The link in an SMS or email (``/a/{token}``) and the reply ``ACK <code>`` both
name an alert by its 6-character code (alerts/acklinks.py ``ack_code``: an
HMAC of the site and alert id under the book's ``link_secret``), not by site
or id, so the message stays one SMS segment. The console finds the alert by
computing the code of every stored episode of every site it serves; a code
that matches in two places is ambiguous and the caller narrows it (the link
by its signature, the SMS by the sender's number).
"""

from __future__ import annotations

from dataclasses import dataclass

from alerts.acklinks import ack_code
from alerts.acks import Acknowledgement
from console.web import Console
from siltwatch.config import Contact, SiteConfig
from siltwatch.schema import Alert


@dataclass(frozen=True)
class Found:
    site: SiteConfig
    alert: Alert


def alerts_with_code(console: Console, code: str) -> list[Found]:
    """Every stored (not withdrawn) episode whose acknowledgement code is ``code``."""
    secret = console.book.link_secret()
    wanted = code.strip().upper()
    return [
        Found(site, alert)
        for sid, site in console.sites.items()
        for alert in console.store.alerts(sid)
        if ack_code(secret, sid, alert.id).upper() == wanted
    ]


def contact_by_phone(site: SiteConfig, phone: str) -> Contact | None:
    for contact in site.contacts:
        if contact.phone is not None and contact.phone == phone.strip():
            return contact
    return None


def record_ack(
    console: Console, found: Found, contact: Contact, via: str
) -> tuple[Acknowledgement, bool]:
    """Acknowledge as the contact (once per episode) and audit it; (the ack that stands, new?)."""
    sid, now = found.site.site.id, console.now_ms()
    ack, new = console.book.acknowledge(sid, found.alert.id, contact.name, now, via)
    if new:
        console.book.audit(
            now, contact.name, "acknowledged", site=sid, alert_id=found.alert.id,
            detail=f"via {via} as {contact.role}",
        )  # fmt: skip
    return ack, new
