"""Whether a person has answered an alert: what stops repeats and escalation.

The delivery worker asks this before each follow-up (a repeat of a critical
alert, the next step of a site's escalation chain); the console's book
(console/book.py) answers it from the store, so an acknowledgement made on a
phone at 11 pm stops the 11:30 escalation even across a restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Acknowledgement:
    """Who acknowledged an alert episode, when (UTC ms), and how (console, link, sms)."""

    by: str
    at_ms: int
    via: str = "console"


class AckLookup(Protocol):
    def acknowledged(self, site: str, alert_id: str) -> Acknowledgement | None:
        """The first acknowledgement of the episode, or None while nobody has answered."""
        ...


class NoAcks:
    """No console, no acknowledgements: every follow-up goes out as scheduled."""

    def acknowledged(self, site: str, alert_id: str) -> Acknowledgement | None:
        return None
