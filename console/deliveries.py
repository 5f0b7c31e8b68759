"""Who was told about one alert, how and when: the delivery audit read for the alert page.

The delivery worker writes every step into its outbox's ``audit`` table
(alerts/outbox.py): each message queued, sent, retried, failed, held for quiet
hours or the SMS limit, folded into a summary; each step of an escalation
chain or repeat scheduled, fired or not sent (and why: "acknowledged by Dana
Ruiz at ..."). The alert page shows those rows in people's words, beside the
episode's own timeline, so "was the officer texted?" has an answer on the page.

The outbox is the delivery worker's file (one per site in a fleet: alerts/
notify_config.py ``site_outbox_path``); the console opens it read-only and
writes nothing. A console without the file (no ``--notify``, or delivery run on
another machine) says so instead of showing an empty timeline.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from siltwatch.config import SiteConfig
from siltwatch.timefmt import local_time

CHANNELS = {"sms": "SMS", "email": "Email", "webhook": "Webhook"}
FOLLOW_UPS = {"escalation": "Escalation step", "repeat": "Repeat"}
RESULTS = {
    "queued": "queued",
    "sent": "sent",
    "retry": "failed, will retry",
    "failed": "failed for good",
    "deferred": "held",
    "folded": "folded into a summary",
    "interrupted": "interrupted, sending again",
    "scheduled": "scheduled",
    "notified": "fired",
    "not_sent": "skipped",
}
EVENTS = {
    "opened": "opening",
    "escalated": "escalation",
    "resolved": "resolution",
    "reminder": "reminder",
    "unacknowledged": "escalation: not acknowledged in time",
}


@dataclass(frozen=True)
class DeliveryLine:
    at_ms: int
    at: str
    what: str  # "SMS to Dana Ruiz (opening)"
    result: str  # "sent", "skipped", ...
    state: str  # the raw result, for styling: sent | failed | not_sent | ...
    why: str


def _line(site: SiteConfig, row: tuple[object, ...]) -> DeliveryLine:
    at, channel, recipient, event, result, error = (str(v) if v is not None else "" for v in row)
    at_ms = round(float(at) * 1000)
    if channel in FOLLOW_UPS:  # its event is the one it will send: "unacknowledged"
        what = f"{FOLLOW_UPS[channel]} to {recipient}"
    else:
        what = f"{CHANNELS.get(channel, channel)} to {recipient} ({EVENTS.get(event, event)})"
    return DeliveryLine(
        at_ms=at_ms,
        at=local_time(at_ms, site.site.zone),
        what=what,
        result=RESULTS.get(result, result.replace("_", " ")),
        state=result,
        why=error,
    )


def delivery_lines(
    outbox: Path | None, site: SiteConfig, alert_id: str
) -> list[DeliveryLine] | None:
    """The audit rows about ``alert_id`` in time order; None when there is no outbox to read."""
    if outbox is None or not outbox.is_file():
        return None
    try:
        db = sqlite3.connect(f"file:{outbox}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return None
    try:
        rows = db.execute(
            "SELECT at, channel, recipient, event, result, error FROM audit "
            "WHERE alert_id = ? AND result != 'duplicate' ORDER BY seq",
            (alert_id,),
        ).fetchall()
    except sqlite3.Error:
        return None  # not (yet) an outbox: the worker creates its tables on start
    finally:
        db.close()
    return [_line(site, r) for r in rows]
