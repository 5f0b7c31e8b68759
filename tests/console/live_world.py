"""The live console's test world: the week's store, the console on a clock, and the real
delivery side (follow-ups, outbox, worker, silences) over the console's book.

``LiveWorld`` is the console app (console/app.py ``make_app``) over a fresh copy of
the Lake George week (tests/console/app_world.py), told where the site's outbox
is, so its alert pages read the delivery audit; ``Delivery`` is what ``serve
--notify`` runs in front of that outbox: the site's escalation chain (the
operator at once, the officer after 30 min), the real follow-ups, outbox and
worker on the console's clock, behind alerts/silences.py ``HeldInSilence`` reading
the console's book, and a recording SMS channel (the gateway is a third-party
cloud). ``new_episode`` stores a fresh episode the way the engine does
(``save_alert``) and announces its opening through the delivery side.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from alerts.dispatch import Dispatcher
from alerts.followups import FollowUps
from alerts.outbox import Outbox
from alerts.silences import HeldInSilence
from alerts.worker import DeliveryWorker, OutboxSink
from analytics.events import AlertEvent, SensorReading
from console.app import make_app
from siltwatch.config import EscalationStep, Notifications, SiteConfig
from siltwatch.schema import Alert, Escalation
from siltwatch.vocabulary import Severity
from tests.alerts.helpers import SITE as LABEL
from tests.alerts.helpers import RecordingChannel
from tests.console.app_world import (
    SID,
    SITE,
    ConsoleWorld,
    FakeClock,
    FakeReports,
    RecordingDesk,
    week_store,
)

OFFICER_NAME = "Sam Okafor"
CHAIN = (
    EscalationStep(role="operator", after_min=0),
    EscalationStep(role="officer", after_min=30),
)


@dataclass
class LiveWorld(ConsoleWorld):
    """The console told where the site's outbox is (its alert pages read the delivery
    audit), with pages that update themselves every ``refresh_s``."""

    outbox_path: Path

    def now_ms(self) -> int:
        return round(self.clock() * 1000)

    def add_reading(self, sensor: str, value: float, t_ms: int | None = None) -> None:
        """A reading arriving now (or at ``t_ms``), stored as ingest stores it."""
        t = self.now_ms() if t_ms is None else t_ms
        station = SITE.station_of()[sensor]
        self.console.store.add_readings(SID, [(station, SensorReading(sensor, t, value))], t)


def make_live_world(folder: Path, *, refresh_s: float = 10.0) -> LiveWorld:
    db = week_store(folder)
    clock, desk = FakeClock(), RecordingDesk()
    outbox = folder / "outbox.sqlite3"
    app = make_app(
        {SID: SITE},
        db,
        desk=desk,
        clock=clock,
        report_renderer=FakeReports(),
        outboxes={SID: outbox},
        refresh_s=refresh_s,
    )
    return LiveWorld(db, app, clock, desk, outbox)


class Delivery:
    """The delivery side of ``serve --notify`` over the live world's book and clock."""

    def __init__(self, world: LiveWorld) -> None:
        self.world = world
        self.site: SiteConfig = SITE.model_copy(
            update={"notifications": Notifications(escalation=list(CHAIN))}
        )
        self.clock = world.clock
        self.channel = RecordingChannel()
        self.channel.clock = self.clock
        self.outbox = Outbox(world.outbox_path)
        book = world.console.book
        sink = OutboxSink(self.outbox, [self.channel], self.clock, site=self.site)
        self.followups = FollowUps(self.outbox, self.site, sink, book, self.clock)
        self.held = HeldInSilence(self.followups, SID, book)
        self.worker = DeliveryWorker(
            self.outbox, [self.channel], clock=self.clock, site=LABEL, scheduled=[self.followups]
        )
        self.dispatcher = Dispatcher(self.site, [self.held])

    def announce(
        self,
        event: Literal["opened", "escalated", "resolved"],
        alert: Alert,
        at_ms: int | None = None,
    ) -> None:
        at = self.world.now_ms() if at_ms is None else at_ms
        self.dispatcher.handle([AlertEvent(type=event, at=at, alert=alert)])
        self.worker.run_once()

    def run_for(self, seconds: float) -> None:
        end = self.clock() + seconds
        while (due := self.worker.next_due()) is not None and due <= end:
            self.clock.t = max(self.clock(), due)
            self.worker.run_once()
        self.clock.t = end

    def texted(self) -> list[str]:
        return [phone for _t, phone, _d, _b in self.channel.sent]

    def close(self) -> None:
        self.outbox.close()


def new_episode(world: LiveWorld, like: Alert, ident: str) -> Alert:
    """A fresh critical episode like ``like``, opened now and still open, stored as the
    engine stores one."""
    now = datetime.fromtimestamp(world.clock(), UTC)
    alert = like.model_copy(
        update={
            "id": ident,
            "opened_at": now,
            "resolved_at": None,
            "severity": Severity.CRITICAL,
            "escalations": [Escalation(at=now, severity=Severity.CRITICAL)],
        }
    )
    world.console.store.save_alert(SID, alert)
    return alert
