"""SMS against a loopback stand-in for a Twilio-shaped gateway that checks our request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from alerts.messages import sms_length
from alerts.outbox import Outbox
from alerts.sms import SmsSettings, SmsSink
from alerts.worker import DeliveryWorker, OutboxSink
from tests.alerts.helpers import (
    CITATION,
    OFFICER,
    OPERATOR,
    SITE,
    FakeClock,
    HttpServer,
    form,
    note,
    twilio_check,
)

pytestmark = pytest.mark.integration

SID, TOKEN, FROM = "AC0123456789abcdef", "s3cr3t-token", "+15185550100"


@pytest.fixture
def gateway() -> Iterator[HttpServer]:
    with HttpServer(check=twilio_check(SID, TOKEN, FROM)) as server:
        yield server


def setup(
    tmp_path: Path, gateway: HttpServer, clock: FakeClock
) -> tuple[Outbox, OutboxSink, DeliveryWorker]:
    channel = SmsSink(
        SmsSettings(gateway.url, SID, TOKEN, FROM, allow_insecure_http=True), SITE, clock
    )
    outbox = Outbox(tmp_path / "outbox.sqlite3")
    return (
        outbox,
        OutboxSink(outbox, [channel], clock),
        DeliveryWorker(outbox, [channel], clock=clock, site=SITE),
    )


def test_the_gateway_gets_the_exact_request(tmp_path: Path, gateway: HttpServer) -> None:
    clock = FakeClock()
    outbox, sink, worker = setup(tmp_path, gateway, clock)
    sink.send(note(recipients=(OFFICER, OPERATOR)))  # the operator has no phone
    assert worker.run_once() == 1
    assert gateway.problems == []
    (req,) = gateway.requests
    assert req.method == "POST"
    assert req.path == f"/2010-04-01/Accounts/{SID}/Messages.json"
    fields = form(req)
    assert fields["To"] == OFFICER.phone and fields["From"] == FROM
    body = fields["Body"]
    assert sms_length(body) <= 320
    assert body.startswith("CRITICAL opened: turbidity_contrast outfall-a, lg-route9n.")
    assert "170.6 NTU vs limit 54.3" in body  # by how much
    assert "Since 05-05 16:26 UTC" in body
    assert body.endswith(f"Rule: {CITATION}")
    assert outbox.deliveries()[0].state == "sent"
    outbox.close()


def test_the_stand_in_refuses_a_wrong_token(tmp_path: Path, gateway: HttpServer) -> None:
    """The gateway check is real: wrong credentials are a 400 (permanent), not a pass."""
    clock = FakeClock()
    channel = SmsSink(
        SmsSettings(gateway.url, SID, "wrong", FROM, allow_insecure_http=True), SITE, clock
    )
    outbox = Outbox(tmp_path / "o.sqlite3")
    OutboxSink(outbox, [channel], clock).send(note(recipients=(OFFICER,)))
    DeliveryWorker(outbox, [channel], clock=clock, site=SITE).run_once()
    assert len(gateway.problems) == 1 and "Authorization" in gateway.problems[0]
    assert outbox.deliveries()[0].state == "failed"
    outbox.close()


@pytest.mark.parametrize(
    ("status", "headers", "permanent", "wait_s"),
    [
        (500, {}, False, 60),
        (503, {}, False, 60),
        (429, {"Retry-After": "600"}, False, 600),  # the gateway's wait beats our 60 s
        (429, {}, False, 60),
        (400, {}, True, None),
        (404, {}, True, None),
    ],
)
def test_gateway_errors(
    tmp_path: Path,
    gateway: HttpServer,
    status: int,
    headers: dict[str, str],
    permanent: bool,
    wait_s: float | None,
) -> None:
    clock = FakeClock()
    outbox, sink, worker = setup(tmp_path, gateway, clock)
    gateway.statuses.append((status, headers))
    sink.send(note(recipients=(OFFICER,)))
    worker.run_once()
    (d,) = outbox.deliveries()
    assert f"HTTP {status}" in (d.last_error or "")
    if permanent:
        assert d.state == "failed"
        assert outbox.audit(d.id)[-1].result == "failed"
        clock.advance(86_400)
        assert worker.run_once() == 0
        assert len(gateway.requests) == 1
    else:
        assert wait_s is not None
        assert d.state == "pending" and d.next_attempt_at == clock.t + wait_s
        assert outbox.audit(d.id)[-1].result == "retry"
        clock.advance(wait_s)
        assert worker.run_once() == 1
        assert outbox.deliveries()[0].state == "sent"
        assert len(gateway.requests) == 2
    outbox.close()


def test_retries_stop_after_the_last_attempt(tmp_path: Path, gateway: HttpServer) -> None:
    clock = FakeClock()
    outbox, sink, worker = setup(tmp_path, gateway, clock)
    gateway.statuses.extend([(500, {})] * 20)
    sink.send(note(recipients=(OFFICER,)))
    start = clock.t
    while (due := worker.next_due()) is not None:
        clock.t = due
        worker.run_once()
    (d,) = outbox.deliveries()
    assert d.state == "failed" and d.attempts == 8
    assert len(gateway.requests) == 8
    assert clock.t - start == sum(60 * 3**k for k in range(7))  # about 18 h 13 min
    last = outbox.audit(d.id)[-1]
    assert last.result == "failed" and "gave up after 8 attempts" in (last.error or "")
    outbox.close()


def test_plain_http_is_refused_before_anything_is_sent(tmp_path: Path, gateway: HttpServer) -> None:
    """Defence in depth: settings built in code (not from NOTIFY.toml) are checked too."""
    clock = FakeClock()
    outbox = Outbox(tmp_path / "o.sqlite3")
    channels = [
        SmsSink(SmsSettings(gateway.url, SID, TOKEN, FROM), SITE, clock),  # flag not set
        SmsSink(SmsSettings("http://sms.example", SID, TOKEN, FROM, allow_insecure_http=True),
                SITE, clock),  # flag set, but the host is not loopback
    ]  # fmt: skip
    for i, channel in enumerate(channels):
        OutboxSink(outbox, [channel], clock).send(note(recipients=(OFFICER,), id=f"al-{i}"))
        DeliveryWorker(outbox, [channel], clock=clock, site=SITE).run_once()
        clock.advance(1)
    assert gateway.requests == []
    errors = [(d.state, d.last_error) for d in outbox.deliveries()]
    url = f"{gateway.url}/2010-04-01/Accounts/{SID}/Messages.json"
    assert errors == [
        ("failed", f"refusing to POST to {url}: http:// would carry credentials in clear text"),
        (
            "failed",
            f"refusing to POST to http://sms.example/2010-04-01/Accounts/{SID}/Messages.json: "
            "http:// is allowed only to a loopback host (127.0.0.0/8, ::1, localhost), "
            "not 'sms.example'",
        ),
    ]
    outbox.close()
