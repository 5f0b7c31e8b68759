"""The metrics ``siltwatch serve`` exports to Prometheus, each described once.

Why a table here rather than in the exporter: the collector (ingest/ops/metrics.py)
and the service's own Grafana dashboard (dashboards/service.py) both loop over
it, and dashboards/ may import only siltwatch/ (README.md, "Folders"). A panel
therefore names a metric through its description, never by a typed string, and
tests/ingest/test_metrics.py checks that every name a panel queries is one the
collector exports.

Every metric carries a ``site`` label: one Prometheus scrapes one ``serve`` per
site, and the dashboard's site variable filters on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class MetricKind(Enum):
    """Prometheus' two kinds used here: a counter only grows (it restarts at 0 with the
    process; ``rate()`` copes), a gauge is a level read at scrape time."""

    COUNTER = "counter"
    GAUGE = "gauge"


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric: its family name, kind, help text and labels."""

    name: str
    kind: MetricKind
    help: str
    labels: tuple[str, ...] = ("site",)

    @property
    def sample(self) -> str:
        """The name queries use: a counter's samples end in ``_total`` (OpenMetrics)."""
        return f"{self.name}_total" if self.kind is MetricKind.COUNTER else self.name


C, G = MetricKind.COUNTER, MetricKind.GAUGE

MESSAGES = MetricSpec(
    "siltwatch_messages_received", C, "MQTT messages the service took (stored or rejected)."
)
READINGS_STORED = MetricSpec(
    "siltwatch_readings_stored", C, "Readings committed to the store (duplicates excluded)."
)
DUPLICATES = MetricSpec(
    "siltwatch_duplicate_readings", C, "Readings already in the store, delivered again."
)
REJECTED = MetricSpec(
    "siltwatch_rejected_messages",
    C,
    "Messages refused and stored as rejections, by reason (the text before its colon).",
    ("site", "reason"),
)
LATE = MetricSpec(
    "siltwatch_late_readings",
    C,
    "Readings that arrived after the engine had judged their window (a rebuild applies them).",
)
REBUILDS = MetricSpec(
    "siltwatch_engine_rebuilds", C, "Rebuilds of the engine's history after late data."
)
ENGINE_LAG = MetricSpec(
    "siltwatch_engine_lag_seconds",
    G,
    "Wall clock minus the engine's watermark: how far behind real time judged event time is "
    "(at least the allowed lateness while stations report).",
)
ALLOWED_LATENESS = MetricSpec(
    "siltwatch_engine_allowed_lateness_seconds",
    G,
    "How late a reading may arrive and still be judged in order (--allowed-lateness-s).",
)
MQTT_CONNECTED = MetricSpec("siltwatch_mqtt_connected", G, "1 while the MQTT session is up.")
MQTT_DISCONNECTS = MetricSpec(
    "siltwatch_mqtt_disconnects", C, "Times the broker connection was lost while running."
)
READY = MetricSpec("siltwatch_ready", G, "1 once rebuilt and connected to MQTT (/readyz).")
OUTBOX_PENDING = MetricSpec(
    "siltwatch_outbox_pending",
    G,
    "Notifications in the delivery outbox waiting to be sent (with --notify).",
)
DELIVERY_FAILURES = MetricSpec(
    "siltwatch_delivery_failures",
    C,
    "Delivery attempts that failed (retried or given up), by channel (with --notify).",
    ("site", "channel"),
)
MIRROR_PENDING = MetricSpec(
    "siltwatch_influx_mirror_pending",
    G,
    "Points queued for the InfluxDB mirror, not yet written (with --influx-*).",
)
MIRROR_DROPPED = MetricSpec(
    "siltwatch_influx_mirror_dropped",
    C,
    "Points the InfluxDB mirror dropped because its queue was full (they stay in SQLite).",
)
MIRROR_RECOPIED = MetricSpec(
    "siltwatch_influx_mirror_recopied",
    C,
    "Points the InfluxDB mirror copied again from the store after dropping them.",
)

SENSOR_COMPLETENESS = MetricSpec(
    "siltwatch_sensor_completeness",
    G,
    "Readings received / expected per sensor since the service started (by seq; readings "
    "a broker lost and not yet fetched back from the station count as missing).",
    ("site", "station", "sensor"),
)
READINGS_LOST = MetricSpec(
    "siltwatch_readings_lost",
    C,
    "Readings recorded as lost for good (data_gap rows): the station no longer held them, "
    "or never answered a resend request.",
)
RESEND_REQUESTS = MetricSpec(
    "siltwatch_resend_requests",
    C,
    "Requests to stations to publish missing readings again (a gap in a sensor's seqs).",
)

SERVICE_METRICS: tuple[MetricSpec, ...] = (
    MESSAGES,
    READINGS_STORED,
    DUPLICATES,
    REJECTED,
    LATE,
    REBUILDS,
    ENGINE_LAG,
    ALLOWED_LATENESS,
    MQTT_CONNECTED,
    MQTT_DISCONNECTS,
    READY,
    OUTBOX_PENDING,
    DELIVERY_FAILURES,
    MIRROR_PENDING,
    MIRROR_DROPPED,
    MIRROR_RECOPIED,
    SENSOR_COMPLETENESS,
    READINGS_LOST,
    RESEND_REQUESTS,
)
