"""A critical plume found late still reaches the end of the escalation chain, once.

The stations of the Lake George week are cut off for a day around the plume and
flush their backlog afterwards: the live service rebuilds that history and the
plume comes out opened and already ended in one go, found late. With a chain
(operator at once, inspector after 30 min, officer after 60 min) nobody could
acknowledge it in time, so the chain must not wait for an answer: the officer
gets one text (through the loopback Twilio-shaped gateway) and one email (a real
SMTP server, aiosmtpd), each saying "found late" with the date.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alerts.acklinks import Links
from alerts.acks import Acknowledgement
from alerts.channel import Channel
from alerts.dispatch import Dispatcher
from alerts.followups import FollowUps
from alerts.mail import EmailSink, SmtpSettings
from alerts.messages import SiteLabel
from alerts.outbox import Outbox
from alerts.sms import SmsSettings, SmsSink
from alerts.worker import DeliveryWorker, OutboxSink
from analytics.timeutil import MS_PER_H, MS_PER_MIN, MS_PER_S
from ingest.recordings.formats import read_csv_readings
from ingest.recordings.replay import replay_site
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import SiteConfig, load_site
from siltwatch.latemarks import found_late
from tests.alerts.helpers import FakeClock, HttpServer, SmtpServer, form, twilio_check
from tests.ingest.live import EXAMPLES, reading_messages
from tests.servers import free_port

pytestmark = pytest.mark.integration

SID, TOKEN, FROM = "AC0123456789abcdef", "s3cr3t-token", "+15185550100"
OFFICER_PHONE, OFFICER_MAIL = "+15185550199", "officer@town.example"
CONSOLE = "https://sw.lakegeorge.example"


def chained_site() -> SiteConfig:
    data: dict[str, Any] = load_site(EXAMPLES / "lake-george-site.toml").model_dump()
    data["contacts"] = [
        {"name": "Dana Ruiz", "role": "operator", "phone": "+15185550101",
         "email": "dana@site.example"},
        {"name": "Jo Whitaker", "role": "qualified_inspector", "phone": "+15185550102",
         "email": "jo@site.example"},
        {"name": "Sam Okafor", "role": "officer", "phone": OFFICER_PHONE,
         "email": OFFICER_MAIL},
    ]  # fmt: skip
    data["notifications"] = {
        "escalation": [
            {"role": "operator", "after_min": 0},
            {"role": "qualified_inspector", "after_min": 30},
            {"role": "officer", "after_min": 60},
        ],
        "repeat_critical_min": 0,
    }
    return SiteConfig.model_validate(data)


class NoAcks:
    """Nobody acknowledges: the plume was over before anyone could."""

    def acknowledged(self, site: str, alert_id: str) -> Acknowledgement | None:
        return None


@pytest.fixture
def gateway() -> Iterator[HttpServer]:
    with HttpServer(check=twilio_check(SID, TOKEN, FROM)) as server:
        yield server


def test_the_officer_hears_a_critical_plume_found_late_once_by_text_and_email(
    tmp_path: Path, gateway: HttpServer
) -> None:
    site = chained_site()
    readings = sorted(
        read_csv_readings(EXAMPLES / "lake-george-storm.csv", site.sensors()),
        key=lambda r: (r.t, r.sensor),
    )
    plume = next(a for a in replay_site(site, readings).alerts if a.kind == "turbidity_contrast")
    assert plume.severity == "critical"
    cut_from = int(plume.opened_at.timestamp() * 1000) - 6 * MS_PER_H
    cut_to = cut_from + 24 * MS_PER_H
    arrivals = []
    for m in reading_messages(site, readings):
        t = m.keys[0][1]
        arrivals.append((cut_to + 5 * MS_PER_MIN if cut_from <= t < cut_to else t + MS_PER_S, m))

    clock = FakeClock()
    label = SiteLabel.of(site)
    links = Links(CONSOLE, b"k" * 32, site.site.id, tuple(c.name for c in site.contacts))
    with SmtpServer(free_port()) as smtp:
        channels: list[Channel] = [
            EmailSink(SmtpSettings("127.0.0.1", smtp.port, "siltwatch@town.example", "none"),
                      label, clock, links=links),
            SmsSink(SmsSettings(gateway.url, SID, TOKEN, FROM, allow_insecure_http=True),
                    label, clock, links=links),
        ]  # fmt: skip
        outbox = Outbox(tmp_path / "outbox.sqlite3")
        sink = OutboxSink(outbox, channels, clock, site=site)
        followups = FollowUps(outbox, site, sink, NoAcks(), clock)
        worker = DeliveryWorker(outbox, channels, clock=clock, site=label, scheduled=[followups])
        store = SqliteStore(tmp_path / "s.sqlite3")
        service = IngestService(site, store, Dispatcher(site, [followups]))
        ticks = [(t, 0, None) for t in range(cut_from, cut_to + 5 * MS_PER_MIN, 5 * MS_PER_MIN)]
        for at, _order, item in sorted(
            ticks + [(r, 1, m) for r, m in arrivals], key=lambda e: (e[0], e[1])
        ):
            if item is None:
                service.tick(at)
            else:
                service.handle_message(item.topic, item.payload, at)
        service.finish(readings[-1].t)
        (late,) = [a for a in store.alerts(site.site.id) if a.kind == "turbidity_contrast"]
        assert found_late(late) and late.resolved_at is not None
        while worker.run_once():
            pass
        mails = [
            msg
            for _f, to, msg in smtp.handler.received
            if OFFICER_MAIL in to and msg["X-Siltwatch-Alert"] == late.id
        ]
    texts = [
        form(r)["Body"]
        for r in gateway.requests
        if form(r)["To"] == OFFICER_PHONE and "turbidity contrast" in form(r)["Body"]
    ]
    assert len(texts) == 1, texts
    assert len(mails) == 1, [m["Subject"] for m in mails]
    (text,), (mail,) = texts, mails
    print(f"the officer's text: {text}\nthe officer's email subject: {mail['Subject']}")
    assert text.startswith("FOUND LATE") and "May 5 " in text, text
    assert f"{CONSOLE}/a/" in text and f"ACK {links.code(late.id)}" in text, text
    assert "found late" in str(mail["Subject"]), mail["Subject"]
    # The officer's first message of the episode opens a thread and says when it was.
    assert str(mail["Subject"]).startswith("[siltwatch] CRITICAL, found late, May 5 "), mail[
        "Subject"
    ]
    body = mail.get_body(("plain",))
    assert body is not None
    content = body.get_content()
    assert "found late" in content and "2026-05-05" in content
    audit = [e for e in outbox.audit() if e.channel == "escalation" and e.alert_id == late.id]
    assert {e.result for e in audit} >= {"scheduled", "notified"}
    assert not [e for e in audit if e.result == "not_sent"]
