"""Email over SMTP: the channel that carries the whole story (message, rule, evidence).

Each email is ``multipart/alternative``: a plain-text part that the officer's
mail client, a ticketing system and a printout can all read, and an HTML part
(alerts/messages.py) with the acknowledge button and the console link when the
channel has ``links`` (alerts/acklinks.py), and a small plot when it has a
``chart_for`` provider: a PNG (alerts/pngchart.py) in a ``multipart/related``
beside the HTML, shown by ``<img src="cid:...">`` with no fetch from the network.

**Threads.** The Message-ID is the delivery id (``<id@from-domain>``), so a
duplicate sent after a crash collapses in mail systems. Every later email of
the episode to the same address (escalated, resolved, reminder, unacknowledged)
carries ``In-Reply-To`` and ``References`` with the Message-ID that the
episode's ``opened`` email to that address had, computed from the delivery id
function (alerts/channel.py ``thread_root``), no table; its subject is the
opening's with ``Re: ``. One thread per episode per recipient.

``security``: ``none`` (a relay on the same host), ``starttls``
(submission, port 587) or ``tls`` (SMTPS, port 465). The password comes from a
file (see alerts/notify_config.py), never from the command line or the TOML.

AUTH PLAIN and LOGIN carry the password merely base64-encoded, so ``login`` is
only ever called on a connection that *is* TLS at that moment (checked on the
socket, not inferred from the settings): a misconfiguration or a server that
does not offer STARTTLS can then never leak the password. The single exception
is a relay on loopback with ``allow_plaintext_auth`` set, where nobody is on the
path; NOTIFY.toml refuses anything else at load time already.

SMTP says what a failure means: 4xx is "try later", 5xx is "never" (RFC 5321
§4.2.1). A refused connection or a dropped one is "try later".
"""

from __future__ import annotations

import base64
import logging
import smtplib
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Literal

from alerts.channel import DeliveryFailed, DirectSend, Message, delivery_id, thread_root
from alerts.http import is_loopback_host
from alerts.messages import email_body, email_html, email_subject
from alerts.pngchart import ChartData, render_png
from alerts.routing import NoticeEvent, Notification
from siltwatch.schema import Alert
from siltwatch.vocabulary import Severity

log = logging.getLogger(__name__)

Security = Literal["none", "starttls", "tls"]
# (site id, alert) -> what to plot, or None; wired to the store by serve.
ChartFor = Callable[[str, Alert], ChartData | None]


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    from_addr: str
    security: Security = "starttls"
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # never in a log line or repr
    ca_file: Path | None = None  # a private CA (self-signed relay); None: the system store
    timeout_s: float = 30.0
    allow_plaintext_auth: bool = False  # AUTH without TLS, to a loopback relay only

    @property
    def plaintext_auth_allowed(self) -> bool:
        """May the password cross a connection without TLS? Only to a loopback relay."""
        return self.allow_plaintext_auth and is_loopback_host(self.host)


def classify_smtp(exc: Exception) -> DeliveryFailed:
    """Map an smtplib/socket failure to retry-or-not (5xx permanent, the rest transient)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        detail = "; ".join(
            f"{addr}: {code} {msg.decode(errors='replace') if isinstance(msg, bytes) else msg}"
            for addr, (code, msg) in exc.recipients.items()
        )
        permanent = bool(codes) and all(code >= 500 for code in codes)
        return DeliveryFailed(f"recipient refused: {detail}", permanent=permanent)
    if isinstance(exc, smtplib.SMTPResponseException):
        msg = exc.smtp_error
        text = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
        return DeliveryFailed(
            f"SMTP {exc.smtp_code} {text}".strip(), permanent=exc.smtp_code >= 500
        )
    if isinstance(exc, smtplib.SMTPNotSupportedError):
        # e.g. STARTTLS or AUTH not offered: the configuration and server disagree.
        return DeliveryFailed(f"SMTP server does not support it: {exc}", permanent=True)
    return DeliveryFailed(f"{type(exc).__name__}: {exc}", permanent=False)


@dataclass(eq=False)
class EmailSink(DirectSend[SmtpSettings]):
    """Email channel; as a Sink, one email per notification to every recipient with an email.

    ``chart_for(site_id, alert)``: the data of the plot the HTML part shows (None: no
    plot); called once, when the message is rendered. A provider that fails costs
    the plot, never the email.
    """

    name = "email"
    chart_for: ChartFor | None = field(default=None, kw_only=True)

    def addresses(self, note: Notification) -> list[tuple[str, str]]:
        return [(c.name, c.email) for c in note.recipients if c.email]

    def render(self, note: Notification, address: str, delivery: str) -> Message:
        """Subject, text, HTML, the thread it belongs to and the chart (base64), as the
        outbox stores them; :meth:`build` makes the email from exactly this."""
        a = note.alert
        answer = self.answer(note, address)
        message: Message = {
            "subject": email_subject(note, self.site),
            "body": email_body(note, self.site, answer),
            "alert_id": a.id,
            "event": note.event,
            "severity": str(a.severity),
        }
        if note.event != NoticeEvent.OPENED:
            message["thread"] = thread_root(a, self.name, address)
        chart = self._chart(a)
        cid = f"chart.{delivery or 'direct'}@siltwatch.invalid"
        message["html"] = email_html(note, self.site, answer, chart, cid if chart else None)
        if chart is not None:
            message["chart_cid"] = cid
            message["chart_png"] = base64.b64encode(render_png(chart)).decode("ascii")
        return message

    def _chart(self, alert: Alert) -> ChartData | None:
        if self.chart_for is None:
            return None
        try:
            chart = self.chart_for(self.site.id, alert)
        except Exception:  # the plot is a courtesy: the email goes without it
            log.exception("chart for alert %s failed; the email goes without a plot", alert.id)
            return None
        return chart if chart is not None and chart.has_data() else None

    def send(self, note: Notification) -> None:
        to = [addr for _, addr in self.addresses(note)]
        if not to:
            return
        ident = delivery_id(note.alert.id, note.event, note.at, self.name, ",".join(to))
        message = self.render(note, ",".join(to), ident)
        self._send(to, message, ident)

    def transmit(self, address: str, message: Message, delivery: str) -> None:
        self._send([address], message, delivery)

    def build(self, to: Sequence[str], message: Message, delivery: str) -> EmailMessage:
        msg = EmailMessage()
        msg["From"] = self.settings.from_addr
        msg["To"] = ", ".join(to)
        msg["Subject"] = message["subject"]
        when = self.clock() if self.clock is not None else None
        msg["Date"] = formatdate(when, localtime=False, usegmt=True)
        # The Message-ID is stable per delivery: a duplicate after a crash between send
        # and record carries the same id, which mail systems and clients collapse.
        domain = self.settings.from_addr.rpartition("@")[2] or "siltwatch.invalid"
        msg["Message-ID"] = (
            f"<{delivery}@{domain}>" if delivery else make_msgid(domain="siltwatch.invalid")
        )
        thread = message.get("thread")
        if thread:  # RFC 5322 §3.6.4: the episode's opening to this address is the parent
            msg["In-Reply-To"] = f"<{thread}@{domain}>"
            msg["References"] = f"<{thread}@{domain}>"
        msg["X-Siltwatch-Delivery"] = delivery
        for key, header in (("alert_id", "Alert"), ("event", "Event"), ("severity", "Severity")):
            if message.get(key):
                msg[f"X-Siltwatch-{header}"] = message[key]
        if message.get("severity") == Severity.CRITICAL:
            msg["Importance"] = "high"
            msg["X-Priority"] = "1"
        msg.set_content(message["body"])
        if message.get("html"):
            msg.add_alternative(message["html"], subtype="html")
            png, cid = message.get("chart_png"), message.get("chart_cid")
            if png and cid:
                html_part = msg.get_body(preferencelist=("html",))
                assert html_part is not None  # added just above
                html_part.add_related(
                    base64.b64decode(png), "image", "png", cid=f"<{cid}>", filename="chart.png"
                )
        return msg

    def _tls(self) -> ssl.SSLContext:
        ca = self.settings.ca_file
        return ssl.create_default_context(cafile=str(ca) if ca else None)

    def _send(self, to: Sequence[str], message: Message, delivery: str) -> None:
        s = self.settings
        msg = self.build(to, message, delivery)
        try:
            smtp: smtplib.SMTP
            if s.security == "tls":
                smtp = smtplib.SMTP_SSL(s.host, s.port, timeout=s.timeout_s, context=self._tls())
            else:
                smtp = smtplib.SMTP(s.host, s.port, timeout=s.timeout_s)
            with smtp:
                if s.security == "starttls":
                    smtp.starttls(context=self._tls())
                if s.username:
                    if not _is_tls(smtp) and not s.plaintext_auth_allowed:
                        raise DeliveryFailed(
                            f"refusing to send the SMTP password to {s.host}:{s.port} over a "
                            "connection without TLS; set security to starttls or tls",
                            permanent=True,
                        )
                    smtp.login(s.username, s.password or "")
                refused = smtp.send_message(msg, from_addr=s.from_addr, to_addrs=list(to))
        except (smtplib.SMTPException, OSError) as exc:
            raise classify_smtp(exc) from exc
        if refused:  # some, not all, recipients refused: say so (only in multi-recipient sends)
            raise DeliveryFailed(
                "some recipients refused: "
                + ", ".join(f"{a}: {c}" for a, (c, _) in refused.items()),
                permanent=all(c >= 500 for c, _ in refused.values()),
            )


def _is_tls(smtp: smtplib.SMTP) -> bool:
    """Is the session encrypted right now (SMTPS, or after a successful STARTTLS)?"""
    return isinstance(smtp.sock, ssl.SSLSocket)
