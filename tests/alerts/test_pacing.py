"""Pacing: quiet hours hold what is not critical; a digest comes once a morning."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from alerts.digest import Digests
from alerts.outbox import Outbox
from alerts.quiet import quiet_until
from alerts.worker import OutboxSink
from ingest.store.sqlite import SqliteStore
from siltwatch.config import Contact, SiteConfig, load_site
from tests.alerts.helpers import FakeClock, RecordingChannel, alert, duty, note

NY = ZoneInfo("America/New_York")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml"
SLEEPER = Contact(
    name="Dana Ruiz", role="operator", phone="+15185550101", quiet_hours="22:00-07:00"
)


def local(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=NY).timestamp()


def test_quiet_hours_wrap_past_midnight_in_the_sites_zone() -> None:
    assert quiet_until(SLEEPER, NY, local("2026-05-05T23:30")) == local("2026-05-06T07:00")
    assert quiet_until(SLEEPER, NY, local("2026-05-06T06:59")) == local("2026-05-06T07:00")
    assert quiet_until(SLEEPER, NY, local("2026-05-06T07:00")) is None
    assert quiet_until(SLEEPER, NY, local("2026-05-06T21:59")) is None
    lunch = Contact(name="L", role="operator", quiet_hours="12:00-13:00")
    assert quiet_until(lunch, NY, local("2026-05-06T12:10")) == local("2026-05-06T13:00")


def sink_at(tmp_path: Path, when: str) -> tuple[Outbox, OutboxSink]:
    site = load_site(EXAMPLE)
    outbox = Outbox(tmp_path / "o.sqlite3")
    channel = RecordingChannel()
    return outbox, OutboxSink(outbox, [channel], FakeClock(local(when)), site=site)


def test_a_warning_at_night_waits_for_the_morning(tmp_path: Path) -> None:
    outbox, sink = sink_at(tmp_path, "2026-05-05T23:30")
    sink.send(note(severity="warning", recipients=(SLEEPER,)))
    (held,) = outbox.deliveries()
    assert held.next_attempt_at == local("2026-05-06T07:00")
    assert outbox.due(local("2026-05-06T06:59")) == []
    (queued,) = [e for e in outbox.audit() if e.result == "queued"]
    assert queued.error == "quiet hours of Dana Ruiz until 2026-05-06 07:00 EDT"


def test_a_critical_alert_goes_through_quiet_hours(tmp_path: Path) -> None:
    outbox, sink = sink_at(tmp_path, "2026-05-05T23:30")
    sink.send(note(severity="critical", recipients=(SLEEPER,)))
    (now,) = outbox.deliveries()
    assert now.next_attempt_at == local("2026-05-05T23:30")


def digest_site(tmp_path: Path) -> tuple[SiteConfig, SqliteStore]:
    data = load_site(EXAMPLE).model_dump()
    data["contacts"] = [
        {"name": "Dana Ruiz", "role": "operator", "email": "dana@example.org"},
        {"name": "Sam Okafor", "role": "officer", "email": "sam@example.org", "digest": False},
        {"name": "Jo Whitaker", "role": "qualified_inspector", "phone": "+15185550102"},
    ]
    data["notifications"] = {"digest_at": "07:00"}
    site = SiteConfig.model_validate(data)
    store = SqliteStore(tmp_path / "store.sqlite3")
    sid = site.site.id
    store.save_alert(sid, alert())
    store.save_alert(sid, alert(id="al-closed", resolved=True))
    for ident, due in (("du-soon", "2026-05-07T15:00:00Z"), ("du-later", "2026-05-20T15:00:00Z")):
        store.save_duty(sid, duty(id=ident, kind="storm_inspection", subject="site", due_at=due))
    return site, store


def test_the_digest_comes_once_a_morning_to_who_reads_email(tmp_path: Path) -> None:
    site, store = digest_site(tmp_path)
    outbox = Outbox(tmp_path / "o.sqlite3")
    clock = FakeClock(local("2026-05-06T06:59"))
    digests = Digests(outbox, site, store, clock)
    assert digests.run_due() == 0
    assert digests.next_due() == local("2026-05-06T07:00")
    clock.t = local("2026-05-06T07:01")
    assert digests.run_due() == 1
    assert digests.run_due() == 0  # once a day, across calls and restarts
    assert Digests(Outbox(tmp_path / "o.sqlite3"), site, store, clock).run_due() == 0
    (mail,) = outbox.deliveries()
    assert mail.address == "dana@example.org" and mail.channel == "email"
    text = mail.message["body"]
    assert "CRITICAL turbidity_contrast outfall-a" in text and "§148-9 B" in text
    assert text.count("turbidity_contrast") == 1 and text.count("storm_inspection") == 1
    assert "storm_inspection (storm) of site, due 2026-05-07 11:00 EDT" in text
    assert mail.message["subject"].startswith("[siltwatch] ")
    assert "1 open alert, 1 duty due" in mail.message["subject"]


def test_a_digest_missed_by_hours_waits_for_the_next_morning(tmp_path: Path) -> None:
    site, store = digest_site(tmp_path)
    clock = FakeClock(local("2026-05-06T14:00"))
    digests = Digests(Outbox(tmp_path / "o.sqlite3"), site, store, clock)
    assert digests.run_due() == 0
    assert digests.next_due() == local("2026-05-07T07:00")


def test_two_workers_outboxes_send_a_days_digest_once_between_them(tmp_path: Path) -> None:
    """After a takeover the new holder's outbox has no record of the digest its predecessor
    sent: the shared ``once`` (the console's book in the workers' database) decides."""
    from console.book import ConsoleBook

    site, store = digest_site(tmp_path)
    book = ConsoleBook(tmp_path / "store.sqlite3")
    clock = FakeClock(local("2026-05-06T07:01"))

    def once(key: str) -> bool:
        return book.first_time(key, int(clock() * 1000))

    first = Digests(Outbox(tmp_path / "a.sqlite3"), site, store, clock, once=once)
    second = Digests(Outbox(tmp_path / "b.sqlite3"), site, store, clock, once=once)
    assert first.run_due() == 1
    assert second.run_due() == 0, "the other worker's outbox: already sent today"
    assert Digests(Outbox(tmp_path / "c.sqlite3"), site, store, clock).run_due() == 1, (
        "without the shared decision each outbox sends its own"
    )
    clock.t = local("2026-05-07T07:01")
    assert second.run_due() == 1, "the next day is a new key: whichever worker comes first"
    book.close()
