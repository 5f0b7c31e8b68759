"""Quiet hours: when a person's phone should stay dark for anything short of critical.

A contact's ``quiet_hours = "22:00-07:00"`` (site's local time, may wrap past
midnight) holds every non-critical message to them until the window ends; a
critical one goes at once ("the officer at 11 pm gets one clear SMS, not forty":
the one is the critical one). Computed on the wall clock of the delivery
worker, in the site's zone, so a daylight-saving change moves the window with
the town's clocks.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

from siltwatch.config import Contact, quiet_window


def quiet_until(contact: Contact, zone: tzinfo, now_s: float) -> float | None:
    """When ``contact``'s quiet hours end (epoch s) if ``now_s`` falls inside them, else None."""
    if contact.quiet_hours is None:
        return None
    window = quiet_window(contact.quiet_hours)
    if window is None:
        return None
    start, end = window
    here = datetime.fromtimestamp(now_s, zone)
    minute = here.hour * 60 + here.minute
    inside = start <= minute < end if start < end else (minute >= start or minute < end)
    if not inside:
        return None
    day = here.date() if minute < end else here.date() + timedelta(days=1)
    wake = datetime(day.year, day.month, day.day, end // 60, end % 60, tzinfo=zone)
    return wake.timestamp()


def next_local(at_hhmm: str, zone: tzinfo, now_s: float) -> float:
    """The next moment (epoch s, strictly after the local day's start) the clock reads ``HH:MM``."""
    hour, minute = (int(x) for x in at_hhmm.split(":"))
    here = datetime.fromtimestamp(now_s, zone)
    today = datetime(here.year, here.month, here.day, hour, minute, tzinfo=zone)
    return (
        today.timestamp() if today.timestamp() > now_s else (today + timedelta(days=1)).timestamp()
    )
