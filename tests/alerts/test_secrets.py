"""No credential reaches a log line, the delivery outbox or its audit log.

A chat service's webhook URL is its credential, the SMS gateway's auth token and
the SMTP password are ours. Deliveries succeed, fail for good, and find the server
down; servers echo what we sent them, as real ones do. Then the captured logs and
the raw bytes of the outbox's SQLite files are searched for the secrets.
"""

from __future__ import annotations

import base64
import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import AuthResult

from alerts.channel import Channel, DeliveryFailed
from alerts.http import redact_url
from alerts.mail import EmailSink, SmtpSettings
from alerts.outbox import NewDelivery, Outbox
from alerts.routing import NoticeEvent
from alerts.sms import SmsSettings, SmsSink
from alerts.webhook import WebhookSettings, WebhookSink
from alerts.worker import DeliveryWorker, OutboxSink
from tests.alerts.helpers import (
    LOOPBACK,
    OFFICER,
    SITE,
    FakeClock,
    HttpServer,
    Request,
    SmtpServer,
    note,
    twilio_check,
)
from tests.servers import free_port

pytestmark = pytest.mark.integration

HOOK_PATH = "/services/T0123/B456/xyzzySECRETpath?token=qq-SECRET-query"
SECRET_PARTS = ("xyzzySECRETpath", "qq-SECRET-query", "T0123/B456")
SID, TOKEN, FROM = "AC0123456789abcdef", "tok-SECRET-4711", "+15185550100"


def stored_bytes(folder: Path) -> bytes:
    """Everything SQLite wrote for the outbox: the database, its WAL and shared memory."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob("outbox.sqlite3*")))


def assert_nowhere(secrets: Iterable[str], log_text: str, folder: Path) -> None:
    """None of ``secrets`` is in the captured log or in what SQLite wrote for the outbox."""
    stored = stored_bytes(folder)
    for secret in secrets:
        assert secret not in log_text, secret
        assert secret.encode() not in stored, secret


def deliver_once(outbox: Outbox, channel: Channel, clock: FakeClock) -> None:
    """One notification to the officer through the outbox, and one run of the worker."""
    OutboxSink(outbox, [channel], clock).send(note(recipients=(OFFICER,)))
    DeliveryWorker(outbox, [channel], clock=clock, site=SITE).run_once()


@pytest.fixture
def outbox(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Outbox:
    """The outbox in ``tmp_path`` (where :func:`stored_bytes` reads it), every log line
    captured; the test closes it before it reads the bytes."""
    caplog.set_level(logging.DEBUG)
    return Outbox(tmp_path / "outbox.sqlite3")


def echo_unknown_hook(req: Request) -> str | None:
    """A receiver that answers 400 naming the hook it did not find (Slack does similar)."""
    return f"no_such_hook: {req.path}" if "alert-1" in req.body.decode() else None


def test_the_webhook_url_is_redacted_in_logs_outbox_and_audit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, outbox: Outbox
) -> None:
    clock = FakeClock()
    with HttpServer(check=echo_unknown_hook, ok_status=204) as receiver:
        url = receiver.url + HOOK_PATH
        hook = WebhookSink(WebhookSettings(url, b"s", allow_insecure_http=True), SITE, clock)
        down_url = f"http://{LOOPBACK}:{free_port()}{HOOK_PATH}"
        down = WebhookSink(WebhookSettings(down_url, b"s", allow_insecure_http=True), SITE, clock)
        down.name = "webhook-down"
        channels = [hook, down]
        sink = OutboxSink(outbox, channels, clock)
        worker = DeliveryWorker(outbox, channels, clock=clock, site=SITE)
        sink.send(note(recipients=(OFFICER,), id="alert-1"))  # refused for good (400)
        sink.send(note(recipients=(OFFICER,), id="alert-2"))  # accepted (204)
        worker.run_once()  # and both to the receiver that is down: retried
        with pytest.raises(DeliveryFailed):  # a direct send logs its failure too
            down.send(note(recipients=(OFFICER,), id="alert-3"))
    # The receiver got the real URL, query included ...
    assert [r.path for r in receiver.requests] == [HOOK_PATH, HOOK_PATH]
    # ... the outbox and the audit log hold its redacted form, which still says where.
    shown = redact_url(url)
    assert shown.startswith(f"{receiver.url}/…(redacted, sha256:") and shown.endswith(")")
    rows = {(d.channel, d.alert_id): d for d in outbox.deliveries()}
    assert rows["webhook", "alert-1"].state == "failed"
    assert rows["webhook", "alert-1"].address == shown
    assert rows["webhook", "alert-1"].last_error == "HTTP 400 Bad Request: no_such_hook: (redacted)"
    assert rows["webhook", "alert-2"].state == "sent"
    assert rows["webhook-down", "alert-1"].state == "pending"
    down_error = rows["webhook-down", "alert-1"].last_error or ""
    assert down_error.startswith(f"cannot reach {redact_url(down_url)}: ")
    assert {e.address for e in outbox.audit() if e.channel == "webhook"} == {shown}
    outbox.close()
    assert "(redacted, sha256:" in caplog.text
    assert_nowhere(SECRET_PARTS, caplog.text, tmp_path)


def test_the_sms_auth_token_is_never_logged_or_stored_even_when_the_gateway_echoes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, outbox: Outbox
) -> None:
    """The stand-in answers a wrong token with the Authorization header it got, verbatim."""
    clock = FakeClock()
    with HttpServer(check=twilio_check(SID, "the-right-token", FROM)) as gateway:
        settings = SmsSettings(gateway.url, SID, TOKEN, FROM, allow_insecure_http=True)
        deliver_once(outbox, SmsSink(settings, SITE, clock), clock)
    (problem,) = gateway.problems
    credentials = base64.b64encode(f"{SID}:{TOKEN}".encode()).decode()
    assert credentials in problem  # the gateway did echo it back to us
    (d,) = outbox.deliveries()
    assert d.state == "failed"
    assert d.last_error == "HTTP 400 Bad Request: Authorization '(redacted)'"
    outbox.close()
    assert "Authorization '(redacted)'" in caplog.text
    assert_nowhere((TOKEN, credentials), caplog.text, tmp_path)
    assert TOKEN not in repr(settings)


def test_the_smtp_password_is_never_logged_or_stored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, outbox: Outbox
) -> None:
    """A loopback relay (plain AUTH allowed) that refuses the password: 535, failed, audited."""

    def refuse(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        return AuthResult(success=False, handled=False)

    clock = FakeClock()
    password = "pw-SECRET-0815"
    with SmtpServer(free_port(), authenticator=refuse, auth_require_tls=False) as server:
        settings = SmtpSettings(
            LOOPBACK, server.port, "sw@town.example", "none", "siltwatch", password,
            timeout_s=5, allow_plaintext_auth=True,
        )  # fmt: skip
        deliver_once(outbox, EmailSink(settings, SITE, clock), clock)
    (d,) = outbox.deliveries()
    assert d.state == "failed" and "535" in (d.last_error or "")
    outbox.close()
    encoded = base64.b64encode(password.encode()).decode()
    assert_nowhere((password, encoded), caplog.text, tmp_path)
    assert password not in repr(settings)


def test_an_outbox_from_before_redaction_is_scrubbed_when_opened(tmp_path: Path) -> None:
    """Older versions stored the webhook URL as the address; opening the file redacts it."""
    url = "https://hooks.town.example" + HOOK_PATH
    outbox = Outbox(tmp_path / "outbox.sqlite3")
    old = NewDelivery(
        id="d1", channel="webhook", address=url, recipient="webhook", alert_id="a1",
        event=NoticeEvent.OPENED, event_at="2026-05-05T16:56:00Z", kind="turbidity_contrast",
        severity="critical", subject="outfall-a", rule="r", message={"json": "{}"},
    )  # fmt: skip
    outbox.enqueue([old], 1.0)
    outbox.claim("d1", 2.0)
    outbox.mark_retry("d1", 2.0, 62.0, f"cannot reach {url}: timed out")
    outbox.close()
    assert b"xyzzySECRETpath" in stored_bytes(tmp_path)  # what an old version left

    reopened = Outbox(tmp_path / "outbox.sqlite3")
    (d,) = reopened.deliveries()
    shown = redact_url(url)
    assert d.address == shown and d.last_error == f"cannot reach {shown}: timed out"
    assert {e.address for e in reopened.audit()} == {shown}
    reopened.close()
    with sqlite3.connect(tmp_path / "outbox.sqlite3") as db:
        (errors,) = db.execute("SELECT group_concat(error, ' | ') FROM audit").fetchone()
    assert shown in errors
    for secret in SECRET_PARTS:
        assert secret.encode() not in stored_bytes(tmp_path), secret
