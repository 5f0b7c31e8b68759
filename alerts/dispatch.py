"""Turn engine events into notifications and hand them to the sinks."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from alerts.routing import NoticeEvent, announced, route
from alerts.sinks import Sink
from analytics.events import AlertEvent, EngineEvent
from siltwatch.config import SiteConfig
from siltwatch.timefmt import utc_iso

log = logging.getLogger(__name__)


class Dispatcher:
    """Routes alert events to people and hands the notifications to every sink."""

    def __init__(self, site: SiteConfig, sinks: Sequence[Sink]) -> None:
        self.site = site
        self.sinks = list(sinks)
        self.sent = 0

    def handle(self, events: Iterable[EngineEvent]) -> None:
        for event in events:
            if not isinstance(event, AlertEvent):
                continue
            alert, told = event.alert, NoticeEvent(event.type)
            if not announced(told, alert):
                continue
            note = route(self.site, told, utc_iso(event.at), alert)
            for sink in self.sinks:
                try:
                    sink.send(note)
                except Exception:  # one broken channel must not silence the others
                    log.exception(
                        "alert sink %s failed for alert %s", type(sink).__name__, alert.id
                    )
            self.sent += 1
