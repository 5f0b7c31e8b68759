"""What each channel says: an email with everything, an SMS that fits, a JSON document.

Rendering is pure (no I/O) and happens once, when a notification enters the
delivery outbox: the worker later sends exactly the text that was rendered, so a
retry hours later, or after a restart on newer code, says what the audit log
says it said.

The SMS is the hard one. The officer reads it on a phone at 11 pm, so it says
severity, kind, subject and site, then what / since / by how much, and always
the rule's citation: the citation is what makes it a legal notice and not a
gadget's beep, so the shortener cuts the description, never the citation
(see :func:`sms_text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any

from alerts.routing import Notification
from siltwatch.detections import alert_spec
from siltwatch.schema import Alert
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity, severity_rank

SMS_MAX_CHARS = 320
ELLIPSIS = "…"


@dataclass(frozen=True)
class SiteLabel:
    """Which site a message is about, and the zone its people read clocks in."""

    id: str
    name: str = ""
    zone: tzinfo = field(default=UTC)

    def title(self) -> str:
        return f"{self.name} ({self.id})" if self.name and self.name != self.id else self.id


def sms_length(text: str) -> int:
    """Characters as an SMS gateway counts them (UTF-16 code units: an emoji is two)."""
    return len(text.encode("utf-16-le")) // 2


def one_line(text: str) -> str:
    """Collapse whitespace (newlines included): a header or an SMS is one line."""
    return re.sub(r"\s+", " ", text).strip()


# --- email ---------------------------------------------------------------------


def email_subject(note: Notification, site: SiteLabel) -> str:
    a = note.alert
    return one_line(
        f"[siltwatch] {a.severity.upper()} {a.kind} {a.subject} {note.event} — site {site.title()}"
    )


def _evidence_lines(evidence: dict[str, Any], limit: int = 40) -> list[str]:
    """Top-level evidence as ``key: value`` lines; nested values as short JSON."""
    lines = []
    for key, value in list(evidence.items())[:limit]:
        if isinstance(value, dict | list):
            text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
            if len(text) > 160:
                text = text[:159] + ELLIPSIS
        else:
            text = str(value)
        lines.append(f"  {key}: {text}")
    if len(evidence) > limit:
        lines.append(f"  … and {len(evidence) - limit} more fields")
    return lines


def email_body(note: Notification, site: SiteLabel) -> str:
    """Plain text: the message, the rule, the evidence, the times; nothing needs HTML."""
    a = note.alert
    z = site.zone
    history = (
        ", ".join(f"{e.severity} at {local_time(e.at, z, weekday=True)}" for e in a.escalations)
        or "—"
    )
    resolved = local_time(a.resolved_at, z, weekday=True) if a.resolved_at else "— (still open)"
    lines = [
        f"{a.severity.upper()}: {a.kind} at {a.subject}, site {site.title()}",
        f"Event: {note.event} at {local_time(note.at, z, weekday=True)}",
        "",
        a.message,
        "",
        f"Rule: {a.rule}",
        "",
        f"Opened:   {local_time(a.opened_at, z, weekday=True)}",
        f"Resolved: {resolved}",
        f"Severity: {history}",
        "",
        "Evidence:",
        *_evidence_lines(a.evidence),
        "",
        f"Alert id: {a.id}",
        "Sent to: "
        + (", ".join(f"{c.name} ({c.role})" for c in note.recipients) or "nobody configured"),
        "",
        "-- siltwatch",
    ]
    return "\n".join(lines) + "\n"


# --- SMS -----------------------------------------------------------------------


def how_much(alert: Alert, zone: tzinfo = UTC) -> str:
    """By how much, from the kind's typed evidence (its description in
    siltwatch/detections/); '' for a kind or evidence this release does not know."""
    spec = alert_spec(alert.kind)
    return "" if spec is None else spec.how_much(alert.evidence, zone)


def _first_sentence(text: str) -> str:
    text = one_line(text)
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return match.group(1) if match else text


def _cut(text: str, budget: int) -> str:
    """``text`` in at most ``budget`` SMS chars, cut at a word with an ellipsis."""
    if sms_length(text) <= budget:
        return text
    if budget <= 0:
        return ""
    out = ""
    for ch in text:
        if sms_length(out + ch) > budget - 1:
            break
        out += ch
    cut = out.rsplit(" ", 1)[0] if " " in out[len(out) // 2 :] else out
    return cut.rstrip(" ,;:") + ELLIPSIS


def fit_with_citation(head: str, middle: str, rule: str, limit: int = SMS_MAX_CHARS) -> str:
    """``head middle Rule: rule.`` within ``limit``: the middle goes first, then the head.

    The citation survives whole whenever it leaves room for 60 characters of head
    (a citation longer than that is a misconfigured rule pack; then, and only then,
    it is cut too, so the SMS still goes out).
    """
    rule = one_line(rule)
    tail = f" Rule: {rule}" if rule else ""
    head, middle = one_line(head), one_line(middle)
    if sms_length(tail) > limit - 60:
        tail = _cut(tail, limit - 60)
    room = limit - sms_length(tail)
    head = _cut(head, room)
    room -= sms_length(head)
    middle = _cut(" " + middle, room) if middle and room > 8 else ""
    return head + middle + tail


def sms_text(note: Notification, site: SiteLabel, limit: int = SMS_MAX_CHARS) -> str:
    """The SMS for one notification (see module docstring); at most ``limit`` chars."""
    a = note.alert
    head = f"{a.severity.upper()} {note.event}: {a.kind} {a.subject}, {site.id}."
    parts = []
    amount = how_much(a, site.zone)
    if note.event == "resolved":
        parts.append(f"Cleared {local_time(a.resolved_at or note.at, site.zone, short=True)}.")
    else:
        parts.append(f"Since {local_time(a.opened_at, site.zone, short=True)}.")
    if amount:
        parts.append(amount + ".")
    parts.append(_first_sentence(a.message))
    return fit_with_citation(head, " ".join(parts), a.rule, limit)


@dataclass(frozen=True)
class Held:
    """What a held (rate-limited) SMS was about: enough to summarise it."""

    event: str
    severity: str
    kind: str
    subject: str
    rule: str


def sms_summary(
    held: Sequence[Held], site: SiteLabel, since: str, limit: int = SMS_MAX_CHARS
) -> str:
    """One SMS for many: counts, then the most severe items with their citations first.

    Critical items are listed before the rest and each carries its citation; what
    does not fit is counted in ``+N more``. Details are in email and the alert log.
    """
    # Most severe first (an unknown severity ranks below info), openings first within one.
    items = sorted(held, key=lambda h: (-severity_rank(h.severity), h.event != "opened"))
    crit = sum(1 for h in held if h.severity == Severity.CRITICAL)
    head = (
        f"siltwatch {site.id}: {len(held)} alert updates held by the SMS limit since "
        f"{local_time(since, site.zone, short=True)}"
        + (f" ({crit} critical)" if crit else "")
        + "."
    )
    closing = " Details by email/alert log."
    text = head
    shown = 0
    for i, h in enumerate(items):
        entry = f" {h.severity.upper()} {h.event} {h.kind} {h.subject} ({one_line(h.rule)});"
        rest = len(items) - i - 1
        more = f" +{rest} more." if rest else ""
        if sms_length(text + entry + more + closing) > limit:
            break
        text += entry
        shown += 1
    rest = len(items) - shown
    if rest:
        text += f" +{rest} more."
    if sms_length(text + closing) <= limit:
        text += closing
    return _cut(text, limit)


# --- webhook -------------------------------------------------------------------


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
