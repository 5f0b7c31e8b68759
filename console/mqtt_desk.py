"""The field desk of a console that runs apart from the workers: it publishes over MQTT.

``siltwatch console`` (app/console_cmd.py) serves one web console over every
site of a fleet, but it owns no site: each site is judged by the worker whose
partition holds it, and that worker alone writes the site's store rows. So what
a person records in the console takes the road a field tablet's record takes:
published with QoS 1 on the site's topic (``siltwatch/v1/{site}/inspections``,
``siltwatch/v1/{site}/log``), stored and judged by the owning worker when its
session receives it. If that worker is down, the broker keeps the message in
the worker's persistent session until it is back.

Before anything is sent, the message is decoded as the worker will decode it
(``ingest.decode.decode_message``) and its time is checked against the worker's
clock-skew bound, so an entry the worker would refuse is refused at the form
with the worker's reason instead of vanishing into a rejection row.

Each :meth:`MqttDesk.submit` opens its own short connection (clean start, a
client id of its own; ingest/mqtt/publish.py) and waits for the PUBACK: a form is submitted rarely, a
per-request client needs no locking between concurrent requests, and an entry
the broker did not take is never left queued in a long-lived client to be
delivered behind the person's back after they were told it failed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from console.desk import DeskError, for_site_of
from ingest.decode import DEFAULT_MAX_CLOCK_SKEW_S, Decoded, Rejected, decode_message
from ingest.mqtt.publish import NotAcknowledged, publish_acknowledged
from ingest.mqtt.session import BrokerSettings
from siltwatch.config import SiteConfig
from siltwatch.timefmt import utc_iso

PUBACK_TIMEOUT_S = 10.0
NOT_TAKEN = "the broker did not take it"


class MqttDesk:
    """Publish what people record to the site's topic; return once the broker has it.

    ``sites`` are the sites this console shows (keyed by id); ``clock_ms`` the
    wall clock in epoch ms (the skew check); ``timeout_s`` bounds the whole
    submit (connect, login, PUBACK).
    """

    def __init__(
        self,
        sites: Mapping[str, SiteConfig],
        broker: BrokerSettings,
        clock_ms: Callable[[], int],
        *,
        timeout_s: float = PUBACK_TIMEOUT_S,
        max_clock_skew_s: float = DEFAULT_MAX_CLOCK_SKEW_S,
        client_prefix: str = "siltwatch-console",
    ) -> None:
        self.sites = dict(sites)
        self.broker = broker
        self.clock_ms = clock_ms
        self.timeout_s = timeout_s
        self.max_skew_ms = int(max_clock_skew_s * 1000)
        self.client_prefix = client_prefix

    def submit(self, topic: str, payload: bytes) -> None:
        """Check the message as the worker will, then publish it (DeskError says why not)."""
        site = for_site_of(topic, self.sites.get, "this console")
        decoded = decode_message(topic, payload, site)
        if isinstance(decoded, Rejected):
            raise DeskError(decoded.reason)
        self._check_clock(decoded)
        client_id = f"{self.client_prefix}-{uuid.uuid4().hex[:12]}"
        try:
            publish_acknowledged(
                self.broker,
                topic,
                payload,
                client_id=client_id,
                timeout_s=self.timeout_s,
                refused_hint=f"may the console's MQTT user write {topic}?",
            )
        except NotAcknowledged as exc:
            then = ""
            if exc.maybe_sent:
                then = (
                    "; it may still reach the site's worker: look at the site before "
                    "recording it again"
                )
            elif not exc.published:
                then = "; nothing was sent, try again later"
            raise DeskError(f"{NOT_TAKEN}: {exc}{then}") from None

    def _check_clock(self, decoded: Decoded) -> None:
        """Refuse an entry dated further ahead than the worker accepts (ingest/service.py
        refuses it there: stored as a rejection, it would complete no duty)."""
        now = self.clock_ms()
        dated = [("inspection", i.t) for i in decoded.inspections]
        dated += [("site-log", e.t) for e in decoded.site_log]
        for what, t in dated:
            if t > now + self.max_skew_ms:
                raise DeskError(
                    f"clock ahead: {what} time {utc_iso(t)} is {(t - now) / 1000:,.0f} s ahead "
                    f"of now (the site's worker accepts at most {self.max_skew_ms / 1000:,.0f} s)"
                )
