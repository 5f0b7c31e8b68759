"""SMS against a loopback stand-in for a Twilio-shaped gateway that checks our request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from alerts.acklinks import Links, link_problem, parse_link_token
from alerts.gsm7 import is_gsm7, segments
from alerts.outbox import NewDelivery, Outbox
from alerts.routing import NoticeEvent
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
    assert is_gsm7(body) and segments(body) == 1
    assert body == (
        "CRITICAL turbidity contrast outfall-a, Route 9N mixed-use: 170.6 NTU vs limit 54.3, "
        f"since May 5 16:26. {CITATION}."
    )
    assert outbox.deliveries()[0].state == "sent"
    outbox.close()


def test_with_links_the_sms_carries_the_code_and_a_working_link(
    tmp_path: Path, gateway: HttpServer
) -> None:
    clock = FakeClock()
    links = Links("https://sw.town.example", b"k" * 32, SITE.id, (OPERATOR.name, OFFICER.name))
    channel = SmsSink(
        SmsSettings(gateway.url, SID, TOKEN, FROM, allow_insecure_http=True), SITE, clock,
        links=links,
    )  # fmt: skip
    outbox = Outbox(tmp_path / "outbox.sqlite3")
    OutboxSink(outbox, [channel], clock).send(note(recipients=(OFFICER,)))
    DeliveryWorker(outbox, [channel], clock=clock, site=SITE).run_once()
    body = form(gateway.requests[0])["Body"]
    assert is_gsm7(body) and segments(body) == 1
    code = links.code(note().alert.id)
    assert f"§148-9 B. ACK {code} https://sw.town.example/a/" in body  # the section, shortened
    token = parse_link_token(body.rsplit("/a/", 1)[1])
    assert links.contact_of(token) == OFFICER.name  # the link is the officer's own
    assert link_problem(links.secret, token, SITE.id, note().alert.id, clock.t) is None
    outbox.close()


def test_a_body_longer_than_one_segment_is_refused_for_good(
    tmp_path: Path, gateway: HttpServer
) -> None:
    """A bug upstream must not be billed as three segments: permanent, audited, not sent."""
    clock = FakeClock()
    outbox, _sink, worker = setup(tmp_path, gateway, clock)
    rows = [("x" * 161, "161 GSM-7 characters, 2 segments"), ("ft³ " * 10, "not GSM-7")]
    outbox.enqueue(
        [
            NewDelivery(
                id=f"d{i}", channel="sms", address=str(OFFICER.phone), recipient=OFFICER.name,
                alert_id=f"al-{i}", event=NoticeEvent.OPENED, event_at="2026-05-05T16:56:00Z",
                kind="turbidity_contrast", severity="critical", subject="outfall-a",
                rule=CITATION, message={"body": body},
            )
            for i, (body, _) in enumerate(rows)
        ],
        clock.t,
    )  # fmt: skip
    worker.run_once()
    assert gateway.requests == []
    for d, (_, why) in zip(outbox.deliveries(), rows, strict=True):
        assert d.state == "failed" and why in (d.last_error or "")
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
