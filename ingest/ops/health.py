"""Is ``siltwatch serve`` alive, and is it ready? The answers behind /healthz and /readyz.

The two questions differ on purpose (they are what an orchestrator asks):

* **Alive** (/healthz): every worker thread the process started is still
  running — the MQTT commit worker, the delivery thread, the InfluxDB flusher.
  A dead one means the process must be restarted; a process still rebuilding
  from the store is alive (restarting it would only start the rebuild again).
* **Ready** (/readyz): the engine is rebuilt from the store, the MQTT
  session is connected and (with ``--http``) the web console answers, so what
  arrives is committed, judged and answered now, and a person can log in.
  A rebuild, a lost broker or an orderly stop make it not ready, with the reason.

:class:`ServiceParts` is where ``serve`` hands each part over as it starts; the
metrics collector (ingest/ops/metrics.py) reads the same object, so the numbers and
the probes describe one process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from ingest.influx.mirror import MirrorStats
from ingest.mqtt.session import MqttStats

if TYPE_CHECKING:
    from ingest.service import IngestService, IngestStats


class MqttLink(Protocol):
    """What the probes and metrics read of the MQTT side (ingest/mqtt/session.py)."""

    stats: MqttStats

    @property
    def connected(self) -> bool: ...


class SiteSet(Protocol):
    """Many sites' services in one process (ingest/sites.py ``SiteRouter``).

    ``own`` counts what was refused before it reached any site (a topic of a site
    this process does not serve): /metrics exports it without a site label.
    """

    own: IngestStats

    def services(self) -> dict[str, IngestService]: ...


class MirrorLink(Protocol):
    """The InfluxDB mirror's counters (ingest/influx/mirror.py)."""

    stats: MirrorStats


class MirrorSet(Protocol):
    """A fleet's InfluxDB mirrors, one per site (ingest/influx/fleet.py ``FleetMirrors``)."""

    def mirrors(self) -> Mapping[str, MirrorLink]: ...


class DeliveryLink(Protocol):
    """The delivery outbox and worker (alerts/notify_config.py ``Delivery``); ingest does
    not import alerts, so ``serve`` hands it in."""

    def pending_count(self) -> int: ...

    def failures_by_channel(self) -> dict[str, int]: ...

    @property
    def alive(self) -> bool: ...


class DeliverySet(Protocol):
    """A fleet's deliveries, one per site (app/fleet_notify.py ``FleetDeliveries``)."""

    def deliveries(self) -> Mapping[str, DeliveryLink]: ...


@dataclass
class ServiceParts:
    """The running service's parts, filled in by ``serve`` as each one starts.

    ``service`` is set once the rebuild from the store is done; ``threads`` maps a
    part's name to a function saying whether its thread still runs; ``stopping`` is
    set when SIGTERM/Ctrl-C (or a fatal error) begins the orderly stop. A process
    serving many sites sets ``sites`` instead of ``service`` (and ``site_id`` to ""),
    ``site_mirrors`` instead of ``mirror`` when it mirrors to InfluxDB, and
    ``site_deliveries`` instead of ``delivery`` with ``--notify``.
    """

    site_id: str
    broker_url: str = ""
    service: IngestService | None = None
    sites: SiteSet | None = None
    mqtt: MqttLink | None = None
    mirror: MirrorLink | None = None
    site_mirrors: MirrorSet | None = None
    delivery: DeliveryLink | None = None
    site_deliveries: DeliverySet | None = None
    threads: dict[str, Callable[[], bool]] = field(default_factory=dict)
    stopping: bool = False
    # With --http: whether the console answers yet. "Ready" includes it, so a login
    # right after /readyz says ready is served, not refused with a 503 (issue 24).
    console_attached: Callable[[], bool] | None = None

    def per_site(self) -> list[ServiceParts]:
        """One view per site, each with that site's service: what the metrics read.

        A process of one site is its own view; a fleet gives one view per site it
        serves now (none while it is rebuilding, so only the process-wide samples
        wait for it).
        """
        if self.sites is None:
            return [self]
        mirrors = {} if self.site_mirrors is None else self.site_mirrors.mirrors()
        deliveries = {} if self.site_deliveries is None else self.site_deliveries.deliveries()
        return [
            replace(
                self,
                site_id=sid,
                service=service,
                sites=None,
                mirror=mirrors.get(sid, self.mirror),
                site_mirrors=None,
                delivery=deliveries.get(sid, self.delivery),
                site_deliveries=None,
            )
            for sid, service in sorted(self.sites.services().items())
        ]


@dataclass(frozen=True)
class Probe:
    """A probe's answer: ``ok`` gives HTTP 200, otherwise 503; ``body`` is the JSON."""

    ok: bool
    body: dict[str, object]


def liveness(parts: ServiceParts) -> Probe:
    """Alive while every started worker thread runs; names the ones that stopped.

    A fleet's delivery threads, one per site, are named ``delivery-<site id>``.
    """
    threads = {name: alive() for name, alive in parts.threads.items()}
    if parts.site_deliveries is not None:
        for sid, delivery in sorted(parts.site_deliveries.deliveries().items()):
            threads[f"delivery-{sid}"] = delivery.alive
    down = sorted(name for name, alive in threads.items() if not alive)
    body: dict[str, object] = {
        "status": "down" if down else "ok",
        "threads": {name: "alive" if alive else "stopped" for name, alive in threads.items()},
    }
    if down:
        body["down"] = down
    return Probe(not down, body)


def readiness(parts: ServiceParts) -> Probe:
    """Ready once rebuilt from the store and connected to the broker; else why not."""
    reason = _not_ready_because(parts)
    where: dict[str, object] = {"site": parts.site_id}
    if parts.sites is not None:
        where = {"sites": sorted(parts.sites.services())}
    if reason is None:
        return Probe(True, {"status": "ready", **where})
    return Probe(False, {"status": "not ready", **where, "reason": reason})


def _not_ready_because(parts: ServiceParts) -> str | None:
    if parts.stopping:
        return "stopping"
    if parts.service is None and parts.sites is None:
        return "rebuilding the engine from the store"
    if parts.mqtt is None:
        return f"connecting to the MQTT broker at {parts.broker_url}"
    if not parts.mqtt.connected:
        return f"not connected to the MQTT broker at {parts.broker_url}"
    if parts.console_attached is not None and not parts.console_attached():
        return "attaching the web console"
    return None
