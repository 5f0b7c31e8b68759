"""People's names for what an alert or a duty is about, and times with their date.

An alert's ``subject`` is an identifier made for machines: a duty id
(``du-dad6971507091ccf``), a storm key (``gauge-yard@2026-05-08T12:25:00Z``),
a milestone (``clearing_completed``). A text, an email subject or a console
heading read by a person must say what it is about instead ("stabilization of
Topsoil stockpile by West Brook", "inspection after the storm of May 8
08:25"), in the site's time zone and with the date: a message read days later
must not make its reader guess which 06:00 it meant.

Everything here is pure (no clock, no I/O): the names come from the site file
(:func:`names_of`) and the times with the alert or the notification.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Any

from siltwatch.timefmt import duration

if TYPE_CHECKING:
    from siltwatch.config import SiteConfig
    from siltwatch.schema import Alert

OVERDUE_SUFFIX = "_overdue"  # a duty's missed deadline: ``<duty kind>_overdue``
STORM_SEPARATOR = "@"  # a storm's key: ``<gauge>@<ISO start>``

# What each duty reason is called; the subject follows ("of <area>", "after <milestone>").
_REASON_WORDS: Mapping[str, str] = {
    "routine": "routine inspection",
    "quarterly": "quarterly inspection",
    "storm": "inspection",  # "inspection after the storm of May 8 08:25"
    "design_storm": "inspection",
    "phase": "inspection",
}


def names_of(site: SiteConfig) -> dict[str, str]:
    """Identifier -> what people call it, from the site file (areas, stations, the
    site itself); an identifier with no name is left out (it is shown as it is)."""
    names: dict[str, str] = {}
    if site.site.name:
        names[site.site.id] = site.site.name.split(",")[0].strip()
    for station in site.stations:
        if station.name:
            names[station.id] = station.name
    for area in site.areas:
        if area.name:
            names[area.id] = area.name
    return names


def _when(value: datetime | str) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def day_time(value: datetime | str, zone: tzinfo) -> str:
    """A moment with its date, short: ``May 8 08:25`` (site local time, no year, no
    zone name: an SMS pays for every character and the site's people live in it)."""
    moment = _when(value)
    if moment is None:
        return str(value)
    here = moment.astimezone(zone)
    return f"{here:%b} {here.day} {here:%H:%M}"


def span(start: datetime | str, end: datetime | str, zone: tzinfo) -> str:
    """From-to with the date once when both fall on one day: ``May 5 12:26-20:58``."""
    a, b = _when(start), _when(end)
    if a is None or b is None:
        return f"{day_time(start, zone)}-{day_time(end, zone)}"
    if a.astimezone(zone).date() == b.astimezone(zone).date():
        return f"{day_time(a, zone)}-{b.astimezone(zone):%H:%M}"
    return f"{day_time(a, zone)} to {day_time(b, zone)}"


# What a phase inspection's ``<area>:<site-log event>`` key says happened to the area
# (analytics/inspection_phase.py), as the head of "... of <the area's name>".
_AREA_EVENT_WORDS: Mapping[str, str] = {
    "disturbed": "disturbance",
    "cleared": "clearing",
    "graded": "grading",
    "completed": "completion of work",
    "temporary_cover": "temporary cover",
    "seeded": "seeding",
    "permanent_cover": "permanent cover",
}


# Subjects the engine gives to what is not a place: the site's inspection records as a
# whole (analytics/inspection_record.py ``SUBJECT``; tests/foundation/test_naming.py).
_SUBJECT_WORDS: Mapping[str, str] = {"inspection-records": "the inspection records"}


def thing_name(subject: str, names: Mapping[str, str], zone: tzinfo) -> str:
    """One identifier in words: its name from the site file, a storm key as "the storm
    of May 8 08:25", an area's event as "grading of Access drive" (a phase
    inspection's key ``drive:graded``), a milestone's underscores as spaces, anything
    else as it is."""
    if subject in names:
        return names[subject]
    if subject in _SUBJECT_WORDS:
        return _SUBJECT_WORDS[subject]
    _head, sep, tail = subject.partition(STORM_SEPARATOR)
    if sep and _when(tail) is not None:
        return f"the storm of {day_time(tail, zone)}"
    if sep:
        return subject
    area, colon, event = subject.partition(":")
    if colon and area in names and event in _AREA_EVENT_WORDS:
        return f"{_AREA_EVENT_WORDS[event]} of {names[area]}"
    return subject.replace("_", " ")


_AFTER_REASONS = frozenset({"storm", "design_storm", "phase"})  # inspections after an event


def duty_name(kind: str, reason: str, subject: str, names: Mapping[str, str], zone: tzinfo) -> str:
    """A duty as people name it: "stabilization of Topsoil stockpile by West Brook",
    "inspection after the storm of May 8 08:25", "routine inspection of Route 9N
    mixed-use", "inspection after clearing completed"."""
    thing = thing_name(subject, names, zone)
    if kind != "inspection":
        return f"{kind.replace('_', ' ')} of {thing}"
    words = _REASON_WORDS.get(reason, f"{reason.replace('_', ' ')} inspection")
    if reason in _AFTER_REASONS:
        return f"{words} after {thing}"
    return f"{words} of {thing}"


def duty_of(alert: Alert) -> tuple[str, str, str] | None:
    """(duty kind, reason, subject) of a ``<duty kind>_overdue`` alert, from its
    evidence; None for any other alert (or evidence this release does not know)."""
    ev: Mapping[str, Any] = alert.evidence
    if not alert.kind.endswith(OVERDUE_SUFFIX):
        return None
    reason, subject = ev.get("reason"), ev.get("subject")
    if not isinstance(reason, str) or not isinstance(subject, str):
        return None
    return alert.kind[: -len(OVERDUE_SUFFIX)], reason, subject


def alert_subject(alert: Alert, names: Mapping[str, str], zone: tzinfo) -> str:
    """What the alert is about, in words (never a duty id or a storm key)."""
    duty = duty_of(alert)
    if duty is not None:
        return duty_name(*duty, names, zone)
    return thing_name(alert.subject, names, zone)


def alert_thing(alert: Alert, names: Mapping[str, str], zone: tzinfo) -> str:
    """What the alert is about as the "at" of a heading ("stabilization overdue at
    Topsoil stockpile by West Brook"): for a duty alert the duty's own subject in
    words (its area, its storm, the site), never the duty's id."""
    duty = duty_of(alert)
    return thing_name(duty[2] if duty is not None else alert.subject, names, zone)


def alert_place(alert: Alert, names: Mapping[str, str], zone: tzinfo) -> str:
    """Where or after what, for a heading: "at Topsoil stockpile by West Brook" ("…
    stabilization overdue at …"), but "after grading of Access drive" and "after the
    storm of May 8 08:25" for an inspection that follows a phase or a storm."""
    duty = duty_of(alert)
    word = "after" if duty is not None and duty[1] in _AFTER_REASONS else "at"
    return f"{word} {alert_thing(alert, names, zone)}"


def overdue_words(alert: Alert, at: datetime | str, zone: tzinfo) -> str:
    """How late a duty alert is at ``at`` (not at its opening, when it was 0 h): "4.5
    days overdue (due May 6 11:00)", or "due May 6 11:00, not done" at its deadline;
    '' when the alert is not about a duty."""
    due_at = alert.evidence.get("due_at")
    if duty_of(alert) is None or not isinstance(due_at, str):
        return ""
    due, now = _when(due_at), _when(at)
    if due is None or now is None:
        return ""
    if alert.resolved_at is not None:
        now = min(now, alert.resolved_at)
    late_s = (now - due).total_seconds()
    if late_s < 60:
        return f"due {day_time(due, zone)}, not done"
    return f"{duration(late_s)} overdue (due {day_time(due, zone)})"
