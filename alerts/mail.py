"""Email over SMTP: the channel that carries the whole story (message, rule, evidence).

Plain text, because the officer's mail client, a ticketing system and a printout
must all read it. ``security``: ``none`` (a relay on the same host), ``starttls``
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

import smtplib
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Literal

from alerts.channel import DeliveryFailed, DirectSend, Message, delivery_id
from alerts.http import is_loopback_host
from alerts.messages import email_body, email_subject
from alerts.routing import Notification

Security = Literal["none", "starttls", "tls"]


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


class EmailSink(DirectSend[SmtpSettings]):
    """Email channel; as a Sink, one email per notification to every recipient with an email."""

    name = "email"

    def addresses(self, note: Notification) -> list[tuple[str, str]]:
        return [(c.name, c.email) for c in note.recipients if c.email]

    def render(self, note: Notification, address: str, delivery: str) -> Message:
        return {"subject": email_subject(note, self.site), "body": email_body(note, self.site)}

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
        msg["X-Siltwatch-Delivery"] = delivery
        msg.set_content(message["body"])
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
