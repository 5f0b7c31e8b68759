"""The outbox's promises: written before sending, survives a crash, never sends a sent id twice."""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

import pytest

from alerts.channel import DeliveryFailed
from alerts.outbox import Composed, DeliveryState, Outbox
from alerts.routing import NoticeEvent
from alerts.worker import DeliveryWorker, OutboxSink
from tests.alerts.helpers import OFFICER, SITE, FakeClock, RecordingChannel, SimulatedCrash, note


def parts(tmp_path: Path) -> tuple[FakeClock, RecordingChannel, Path]:
    clock = FakeClock()
    channel = RecordingChannel()
    channel.clock = clock
    return clock, channel, tmp_path / "outbox.sqlite3"


def officer_queued(tmp_path: Path) -> tuple[FakeClock, RecordingChannel, Path, Outbox]:
    """The :func:`parts` and their outbox, holding one notification to the officer."""
    clock, channel, path = parts(tmp_path)
    outbox = Outbox(path)
    OutboxSink(outbox, [channel], clock).send(note(recipients=(OFFICER,)))
    return clock, channel, path, outbox


def test_enqueued_but_never_sent_is_delivered_by_the_next_worker(tmp_path: Path) -> None:
    clock, channel, path, outbox = officer_queued(tmp_path)
    worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE)
    # The process dies before the worker ran: drop everything without closing.
    del worker, outbox
    gc.collect()
    assert channel.sent == []

    outbox = Outbox(path)
    assert outbox.counts() == {"pending": 1}
    worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE)
    assert worker.run_once() == 1
    assert len(channel.sent) == 1 and channel.sent[0][1] == OFFICER.phone
    assert outbox.counts() == {"sent": 1}
    outbox.close()


def test_crash_between_send_and_record_resends_at_least_once_and_audits_it(
    tmp_path: Path,
) -> None:
    clock, channel, path, outbox = officer_queued(tmp_path)
    channel.crash_after_send = True
    with pytest.raises(SimulatedCrash):
        DeliveryWorker(outbox, [channel], clock=clock, site=SITE).run_once()
    assert outbox.counts() == {"sending": 1}
    outbox.close()

    channel.crash_after_send = False
    clock.advance(30)
    outbox = Outbox(path)
    worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE)  # recovers
    assert worker.run_once() == 1
    (d,) = outbox.deliveries()
    # At least once: the message went out twice, with the same delivery id to dedupe on.
    assert [s[2] for s in channel.sent] == [d.id, d.id]
    assert [e.result for e in outbox.audit(d.id)] == ["queued", "interrupted", "sent"]
    assert d.state == "sent" and d.attempts == 2
    outbox.close()


def test_a_sent_delivery_is_never_sent_or_recorded_again(tmp_path: Path) -> None:
    clock, channel, path = parts(tmp_path)
    outbox = Outbox(path)
    sink = OutboxSink(outbox, [channel], clock)
    worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE)
    n = note(recipients=(OFFICER,))
    sink.send(n)
    worker.run_once()
    (d,) = outbox.deliveries()
    # The same event dispatched again (a restart re-deriving it): a no-op.
    sink.send(n)
    clock.advance(86_400)
    assert worker.run_once() == 0
    # A late mark_sent (e.g. from a confused second worker) records nothing.
    assert outbox.mark_sent(d.id, clock()) is False
    assert outbox.claim(d.id, clock()) is None
    # A new worker on the same file does not send it either.
    other = Outbox(path)
    assert DeliveryWorker(other, [channel], clock=clock, site=SITE).run_once() == 0
    other.close()
    assert len(channel.sent) == 1
    results = [e.result for e in outbox.audit(d.id)]
    assert results == ["queued", "sent", "duplicate"]
    outbox.close()


def test_a_new_event_of_the_same_alert_is_a_new_delivery(tmp_path: Path) -> None:
    clock, channel, path = parts(tmp_path)
    outbox = Outbox(path)
    sink = OutboxSink(outbox, [channel], clock)
    sink.send(note("opened", recipients=(OFFICER,)))
    sink.send(note("resolved", at="2026-05-06T00:58:00Z", recipients=(OFFICER,), resolved=True))
    assert len({d.id for d in outbox.deliveries()}) == 2
    outbox.close()


def test_an_unexpected_exception_in_a_channel_is_retried_not_lost(tmp_path: Path) -> None:
    clock, channel, _, outbox = officer_queued(tmp_path)
    worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE)
    channel.fail = RuntimeError("bug in a channel")
    worker.run_once()
    (d,) = outbox.deliveries()
    assert d.state == "pending" and "bug in a channel" in (d.last_error or "")
    channel.fail = DeliveryFailed("HTTP 400 invalid number", permanent=True)
    clock.advance(60)
    worker.run_once()
    assert outbox.deliveries()[0].state == "failed"
    outbox.close()


def test_a_channel_removed_from_the_config_does_not_lose_its_pending_deliveries(
    tmp_path: Path,
) -> None:
    clock, _, _, outbox = officer_queued(tmp_path)
    worker = DeliveryWorker(outbox, [], clock=clock, site=SITE)
    worker.run_once()
    (d,) = outbox.deliveries()
    assert d.state == "pending" and "not configured" in (d.last_error or "")
    outbox.close()


def test_an_outbox_written_as_plain_words_reads_as_typed_states_and_events(tmp_path: Path) -> None:
    """The state and event columns hold the same words as before the enums: a file an older
    release wrote (here: its rows changed by plain SQL, as that release did) reads typed, and
    what this release writes is stored as the old words."""
    _, _, path, outbox = officer_queued(tmp_path)
    outbox.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT state, event FROM deliveries").fetchall() == [
            ("pending", "opened")
        ]
        db.execute("UPDATE deliveries SET state = 'failed', event = 'summary'")
    db.close()
    outbox = Outbox(path)
    (d,) = outbox.deliveries(DeliveryState.FAILED)
    assert d.state is DeliveryState.FAILED and d.event is Composed.SUMMARY
    assert outbox.counts() == {DeliveryState.FAILED: 1}
    with sqlite3.connect(path) as db:
        db.execute("UPDATE deliveries SET event = 'reminder'")
    db.close()
    assert outbox.deliveries()[0].event is NoticeEvent.REMINDER
    outbox.close()
