"""The Grafana dashboard of ``siltwatch serve`` itself, from its Prometheus metrics.

The site dashboards (dashboards/build.py) show the stormwater controls; this one
shows the service watching them: is it ready, how far behind real time is its
engine, what does it take in and refuse, is anything stuck in the delivery
outbox or the InfluxDB mirror's queue. Built the same way — typed code with
grafana-foundation-sdk, deterministic JSON — and every query names its metric
through siltwatch/service_metrics.py, the table the exporter (ingest/ops/metrics.py)
reads too, so a renamed metric cannot leave a panel querying nothing
(tests/ingest/test_metrics.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grafana_foundation_sdk.builders import dashboard as dash_b
from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dash_m

from dashboards.build import TAGS
from siltwatch import service_metrics as sm
from siltwatch.service_metrics import MetricSpec

PROMETHEUS_UID = "siltwatch-prometheus"
PROMETHEUS_TYPE = "prometheus"
PROMETHEUS = dash_m.DataSourceRef(type_val=PROMETHEUS_TYPE, uid=PROMETHEUS_UID)
SERVICE_UID = "siltwatch-service"
SERVICE_FILE = "siltwatch-service.json"  # beside the site dashboards (SITE.json)

_SITE = '{site=~"$site"}'


def level(spec: MetricSpec) -> str:
    """A gauge as it is, per site."""
    return f"{spec.sample}{_SITE}"


def per_second(spec: MetricSpec, *by: str) -> str:
    """A counter's rate per second, per site (and per ``by`` label)."""
    keys = ", ".join(("site", *by))
    return f"sum by ({keys}) (rate({spec.sample}{_SITE}[$__rate_interval]))"


def increase(spec: MetricSpec, *by: str) -> str:
    """How much a counter grew in each interval, per site (and per ``by`` label)."""
    keys = ", ".join(("site", *by))
    return f"sum by ({keys}) (increase({spec.sample}{_SITE}[$__rate_interval]))"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str


@dataclass(frozen=True)
class ServicePanel:
    """One panel: a title, Grafana's unit, what it shows (for people) and its queries."""

    title: str
    unit: str
    description: str
    queries: tuple[Query, ...]
    stat: bool = False


def _panels() -> list[tuple[str, list[ServicePanel]]]:
    """The dashboard's rows and panels, in order."""
    return [
        (
            "Service",
            [
                ServicePanel("Ready", "bool_yes_no", sm.READY.help,
                             (Query(level(sm.READY), "{{site}}"),), stat=True),
                ServicePanel("MQTT connected", "bool_yes_no", sm.MQTT_CONNECTED.help,
                             (Query(level(sm.MQTT_CONNECTED), "{{site}}"),), stat=True),
                ServicePanel("Engine lag", "s", sm.ENGINE_LAG.help,
                             (Query(level(sm.ENGINE_LAG), "{{site}}"),), stat=True),
                ServicePanel("MQTT disconnects", "short", sm.MQTT_DISCONNECTS.help,
                             (Query(increase(sm.MQTT_DISCONNECTS), "{{site}}"),)),
                ServicePanel(
                    "Engine lag and allowed lateness", "s",
                    "Lag well above the allowed lateness means a station is silent or "
                    "behind (the watermark waits for the slowest active station).",
                    (Query(level(sm.ENGINE_LAG), "lag {{site}}"),
                     Query(level(sm.ALLOWED_LATENESS), "allowed lateness {{site}}")),
                ),
            ],
        ),
        (
            "Ingest",
            [
                ServicePanel(
                    "Messages and readings", "ops", "Per second: " + sm.MESSAGES.help,
                    (Query(per_second(sm.MESSAGES), "messages {{site}}"),
                     Query(per_second(sm.READINGS_STORED), "readings stored {{site}}"),
                     Query(per_second(sm.DUPLICATES), "duplicates {{site}}")),
                ),
                ServicePanel("Rejections by reason", "short", sm.REJECTED.help,
                             (Query(increase(sm.REJECTED, "reason"), "{{site}}: {{reason}}"),)),
                ServicePanel(
                    "Late readings and rebuilds", "short", sm.LATE.help,
                    (Query(increase(sm.LATE), "late readings {{site}}"),
                     Query(increase(sm.REBUILDS), "rebuilds {{site}}")),
                ),
                ServicePanel(
                    "Completeness per sensor", "percentunit", sm.SENSOR_COMPLETENESS.help,
                    (Query(level(sm.SENSOR_COMPLETENESS), "{{site}} {{station}}/{{sensor}}"),),
                ),
                ServicePanel(
                    "Readings lost and resend requests", "short",
                    sm.READINGS_LOST.help + " Requests: " + sm.RESEND_REQUESTS.help,
                    (Query(increase(sm.READINGS_LOST), "lost {{site}}"),
                     Query(increase(sm.RESEND_REQUESTS), "resend requests {{site}}")),
                ),
            ],
        ),
        (
            "Delivery and mirror",
            [
                ServicePanel("Outbox depth", "short", sm.OUTBOX_PENDING.help,
                             (Query(level(sm.OUTBOX_PENDING), "{{site}}"),)),
                ServicePanel(
                    "Delivery failures by channel", "short", sm.DELIVERY_FAILURES.help,
                    (Query(increase(sm.DELIVERY_FAILURES, "channel"), "{{site}}: {{channel}}"),),
                ),
                ServicePanel(
                    "InfluxDB mirror queue", "short",
                    sm.MIRROR_PENDING.help + " Dropped: " + sm.MIRROR_DROPPED.help,
                    (Query(level(sm.MIRROR_PENDING), "queued {{site}}"),
                     Query(increase(sm.MIRROR_DROPPED), "dropped {{site}}"),
                     Query(increase(sm.MIRROR_RECOPIED), "copied again {{site}}")),
                ),
            ],
        ),
    ]  # fmt: skip


def _target(ref: str, query: Query) -> prometheus.Dataquery:
    return (
        prometheus.Dataquery()
        .ref_id(ref)
        .datasource(PROMETHEUS)
        .expr(query.expr)
        .legend_format(query.legend)
        .range()
    )


def render_panel(spec: ServicePanel) -> Builder[Any]:
    """A panel spec as Grafana's: a stat (the latest value) or a time series."""
    panel: stat.Panel | timeseries.Panel = (
        stat.Panel().height(4).span(8) if spec.stat else timeseries.Panel().height(8).span(12)
    )
    panel = panel.title(spec.title).description(spec.description).datasource(PROMETHEUS)
    panel = panel.unit(spec.unit)
    for i, query in enumerate(spec.queries):
        panel = panel.with_target(_target(chr(ord("A") + i), query))
    return panel


def queries() -> list[str]:
    """Every PromQL expression the dashboard sends (what the tests check)."""
    return [q.expr for _, row in _panels() for p in row for q in p.queries]


def build_service_model() -> dash_m.Dashboard:
    site_var = (
        dash_b.QueryVariable("site")
        .label("Site")
        .datasource(PROMETHEUS)
        .query(f"label_values({sm.READY.sample}, site)")
        .multi(True)
        .include_all(True)
        .refresh(dash_m.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dash_m.VariableSort.ALPHABETICAL_ASC)
    )
    d = (
        dash_b.Dashboard("siltwatch — the service")
        .uid(SERVICE_UID)
        .description("siltwatch serve itself: readiness, engine lag, ingest, delivery, mirror.")
        .tags([*TAGS, "service"])
        .time("now-6h", "now")
        .refresh("30s")
        .with_variable(site_var)
    )
    for title, row in _panels():
        d = d.with_row(dash_b.Row(title))
        for spec in row:
            d = d.with_panel(render_panel(spec))
    model = d.build()
    for number, panel in enumerate(model.panels or [], start=1):
        panel.id_val = number  # stable ids, as the site dashboards have
    return model


def build_service_dashboard() -> dict[str, Any]:
    """The service dashboard as Grafana's JSON (a plain dict)."""
    data: dict[str, Any] = json.loads(json.dumps(build_service_model(), cls=JSONEncoder))
    return data


def service_dashboard_json() -> str:
    """The JSON text written to files: sorted keys, so builds are byte-identical."""
    return (
        json.dumps(build_service_dashboard(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )
