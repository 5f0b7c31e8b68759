"""Turn engine events into notifications and hand them to the sinks."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from alerts.routing import officer_cares, route
from alerts.sinks import Sink
from analytics.events import AlertEvent, EngineEvent
from analytics.timeutil import iso
from siltwatch.config import SiteConfig

log = logging.getLogger(__name__)


class Dispatcher:
    """Routes alert events to people; remembers which episodes the officer heard of."""

    def __init__(self, site: SiteConfig, sinks: Sequence[Sink]) -> None:
        self.site = site
        self.sinks = list(sinks)
        self.officer_told: set[str] = set()
        self.sent = 0

    def handle(self, events: Iterable[EngineEvent]) -> None:
        for event in events:
            if not isinstance(event, AlertEvent):
                continue
            alert = event.alert
            told = alert.id in self.officer_told
            note = route(self.site, event.type, iso(event.at), alert, officer_told=told)
            if event.type != "resolved" and officer_cares(alert):
                self.officer_told.add(alert.id)
            for sink in self.sinks:
                try:
                    sink.send(note)
                except Exception:  # one broken channel must not silence the others
                    log.exception(
                        "alert sink %s failed for alert %s", type(sink).__name__, alert.id
                    )
            self.sent += 1
