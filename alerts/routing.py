"""Who hears about what: the officer at 11 pm gets one clear message, not forty.

Episodes already collapse a plume into one alert; routing decides the people.
The site operator and the qualified inspector hear every opening, change of
severity and resolution. The town's officer hears only what the law makes the
town's business: an inspection overdue, and a regulatory alert that reached
``critical`` — once when it does, and once when it clears.
"""

from __future__ import annotations

from dataclasses import dataclass

from siltwatch.config import Contact, SiteConfig
from siltwatch.schema import Alert

REGULATORY = frozenset(
    {"turbidity_contrast", "sediment_capacity", "drain_time", "inspection_overdue"}
)


@dataclass(frozen=True)
class Notification:
    """One message to send: the event, the alert as it stands, and who gets it."""

    event: str  # opened | escalated | resolved
    at: str
    alert: Alert
    recipients: tuple[Contact, ...]


def officer_cares(alert: Alert) -> bool:
    return alert.kind == "inspection_overdue" or (
        alert.kind in REGULATORY and alert.severity == "critical"
    )


def route(
    site: SiteConfig, event: str, at: str, alert: Alert, *, officer_told: bool
) -> Notification:
    """The recipients of one alert event; ``officer_told``: the officer heard of this episode before."""
    people: list[Contact] = [
        c for c in site.contacts if c.role in ("operator", "qualified_inspector")
    ]
    officers = [c for c in site.contacts if c.role == "officer"]
    if event == "resolved":
        if officer_told:
            people += officers
    elif officer_cares(alert) and not officer_told:
        people += officers
    return Notification(event, at, alert, tuple(people))
