"""Email through a real SMTP server (aiosmtpd) on loopback, via the outbox and worker."""

from __future__ import annotations

import dataclasses
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import AuthResult

from alerts.channel import DeliveryFailed
from alerts.mail import EmailSink, SmtpSettings
from alerts.outbox import Outbox
from alerts.worker import DeliveryWorker, OutboxSink
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
    subject = str(msg["Subject"])
    for part in ("CRITICAL", "turbidity_contrast", "outfall-a", "opened", "lg-route9n"):
        assert part in subject
    body = msg.get_content()
    assert "Stop the discharge" in body  # the alert's message
    assert f"Rule: {CITATION}" in body
    assert "downstream_level: 170.58" in body  # evidence
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
