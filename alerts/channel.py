"""What every delivery channel (email, SMS, webhook) has in common.

A channel does three things, kept apart so the outbox can sit between them:
``addresses`` (which recipients of a notification it can reach), ``render``
(the exact message, computed once at enqueue time) and ``transmit`` (one
attempt to hand one rendered message to one address). ``transmit`` either
returns (the server accepted it) or raises :class:`DeliveryFailed`, which says
whether trying again can help: that single bit drives retries and the audit log.

Each channel is also a :class:`alerts.sinks.Sink` on its own (``send``): a
direct, best-effort send without the outbox, for scripts and tests.

A rendered message is a ``dict[str, str]`` because the outbox stores it as JSON
(alerts/outbox.py); binary parts (the email's PNG chart) are base64 text in it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Generic, Protocol, TypeVar

from alerts.acklinks import Links
from alerts.messages import Answer, SiteLabel
from alerts.routing import Notification
from siltwatch.schema import Alert
from siltwatch.timefmt import utc_iso

log = logging.getLogger(__name__)

Message = dict[str, str]

SettingsT = TypeVar("SettingsT")


class DeliveryFailed(Exception):
    """One attempt failed; ``permanent``: retrying cannot help (a 4xx, an SMTP 5xx).

    ``retry_after_s``: the server asked us to wait at least this long (HTTP 429).
    """

    def __init__(self, reason: str, *, permanent: bool, retry_after_s: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.retry_after_s = retry_after_s


def delivery_id(alert_id: str, event: str, at: str, channel: str, address: str) -> str:
    """The stable identity of one delivery: the same notification to the same place.

    Enqueueing it again (a replayed event, a restarted service) finds the id and
    does nothing, and receivers that see it twice (at-least-once) can dedupe on it.
    """
    key = "\x1f".join((alert_id, event, at, channel, address))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def opened_event_time(alert: Alert) -> str:
    """The ``at`` the episode's ``opened`` notification carried: the dispatcher writes
    ``utc_iso(event.at)`` of the engine's event (epoch ms), which is ``opened_at``."""
    return utc_iso((alert.opened_at - _EPOCH) // timedelta(milliseconds=1))


def thread_root(alert: Alert, channel: str, address: str) -> str:
    """The delivery id of the episode's ``opened`` message to ``address``: every later
    email of the episode to that address replies to it (In-Reply-To, References), so
    mail clients thread the episode even when that first message never reached them
    (a person told only from the escalation on still gets one thread)."""
    return delivery_id(alert.id, "opened", opened_event_time(alert), channel, address)


class Channel(Protocol):
    name: str

    def addresses(self, note: Notification) -> list[tuple[str, str]]:
        """(name, address) of each recipient this channel reaches."""
        ...

    def render(self, note: Notification, address: str, delivery: str) -> Message: ...

    def transmit(self, address: str, message: Message, delivery: str) -> None:
        """One attempt; returns when accepted, raises DeliveryFailed otherwise."""
        ...


@dataclass(eq=False)
class DirectSend(Generic[SettingsT]):
    """``send(note)`` for a channel: every address, now, once; failures are logged.

    No retry and no record: what the outbox adds. Raises the first failure after
    trying every address, so the dispatcher logs the broken channel.

    Every channel is built from its own settings (server, credentials, timeouts),
    the site's label for the message text, an optional clock (tests pin it) and
    optional ``links`` (alerts/acklinks.py): with them a message offers the
    acknowledgement code, the signed link for its recipient and the console's page.
    """

    name: str = field(init=False, repr=False)  # each channel's class says its own
    settings: SettingsT
    site: SiteLabel
    clock: Callable[[], float] | None = None
    links: Links | None = field(default=None, kw_only=True)

    def now(self) -> float:
        """Epoch seconds: the injected clock, else the wall clock (a link's expiry counts
        from when the message is rendered)."""
        return self.clock() if self.clock is not None else time.time()

    def answer(self, note: Notification, address: str) -> Answer:
        """The acknowledge link for the recipient at ``address`` and the console page."""
        if self.links is None:
            return Answer()
        a = note.alert
        name = next((n for n, addr in self.addresses(note) if addr == address), None)
        ack = None if name is None else self.links.ack_url(a.id, name, self.now())
        return Answer(ack_url=ack, alert_url=self.links.alert_url(a.id))

    def addresses(self, note: Notification) -> list[tuple[str, str]]:
        raise NotImplementedError

    def render(self, note: Notification, address: str, delivery: str) -> Message:
        raise NotImplementedError

    def transmit(self, address: str, message: Message, delivery: str) -> None:
        raise NotImplementedError

    def send(self, note: Notification) -> None:
        first: DeliveryFailed | None = None
        for _name, address in self.addresses(note):
            ident = delivery_id(note.alert.id, note.event, note.at, self.name, address)
            try:
                self.transmit(address, self.render(note, address, ident), ident)
            except DeliveryFailed as exc:
                log.error("%s to %s failed: %s", self.name, address, exc.reason)
                first = first or exc
        if first is not None:
            raise first
