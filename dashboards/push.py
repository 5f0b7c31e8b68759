"""Push the data sources and the dashboards to a running Grafana over its HTTP API.

For a Grafana that is not provisioned from files (Grafana Cloud, a shared
server): ``siltwatch dashboards --push URL --token-file FILE``. It is idempotent —
the data source is created or updated by its fixed uid, dashboards are saved
with ``overwrite`` under their stable uids — so pushing twice changes nothing.
Uses grafana-client (the maintained successor of grafana-api).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dashboards.build import DATASOURCE_UID, build_dashboard
from dashboards.provisioning import InfluxSource, PrometheusSource
from dashboards.service import PROMETHEUS_UID
from siltwatch.config import SiteConfig


class PushError(Exception):
    """Grafana refused a call; the text names the call and Grafana's answer."""


@dataclass
class PushResult:
    datasource: str = ""  # "created" or "updated"
    prometheus: str = ""  # the service's Prometheus source: "created", "updated" or "" (not asked)
    dashboards: list[str] = field(default_factory=list)  # urls Grafana returned


def _datasource_payload(source: InfluxSource, secret: str | None) -> dict[str, Any]:
    """The provisioning data source with its ``$INFLUX_*`` placeholders filled in."""
    ds = source.datasource()
    ds.pop("editable", None)
    secure = ds.pop("secureJsonData", None)
    if secure and secret is not None:
        ds["secureJsonData"] = {
            key: value.replace("$INFLUX_TOKEN", secret).replace("$INFLUX_PASSWORD", secret)
            for key, value in secure.items()
        }
    return ds


def push(
    grafana_url: str,
    token: str,
    sites: Iterable[SiteConfig],
    source: InfluxSource,
    *,
    influx_secret: str | None = None,
    prometheus: PrometheusSource | None = None,
    message: str = "siltwatch dashboards",
) -> PushResult:
    """Create/update the data source, then save every site's dashboard with overwrite.

    With ``prometheus`` also the Prometheus data source and the dashboard of the
    service itself (dashboards/service.py), as ``--out`` provisions them.
    """
    from grafana_client.api import GrafanaApi
    from grafana_client.client import GrafanaException

    api: Any = GrafanaApi.from_url(grafana_url, credential=token)
    result = PushResult()
    payload = _datasource_payload(source, influx_secret)
    result.datasource = _upsert_datasource(api, grafana_url, DATASOURCE_UID, payload)
    boards = [build_dashboard(site) for site in sites]
    if prometheus is not None:
        from dashboards.service import build_service_dashboard

        ds = prometheus.datasource()
        ds.pop("editable", None)
        result.prometheus = _upsert_datasource(api, grafana_url, PROMETHEUS_UID, ds)
        boards.append(build_service_dashboard())
    for board in boards:
        try:
            answer = api.dashboard.update_dashboard(
                {"dashboard": board, "overwrite": True, "message": message}
            )
        except GrafanaException as exc:
            raise PushError(
                f"Grafana {grafana_url}: dashboard {board['uid']}: HTTP {exc.status_code}: {exc.message}"
            ) from None
        result.dashboards.append(str(answer.get("url", board["uid"])))
    return result


def _upsert_datasource(api: Any, grafana_url: str, uid: str, payload: dict[str, Any]) -> str:
    """Create the data source, or update it by its fixed uid: "created" or "updated"."""
    from grafana_client.client import GrafanaClientError, GrafanaException

    try:
        try:
            api.datasource.get_datasource_by_uid(uid)
            exists = True
        except GrafanaClientError as exc:
            if exc.status_code != 404:
                raise
            exists = False
        if exists:
            api.datasource.update_datasource_by_uid(uid, payload)
            return "updated"
        api.datasource.create_datasource(payload)
        return "created"
    except GrafanaException as exc:
        raise PushError(
            f"Grafana {grafana_url}: data source {uid}: HTTP {exc.status_code}: {exc.message}"
        ) from None
