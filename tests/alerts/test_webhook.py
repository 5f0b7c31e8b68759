"""Webhook: JSON of the notification, signed with HMAC-SHA256, checked by the receiver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alerts.outbox import Outbox
from alerts.webhook import DELIVERY_HEADER, SIGNATURE_HEADER, WebhookSettings, WebhookSink, verify
from alerts.worker import DeliveryWorker, OutboxSink
from tests.alerts.helpers import CITATION, OFFICER, SITE, FakeClock, HttpServer, Request, note

pytestmark = pytest.mark.integration
SECRET = b"shared-webhook-secret"


def receiver_check(req: Request) -> str | None:
    """What a receiving service does before trusting the body."""
    if not verify(SECRET, req.body, req.headers.get(SIGNATURE_HEADER)):
        return f"bad signature {req.headers.get(SIGNATURE_HEADER)!r}"
    if req.headers.get("Content-Type") != "application/json":
        return "not JSON"
    return None


def run(tmp_path: Path, url: str, secret: bytes | None) -> Outbox:
    clock = FakeClock()
    channel = WebhookSink(WebhookSettings(url, secret), SITE, clock)
    outbox = Outbox(tmp_path / "o.sqlite3")
    OutboxSink(outbox, [channel], clock).send(note(recipients=(OFFICER,)))
    DeliveryWorker(outbox, [channel], clock=clock, site=SITE).run_once()
    return outbox


def test_the_receiver_verifies_the_signature_and_reads_the_notification(tmp_path: Path) -> None:
    with HttpServer(check=receiver_check, ok_status=204) as server:
        outbox = run(tmp_path, server.url + "/hooks/siltwatch", SECRET)
    assert server.problems == []
    (req,) = server.requests
    assert req.path == "/hooks/siltwatch"
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
    with HttpServer(check=receiver_check, ok_status=204) as server:
        outbox = run(tmp_path, server.url, b"not-the-secret")
    assert len(server.problems) == 1 and "bad signature" in server.problems[0]
    assert outbox.deliveries()[0].state == "failed"  # 400: permanent
    outbox.close()
