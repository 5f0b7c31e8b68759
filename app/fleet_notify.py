"""``serve --notify`` for a fleet: one delivery per site, following the sites through SIGHUP.

Why one :class:`~alerts.notify_config.Delivery` per site and not one for all:
a delivery carries its site's contacts and routing, its label in every
message (the site's name and zone), the console's links signed for that site,
and an outbox whose rows are not keyed by site — a worker sends, repeats and
escalates whatever its outbox holds. So each site gets its own outbox file next
to the configured one (alerts/notify_config.py ``site_outbox_path``) and its
own worker thread, and one site's mail can never go out under another's name.

What the sites share: the channels' settings (NOTIFY.toml), the console's book
(who acknowledged; it locks itself) and one read connection to the store for
the daily digests (:class:`LockedDigests`), rather than a connection per site.

The deliveries follow the sites as the mirrors do (ingest/influx/fleet.py):
:meth:`FleetDeliveries.for_site` is called when a site's service is built (at
the start, on a SIGHUP add or change, and on a rebuild after a failed judge,
which keeps the running delivery), and :meth:`FleetDeliveries.remove` when a
site is removed. What a stopped delivery has not sent stays in its outbox file
for the next start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from alerts.digest import DigestSource
from alerts.notify_config import Delivery, Notify
from ingest.per_site import PerSite
from siltwatch.config import SiteConfig
from siltwatch.schema import Alert, Duty

log = logging.getLogger(__name__)

DeliveryFactory = Callable[[SiteConfig, Notify, DigestSource], Delivery]
"""Builds one site's (not yet started) delivery: app/serving.py ``People.delivery_for``."""


class LockedDigests:
    """The digests' one read connection to the store, shared by every site's delivery
    thread: one query at a time (a store connection is not for concurrent use)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._lock = threading.Lock()

    def open_alerts(self, site: str) -> list[Alert]:
        with self._lock:
            return list(self.store.open_alerts(site))

    def duties_due(self, site: str, until: datetime) -> list[Duty]:
        with self._lock:
            return list(self.store.duties_due(site, until))

    def close(self) -> None:
        with self._lock:
            self.store.close()


class FleetDeliveries:
    """Every served site's running Delivery (see the module docstring)."""

    def __init__(self, notify: Notify, make: DeliveryFactory, digests: LockedDigests) -> None:
        self.notify = notify
        self._make = make
        self.digests = digests
        # each site's delivery, with the configuration it was made for
        self._running: PerSite[tuple[Delivery, SiteConfig]] = PerSite()

    def for_site(self, site: SiteConfig) -> Delivery:
        """The site's running delivery: kept while its configuration is the same, else the
        old one is stopped first (one worker per outbox file) and a new one started."""
        sid = site.site.id
        current = self._running.get(sid)
        if current is not None and current[1] == site:
            return current[0]
        self.remove(sid)
        delivery = self._make(site, self.notify.for_site(sid), self.digests)
        delivery.start()
        self._running.put(sid, (delivery, site))
        return delivery

    def remove(self, site_id: str) -> None:
        """Stop the site's delivery (after its service has stopped: its last alerts are in
        the outbox); what it has not sent waits in its outbox file for the next start."""
        running = self._running.take(site_id)  # out of /healthz before it stops: not "down"
        if running is not None:
            running[0].stop()

    def deliveries(self) -> dict[str, Delivery]:
        """Each served site's delivery (a copy: a reload may add or remove some)."""
        return {sid: delivery for sid, (delivery, _site) in self._running.copy().items()}

    def describe(self) -> str:
        """For the banner: the channels and where the sites' outboxes are."""
        names = ", ".join(self._channel_names()) or "no channels"
        where = self.notify.for_site("<site>").outbox_path
        return f"{names} via one outbox per site ({where})"

    def _channel_names(self) -> list[str]:
        from alerts.mail import EmailSink
        from alerts.sms import SmsSink
        from alerts.webhook import WebhookSink

        n = self.notify
        channels = ((EmailSink, n.smtp), (SmsSink, n.sms), (WebhookSink, n.webhook))
        return [kind.name for kind, settings in channels if settings is not None]

    def close(self) -> None:
        """At the stop, after every site's service: stop every delivery, then the reader."""
        for sid in sorted(self.deliveries()):
            try:
                self.remove(sid)
            except Exception:
                log.exception("site %s: the delivery did not stop cleanly", sid)
        self.digests.close()
