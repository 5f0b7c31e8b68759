"""Push the data source and the site dashboards to a running Grafana over its HTTP API.

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
from dashboards.provisioning import InfluxSource
from siltwatch.config import SiteConfig


class PushError(Exception):
    """Grafana refused a call; the text names the call and Grafana's answer."""


@dataclass
class PushResult:
    datasource: str = ""  # "created" or "updated"
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
    message: str = "siltwatch dashboards",
) -> PushResult:
    """Create/update the data source, then save every site's dashboard with overwrite."""
    from grafana_client.api import GrafanaApi
    from grafana_client.client import GrafanaClientError, GrafanaException

    api: Any = GrafanaApi.from_url(grafana_url, credential=token)
    result = PushResult()
    payload = _datasource_payload(source, influx_secret)
    try:
        try:
            api.datasource.get_datasource_by_uid(DATASOURCE_UID)
            exists = True
        except GrafanaClientError as exc:
            if exc.status_code != 404:
                raise
            exists = False
        if exists:
            api.datasource.update_datasource_by_uid(DATASOURCE_UID, payload)
            result.datasource = "updated"
        else:
            api.datasource.create_datasource(payload)
            result.datasource = "created"
    except GrafanaException as exc:
        raise PushError(
            f"Grafana {grafana_url}: data source {DATASOURCE_UID}: HTTP {exc.status_code}: {exc.message}"
        ) from None
    for site in sites:
        board = build_dashboard(site)
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
