"""A crash between telling people and storing the alert loses no message and doubles none.

``IngestService._publish`` queues an alert's messages in the outbox and stores
the alert after that. The store says what was already told, so the other order
had a hole. A ``kill -9`` after the alert was stored and before its messages
were queued left a stored alert nobody was told of: the restart found it stored
and stayed quiet.

Here the process "dies" (an exception that no ``except Exception`` catches) at
each of the two points in turn, once per run, on a real SQLite store and a
real outbox file. Then a new service opens the same files, as ``serve`` does
after a restart, and takes the rest of the week. The outbox must then hold
exactly the deliveries of a run that never crashed: the same ids, each queued
once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from alerts.dispatch import Dispatcher
from alerts.mail import EmailSink, SmtpSettings
from alerts.messages import SiteLabel
from alerts.outbox import Outbox
from alerts.routing import Notification
from alerts.worker import OutboxSink
from analytics.timeutil import MS_PER_S
from ingest.recordings.formats import read_csv_readings
from ingest.service import IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import Alert
from tests.ingest.live import EXAMPLES, Outgoing, reading_messages

SITE = load_site(EXAMPLES / "lake-george-site.toml")


class Crash(BaseException):
    """The process dies here: nothing after this point runs, nothing catches it."""


def messages() -> list[Outgoing]:
    readings = sorted(
        read_csv_readings(EXAMPLES / "lake-george-storm.csv", SITE.sensors()),
        key=lambda r: (r.t, r.sensor),
    )
    return reading_messages(SITE, readings)


def outbox_sink(outbox: Outbox, kind: type[OutboxSink] = OutboxSink) -> OutboxSink:
    # The email channel only renders here; nothing is sent (no worker runs).
    email = EmailSink(
        SmtpSettings("127.0.0.1", 9, "siltwatch@town.example", "none"), SiteLabel.of(SITE)
    )
    return kind(outbox, [email], lambda: 1_800_000_000.0, site=SITE)


class DiesBeforeQueueing(OutboxSink):
    """Dies when the first critical alert is about to be queued."""

    def send(self, note: Notification) -> None:
        if note.alert.severity == "critical":
            raise Crash
        super().send(note)


class DiesBeforeStoring(SqliteStore):
    """Dies when the first critical alert is about to be stored (its messages are queued)."""

    def save_alert(self, site: str, alert: Alert, *, late: bool = False) -> None:
        if alert.severity == "critical":
            raise Crash
        super().save_alert(site, alert, late=late)


def run(
    site: SiteConfig,
    store: SqliteStore,
    sink: OutboxSink,
    todo: list[Outgoing],
) -> int:
    """Feed messages until done or the process dies; how many were taken."""
    service = IngestService(site, store, Dispatcher(site, [sink]))
    for n, m in enumerate(todo):
        try:
            service.handle_message(m.topic, m.payload, m.keys[0][1] + MS_PER_S)
        except Crash:
            return n
    service.finish(todo[-1].keys[0][1])
    return len(todo)


def queued(outbox: Outbox) -> list[str]:
    return sorted(e.delivery_id for e in outbox.audit() if e.result == "queued")


@pytest.fixture(scope="module")
def uncrashed(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    tmp = tmp_path_factory.mktemp("uncrashed")
    outbox = Outbox(tmp / "outbox.sqlite3")
    todo = messages()
    assert run(SITE, SqliteStore(tmp / "store.sqlite3"), outbox_sink(outbox), todo) == len(todo)
    ids = queued(outbox)
    assert ids, "the Lake George week must tell somebody something"
    return ids


@pytest.mark.parametrize("dies", ["before queueing", "before storing"])
def test_a_crash_while_telling_loses_no_message_and_doubles_none(
    dies: str, uncrashed: list[str], tmp_path: Path
) -> None:
    db, box = tmp_path / "store.sqlite3", tmp_path / "outbox.sqlite3"
    todo = messages()
    outbox = Outbox(box)
    if dies == "before queueing":
        first = run(SITE, SqliteStore(db), outbox_sink(outbox, DiesBeforeQueueing), todo)
    else:
        first = run(SITE, DiesBeforeStoring(db), outbox_sink(outbox), todo)
    assert first < len(todo), "the run never reached a critical alert"
    # The restart: the message that was being handled when the process died was
    # committed to the store (readings commit before they are judged), so the
    # station's retry is a duplicate and the rest of the week follows.
    restarted = Outbox(box)
    rest = todo[first:]
    assert run(SITE, SqliteStore(db), outbox_sink(restarted), rest) == len(rest)
    assert queued(restarted) == uncrashed
    if dies == "before storing":
        # What was queued before the crash was offered again and refused as a duplicate.
        assert any(e.result == "duplicate" for e in restarted.audit())
