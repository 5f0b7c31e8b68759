"""How the console hands what people record to the live pipeline.

An inspection or a site-log entry typed into the console is the same message a
field tablet publishes (siltwatch/schema.py: ``InspectionRecord`` on
``siltwatch/v1/{site}/inspections``, ``SiteLogRecord`` on
``siltwatch/v1/{site}/log``), and it takes the same road: validated, stored,
then judged by the engine in event time. The console never writes the store's
input tables itself, so a form cannot do what a message may not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from ingest.decode import Rejected, decode_message
from ingest.service import Incoming, IngestService
from ingest.sites import site_of_topic

T = TypeVar("T")


class DeskError(Exception):
    """The entry was not accepted; the text says why, for the person at the form."""


class FieldDesk(Protocol):
    def submit(self, topic: str, payload: bytes) -> None:
        """Hand one wire message to the pipeline; return once it is stored (or raise DeskError)."""
        ...


class ServiceDesk:
    """The desk of a running ingest service: the entry is decoded, committed and judged
    in the caller's thread, under the service's lock, exactly as an MQTT message is.

    A message the wire would refuse is refused here with the same reason, before
    anything is stored; one the service refuses later (e.g. an inspection dated in
    the future, ``--max-clock-skew-s``) is stored as a rejection and reported too.
    """

    def __init__(self, service: IngestService, clock_ms: Callable[[], int]) -> None:
        self.service = service
        self.clock_ms = clock_ms

    def submit(self, topic: str, payload: bytes) -> None:
        decoded = decode_message(topic, payload, self.service.site)
        if isinstance(decoded, Rejected):
            raise DeskError(decoded.reason)
        before = self.service.stats.rejected
        self.service.handle_batch([Incoming(topic, payload, self.clock_ms())])
        if self.service.stats.rejected > before:
            reasons = self.service.store.rejections()
            raise DeskError(reasons[-1][1] if reasons else "refused by the service")


def for_site_of(topic: str, lookup: Callable[[str], T | None], whose: str) -> T:
    """What ``lookup`` holds for the site of ``siltwatch/v1/{site}/...``; DeskError when the
    topic names no site ``whose`` (this service, this console) takes."""
    sid = site_of_topic(topic)
    found = None if sid is None else lookup(sid)
    if found is None:
        raise DeskError(f"no site of {whose} takes {topic}")
    return found


class SiteDesks:
    """One desk per site behind one console: the topic's site picks the desk."""

    def __init__(self, desks: Mapping[str, FieldDesk]) -> None:
        self.desks = dict(desks)

    def submit(self, topic: str, payload: bytes) -> None:
        parts = topic.split("/")
        desk = self.desks.get(parts[2]) if len(parts) > 2 else None
        if desk is None:
            raise DeskError(f"no site of this service takes {topic}")
        desk.submit(topic, payload)
