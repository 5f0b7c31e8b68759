"""What each channel says: an email with everything, an SMS in one segment, a JSON document.

Rendering is pure (no I/O, no clock: links and chart come in as arguments) and
happens once, when a notification enters the delivery outbox: the worker later
sends exactly what was rendered, so a retry hours later, or after a restart on
newer code, says what the audit log says it said.

**The SMS** is read on a phone at 11 pm and must be one segment: at most 160
characters of the GSM 7-bit alphabet (alerts/gsm7.py), never UCS-2, whatever
the data contain (every interpolated piece goes through ``to_gsm7``). It says
the severity (and why it comes now: a reminder, an escalation), what (the
kind's label), which subject, which site, by how much, since when (site local
time), the rule's citation, then ``ACK <code>`` and the acknowledgement link.
The citation is what makes it a legal notice and not a gadget's beep, and the
code is how the officer answers, so the shortener cuts the amount first, then
the site's name (to its id), then the link, the time, the words of the event,
the subject and the label, and never the citation or the code
(:func:`sms_text`).

**The email** carries the whole story in a plain-text part and an HTML part
(what, where, since, by how much, the rule, what to do, an evidence table read
from the kind's typed evidence, the acknowledge button and the console link,
and an inline plot when the channel has one). Its subject is the same for the
whole episode ("Re: " after the opening) so every client threads it; the
headers that thread it are set by alerts/mail.py.

The events: ``opened``, ``escalated`` (severity rose), ``resolved``, and the
follow-ups ``reminder`` (still critical, nobody acknowledged) and
``unacknowledged`` (the next person of the escalation chain, because nobody
answered in time). See :class:`alerts.routing.NoticeEvent`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Any

from alerts.gsm7 import EXTENSION, SEGMENT_SEPTETS, gsm7_septets, to_gsm7
from alerts.pngchart import ChartData
from alerts.routing import NoticeEvent, Notification
from siltwatch.detections import alert_spec
from siltwatch.detections.base import short_number
from siltwatch.latemarks import found_late, withdrawn_reason
from siltwatch.naming import (
    OVERDUE_SUFFIX,
    alert_subject,
    day_time,
    duty_of,
    names_of,
    overdue_words,
    span,
)
from siltwatch.schema import Alert
from siltwatch.timefmt import duration, local_time
from siltwatch.vocabulary import Severity, severity_rank

if TYPE_CHECKING:
    from siltwatch.config import SiteConfig

SMS_MAX_SEPTETS = SEGMENT_SEPTETS  # one segment, GSM-7
GSM_ELLIPSIS = "..."  # "…" is not in the GSM alphabet: it would make the SMS UCS-2


@dataclass(frozen=True)
class SiteLabel:
    """Which site a message is about, and the zone its people read clocks in."""

    id: str
    name: str = ""
    zone: tzinfo = field(default=UTC)
    # identifier -> what people call it (siltwatch/naming.py ``names_of``)
    names: Mapping[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, site: SiteConfig) -> SiteLabel:
        """The label of a loaded site file, with the names of its areas and stations."""
        return cls(site.site.id, site.site.name, site.site.zone, names_of(site))

    def title(self) -> str:
        return f"{self.name} ({self.id})" if self.name and self.name != self.id else self.id

    @property
    def short_name(self) -> str:
        """The name up to its first comma ("Route 9N mixed-use"), else the id."""
        return self.name.split(",")[0].strip() or self.id


def one_line(text: str) -> str:
    """Collapse whitespace (newlines included): a header or an SMS is one line."""
    return re.sub(r"\s+", " ", text).strip()


def kind_label(kind: str) -> str:
    """What people call a kind (its description's label), or the kind in words."""
    spec = alert_spec(kind)
    return spec.label if spec is not None else kind.replace("_", " ")


def how_much(alert: Alert, zone: tzinfo = UTC) -> str:
    """By how much, from the kind's typed evidence (its description in
    siltwatch/detections/); '' for a kind or evidence this release does not know."""
    spec = alert_spec(alert.kind)
    return "" if spec is None else spec.how_much(alert.evidence, zone)


def subject_words(alert: Alert, site: SiteLabel) -> str:
    """What the alert is about, as people name it (siltwatch/naming.py): an area's name,
    "stabilization of Topsoil stockpile by West Brook", never a duty id or a storm key."""
    return alert_subject(alert, site.names, site.zone)


def title(alert: Alert, site: SiteLabel) -> str:
    """The alert in a few words: "turbidity contrast at outfall-a", "overdue:
    stabilization of Topsoil stockpile by West Brook"."""
    if duty_of(alert) is not None:
        return f"overdue: {subject_words(alert, site)}"
    return f"{kind_label(alert.kind)} at {subject_words(alert, site)}"


def amount_at(note: Notification, site: SiteLabel) -> str:
    """By how much, as it stands when this notification goes out: a duty's lateness is
    counted to the notification's time (never the "0 h overdue" of its opening)."""
    return overdue_words(note.alert, note.at, site.zone) or how_much(note.alert, site.zone)


def headline(note: Notification) -> str:
    """Severity and why now, for an email subject or banner: "WARNING", "NOW CRITICAL",
    "CRITICAL, found late", "withdrawn: late readings show it did not happen"."""
    a = note.alert
    reason = withdrawn_reason(a)
    if reason is not None:
        return f"withdrawn: {reason}"
    rose = len({e.severity for e in a.escalations}) > 1 or note.event == NoticeEvent.ESCALATED
    late = ", found late" if found_late(a) else ""
    return f"{'NOW ' if rose else ''}{a.severity.upper()}{late}"


def _when(value: datetime | str) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def clock_time(value: datetime | str, zone: tzinfo, now: datetime | str | None = None) -> str:
    """A time for an SMS: ``14:05`` on the day of ``now``, ``Tue 14:05`` within the
    week before it, else ``05-05 14:05`` (site local time, no zone name: it costs
    septets and the site's people live in it)."""
    here = _when(value).astimezone(zone)
    if now is None:
        return here.strftime("%H:%M")
    today = _when(now).astimezone(zone)
    if here.date() == today.date():
        return here.strftime("%H:%M")
    if 0 < (today.date() - here.date()).days < 7:
        return here.strftime("%a %H:%M")
    return here.strftime("%m-%d %H:%M")


def waited(note: Notification) -> str:
    """How long the episode has gone unacknowledged: from its opening to this
    notification ("30 min", "4 h 30 min")."""
    seconds = (_when(note.at) - _when(note.alert.opened_at)).total_seconds()
    return duration(max(0.0, seconds))


def event_phrase(note: Notification) -> str:
    """Why this message comes now, for the email ("escalated to you: ...")."""
    sev = note.alert.severity.upper()
    match note.event:
        case NoticeEvent.OPENED:
            return "opened"
        case NoticeEvent.ESCALATED:
            return f"escalated to {sev}"
        case NoticeEvent.RESOLVED:
            return "withdrawn" if withdrawn_reason(note.alert) else "cleared"
        case NoticeEvent.REMINDER:
            return f"STILL {sev}, not acknowledged"
        case NoticeEvent.UNACKNOWLEDGED:
            return f"escalated to you: not acknowledged after {waited(note)}"
    return note.event


# --- what to do, and the evidence, for people -----------------------------------------

# Imperative openings of the detectors' closing sentences ("Stop the discharge, ...",
# "Record the corrective action ..."): what to do is said in those.
_IMPERATIVES = frozenset({
    "Stop", "Inspect", "Record", "Clean", "Cover", "Give", "Check", "Keep", "Restore",
    "Remove", "Repair", "Replace", "Fix", "Call", "Schedule", "Stabilize", "Install",
    "Clear", "Move", "Bring", "Close", "Complete", "Create", "Push", "Set", "Restart",
    "Withdraw", "Raise", "Open", "Reduce", "Seed", "Submit", "File", "Notify", "Visit",
    "Confirm", "Calibrate", "Recalibrate", "Charge", "Swap", "Free", "Look", "Contact",
})  # fmt: skip


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", one_line(text)) if s]


def what_to_do(message: str) -> str:
    """The closing sentences of an alert's message that tell people what to do, or ''."""
    sentences = _sentences(message)
    todo: list[str] = []
    while sentences and sentences[-1].split(" ", 1)[0] in _IMPERATIVES:
        todo.insert(0, sentences.pop())
    return " ".join(todo)


_UNIT_SUFFIXES = (
    ("_per_h", "/h"),
    ("_m3", "m³"),
    ("_mm", "mm"),
    ("_m", "m"),
    ("_in", "in"),
    ("_ft", "ft"),
    ("_h", "h"),
    ("_v", "V"),
    ("_ntu", "NTU"),
    ("_pct", "%"),
    ("_ms", "ms"),
)
_ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")
_MEASURED = ("level", "limit", "excess")  # in the evidence's own ``unit``
# How a detector works, not what happened: left to the alert log ("Spike flagged in
# window: 0", a tolerance, a model's name mean nothing to the person who must act).
_INTERNAL = re.compile(
    r"flagged|ignored|(^|_)window|sustain|travel_time|tolerance|baseline|mode(l)?$|refills|"
    r"rises|_fraction$|^limit_basis$|^type$|^sensor$|^upstream$|^downstream$"
)
_FT = 0.3048  # metres a foot (siltwatch/units.py)
_IMPERIAL = ("ft", "in")  # an evidence ``unit`` that makes metres read as feet


def _in_site_units(key: str, value: float, unit: str) -> tuple[str, str] | None:
    """(label key, text) for a length or volume the analytics keep in metres, in the
    site's own units when its sensor reads feet or inches (an imperial site reads ft
    and ft³, never m beside ft³); None when ``key`` is neither."""
    imperial = unit in _IMPERIAL
    if key.endswith("_m3"):
        shown = f"{_number(value / _FT**3)} ft³" if imperial else f"{_number(value)} m³"
        return key[:-3], shown
    if key.endswith("_m"):
        shown = f"{_number(value / _FT)} ft" if imperial else f"{_number(value)} m"
        return key[:-2], shown
    return None


def _number(value: float) -> str:
    return short_number(value, 2) or "0"


def _evidence_value(key: str, value: Any, unit: str, zone: tzinfo) -> tuple[str, str] | None:
    """(label, text) for one evidence field, or None for what a person cannot read in
    one line (a nested record: it stays in the alert log and the console)."""
    label = key
    if isinstance(value, bool):
        return _label(label), "yes" if value else "no"
    if isinstance(value, str):
        text = local_time(value, zone, weekday=True) if _ISO_TIME.match(value) else value
        return _label(label), text
    if isinstance(value, int | float):
        if key.endswith("_s"):
            return _label(key[:-2]), duration(float(value))
        if "fraction" in key:
            return _label(label), f"{value * 100:.0f} %"
        metric = _in_site_units(key, float(value), unit)
        if metric is not None:
            return _label(metric[0]), metric[1]
        for suffix, suffix_unit in _UNIT_SUFFIXES:
            if key.endswith(suffix):
                return _label(key[: -len(suffix)]), f"{_number(value)} {suffix_unit}"
        shown = _number(value) if isinstance(value, float) else str(value)
        if unit and any(word in key for word in _MEASURED):
            shown += f" {unit}"
        return _label(label), shown
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return _label(label), ", ".join(str(v) for v in value) or "none"
    return None


def _label(key: str) -> str:
    words = key.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


@dataclass(frozen=True)
class EvidenceTable:
    """The evidence as people read it: rows, and the names of nested records left out."""

    rows: tuple[tuple[str, str], ...]
    left_out: tuple[str, ...] = ()


def evidence_table(alert: Alert, zone: tzinfo, limit: int = 24) -> EvidenceTable:
    """The kind's declared evidence fields first (its typed model in
    siltwatch/detections/), then the further details; times in the site's zone,
    durations and fractions in words, values with their units."""
    evidence = dict(alert.evidence)
    spec = alert_spec(alert.kind)
    declared: list[str] = []
    if spec is not None and spec.read_evidence(evidence) is not None:
        declared = [k for k in spec.evidence.model_fields if k in evidence]
    order = declared + [k for k in evidence if k not in declared]
    unit = str(evidence.get("unit") or "")
    rows: list[tuple[str, str]] = []
    left_out: list[str] = []
    for key in order:
        value = evidence[key]
        if key == "unit" or value is None or (key not in declared and _INTERNAL.search(key)):
            continue
        row = _evidence_value(key, value, unit, zone)
        if row is None:
            left_out.append(key.replace("_", " "))
        elif len(rows) < limit:
            rows.append(row)
        else:
            left_out.append(key.replace("_", " "))
    return EvidenceTable(tuple(rows), tuple(left_out))


# --- email -----------------------------------------------------------------------------


def email_subject(note: Notification, site: SiteLabel) -> str:
    """The severity first, then what and where: "[siltwatch] WARNING: sediment-trap
    capacity at trap-1, Route 9N mixed-use (lg-route9n)". An escalation gets a new
    subject ("NOW CRITICAL: ...") so it shows in an inbox; every other later message
    answers the latest one ("Re: "), unless its recipients hear of the episode for the
    first time in it. The thread itself is kept by the headers (alerts/mail.py: the
    same References for the whole episode). An episode found late says when it was
    ("found late, May 5 12:56-20:58"): that is the news in it."""
    a = note.alert
    head = headline(note)
    if found_late(a) and withdrawn_reason(a) is None:
        head += ", " + (
            span(a.opened_at, a.resolved_at, site.zone)
            if a.resolved_at is not None
            else "since " + day_time(a.opened_at, site.zone)
        )
    base = one_line(f"[siltwatch] {head}: {title(a, site)}, {site.title()}")
    opens = note.event in (NoticeEvent.OPENED, NoticeEvent.ESCALATED) or note.first_told
    return base if opens else f"Re: {base}"


@dataclass(frozen=True)
class Answer:
    """The links a message offers: acknowledge (signed, for one person) and the console."""

    ack_url: str | None = None
    alert_url: str | None = None


def _facts(note: Notification, site: SiteLabel) -> list[tuple[str, str]]:
    """What / where / since / by how much / rule / what to do: the email's head rows."""
    a = note.alert
    z = site.zone
    since = local_time(a.opened_at, z, weekday=True)
    reason = withdrawn_reason(a)
    if reason is not None:
        since += f"; withdrawn: {reason}"
    elif a.resolved_at is not None:
        since += f", cleared {local_time(a.resolved_at, z, weekday=True)}"
    if found_late(a):
        since += " (found late)"
    rows = [
        ("What", f"{kind_label(a.kind)} ({a.severity})"),
        ("Where", f"{subject_words(a, site)}, site {site.title()}"),
        ("Since", since),
    ]
    amount = amount_at(note, site)
    if amount:
        rows.append(("By how much", amount))
    rows.append(("Rule", one_line(a.rule)))
    todo = what_to_do(a.message)
    if todo and reason is None:
        rows.append(("What to do", todo))
    return rows


def email_body(note: Notification, site: SiteLabel, answer: Answer | None = None) -> str:
    """Plain text: the message, the rule, what to do, the links, the evidence, the times."""
    a = note.alert
    z = site.zone
    answer = answer or Answer()
    history = (
        ", ".join(f"{e.severity} at {local_time(e.at, z, weekday=True)}" for e in a.escalations)
        or "—"
    )
    resolved = local_time(a.resolved_at, z, weekday=True) if a.resolved_at else "— (still open)"
    facts = dict(_facts(note, site))
    late = " (found late)" if found_late(a) else ""
    lines = [
        f"{headline(note)}: {title(a, site)}, site {site.title()}",
        f"Event: {event_phrase(note)}{late} at {local_time(note.at, z, weekday=True)}",
        "",
        a.message,
        "",
    ]
    if "By how much" in facts:
        lines.append(f"By how much: {facts['By how much']}")
    lines.append(f"Rule: {a.rule}")
    if "What to do" in facts:
        lines.append(f"What to do: {facts['What to do']}")
    lines.append("")
    if answer.ack_url:
        lines.append(f"Acknowledge: {answer.ack_url}")
    if answer.alert_url:
        lines.append(f"Console:     {answer.alert_url}")
    if answer.ack_url or answer.alert_url:
        lines.append("")
    lines += [
        f"Opened:   {local_time(a.opened_at, z, weekday=True)}",
        f"Resolved: {resolved}",
        f"Severity: {history}",
        "",
        "Evidence:",
    ]
    table = evidence_table(a, z)
    lines += [f"  {label}: {text}" for label, text in table.rows]
    if table.left_out:
        lines.append(f"  Further detail in the alert log: {', '.join(table.left_out)}")
    recipients = ", ".join(f"{c.name} ({c.role})" for c in note.recipients)
    lines += ["", f"Alert id: {a.id}", f"Sent to: {recipients or 'nobody configured'}"]
    lines += ["", "-- siltwatch"]
    return "\n".join(lines) + "\n"


_SEVERITY_COLOURS = {
    Severity.CRITICAL: "#b00020",
    Severity.WARNING: "#a35a00",
    Severity.INFO: "#1a5fb4",
}
_CLEARED_COLOUR = "#2e7d32"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _rows_html(rows: Sequence[tuple[str, str]], label_width: str = "9em") -> str:
    cells = "".join(
        f'<tr><th style="text-align:left;vertical-align:top;padding:3px 12px 3px 0;'
        f'width:{label_width};color:#555;font-weight:normal">{_e(k)}</th>'
        f'<td style="padding:3px 0;vertical-align:top">{_e(v)}</td></tr>'
        for k, v in rows
    )
    return f'<table style="border-collapse:collapse;font-size:14px">{cells}</table>'


def _buttons_html(answer: Answer) -> str:
    links = []
    if answer.ack_url:
        links.append(
            f'<a href="{_e(answer.ack_url)}" style="display:inline-block;background:#1a5fb4;'
            "color:#ffffff;padding:9px 18px;border-radius:4px;text-decoration:none;"
            'font-weight:bold;margin-right:14px">Acknowledge</a>'
        )
    if answer.alert_url:
        links.append(f'<a href="{_e(answer.alert_url)}" style="color:#1a5fb4">Open in console</a>')
    return f'<p style="margin:16px 0">{"".join(links)}</p>' if links else ""


def _chart_html(chart: ChartData, cid: str, zone: tzinfo) -> str:
    """The drawn plot (its legend, axes and local times are in the image), at most 600 px
    wide and shrinking to a phone's width."""
    times = [t for _, pts in chart.series for t, _ in pts]
    span = (
        f"{local_time(min(times), zone)} to {local_time(max(times), zone)}" if times else "no data"
    )
    width, height = chart.shown_size()
    return (
        f'<img src="cid:{_e(cid)}" width="{width}" height="{height}" alt="{_e(chart.title)}, '
        f'{_e(span)}" style="display:block;border:0;max-width:100%;height:auto">'
        f'<p style="margin:4px 0;font-size:12px;color:#555">{_e(span)}</p>'
    )


def email_html(
    note: Notification,
    site: SiteLabel,
    answer: Answer | None = None,
    chart: ChartData | None = None,
    chart_cid: str | None = None,
) -> str:
    """The HTML part: the same story laid out to read on a phone, inline styles only
    (mail clients drop style sheets); every value escaped."""
    a = note.alert
    z = site.zone
    answer = answer or Answer()
    colour = (
        _CLEARED_COLOUR
        if note.event == NoticeEvent.RESOLVED
        else _SEVERITY_COLOURS.get(a.severity, "#444")
    )
    table = evidence_table(a, z)
    banner = f"{headline(note)} — {event_phrase(note)}"
    parts = [
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head>',
        '<body style="margin:0;padding:12px;font-family:Arial,Helvetica,sans-serif;'
        'color:#222;max-width:640px">',
        f'<div style="background:{colour};color:#ffffff;padding:8px 12px;font-weight:bold">'
        f"{_e(banner)} &middot; {_e(local_time(note.at, z, weekday=True))}</div>",
        f'<h2 style="margin:14px 0 2px;font-size:20px">{_e(_label(title(a, site)))}</h2>',
        f'<p style="margin:0 0 10px;color:#555">site {_e(site.title())}</p>',
        _rows_html(_facts(note, site)),
        _buttons_html(answer),
        f'<p style="font-size:14px;line-height:1.4">{_e(a.message)}</p>',
        _chart_html(chart, chart_cid, z) if chart is not None and chart_cid else "",
        '<h3 style="margin:18px 0 4px;font-size:16px">Evidence</h3>',
        _rows_html(table.rows, "14em"),
        (
            f'<p style="font-size:12px;color:#777">Further detail in the alert log: '
            f"{_e(', '.join(table.left_out))}</p>"
            if table.left_out
            else ""
        ),
        f'<p style="font-size:12px;color:#777;margin-top:18px">Alert {_e(a.id)} &middot; '
        "sent to "
        + _e(", ".join(f"{c.name} ({c.role})" for c in note.recipients) or "nobody configured")
        + " &middot; siltwatch</p>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


# --- SMS -------------------------------------------------------------------------------


def gsm_cut(text: str, budget: int) -> str:
    """GSM-7 ``text`` in at most ``budget`` septets, cut at a word with "..."; '' when
    fewer than 4 septets are left (a stub says nothing)."""
    if gsm7_septets(text) <= budget:
        return text
    if budget < 4:
        return ""
    out, used = "", 0
    for ch in text:
        cost = 2 if ch in EXTENSION else 1
        if used + cost > budget - len(GSM_ELLIPSIS):
            break
        out, used = out + ch, used + cost
    if " " in out[len(out) // 2 :]:
        out = out.rsplit(" ", 1)[0]
    return out.rstrip(" ,;:.") + GSM_ELLIPSIS


def _gsm(text: str) -> str:
    return to_gsm7(one_line(text))


@dataclass(frozen=True)
class _Sms:
    """The pieces of one SMS, each already GSM-7; ``heads``: the event's words, longest
    first (the shortener steps down through them)."""

    heads: tuple[str, ...]
    what: str
    subject: str
    site: str
    amount: str
    when: str
    rule: str
    code: str
    link: str

    def text(self) -> str:
        text = " ".join(p for p in (self.heads[0], self.what, self.subject) if p)
        if self.site:
            text += f", {self.site}"
        detail = ", ".join(p for p in (self.amount, self.when) if p)
        text += f": {detail}." if detail else "."
        if self.rule:
            text += f" {self.rule}" + ("" if self.rule.endswith(".") else ".")
        if self.code:
            text += f" ACK {self.code}"
        if self.link:
            text += f" {self.link}"
        return text

    def over(self, limit: int) -> int:
        return gsm7_septets(self.text()) - limit


def _sms_heads(note: Notification) -> tuple[str, ...]:
    """The event's words in an SMS, longest first."""
    sev = note.alert.severity.upper()
    reason = withdrawn_reason(note.alert)
    if reason is not None:
        return (f"Withdrawn: {reason}. Was {sev}", f"Withdrawn: {reason}.")
    late = found_late(note.alert)
    match note.event:
        case NoticeEvent.OPENED:
            return (f"FOUND LATE: {sev}",) if late else (sev,)
        case NoticeEvent.ESCALATED:
            return (f"NOW {sev}, found late:",) if late else (f"NOW {sev}",)
        case NoticeEvent.RESOLVED:
            if late:
                return (f"FOUND LATE, ended: {sev}", f"FOUND LATE: {sev}")
            return ("CLEARED",)
        case NoticeEvent.REMINDER:
            return (f"STILL {sev}, not acknowledged:", f"STILL {sev}, no ACK:", f"STILL {sev}")
        case NoticeEvent.UNACKNOWLEDGED:
            d = waited(note)
            return (
                f"Escalated to you: not acknowledged after {d}. {sev}",
                f"No ACK after {d}: {sev}",
                f"No ACK: {sev}",
            )
    return (f"{sev} {note.event}",)


def _step_down_head(s: _Sms, _over: int) -> _Sms:
    return replace(s, heads=s.heads[1:]) if len(s.heads) > 1 else s


Step = Callable[[_Sms, int], _Sms]  # (the SMS, septets over the limit) -> a shorter one


def _shorter(text: str, over: int) -> str:
    """``text`` cut by ``over`` septets (see :func:`gsm_cut`)."""
    return gsm_cut(text, gsm7_septets(text) - over)


def sms_text(
    note: Notification,
    site: SiteLabel,
    *,
    code: str | None = None,
    link: str | None = None,
    limit: int = SMS_MAX_SEPTETS,
) -> str:
    """The SMS for one notification: GSM-7, at most ``limit`` septets (one segment);
    ``code``/``link`` from alerts/acklinks.py when the channel has them (see the module
    docstring for what is said and what is cut first)."""
    a = note.alert
    duty = duty_of(a)
    due = a.evidence.get("due_at") if duty is not None else None
    amount = amount_at(note, site)
    if isinstance(due, str):  # "missed" or "4.5 days overdue", then "due May 6 11:00"
        amount = amount.split(" (")[0] if "overdue" in amount else "missed"
        when = f"due {day_time(due, site.zone)}"
    elif note.event == NoticeEvent.RESOLVED and a.resolved_at is not None:
        when = span(a.opened_at, a.resolved_at, site.zone)
        amount = _peak_of(amount)
    else:
        when = "since " + day_time(a.opened_at, site.zone)
    sms = _Sms(
        heads=tuple(_gsm(h) for h in _sms_heads(note)),
        what="" if duty is not None else _gsm(kind_label(a.kind)),
        subject=_gsm(subject_words(a, site)),
        site=_gsm(site.short_name),
        amount=_gsm(amount),
        when=_gsm(when),
        rule=_gsm(sms_citation(a.rule)),
        code=_gsm(code or ""),
        link=_gsm(link or ""),
    )
    # The amount's parenthesis, the site's name (to its id), the citation's words before
    # its section, the event's words, the amount; then cut the subject, the label, the
    # site id, the citation; the time (with its date), the code and the link stay.
    steps: tuple[Step, ...] = (
        lambda s, _o: replace(s, amount=s.amount.split(" (")[0]),
        lambda s, _o: replace(s, site=_gsm(site.id)),
        lambda s, _o: replace(s, rule=section_only(s.rule)),
        *([_step_down_head] * (len(sms.heads) - 1)),
        lambda s, _o: replace(s, amount=""),
        lambda s, over: replace(s, subject=_shorter(s.subject, over)),
        lambda s, over: replace(s, what=_shorter(s.what, over)),
        lambda s, over: replace(s, site=_shorter(s.site, over)),
        # A citation this long is a misconfigured rule pack; the SMS still goes out.
        lambda s, over: replace(s, rule=_shorter(s.rule, over)),
        lambda s, _o: replace(s, when=""),
    )
    text = _fit(sms, steps, limit).text()
    return text if gsm7_septets(text) <= limit else gsm_cut(text, limit)


def _peak_of(amount: str) -> str:
    """For an episode that ended, how bad it got: "peak 170.6 vs 54.3" from "26.7 NTU vs
    limit 33.7 (peak 170.6 vs 54.3)"; the amount as it is when it names no peak."""
    found = re.search(r"\((peak [^()]*)\)", amount)
    return found.group(1) if found else amount


def sms_citation(rule: str) -> str:
    """The rule's citation for an SMS: the law's section, without siltwatch's own words
    about it ("due per siltwatch default (96.05(B)(17)(c) names no deadline)" is for the
    email and the report; a text has no room for a disclaimer). '' when siltwatch's
    default is all there is: no law to cite."""
    clauses = [c.strip() for c in one_line(rule).split(";")]
    kept = [re.sub(r"\s*\([^()]*siltwatch[^()]*\)", "", c) for c in clauses if c]
    return "; ".join(c for c in kept if c and "siltwatch" not in c.lower())


_JURISDICTION = re.compile(r"^[^§\d;]*?(?=§|\d)")


def section_only(citation: str) -> str:
    """A citation without the words before its section ("Lake George §148-10 A" ->
    "§148-10 A", "site proxy for Lake George §148-9 B" -> "§148-9 B"): the SMS names
    the site, whose town it is. Unchanged when it has no section to keep."""
    return _JURISDICTION.sub("", citation, count=1) or citation


def _fit(sms: _Sms, steps: Sequence[Step], limit: int) -> _Sms:
    """Apply ``steps`` in order until the SMS fits, then give back what a later cut made
    room for, most important first: when the link had to go anyway, the amount and
    the site's name (cut before it) may fit again."""
    undone: list[tuple[str, Any]] = []  # (field, its value before the cut)
    for step in steps:
        over = sms.over(limit)
        if over <= 0:
            break
        cut = step(sms, over)
        undone += [(f.name, getattr(sms, f.name)) for f in fields(sms)
                   if getattr(sms, f.name) != getattr(cut, f.name)]  # fmt: skip
        sms = cut
    for name, before in reversed(undone):
        change: dict[str, Any] = {name: before}
        candidate = replace(sms, **change)
        if candidate.over(limit) <= 0:
            sms = candidate
    return sms


@dataclass(frozen=True)
class Held:
    """What a held (rate-limited) SMS was about: enough to summarise it."""

    event: str
    severity: str
    kind: str
    subject: str
    rule: str


def sms_summary(
    held: Sequence[Held],
    site: SiteLabel,
    since: str,
    limit: int = SMS_MAX_SEPTETS,
    link: str | None = None,
) -> str:
    """One SMS for many, in one segment: counts, then the most severe items with their
    citations first, and the site's page in the console (``link``) last.

    Critical items are listed before the rest and each carries its citation; what
    does not fit is counted in ``+N more``. Details are in email and the alert log.
    """
    tail = f" {_gsm(link)}" if link else ""
    limit -= gsm7_septets(tail)
    # Most severe first (an unknown severity ranks below info), openings first within one.
    items = sorted(held, key=lambda h: (-severity_rank(h.severity), h.event != "opened"))
    crit = sum(1 for h in held if h.severity == Severity.CRITICAL)
    crit_words = f" ({crit} critical)" if crit else ""
    closing = "" if link else " Details by email."  # the link leads to them
    text = ""
    for name in (site.short_name, site.id):  # the id when the name leaves no room for items
        head = _gsm(
            f"{name}: {len(held)} updates held since {day_time(since, site.zone)}{crit_words}."
        )
        text, shown = _summary_items(head, items, limit)
        if shown:
            break
    if gsm7_septets(text + closing) <= limit:
        text += closing
    return gsm_cut(text, limit) + tail


def _summary_items(head: str, items: Sequence[Held], limit: int) -> tuple[str, int]:
    """``head`` and as many items as fit, then "+N more."; (the text, items shown)."""
    text = head
    shown = 0
    for i, h in enumerate(items):
        more = f" +{len(items) - i - 1} more." if len(items) - i - 1 else ""
        # A duty alert's subject is the duty's id: its label says what it is about.
        subject = "" if h.kind.endswith(OVERDUE_SUFFIX) else f" {h.subject}"
        event = "" if h.event == "opened" else f" {h.event}"  # an opening is the default
        what = f"{h.severity.upper()}{event} {kind_label(h.kind)}"
        entries = [f"{what}{subject}"]
        if not shown:  # the first item, the most severe, is worth dropping its subject for
            entries.append(what)
        citation = section_only(sms_citation(h.rule))
        cited = f" ({citation});" if citation else ";"
        fitting = [
            e
            for e in (" " + _gsm(entry + cited) for entry in entries)
            if gsm7_septets(text + e + more) <= limit
        ]
        if not fitting:
            break
        text += fitting[0]
        shown += 1
    rest = len(items) - shown
    if rest:
        text += f" +{rest} more."
    return text, shown


# --- webhook ---------------------------------------------------------------------------


def webhook_document(note: Notification, site: SiteLabel, delivery_id: str) -> dict[str, Any]:
    """The JSON a webhook receives: versioned, with the delivery id to dedupe on."""
    return {
        "v": 1,
        "type": "notification",
        "delivery_id": delivery_id,
        "site": site.id,
        "site_name": site.name,
        "event": note.event,
        "at": note.at,
        "alert": note.alert.model_dump(mode="json"),
        "recipients": [{"name": c.name, "role": c.role} for c in note.recipients],
    }
