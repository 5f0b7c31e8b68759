"""Webhook: JSON of the notification, signed with a timestamped HMAC-SHA256 the receiver checks.

The receiver here is a loopback HTTP server that does what a receiving service does:
it refuses a request whose signature is missing, wrong, or whose time is more than
five minutes away from its own clock (a captured request replayed later).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from alerts.outbox import Outbox
from alerts.webhook import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    WebhookSettings,
    WebhookSink,
    sign,
    signature_problem,
    verify,
)
from alerts.worker import DeliveryWorker, OutboxSink
from tests.alerts.helpers import (
    CITATION,
    OFFICER,
    SITE,
    T0,
    FakeClock,
    HttpServer,
    Request,
    note,
)

pytestmark = pytest.mark.integration
SECRET = b"shared-webhook-secret"


def receiver(clock: FakeClock) -> HttpServer:
    """A receiving service with its own clock: what it checks before trusting the body."""

    def check(req: Request) -> str | None:
        problem = signature_problem(SECRET, req.body, req.headers.get(SIGNATURE_HEADER), clock())
        if problem:
            return f"refused: {problem}"
        if req.headers.get("Content-Type") != "application/json":
            return "not JSON"
        return None

    return HttpServer(check=check, ok_status=204)


def run(tmp_path: Path, url: str, secret: bytes | None, clock: FakeClock) -> Outbox:
    channel = WebhookSink(WebhookSettings(url, secret, allow_insecure_http=True), SITE, clock)
    outbox = Outbox(tmp_path / "o.sqlite3")
    OutboxSink(outbox, [channel], clock).send(note(recipients=(OFFICER,)))
    DeliveryWorker(outbox, [channel], clock=clock, site=SITE).run_once()
    return outbox


def replay(server: HttpServer, captured: Request) -> tuple[int, str]:
    """Send a captured request again, byte for byte, as an attacker on the path would."""
    req = urllib.request.Request(
        server.url + captured.path, data=captured.body, method="POST", headers=captured.headers
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return int(resp.status), ""
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


def test_the_receiver_verifies_the_signature_and_reads_the_notification(tmp_path: Path) -> None:
    clock = FakeClock()
    with receiver(clock) as server:
        outbox = run(tmp_path, server.url + "/hooks/siltwatch", SECRET, clock)
    assert server.problems == []
    (req,) = server.requests
    assert req.path == "/hooks/siltwatch"
    signature = req.headers[SIGNATURE_HEADER]
    assert (
        signature.startswith(f"t={int(T0)},v1=") and len(signature) == len(f"t={int(T0)},v1=") + 64
    )
    doc = json.loads(req.body)
    (d,) = outbox.deliveries()
    assert d.state == "sent"
    assert doc["delivery_id"] == d.id == req.headers[DELIVERY_HEADER]
    assert (doc["site"], doc["event"], doc["at"]) == (
        "lg-route9n",
        "opened",
        "2026-05-05T16:56:00Z",
    )
    assert doc["alert"]["rule"] == CITATION and doc["alert"]["severity"] == "critical"
    assert doc["recipients"] == [{"name": OFFICER.name, "role": "officer"}]
    outbox.close()


def test_a_wrong_secret_is_refused_by_the_receiver(tmp_path: Path) -> None:
    clock = FakeClock()
    with receiver(clock) as server:
        outbox = run(tmp_path, server.url, b"not-the-secret", clock)
    assert server.problems == ["refused: signature does not match"]
    assert outbox.deliveries()[0].state == "failed"  # 400: permanent
    outbox.close()


def test_a_request_replayed_after_the_tolerance_is_refused(tmp_path: Path) -> None:
    clock = FakeClock()
    with receiver(clock) as server:
        outbox = run(tmp_path, server.url + "/hooks/siltwatch", SECRET, clock)
        (captured,) = server.requests
        clock.advance(299)  # a replay inside the window passes the signature check ...
        assert replay(server, captured)[0] == 204  # ... and the delivery id dedupes it
        clock.advance(2)  # 301 s after it was signed
        status, answer = replay(server, captured)
    assert outbox.deliveries()[0].state == "sent"
    assert status == 400
    assert answer == "refused: signed 301 s ago, more than 300 s: refused as a replay"
    outbox.close()


def test_a_request_from_beyond_the_tolerance_in_the_future_is_refused(tmp_path: Path) -> None:
    receiver_clock = FakeClock()
    sender_clock = FakeClock(T0 + 301)  # a sender whose clock runs 5 min 1 s ahead
    with receiver(receiver_clock) as server:
        outbox = run(tmp_path, server.url, SECRET, sender_clock)
    assert server.problems == ["refused: signed 301 s in the future, more than 300 s: refused"]
    assert outbox.deliveries()[0].state == "failed"
    outbox.close()


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (None, "no signature header"),
        ("", "no signature header"),
        ("sha256=" + "0" * 64, "garbled signature header: expected one t=<unix seconds>"),
        ("t=1778000000", "garbled signature header: expected v1=<64 hex digits>"),
        ("t=1778000000,v1=xyz", "garbled signature header: expected v1=<64 hex digits>"),
        ("t=soon,v1=" + "0" * 64, "garbled signature header: expected one t=<unix seconds>"),
        ("t=1778000000;v1", "garbled signature header: expected one t=<unix seconds>"),
        ("t1778000000 v1", "garbled signature header"),
        ("t=1778000000,v1=" + "0" * 64, "signature does not match"),
    ],
)
def test_a_missing_or_garbled_header_is_refused(header: str | None, problem: str) -> None:
    body = b'{"event": "opened"}'
    assert signature_problem(SECRET, body, header, now=T0) == problem
    assert not verify(SECRET, body, header, now=T0)


def test_the_mac_covers_the_time_and_the_body() -> None:
    body = b'{"event": "opened"}'
    header = sign(SECRET, body, int(T0))
    assert verify(SECRET, body, header, now=T0)
    assert not verify(SECRET, body + b" ", header, now=T0)  # body altered
    moved = header.replace(f"t={int(T0)}", f"t={int(T0) + 600}")  # time moved forward
    assert signature_problem(SECRET, body, moved, now=T0 + 600) == "signature does not match"
    rotated = f"{header},v1={'0' * 64}"  # a receiver may list an old and a new MAC
    assert verify(SECRET, body, rotated, now=T0)
