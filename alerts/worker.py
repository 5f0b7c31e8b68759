"""The delivery worker: sends what the outbox holds, retries, rate-limits SMS, audits all.

Time comes from an injected ``clock`` (epoch seconds) so tests move it forward
instead of sleeping; :class:`DeliveryThread` is the thin loop that runs the
worker with the wall clock in ``siltwatch serve``.

**Retries.** A transient failure (network, SMTP 4xx, HTTP 5xx/429/408) is tried
again after ``RetryPolicy.delays_s[attempt - 1]`` seconds, or later if the server
asked (``Retry-After``). The default, 1 min x 3^k, gives 8 attempts: after 1, 3, 9,
27 and 81 min, 4 h 3 min and 12 h 9 min, the last about 18 h 13 min after the
first, long enough to ride out a gateway outage overnight and short enough that
a message is not delivered days stale. Then, or at once on a permanent failure
(SMTP 5xx, HTTP 4xx other than 408/429), the delivery is marked ``failed``,
audited and logged at ERROR: never dropped silently.

**SMS rate limit** ("the officer at 11 pm gets one clear SMS, not forty"). At
most ``max_per_window`` SMS reach one phone number in any sliding window of
``window_s`` (an hour). A notification that finds the window full is held
(``deferred``) until the oldest SMS in the window ages out; when a slot frees,
everything held for that number goes out as **one** summary SMS (severity and
citation of each critical item first, the rest counted). Because a slot always
frees within one window of any moment, no SMS (critical or not) is delayed by
more than ``window_s`` by the limit itself; only a failing gateway delays longer.
The full text of every held notification still goes by email and to the alert
log. Email and webhooks are not rate-limited: they do not wake anyone.

**No secrets in logs.** Log lines name the channel, the recipient and the stored
address, which never holds a credential (a webhook's address is its redacted URL,
alerts/webhook.py); error texts come from the channels, which keep tokens and
secret URLs out of them (alerts/http.py).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from alerts.acklinks import Links
from alerts.channel import Channel, DeliveryFailed, delivery_id
from alerts.messages import Held, SiteLabel, sms_summary
from alerts.outbox import SUMMARY, Composed, Delivery, NewDelivery, Outbox, utc_text
from alerts.quiet import quiet_until
from alerts.routing import NoticeEvent, Notification
from siltwatch import backoff
from siltwatch.config import SiteConfig
from siltwatch.counters import Counters
from siltwatch.timefmt import local_time
from siltwatch.vocabulary import Severity, severity_rank

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class RetryPolicy:
    """Seconds to wait after attempt 1, 2, ...; ``len(delays_s) + 1`` attempts in all."""

    delays_s: tuple[float, ...] = tuple(backoff.delay(k, 60.0, factor=3) for k in range(7))

    @property
    def max_attempts(self) -> int:
        return len(self.delays_s) + 1

    def delay_after(self, attempts: int) -> float | None:
        """The wait after the ``attempts``-th failed attempt; None: give up."""
        if attempts < 1 or attempts > len(self.delays_s):
            return None
        return self.delays_s[attempts - 1]


@dataclass(frozen=True)
class RateLimit:
    """At most ``max_per_window`` messages per address in any ``window_s``."""

    max_per_window: int
    window_s: float = 3600.0

    def __post_init__(self) -> None:
        if self.max_per_window < 1 or self.window_s <= 0:
            raise ValueError("a rate limit needs max_per_window >= 1 and window_s > 0")

    def next_slot(self, sent: Sequence[float], now: float) -> float | None:
        """None if a message may go now, else when the next one may (``sent``: send times)."""
        recent = sorted(t for t in sent if t > now - self.window_s)
        if len(recent) < self.max_per_window:
            return None
        return recent[-self.max_per_window] + self.window_s


def urgent(note: Notification) -> bool:
    """Critical news goes through quiet hours; a resolution or a warning waits."""
    return note.alert.severity == Severity.CRITICAL and note.event != NoticeEvent.RESOLVED


class Scheduled(Protocol):
    """Something that puts messages in the outbox at a time (alerts/followups.py, digest.py)."""

    def run_due(self) -> int: ...

    def next_due(self) -> float | None: ...


class OutboxSink:
    """The Sink the dispatcher calls: renders and writes every delivery, sends nothing.

    Writing is fast and local, so the ingest thread never waits on an SMTP server;
    ``on_enqueue`` wakes the delivery thread.
    """

    def __init__(
        self,
        outbox: Outbox,
        channels: Sequence[Channel],
        clock: Clock,
        on_enqueue: Callable[[], None] | None = None,
        site: SiteConfig | None = None,
    ) -> None:
        self.outbox = outbox
        self.channels = list(channels)
        self.clock = clock
        self.on_enqueue = on_enqueue
        self.site = site

    def _held(self, note: Notification, name: str) -> tuple[float, str | None]:
        """(not before, why): a non-critical message waits out the person's quiet hours."""
        if self.site is None or urgent(note):
            return 0.0, None
        contact = next((c for c in note.recipients if c.name == name), None)
        if contact is None:
            return 0.0, None
        zone = self.site.site.zone
        until = quiet_until(contact, zone, self.clock())
        if until is None:
            return 0.0, None
        return until, f"quiet hours of {name} until {local_time(int(until * 1000), zone)}"

    def deliveries(self, note: Notification) -> list[NewDelivery]:
        a = note.alert
        out = []
        for channel in self.channels:
            for name, address in channel.addresses(note):
                ident = delivery_id(a.id, note.event, note.at, channel.name, address)
                not_before, why = self._held(note, name)
                out.append(
                    NewDelivery(
                        id=ident,
                        channel=channel.name,
                        address=address,
                        recipient=name,
                        alert_id=a.id,
                        event=note.event,
                        event_at=note.at,
                        kind=a.kind,
                        severity=a.severity,
                        subject=a.subject,
                        rule=a.rule,
                        message=channel.render(note, address, ident),
                        not_before=not_before,
                        held_why=why,
                    )
                )
        return out

    def send(self, note: Notification) -> None:
        items = self.deliveries(note)
        if items:
            self.outbox.enqueue(items, self.clock())
            if self.on_enqueue is not None:
                self.on_enqueue()


class DeliveryStats(Counters):
    """What the worker's attempts came to in this process (``serve``'s /metrics reads it;
    the outbox's audit log is the durable record)."""

    failures_by_channel: dict[str, int]  # failed attempts, retried or given up


class DeliveryWorker:
    """Sends due deliveries; one per outbox file. Creating one recovers interrupted sends."""

    def __init__(
        self,
        outbox: Outbox,
        channels: Sequence[Channel],
        *,
        clock: Clock,
        site: SiteLabel,
        retry: RetryPolicy | None = None,
        sms_limit: RateLimit | None = None,
        sms_channel: str = "sms",
        scheduled: Sequence[Scheduled] = (),
    ) -> None:
        self.outbox = outbox
        self.channels: Mapping[str, Channel] = {c.name: c for c in channels}
        self.clock = clock
        self.site = site
        self.retry = retry or RetryPolicy()
        self.sms_limit = sms_limit
        self.sms_channel = sms_channel
        self.scheduled = list(scheduled)
        self.stats = DeliveryStats()
        for ident in outbox.recover(clock()):
            log.warning("delivery %s was interrupted mid-send; sending it again", ident)

    def next_due(self) -> float | None:
        times = [self.outbox.next_due(), *(s.next_due() for s in self.scheduled)]
        return min((t for t in times if t is not None), default=None)

    def run_once(self) -> int:
        """Enqueue what is scheduled (follow-ups, digests), then attempt every delivery
        due now; returns the number of attempts made."""
        for source in self.scheduled:
            try:
                source.run_due()
            except Exception:  # a broken schedule must not stop the deliveries
                log.exception("%s failed; deliveries go on", type(source).__name__)
        now = self.clock()
        attempts = 0
        held: dict[str, list[Delivery]] = defaultdict(list)
        for d in self.outbox.due(now):
            if d.channel == self.sms_channel and self.sms_limit is not None:
                held[d.address].append(d)
            else:
                attempts += self._attempt(d.id)
        for address, group in held.items():
            attempts += self._limited(address, group, now)
        return attempts

    def _limited(self, address: str, group: list[Delivery], now: float) -> int:
        assert self.sms_limit is not None
        limit = self.sms_limit
        sent = self.outbox.sent_times(self.sms_channel, address, now - limit.window_s)
        slot = limit.next_slot(sent, now)
        if slot is not None:
            why = f"SMS limit: {len(sent)} to {address} in the last {limit.window_s / 60:g} min"
            self.outbox.defer([d.id for d in group], slot, now, why)
            return 0
        if len(group) == 1:
            return self._attempt(group[0].id)
        summary = self._summary(address, group, now)
        self.outbox.fold([d.id for d in group], summary, now)
        return self._attempt(summary.id)

    def _summary(self, address: str, group: Sequence[Delivery], now: float) -> NewDelivery:
        # A summary still pending (its send failed) is re-folded with what came since:
        # summarise what it carries, not the summary itself.
        items = [
            x for d in group for x in (self.outbox.folded(d.id) if d.alert_id == SUMMARY else [d])
        ]
        held = [Held(d.event, d.severity, d.kind, d.subject, d.rule) for d in items]
        since = min(d.created_at for d in items)
        links = getattr(self.channels.get(self.sms_channel), "links", None)
        link = links.site_url() if isinstance(links, Links) else None
        text = sms_summary(held, self.site, utc_text(since), link=link)
        key = "\x1f".join(sorted(d.id for d in group))
        ident = "sum-" + hashlib.sha256(key.encode()).hexdigest()[:28]
        worst = max((d.severity for d in items), key=severity_rank)
        return NewDelivery(
            id=ident,
            channel=self.sms_channel,
            address=address,
            recipient=group[0].recipient,
            alert_id=SUMMARY,
            event=Composed.SUMMARY,
            event_at=utc_text(now),
            kind="summary",
            severity=worst,
            subject=f"{len(items)} notifications",
            rule="; ".join(sorted({d.rule for d in items if d.severity == Severity.CRITICAL})),
            message={"body": text},
        )

    def _attempt(self, ident: str) -> int:
        d = self.outbox.claim(ident, self.clock())
        if d is None:
            return 0
        channel = self.channels.get(d.channel)
        try:
            if channel is None:
                raise DeliveryFailed(f"channel {d.channel!r} is not configured", permanent=False)
            channel.transmit(d.address, d.message, d.id)
        except DeliveryFailed as exc:
            self._failed(d, exc)
        except Exception as exc:  # a bug in a channel must not stop the other deliveries
            log.exception("%s delivery %s raised", d.channel, d.id)
            self._failed(d, DeliveryFailed(f"{type(exc).__name__}: {exc}", permanent=False))
        else:
            self.outbox.mark_sent(d.id, self.clock())
            log.info("%s sent to %s (%s %s)", d.channel, d.recipient, d.event, d.alert_id)
        return 1

    def _failed(self, d: Delivery, exc: DeliveryFailed) -> None:
        failures = self.stats.failures_by_channel
        failures[d.channel] = failures.get(d.channel, 0) + 1
        now = self.clock()
        delay = None if exc.permanent else self.retry.delay_after(d.attempts)
        if delay is None:
            why = (
                exc.reason
                if exc.permanent
                else f"gave up after {d.attempts} attempts: {exc.reason}"
            )
            self.outbox.mark_failed(d.id, now, why)
            log.error("%s to %s (%s) FAILED for good: %s", d.channel, d.recipient, d.address, why)
            return
        wait = max(delay, exc.retry_after_s or 0.0)
        self.outbox.mark_retry(d.id, now, now + wait, exc.reason)
        log.warning("%s to %s failed (attempt %d), retry in %.0f s: %s",
                    d.channel, d.recipient, d.attempts, wait, exc.reason)  # fmt: skip


class DeliveryThread:
    """Runs a worker on the wall clock: wakes when something is enqueued or falls due."""

    def __init__(self, worker: DeliveryWorker, *, max_sleep_s: float = 60.0) -> None:
        self.worker = worker
        self.max_sleep_s = max_sleep_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="siltwatch-delivery", daemon=True)

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        """True while the delivery thread runs (liveness: ``serve``'s /healthz)."""
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Finish the current attempt and stop; pending deliveries stay in the outbox."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.worker.run_once()
                due = self.worker.next_due()
            except Exception:
                log.exception("delivery worker failed; trying again shortly")
                due = None
            wait = self.max_sleep_s if due is None else due - time.time()
            self._wake.wait(min(self.max_sleep_s, max(0.0, wait)))
            self._wake.clear()
