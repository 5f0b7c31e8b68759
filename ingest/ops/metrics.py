"""Prometheus metrics of the live service, read from its own counters at scrape time.

Why a custom collector and not prometheus_client's Counter objects: the
service, its MQTT link, the InfluxDB mirror and the delivery worker already
count what they do (siltwatch/counters.py), and ``serve`` prints those numbers
when it stops. Incrementing a second set of counters beside them would be two
bookkeepings that can drift; this collector only *reads* the existing ones when
Prometheus scrapes, so /metrics and the stop line can never disagree.

What is exported is declared once in siltwatch/service_metrics.py (the
service's Grafana dashboard loops over the same table); :data:`_READERS` says
how each one is read here. Each service gets a private
:class:`~prometheus_client.CollectorRegistry` (:func:`service_registry`), not
the global one, so tests and several services in one process never collide.

The wall clock enters here (engine lag = now minus the watermark), in the I/O
shell: ``clock_ms`` is injected, and analytics/ never sees it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from analytics.timeutil import MS_PER_S
from ingest.ops.health import ServiceParts, readiness
from siltwatch import service_metrics as sm
from siltwatch.service_metrics import MetricKind, MetricSpec

if TYPE_CHECKING:
    from ingest.service import IngestService, IngestStats

log = logging.getLogger(__name__)

# A scrape waits this long for the service's lock (held while a batch is judged or a
# late-data rebuild runs); past it the engine-lag sample is left out of that scrape.
LOCK_WAIT_S = 0.5

Sample = tuple[tuple[str, ...], float]  # label values after the site, value
Reader = Callable[[ServiceParts, int], list[Sample]]


def _one(value: float | None) -> list[Sample]:
    return [] if value is None else [((), float(value))]


def _by_label(counts: Mapping[str, int]) -> list[Sample]:
    return [((key,), float(n)) for key, n in sorted(counts.items())]


def _ingest(read: Callable[[IngestService], float]) -> Reader:
    """A reader of one of the service's counters (absent until the rebuild is done)."""

    def reader(parts: ServiceParts, now_ms: int) -> list[Sample]:
        return [] if parts.service is None else _one(read(parts.service))

    return reader


def _rejected(parts: ServiceParts, now_ms: int) -> list[Sample]:
    if parts.service is None:
        return []
    return _by_label(dict(parts.service.stats.rejected_by_reason))  # a copy: ingest adds keys


def _engine_lag(parts: ServiceParts, now_ms: int) -> list[Sample]:
    service = parts.service
    if service is None or not service.lock.acquire(timeout=LOCK_WAIT_S):
        return []
    try:
        watermark = service.engine.watermark
    finally:
        service.lock.release()
    if watermark is None:
        return []
    return _one((now_ms - watermark) / MS_PER_S)


def _lateness(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return [] if parts.service is None else _one(parts.service.allowed_lateness_s)


def _mqtt_connected(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return _one(1.0 if parts.mqtt is not None and parts.mqtt.connected else 0.0)


def _mqtt_disconnects(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return [] if parts.mqtt is None else _one(parts.mqtt.stats.disconnects)


def _ready(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return _one(1.0 if readiness(parts).ok else 0.0)


def _outbox_pending(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return [] if parts.delivery is None else _one(parts.delivery.pending_count())


def _delivery_failures(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return [] if parts.delivery is None else _by_label(parts.delivery.failures_by_channel())


def _mirror_pending(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return [] if parts.mirror is None else _one(parts.mirror.stats.pending)


def _mirror_dropped(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return [] if parts.mirror is None else _one(parts.mirror.stats.dropped)


def _mirror_recopied(parts: ServiceParts, now_ms: int) -> list[Sample]:
    return [] if parts.mirror is None else _one(parts.mirror.stats.recopied)


def _completeness(parts: ServiceParts, now_ms: int) -> list[Sample]:
    service = parts.service
    if service is None or service.gaps is None or not service.lock.acquire(timeout=LOCK_WAIT_S):
        return []
    try:
        ratios = service.gaps.completeness()
    finally:
        service.lock.release()
    return [((st, se), got / want) for (st, se), (got, want) in ratios.items() if want > 0]


# What a fleet refused before it reached any site (ingest/sites.py ``SiteRouter.own``:
# a topic of a site this worker does not serve), exported with an empty site label.
_UNROUTED: dict[MetricSpec, Callable[[IngestStats], list[Sample]]] = {
    sm.MESSAGES: lambda stats: _one(stats.messages),
    sm.REJECTED: lambda stats: _by_label(dict(stats.rejected_by_reason)),
}

_READERS: dict[MetricSpec, Reader] = {
    sm.MESSAGES: _ingest(lambda s: s.stats.messages),
    sm.READINGS_STORED: _ingest(lambda s: s.stats.readings_stored),
    sm.DUPLICATES: _ingest(lambda s: s.stats.duplicates),
    sm.REJECTED: _rejected,
    sm.LATE: _ingest(lambda s: s.stats.late_readings),
    sm.REBUILDS: _ingest(lambda s: s.stats.rebuilds),
    sm.ENGINE_LAG: _engine_lag,
    sm.ALLOWED_LATENESS: _lateness,
    sm.MQTT_CONNECTED: _mqtt_connected,
    sm.MQTT_DISCONNECTS: _mqtt_disconnects,
    sm.READY: _ready,
    sm.OUTBOX_PENDING: _outbox_pending,
    sm.DELIVERY_FAILURES: _delivery_failures,
    sm.MIRROR_PENDING: _mirror_pending,
    sm.MIRROR_DROPPED: _mirror_dropped,
    sm.MIRROR_RECOPIED: _mirror_recopied,
    sm.SENSOR_COMPLETENESS: _completeness,
    sm.READINGS_LOST: _ingest(lambda s: s.stats.readings_lost),
    sm.RESEND_REQUESTS: _ingest(lambda s: s.stats.resend_requests),
}


def _family(spec: MetricSpec) -> CounterMetricFamily | GaugeMetricFamily:
    if spec.kind is MetricKind.COUNTER:
        return CounterMetricFamily(spec.name, spec.help, labels=list(spec.labels))
    return GaugeMetricFamily(spec.name, spec.help, labels=list(spec.labels))


class ServiceCollector:
    """A prometheus_client collector over one service's parts (see the module docstring)."""

    def __init__(self, parts: ServiceParts, clock_ms: Callable[[], int]) -> None:
        missing = [spec.name for spec in sm.SERVICE_METRICS if spec not in _READERS]
        if missing:  # a metric described but never read would be silently absent
            raise ValueError(f"ingest/ops/metrics.py has no reader for {', '.join(missing)}")
        self.parts = parts
        self.clock_ms = clock_ms

    def describe(self) -> Iterable[Metric]:
        """The families without samples: what the registry checks for name clashes."""
        return [_family(spec) for spec in sm.SERVICE_METRICS]

    def collect(self) -> Iterable[Metric]:
        """Every family, read now; a part that fails to answer leaves only its family empty."""
        now = self.clock_ms()
        views = self.parts.per_site()  # a fleet: one sample per site of each metric
        families = []
        for spec in sm.SERVICE_METRICS:
            family = _family(spec)
            for view in views:
                try:
                    samples = _READERS[spec](view, now)
                except Exception:  # a closing outbox must not break the whole scrape
                    log.warning("metric %s could not be read", spec.name, exc_info=True)
                    samples = []
                for labels, value in samples:
                    if math.isfinite(value):
                        family.add_metric([view.site_id, *labels], value)
            unrouted = _UNROUTED.get(spec)
            if unrouted is not None and self.parts.sites is not None:
                for labels, value in unrouted(self.parts.sites.own):
                    family.add_metric(["", *labels], value)
            families.append(family)
        return families


def service_registry(parts: ServiceParts, clock_ms: Callable[[], int]) -> CollectorRegistry:
    """A private registry holding only this service's collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServiceCollector(parts, clock_ms))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The registry in Prometheus' text format (what GET /metrics answers)."""
    return generate_latest(registry)
