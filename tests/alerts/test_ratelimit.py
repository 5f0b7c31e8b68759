"""The officer at 11 pm gets one clear SMS, not forty: at most N an hour, the rest summarised."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from alerts.gsm7 import is_gsm7, segments
from alerts.outbox import Outbox
from alerts.sms import SmsSettings, SmsSink
from alerts.worker import DeliveryWorker, OutboxSink, RateLimit
from tests.alerts.helpers import (
    OFFICER,
    SITE,
    FakeClock,
    HttpServer,
    RecordingChannel,
    form,
    note,
    twilio_check,
)

HOUR = 3600.0
SID, TOKEN, FROM = "AC42", "tok", "+15185550100"


def drive(worker: DeliveryWorker, clock: FakeClock, until: float) -> None:
    """Run the worker at every moment something falls due, up to ``until``."""
    while (due := worker.next_due()) is not None and due <= until:
        clock.t = max(clock.t, due)
        worker.run_once()


def limited(
    outbox_path: Path | str, limit: int
) -> tuple[FakeClock, RecordingChannel, Outbox, OutboxSink, DeliveryWorker]:
    """A recording SMS channel behind an outbox whose worker sends at most ``limit`` an hour."""
    clock = FakeClock()
    channel = RecordingChannel()
    channel.clock = clock
    outbox = Outbox(outbox_path)
    sink = OutboxSink(outbox, [channel], clock)
    worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE, sms_limit=RateLimit(limit))
    return clock, channel, outbox, sink, worker


def test_forty_notifications_in_an_hour_become_three_sms_and_one_summary(tmp_path: Path) -> None:
    clock = FakeClock()
    with HttpServer(check=twilio_check(SID, TOKEN, FROM)) as gateway:
        channel = SmsSink(
            SmsSettings(gateway.url, SID, TOKEN, FROM, allow_insecure_http=True), SITE, clock
        )
        outbox = Outbox(tmp_path / "o.sqlite3")
        sink = OutboxSink(outbox, [channel], clock)
        worker = DeliveryWorker(outbox, [channel], clock=clock, site=SITE, sms_limit=RateLimit(3))
        start = clock.t
        sent_at: list[float] = []
        for i in range(40):
            severity = "critical" if i == 17 else "warning"
            sink.send(
                note(
                    id=f"al-{i:02d}", subject=f"pair-{i}", severity=severity, recipients=(OFFICER,)
                )
            )
            before = len(gateway.requests)
            worker.run_once()
            sent_at += [clock.t] * (len(gateway.requests) - before)
            clock.advance(85)  # 40 x 85 s = 56 min 40 s
        assert clock.t - start < HOUR
        assert len(gateway.requests) == 3  # within the hour: only N
        drive(worker, clock, start + 2 * HOUR)
        assert gateway.problems == []
        assert len(gateway.requests) == 4  # + one summary, when the window allowed
        summary = form(gateway.requests[3])["Body"]
        assert clock.t == start + HOUR  # the first SMS aged out of the window
    assert is_gsm7(summary) and segments(summary) == 1
    assert "37 updates held" in summary and "(1 critical)" in summary
    assert "CRITICAL turbidity contrast pair-17 (§148-9 B);" in summary
    # Every one of the 40 is accounted for: sent alone or in the summary, with an audit row.
    states = [d.state for d in outbox.deliveries() if d.alert_id != "summary"]
    assert states == ["sent"] * 40
    folded = [d for d in outbox.deliveries() if d.folded_into is not None]
    assert len(folded) == 37
    assert outbox.audit(folded[0].id)[-1].error == f"in summary {folded[0].folded_into}"
    outbox.close()


def test_a_critical_alert_is_not_held_longer_than_the_window(tmp_path: Path) -> None:
    clock, channel, outbox, sink, worker = limited(tmp_path / "o.sqlite3", 2)
    for i in range(2):
        sink.send(note(id=f"w{i}", severity="warning", recipients=(OFFICER,)))
        worker.run_once()
        clock.advance(600)
    sink.send(note(id="crit", severity="critical", recipients=(OFFICER,)))
    queued = clock.t
    worker.run_once()
    assert len(channel.sent) == 2  # held: the window is full
    (crit,) = [d for d in outbox.deliveries() if d.alert_id == "crit"]
    assert crit.state == "pending" and crit.next_attempt_at - queued <= HOUR
    assert outbox.audit(crit.id)[-1].result == "deferred"
    drive(worker, clock, queued + 2 * HOUR)
    assert len(channel.sent) == 3
    when, _, _, body = channel.sent[2]
    assert when - queued <= HOUR
    assert body.startswith("CRITICAL turbidity contrast outfall-a")  # alone: the full SMS
    outbox.close()


@settings(max_examples=60, deadline=None)
@given(
    limit=st.integers(1, 4),
    gaps=st.lists(st.integers(0, 1800), min_size=1, max_size=30),
    severities=st.lists(st.sampled_from(["warning", "critical", "info"]), min_size=30, max_size=30),
)
def test_never_more_than_n_an_hour_and_nothing_held_longer_than_the_window(
    limit: int, gaps: list[int], severities: list[str]
) -> None:
    clock, channel, outbox, sink, worker = limited(":memory:", limit)
    arrivals = []
    t = clock.t
    for gap in gaps:
        t += gap
        arrivals.append(t)
    for i, at in enumerate(arrivals):
        drive(worker, clock, at)
        clock.t = at
        sink.send(note(id=f"a{i}", severity=severities[i], recipients=(OFFICER,)))
        worker.run_once()
    drive(worker, clock, arrivals[-1] + 10 * HOUR)

    times = [s[0] for s in channel.sent]
    assert all(is_gsm7(s[3]) and segments(s[3]) == 1 for s in channel.sent)
    # At most `limit` SMS in any window of an hour.
    for i in range(len(times) - limit):
        assert times[i + limit] - times[i] >= HOUR
    # Every notification reached the phone (alone or in a summary) within one window.
    rows = {d.id: d for d in outbox.deliveries()}
    for d in rows.values():
        if d.alert_id == "summary":
            continue
        assert d.state == "sent"
        sent = d.sent_at
        assert sent is not None and sent - d.created_at <= HOUR
    outbox.close()


def test_a_summary_that_failed_is_folded_again_with_what_came_since(tmp_path: Path) -> None:
    clock, channel, outbox, sink, worker = limited(tmp_path / "o.sqlite3", 1)
    sink.send(note(id="first", recipients=(OFFICER,)))
    worker.run_once()
    for i in range(3):  # held: the window is full
        clock.advance(60)
        sink.send(note(id=f"held{i}", severity="warning", recipients=(OFFICER,)))
        worker.run_once()
    clock.t = worker.next_due() or 0.0
    from alerts.channel import DeliveryFailed

    channel.fail = DeliveryFailed("HTTP 503", permanent=False)
    worker.run_once()  # the summary of 3 fails, to be retried
    channel.fail = None
    sink.send(note(id="late", severity="critical", recipients=(OFFICER,)))  # no run yet
    clock.advance(60)  # the summary's retry is due, together with the new one
    drive(worker, clock, clock.t + 2 * HOUR)
    assert len(channel.sent) == 2
    body = channel.sent[1][3]
    assert "4 updates held" in body and "(1 critical)" in body
    states = {d.alert_id: d.state for d in outbox.deliveries()}
    assert {k: v for k, v in states.items() if k != "summary"} == {
        "first": "sent", "held0": "sent", "held1": "sent", "held2": "sent", "late": "sent"
    }  # fmt: skip
    outbox.close()
