"""Nobody answered: the chain calls the next person; a critical alert is said again.

The worker logic is driven with a clock the test moves and a recording channel;
the acknowledgement comes from the same lookup the console's book answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from alerts.acks import Acknowledgement
from alerts.dispatch import Dispatcher
from alerts.followups import FollowUps
from alerts.outbox import Outbox
from alerts.routing import NoticeEvent, route
from alerts.worker import DeliveryWorker, OutboxSink
from analytics.events import AlertEvent
from siltwatch.config import SiteConfig, load_site
from tests.alerts.helpers import SITE, FakeClock, RecordingChannel, alert

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml"
MIN = 60.0
CHAIN = [
    {"role": "operator", "after_min": 0},
    {"role": "qualified_inspector", "after_min": 30},
    {"role": "officer", "after_min": 60},
]
PEOPLE = [
    {"name": "Dana Ruiz", "role": "operator", "phone": "+15185550101"},
    {"name": "Jo Whitaker", "role": "qualified_inspector", "phone": "+15185550102"},
    {"name": "Sam Okafor", "role": "officer", "phone": "+15185550199"},
]


def site_with(**notifications: Any) -> SiteConfig:
    data = load_site(EXAMPLE).model_dump()
    data["contacts"] = PEOPLE
    data["notifications"] = notifications
    return SiteConfig.model_validate(data)


class Book:
    """The acknowledgement lookup, as the console's book answers it."""

    def __init__(self) -> None:
        self.acks: dict[str, Acknowledgement] = {}

    def acknowledged(self, site: str, alert_id: str) -> Acknowledgement | None:
        return self.acks.get(alert_id)


class Rig:
    def __init__(self, path: Path, site: SiteConfig) -> None:
        self.site = site
        self.clock = FakeClock()
        self.channel = RecordingChannel()
        self.channel.clock = self.clock
        self.outbox = Outbox(path)
        self.book = Book()
        sink = OutboxSink(self.outbox, [self.channel], self.clock, site=site)
        self.followups = FollowUps(self.outbox, site, sink, self.book, self.clock)
        self.worker = DeliveryWorker(
            self.outbox, [self.channel], clock=self.clock, site=SITE, scheduled=[self.followups]
        )
        self.dispatcher = Dispatcher(site, [self.followups])

    def announce(self, event: str = "opened", **kwargs: Any) -> None:
        a = alert(**kwargs)
        at = a.resolved_at if event == "resolved" else a.opened_at
        assert at is not None
        ms = int(at.timestamp() * 1000)
        self.dispatcher.handle([AlertEvent(type=event, at=ms, alert=a)])  # type: ignore[arg-type]
        self.worker.run_once()

    def run_until(self, minutes: float) -> None:
        end = self.clock.t + minutes * MIN
        while (due := self.worker.next_due()) is not None and due <= end:
            self.clock.t = max(self.clock.t, due)
            self.worker.run_once()
        self.clock.t = end

    def phones(self) -> list[str]:
        return [address for _, address, _, _ in self.channel.sent]

    def not_sent(self) -> list[str]:
        return [
            f"{e.channel} {e.recipient}: {e.error}"
            for e in self.outbox.audit()
            if e.result == "not_sent"
        ]


def test_with_a_chain_only_the_operator_hears_a_plume_at_once() -> None:
    site = site_with(escalation=CHAIN)
    note = route(site, NoticeEvent.OPENED, "2026-05-05T16:56:00Z", alert())
    assert [c.name for c in note.recipients] == ["Dana Ruiz"]


def test_a_missed_legal_deadline_still_reaches_the_officer_at_once() -> None:
    site = site_with(escalation=CHAIN)
    overdue = alert(kind="inspection_overdue", subject="du-1", rule="Lake George §148-11 I(4)")
    note = route(site, NoticeEvent.OPENED, "2026-05-05T16:56:00Z", overdue)
    assert "Sam Okafor" in [c.name for c in note.recipients]


def test_unacknowledged_the_plume_climbs_the_chain(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "o.sqlite3", site_with(escalation=CHAIN, repeat_critical_min=0))
    rig.announce()
    assert rig.phones() == ["+15185550101"]
    rig.run_until(29)
    assert rig.phones() == ["+15185550101"]
    rig.run_until(2)
    assert rig.phones() == ["+15185550101", "+15185550102"]
    rig.run_until(30)
    assert rig.phones() == ["+15185550101", "+15185550102", "+15185550199"]
    events = [e.event for e in rig.outbox.deliveries()]
    assert events == ["opened", "unacknowledged", "unacknowledged"]


def test_an_acknowledgement_stops_the_escalation_to_the_officer(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "o.sqlite3", site_with(escalation=CHAIN, repeat_critical_min=60))
    rig.announce()
    rig.run_until(20)
    rig.book.acks["al-9ff14d7ed75e140c"] = Acknowledgement(
        "Dana Ruiz", int(rig.clock.t * 1000), "console"
    )
    rig.run_until(180)
    assert rig.phones() == ["+15185550101"]
    refused = rig.not_sent()
    assert len(refused) == 3  # the inspector, the officer, the first repeat
    assert any(r.startswith("escalation Sam Okafor: acknowledged by Dana Ruiz at") for r in refused)


def test_a_critical_alert_repeats_until_acknowledged(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "o.sqlite3", site_with(repeat_critical_min=60))
    rig.announce()
    told = len(rig.phones())
    rig.run_until(121)
    assert [e.event for e in rig.outbox.deliveries()].count(NoticeEvent.REMINDER) == 2 * told
    rig.book.acks["al-9ff14d7ed75e140c"] = Acknowledgement("Sam Okafor", 0, "sms")
    rig.run_until(240)
    assert [e.event for e in rig.outbox.deliveries()].count(NoticeEvent.REMINDER) == 2 * told


def test_a_warning_is_not_repeated(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "o.sqlite3", site_with(repeat_critical_min=60))
    rig.announce(severity="warning")
    rig.run_until(300)
    assert [e.event for e in rig.outbox.deliveries()] == ["opened"] * len(rig.phones())


def test_the_officer_step_is_skipped_while_the_alert_is_only_a_warning(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "o.sqlite3", site_with(escalation=CHAIN))
    rig.announce(severity="warning")
    rig.run_until(61)
    assert "+15185550199" not in rig.phones()
    assert any("not the town's business while warning" in r for r in rig.not_sent())


def test_resolution_cancels_what_is_pending_and_reaches_who_was_escalated_to(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path / "o.sqlite3", site_with(escalation=CHAIN, repeat_critical_min=0))
    rig.announce()
    rig.run_until(31)
    rig.announce("resolved", resolved=True)
    rig.run_until(120)
    resolved_to = [d.address for d in rig.outbox.deliveries() if d.event == "resolved"]
    assert sorted(resolved_to) == ["+15185550101", "+15185550102"]
    assert any(r.startswith("escalation Sam Okafor: resolved at") for r in rig.not_sent())


def test_follow_ups_survive_a_restart(tmp_path: Path) -> None:
    site = site_with(escalation=CHAIN, repeat_critical_min=0)
    rig = Rig(tmp_path / "o.sqlite3", site)
    rig.announce()
    rig.outbox.close()
    again = Rig(tmp_path / "o.sqlite3", site)
    again.clock.t = rig.clock.t
    again.run_until(31)
    assert again.phones() == ["+15185550102"]


@pytest.mark.parametrize(
    ("chain", "problem"),
    [
        ([{"role": "officer", "after_min": 10}], "must start at after_min = 0"),
        (
            [{"role": "operator", "after_min": 0}, {"role": "officer", "after_min": -5}],
            "greater than or equal to 0",
        ),
    ],
)
def test_a_chain_out_of_order_is_refused(chain: list[dict[str, Any]], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        site_with(escalation=chain)
