"""The daily digest: one email a morning with what is open and what falls due.

Alerts arrive as they happen; a digest is what a person reads with the first
coffee: every open alert of the site (severity first, with its citation) and
every inspection duty due within 48 hours or already overdue. One per contact
with an email and ``digest = true``, at ``[notifications] digest_at`` in the
site's local time, once a day across restarts: its delivery id is made of the site, the day and
the address, and the outbox never queues an id twice. A digest missed by more than six hours (the
service was down at 07:00) waits for the next morning rather than arriving
at dinner.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from alerts.channel import delivery_id
from alerts.outbox import Composed, NewDelivery, Outbox
from alerts.quiet import next_local
from siltwatch.config import Contact, SiteConfig
from siltwatch.schema import Alert, Duty
from siltwatch.timefmt import local_time, utc_iso
from siltwatch.vocabulary import severity_rank

log = logging.getLogger(__name__)

HORIZON = timedelta(hours=48)
LATE_LIMIT_S = 6 * 3600


class DigestSource(Protocol):
    """What the digest reads from the store (ingest/store/sqlite.py SqliteStore provides it)."""

    def open_alerts(self, site: str) -> list[Alert]: ...

    def duties_due(self, site: str, until: datetime) -> list[Duty]:
        """Open duties due before ``until``, overdue ones included."""
        ...


def digest_text(
    site: SiteConfig, alerts: Sequence[Alert], duties: Sequence[Duty], now: datetime
) -> tuple[str, str, str]:
    """The digest's subject, plain text and HTML (pure)."""
    zone = site.site.zone
    title = site.site.name or site.site.id
    alerts = sorted(alerts, key=lambda a: (-severity_rank(a.severity), a.opened_at))
    duties = sorted(duties, key=lambda d: d.due_at)
    subject = (
        f"[siltwatch] {title}: {len(alerts)} open alert{'s' * (len(alerts) != 1)}, "
        f"{len(duties)} dut{'ies' if len(duties) != 1 else 'y'} due — {local_time(now, zone)[:10]}"
    )
    lines = [f"Daily digest for {title} ({site.site.id}), {local_time(now, zone)}", ""]
    lines.append("Open alerts:" if alerts else "Open alerts: none")
    for a in alerts:
        lines.append(
            f"  - {a.severity.upper()} {a.kind} {a.subject}, since "
            f"{local_time(a.opened_at, zone)} — {a.rule}"
        )
    lines += ["", "Duties due within 48 h or overdue:" if duties else "Duties due: none"]
    for d in duties:
        late = " (OVERDUE)" if d.due_at <= now else ""
        lines.append(
            f"  - {d.kind} ({d.reason}) of {d.subject}, due {local_time(d.due_at, zone)}{late}"
            f" — {d.rule}"
        )
    text = "\n".join(lines) + "\n"
    rows_a = "".join(
        f"<tr><td><b>{html.escape(a.severity.upper())}</b></td><td>{html.escape(a.kind)}</td>"
        f"<td>{html.escape(a.subject)}</td><td>{html.escape(local_time(a.opened_at, zone))}</td>"
        f"<td>{html.escape(a.rule)}</td></tr>"
        for a in alerts
    )
    rows_d = "".join(
        f"<tr><td>{html.escape(d.kind)}</td><td>{html.escape(d.subject)}</td>"
        f"<td>{html.escape(local_time(d.due_at, zone))}{' <b>overdue</b>' if d.due_at <= now else ''}"
        f"</td><td>{html.escape(d.rule)}</td></tr>"
        for d in duties
    )
    body = (
        f"<h2>{html.escape(title)}: daily digest</h2>"
        f"<h3>Open alerts ({len(alerts)})</h3><table>{rows_a}</table>"
        f"<h3>Duties due within 48 h or overdue ({len(duties)})</h3><table>{rows_d}</table>"
    )
    return subject, text, f"<html><body>{body}</body></html>"


@dataclass(eq=False)
class Digests:
    """Enqueues each contact's digest email once a local day, at the site's digest time."""

    outbox: Outbox
    site: SiteConfig
    source: DigestSource
    clock: Callable[[], float]
    channel: str = "email"
    # True the first time any worker asks for a digest's key (the console's book, shared
    # by the workers of a fleet): after a takeover the new holder's outbox has no record
    # of the digest its predecessor already sent that day. None: this outbox decides.
    once: Callable[[str], bool] | None = None

    def _readers(self) -> list[Contact]:
        return [c for c in self.site.contacts if c.email and c.digest]

    def next_due(self) -> float | None:
        at = self.site.notifications.digest_at
        if not at or not self._readers():
            return None
        return next_local(at, self.site.site.zone, self.clock() - LATE_LIMIT_S)

    def run_due(self) -> int:
        """Enqueue today's digests that are due and not yet written; returns how many."""
        at = self.site.notifications.digest_at
        readers = self._readers()
        if not at or not readers:
            return 0
        now = self.clock()
        zone = self.site.site.zone
        due = next_local(at, zone, now - LATE_LIMIT_S)
        if not due <= now < due + LATE_LIMIT_S:
            return 0
        day = datetime.fromtimestamp(due, zone).date().isoformat()
        todo = [(c, self._ident(c, day)) for c in readers]
        todo = [(c, ident) for c, ident in todo if self.outbox.get(ident) is None]
        if self.once is not None:
            todo = [(c, ident) for c, ident in todo if self.once(ident)]
        if not todo:
            return 0
        when = datetime.fromtimestamp(now, zone)
        sid = self.site.site.id
        alerts = self.source.open_alerts(sid)
        duties = self.source.duties_due(sid, when + HORIZON)
        subject, text, page = digest_text(self.site, alerts, duties, when)
        for c, ident in todo:
            self._enqueue(c, ident, day, (subject, text, page), now)
        return len(todo)

    def _ident(self, c: Contact, day: str) -> str:
        return "digest-" + delivery_id(self.site.site.id, "digest", day, self.channel, str(c.email))

    def _enqueue(
        self, c: Contact, ident: str, day: str, parts: tuple[str, str, str], now: float
    ) -> None:
        assert c.email is not None
        subject, text, page = parts
        item = NewDelivery(
            id=ident,
            channel=self.channel,
            address=c.email,
            recipient=c.name,
            alert_id=f"digest-{day}",
            event=Composed.DIGEST,
            event_at=utc_iso(int(now * 1000)),
            kind="digest",
            severity="info",
            subject=self.site.site.id,
            rule="",
            message={"subject": subject, "body": text, "html": page},
        )
        self.outbox.enqueue([item], now)
        log.info("daily digest for %s queued (%s)", c.name, day)
