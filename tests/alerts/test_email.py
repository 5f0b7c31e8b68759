"""Email through a real SMTP server (aiosmtpd) on loopback, via the outbox and worker."""

from __future__ import annotations

import dataclasses
import re
import shutil
import ssl
import struct
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import AuthResult

from alerts.acklinks import Links, link_problem, parse_link_token
from alerts.channel import DeliveryFailed
from alerts.mail import EmailSink, SmtpSettings
from alerts.outbox import Outbox
from alerts.pngchart import ChartData
from alerts.routing import NoticeEvent, Notification
from alerts.worker import DeliveryWorker, OutboxSink
from console.charts.draw import png_bytes
from console.charts.model import Chart, RefLine, Series
from siltwatch.schema import Alert
from tests.alerts.helpers import (
    CITATION,
    LOOPBACK,
    OFFICER,
    OPERATOR,
    SITE,
    FakeClock,
    SmtpHandler,
    SmtpServer,
    note,
)
from tests.conftest import require_server
from tests.servers import free_port

pytestmark = pytest.mark.integration


def email_setup(
    tmp_path: Path, port: int, clock: FakeClock
) -> tuple[Outbox, OutboxSink, DeliveryWorker]:
    channel = EmailSink(SmtpSettings(LOOPBACK, port, "siltwatch@town.example", "none"), SITE, clock)
    outbox = Outbox(tmp_path / "outbox.sqlite3")
    return (
        outbox,
        OutboxSink(outbox, [channel], clock),
        DeliveryWorker(outbox, [channel], clock=clock, site=SITE),
    )


@contextmanager
def officer_notified(
    tmp_path: Path, handler: SmtpHandler
) -> Iterator[tuple[FakeClock, Outbox, DeliveryWorker]]:
    """An SMTP server answering as ``handler`` says, and one notification to the officer
    in the outbox for it (not yet sent); the server stops on exit."""
    clock = FakeClock()
    with SmtpServer(free_port(), handler) as server:
        outbox, sink, worker = email_setup(tmp_path, server.port, clock)
        sink.send(note(recipients=(OFFICER,)))
        yield clock, outbox, worker


def test_each_recipient_gets_the_alert_with_subject_body_and_citation(tmp_path: Path) -> None:
    clock = FakeClock()
    with SmtpServer(free_port()) as server:
        outbox, sink, worker = email_setup(tmp_path, server.port, clock)
        sink.send(note())
        assert worker.run_once() == 2
    got = {tuple(rcpt): msg for _, rcpt, msg in server.handler.received}
    assert OFFICER.email and OPERATOR.email
    assert set(got) == {(OFFICER.email,), (OPERATOR.email,)}
    msg = got[(OFFICER.email,)]
    assert msg["To"] == OFFICER.email
    assert msg["From"] == "siltwatch@town.example"
    assert str(msg["Subject"]) == (
        "[siltwatch] CRITICAL: turbidity contrast at outfall-a, Route 9N mixed-use (lg-route9n)"
    )
    assert msg["Importance"] == "high" and msg["X-Siltwatch-Severity"] == "critical"
    plain = msg.get_body(("plain",))
    assert plain is not None
    body = plain.get_content()
    assert body.startswith("CRITICAL: turbidity contrast at outfall-a")
    assert "Stop the discharge" in body  # the alert's message
    assert f"Rule: {CITATION}" in body
    assert "  Downstream level: 170.58 NTU" in body  # evidence, read from its model
    assert "Opened:   Tue 2026-05-05 16:26 UTC" in body
    assert "Resolved: — (still open)" in body
    assert [e.result for e in outbox.audit() if e.address == OFFICER.email] == ["queued", "sent"]
    outbox.close()


def test_as_a_plain_sink_one_email_goes_to_every_recipient_with_an_email() -> None:
    nobody = OPERATOR.model_copy(update={"email": None, "name": "No Mail"})
    with SmtpServer(free_port()) as server:
        sink = EmailSink(SmtpSettings(LOOPBACK, server.port, "sw@town.example", "none"), SITE)
        sink.send(note(recipients=(OFFICER, OPERATOR, nobody)))
    assert len(server.handler.received) == 1
    _, rcpt, msg = server.handler.received[0]
    assert OFFICER.email and OPERATOR.email
    assert sorted(rcpt) == sorted([OFFICER.email, OPERATOR.email])
    assert str(msg["To"]) == f"{OFFICER.email}, {OPERATOR.email}"


def test_a_5xx_is_a_permanent_failure_in_the_audit_log(tmp_path: Path) -> None:
    handler = SmtpHandler(rcpt_reply="550 5.1.1 mailbox unavailable")
    with officer_notified(tmp_path, handler) as (clock, outbox, worker):
        assert worker.run_once() == 1
        clock.advance(86_400)
        assert worker.run_once() == 0  # not retried
    (d,) = outbox.deliveries()
    assert d.state == "failed" and d.attempts == 1
    last = outbox.audit(d.id)[-1]
    assert (last.result, last.recipient, last.channel) == ("failed", OFFICER.name, "email")
    assert last.error is not None and "550" in last.error and "mailbox unavailable" in last.error
    outbox.close()


def test_a_4xx_is_retried(tmp_path: Path) -> None:
    handler = SmtpHandler(data_reply="451 4.3.0 try again later")
    with officer_notified(tmp_path, handler) as (clock, outbox, worker):
        worker.run_once()
        (d,) = outbox.deliveries()
        assert d.state == "pending" and "451" in (d.last_error or "")
        handler.data_reply = None
        clock.advance(60)
        assert worker.run_once() == 1
    assert outbox.deliveries()[0].state == "sent"
    assert len(handler.received) == 1
    outbox.close()


def test_server_down_is_retried_on_schedule_then_delivered_once_it_is_up(tmp_path: Path) -> None:
    clock = FakeClock()
    port = free_port()
    outbox, sink, worker = email_setup(tmp_path, port, clock)
    sink.send(note(recipients=(OFFICER,)))
    assert worker.run_once() == 1  # connection refused
    (d,) = outbox.deliveries()
    assert d.state == "pending" and d.attempts == 1
    assert d.next_attempt_at == clock.t + 60  # the first delay of the schedule
    clock.advance(59)
    assert worker.run_once() == 0  # not yet due: nothing sleeps, nothing hammers
    clock.advance(1)
    assert worker.run_once() == 1  # still down: attempt 2, next after 3 min
    assert outbox.deliveries()[0].next_attempt_at == clock.t + 180
    with SmtpServer(port) as server:
        clock.advance(180)
        assert worker.run_once() == 1
        clock.advance(86_400)
        assert worker.run_once() == 0
    assert len(server.handler.received) == 1
    d = outbox.deliveries()[0]
    assert (d.state, d.attempts) == ("sent", 3)
    assert [e.result for e in outbox.audit(d.id)] == ["queued", "retry", "retry", "sent"]
    outbox.close()


def make_cert(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1 (the test's private CA is the cert itself),
    and the server's TLS context with it; skips without openssl."""
    require_server("openssl", shutil.which("openssl") is not None)
    cert, key = folder / "smtp.crt", folder / "smtp.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    return cert, tls


def test_starttls_and_login(tmp_path: Path) -> None:
    """Submission as a town's mail server offers it: STARTTLS required, then AUTH."""
    cert, tls = make_cert(tmp_path)
    logins: list[tuple[bytes, bytes]] = []

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        logins.append((data.login, data.password))
        ok = data.login == b"siltwatch" and data.password == b"pw"
        return AuthResult(success=ok, handled=ok)  # handled=False: aiosmtpd answers 535

    settings = SmtpSettings(
        LOOPBACK, free_port(), "siltwatch@town.example", "starttls", "siltwatch", "pw", cert
    )
    server = SmtpServer(
        settings.port,
        tls_context=tls,
        require_starttls=True,
        auth_required=True,
        authenticator=authenticator,
    )
    with server:
        EmailSink(settings, SITE).send(note(recipients=(OFFICER,)))
        bad = dataclasses.replace(settings, password="wrong", timeout_s=5)
        with pytest.raises(DeliveryFailed) as info:
            EmailSink(bad, SITE).send(note(recipients=(OFFICER,)))
    # smtplib tries PLAIN, then LOGIN, before it gives up on a wrong password.
    assert logins[0] == (b"siltwatch", b"pw") and set(logins[1:]) == {(b"siltwatch", b"wrong")}
    assert len(server.handler.received) == 1
    assert info.value.permanent and "535" in info.value.reason  # bad credentials: 5xx


def test_smtps(tmp_path: Path) -> None:
    """Implicit TLS (port 465 style): the whole session is encrypted from the first byte."""
    cert, tls = make_cert(tmp_path)
    settings = SmtpSettings(LOOPBACK, free_port(), "sw@town.example", "tls", ca_file=cert)
    with SmtpServer(settings.port, ssl_context=tls) as server:
        EmailSink(settings, SITE).send(note(recipients=(OFFICER,)))
        plain = dataclasses.replace(settings, security="none", timeout_s=0.5)
        with pytest.raises(DeliveryFailed) as info:  # plain text to a TLS port: no greeting
            EmailSink(plain, SITE).send(note(recipients=(OFFICER,)))
    assert len(server.handler.received) == 1
    assert not info.value.permanent


class AuthSpy:
    """An aiosmtpd authenticator that records every AUTH attempt (and accepts it)."""

    def __init__(self) -> None:
        self.logins: list[tuple[bytes, bytes]] = []

    def __call__(self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        self.logins.append((data.login, data.password))
        return AuthResult(success=True)


def plaintext_auth_server(spy: AuthSpy) -> SmtpServer:
    """A careless server: it offers AUTH PLAIN/LOGIN on a connection without TLS."""
    return SmtpServer(free_port(), authenticator=spy, auth_require_tls=False)


def test_auth_is_never_sent_without_tls(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """security = "none" with a password: the server offers AUTH, we refuse to send it."""
    spy = AuthSpy()
    clock = FakeClock()
    with plaintext_auth_server(spy) as server:
        settings = SmtpSettings(
            LOOPBACK, server.port, "siltwatch@town.example", "none", "siltwatch", "hunter2-pw"
        )
        channel = EmailSink(settings, SITE, clock)
        outbox = Outbox(tmp_path / "outbox.sqlite3")
        OutboxSink(outbox, [channel], clock).send(note(recipients=(OFFICER,)))
        DeliveryWorker(outbox, [channel], clock=clock, site=SITE).run_once()
        with pytest.raises(DeliveryFailed) as info:
            channel.send(note(recipients=(OFFICER,)))
    assert spy.logins == []  # the password never crossed the wire
    assert server.handler.received == []
    assert info.value.permanent
    expected = (
        f"refusing to send the SMTP password to {LOOPBACK}:{server.port} over a connection "
        "without TLS; set security to starttls or tls"
    )
    assert info.value.reason == expected
    (d,) = outbox.deliveries()
    assert (d.state, d.last_error) == ("failed", expected)  # what the audit log shows
    assert expected in caplog.text and "hunter2-pw" not in caplog.text
    outbox.close()


def test_a_loopback_relay_may_take_auth_in_clear_text_when_allowed() -> None:
    spy = AuthSpy()
    with plaintext_auth_server(spy) as server:
        settings = SmtpSettings(
            LOOPBACK, server.port, "sw@town.example", "none", "siltwatch", "pw",
            allow_plaintext_auth=True,
        )  # fmt: skip
        EmailSink(settings, SITE).send(note(recipients=(OFFICER,)))
    assert spy.logins == [(b"siltwatch", b"pw")]
    assert len(server.handler.received) == 1


def test_allow_plaintext_auth_does_not_reach_past_loopback() -> None:
    """The flag alone is not enough: the send-time check wants a loopback host too."""
    settings = SmtpSettings(
        "smtp.town.example", 25, "sw@town.example", "none", "siltwatch", "pw",
        allow_plaintext_auth=True,
    )  # fmt: skip
    assert not settings.plaintext_auth_allowed
    assert "pw" not in repr(settings)


# --- threads, HTML, the acknowledge link and the inline chart --------------------------

LINKS = Links("https://sw.town.example", b"k" * 32, SITE.id, (OPERATOR.name, OFFICER.name))


def turbidity_chart(site_id: str, alert: Alert) -> ChartData | None:
    """The chart provider serve wires to the store; here, a plume over the limit."""
    assert site_id == SITE.id
    down = tuple((1_778_000_000_000 + i * 60_000, 20.0 + (i % 120)) for i in range(600))
    up = tuple((t, 25.0) for t, _ in down)
    drawn = Chart("Turbidity outfall-a", "NTU", [Series("downstream", down), Series("upstream", up)],
                  [RefLine("limit", 54.3)], start_ms=down[0][0], end_ms=down[-1][0])  # fmt: skip
    return ChartData("Turbidity outfall-a", "NTU", (("downstream", down), ("upstream", up)),
                     (("limit", 54.3),), png=png_bytes(drawn), width=440, height=250)  # fmt: skip


def episode_emails(tmp_path: Path) -> dict[str, list[EmailMessage]]:
    """The opened and the resolved email of one episode, per recipient, through the outbox
    and the worker to a real SMTP server."""
    clock = FakeClock()
    with SmtpServer(free_port()) as server:
        channel = EmailSink(
            SmtpSettings(LOOPBACK, server.port, "siltwatch@town.example", "none"), SITE, clock,
            links=LINKS, chart_for=turbidity_chart,
        )  # fmt: skip
        outbox = Outbox(tmp_path / "outbox.sqlite3")
        sink = OutboxSink(outbox, [channel], clock)
        worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE)
        sink.send(
            note(event=NoticeEvent.OPENED, at="2026-05-05T16:26:00Z")
        )  # the alert's opened_at
        worker.run_once()
        clock.advance(8 * 3600)
        sink.send(note(event="resolved", at="2026-05-06T00:58:00Z", resolved=True))
        worker.run_once()
        outbox.close()
    got: dict[str, list[EmailMessage]] = {}
    for _, rcpt, msg in server.handler.received:
        got.setdefault(rcpt[0], []).append(msg)
    return got


def test_an_episode_is_one_thread_per_recipient(tmp_path: Path) -> None:
    got = episode_emails(tmp_path)
    assert OFFICER.email and OPERATOR.email and set(got) == {OFFICER.email, OPERATOR.email}
    ids = set()
    for opened, resolved in got.values():
        assert opened["X-Siltwatch-Event"] == "opened" and resolved["X-Siltwatch-Event"] == (
            "resolved"
        )
        assert opened["In-Reply-To"] is None and opened["References"] is None
        assert resolved["In-Reply-To"] == opened["Message-ID"]
        assert resolved["References"] == opened["Message-ID"]
        assert str(resolved["Subject"]) == f"Re: {opened['Subject']}"
        ids.add(opened["Message-ID"])
    assert len(ids) == 2  # one thread per recipient


def test_an_escalation_gets_a_new_subject_in_the_same_thread(tmp_path: Path) -> None:
    """Opened as a warning, then critical: the inbox shows "NOW CRITICAL" as a new subject,
    and the mail client keeps it in the episode's thread (the same References)."""
    clock = FakeClock()
    with SmtpServer(free_port()) as server:
        channel = EmailSink(
            SmtpSettings(LOOPBACK, server.port, "siltwatch@town.example", "none"), SITE, clock
        )
        outbox = Outbox(tmp_path / "outbox.sqlite3")
        sink = OutboxSink(outbox, [channel], clock)
        worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE)
        opened = note(event=NoticeEvent.OPENED, at="2026-05-05T16:26:00Z", severity="warning")
        sink.send(opened)
        worker.run_once()
        clock.advance(3600)
        was = opened.alert.model_dump(mode="json")
        up = Alert.model_validate(
            {
                **was,
                "severity": "critical",
                "escalations": [
                    *was["escalations"],
                    {"at": "2026-05-05T17:26:00Z", "severity": "critical"},
                ],
            }
        )
        sink.send(Notification(NoticeEvent.ESCALATED, "2026-05-05T17:26:00Z", up, (OFFICER,)))
        worker.run_once()
        outbox.close()
    mails = [m for _f, rcpt, m in server.handler.received if rcpt == [OFFICER.email]]
    first, second = mails
    assert str(first["Subject"]).startswith("[siltwatch] WARNING: turbidity contrast")
    assert str(second["Subject"]).startswith("[siltwatch] NOW CRITICAL: turbidity contrast")
    assert second["References"] == first["Message-ID"] == second["In-Reply-To"]
    assert second["Importance"] == "high"


def test_the_email_has_text_and_html_with_the_ack_link_and_an_inline_png(tmp_path: Path) -> None:
    resolved = episode_emails(tmp_path)[str(OFFICER.email)][1]
    assert resolved.get_content_type() == "multipart/alternative"
    plain, related = resolved.iter_parts()
    assert plain.get_content_type() == "text/plain"
    assert related.get_content_type() == "multipart/related"
    html_part, image = related.iter_parts()
    assert html_part.get_content_type() == "text/html" and image.get_content_type() == "image/png"
    html = html_part.get_content()
    assert "CRITICAL — cleared" in html and "Turbidity contrast at outfall-a</h2>" in html
    assert f"{CITATION}" in html.replace("&#x27;", "'")
    ack = re.search(r'href="(https://sw\.town\.example/a/([A-Z0-9]{22}))"[^>]*>Acknowledge<', html)
    assert ack is not None, html
    token = parse_link_token(ack.group(2))
    assert LINKS.contact_of(token) == OFFICER.name  # the officer's own link
    assert link_problem(LINKS.secret, token, SITE.id, note().alert.id, T0_PLUS_DAY) is None
    assert f'href="{LINKS.alert_url(note().alert.id)}"' in html and "Open in console" in html
    assert f"Acknowledge: {ack.group(1)}" in plain.get_content()
    cid = re.search(r'<img src="cid:([^"]+)"', html)
    assert cid is not None and image["Content-ID"] == f"<{cid.group(1)}>"
    png = image.get_content()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (880, 500)  # 2 px per CSS px
    # shown at 440 px, shrinking to a phone's width
    assert 'width="440"' in html and "max-width:100%" in html


def test_without_links_or_chart_the_html_has_neither(tmp_path: Path) -> None:
    clock = FakeClock()
    with SmtpServer(free_port()) as server:
        EmailSink(SmtpSettings(LOOPBACK, server.port, "sw@town.example", "none"), SITE, clock).send(
            note(recipients=(OFFICER,))
        )
    ((_, _, msg),) = server.handler.received
    html_part = msg.get_body(("html",))
    assert html_part is not None
    html = html_part.get_content()
    assert "Acknowledge</a>" not in html and "cid:" not in html
    assert "170.6 NTU vs limit 54.3" in html  # by how much, still


T0_PLUS_DAY = 1_778_000_000.0 + 86_400
