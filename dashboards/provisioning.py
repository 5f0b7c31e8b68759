"""Grafana provisioning written by code: the InfluxQL data source, a dashboard
provider, and one dashboard JSON per site; and the Prometheus data source with the
dashboard of ``siltwatch serve`` itself (dashboards/service.py), which reads the
metrics ``serve --metrics`` exports.

Grafana reads ``provisioning/datasources/*.yaml`` and
``provisioning/dashboards/*.yaml`` at start-up; the provider points at the folder
holding the JSON. Secrets are never written: the YAML names environment
variables (``$INFLUX_PASSWORD``, ``$INFLUX_TOKEN``) that Grafana expands when it
reads the file.

The YAML is emitted by a few lines here rather than a YAML library (not a
runtime dependency); every string is double-quoted JSON-style, which YAML reads
as the same string.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboards.build import DATASOURCE_TYPE, DATASOURCE_UID, dashboard_json
from dashboards.service import (
    PROMETHEUS_TYPE,
    PROMETHEUS_UID,
    SERVICE_FILE,
    service_dashboard_json,
)
from siltwatch.config import SiteConfig

FOLDER = "siltwatch"


@dataclass(frozen=True)
class InfluxSource:
    """Where Grafana finds the InfluxDB mirror, in InfluxQL mode.

    ``version="1"``: an InfluxDB 1.x database (optional user; password from
    ``$INFLUX_PASSWORD``). ``version="2"``: InfluxDB 2.x/3.x through its v1-compatible
    InfluxQL endpoint, authenticated with ``Authorization: Token $INFLUX_TOKEN``;
    ``database`` is the bucket's DBRP-mapped database name.
    """

    url: str
    database: str
    version: str = "1"
    user: str | None = None

    def datasource(self) -> dict[str, Any]:
        """The data source as both provisioning YAML and the HTTP API take it."""
        json_data: dict[str, Any] = {"dbName": self.database, "httpMode": "POST"}
        secure: dict[str, str] = {}
        ds: dict[str, Any] = {
            "name": "siltwatch InfluxDB",
            "type": DATASOURCE_TYPE,
            "uid": DATASOURCE_UID,
            "access": "proxy",
            "url": self.url,
            # Not the default: a Grafana that already has one keeps it, and siltwatch's
            # panels name this source by uid, so they never depend on the default.
            "isDefault": False,
            "editable": False,
        }
        if self.version == "2":
            json_data["version"] = "InfluxQL"
            json_data["httpHeaderName1"] = "Authorization"
            secure["httpHeaderValue1"] = "Token $INFLUX_TOKEN"
        elif self.user:
            ds["user"] = self.user
            secure["password"] = "$INFLUX_PASSWORD"
        ds["jsonData"] = json_data
        if secure:
            ds["secureJsonData"] = secure
        return ds


@dataclass(frozen=True)
class PrometheusSource:
    """Where Grafana finds the Prometheus that scrapes ``serve``'s /metrics."""

    url: str = "http://prometheus:9090"

    def datasource(self) -> dict[str, Any]:
        return {
            "name": "siltwatch Prometheus",
            "type": PROMETHEUS_TYPE,
            "uid": PROMETHEUS_UID,
            "access": "proxy",
            "url": self.url,
            "isDefault": False,
            "editable": False,
            "jsonData": {"httpMethod": "POST"},
        }


def _yaml(value: Any, indent: int = 0) -> list[str]:
    pad = "  " * indent
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                out.append(f"{pad}{key}:")
                out += _yaml(item, indent + 1)
            else:
                out.append(f"{pad}{key}: {_scalar(item)}")
        return out
    if isinstance(value, list):
        out = []
        for item in value:
            lines = _yaml(item, indent + 1)
            out.append(f"{pad}- {lines[0].lstrip()}")
            out += lines[1:]
        return out
    return [pad + _scalar(value)]


def _scalar(value: Any) -> str:
    if isinstance(value, dict | list):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, ensure_ascii=False)


def to_yaml(doc: dict[str, Any]) -> str:
    return "\n".join(_yaml(doc)) + "\n"


def datasource_yaml(source: InfluxSource, prometheus: PrometheusSource | None = None) -> str:
    sources = [source.datasource()]
    if prometheus is not None:
        sources.append(prometheus.datasource())
    return to_yaml({"apiVersion": 1, "datasources": sources})


def provider_yaml(dashboards_path: str) -> str:
    """A file provider: Grafana loads every JSON in ``dashboards_path`` into the siltwatch folder."""
    return to_yaml(
        {
            "apiVersion": 1,
            "providers": [
                {
                    "name": "siltwatch",
                    "folder": FOLDER,
                    "type": "file",
                    "disableDeletion": False,
                    "allowUiUpdates": False,
                    "updateIntervalSeconds": 60,
                    "options": {"path": dashboards_path, "foldersFromFilesStructure": False},
                }
            ],
        }
    )


def write_provisioning(
    out: Path,
    sites: Iterable[SiteConfig],
    source: InfluxSource,
    *,
    prometheus: PrometheusSource | None = PrometheusSource(),
    dashboards_path: str = "/var/lib/grafana/dashboards/siltwatch",
) -> list[Path]:
    """Write ``out/provisioning/{datasources,dashboards}/siltwatch.yaml``,
    ``out/dashboards/SITE.json`` and, with ``prometheus``, the service's
    ``out/dashboards/siltwatch-service.json``; return the files written.

    ``dashboards_path`` is where Grafana will see ``out/dashboards`` (a mount in
    a container), which is what the provider file must name.
    """
    written = []
    ds_dir = out / "provisioning" / "datasources"
    pv_dir = out / "provisioning" / "dashboards"
    db_dir = out / "dashboards"
    for folder in (ds_dir, pv_dir, db_dir):
        folder.mkdir(parents=True, exist_ok=True)
    files = {
        ds_dir / "siltwatch.yaml": datasource_yaml(source, prometheus),
        pv_dir / "siltwatch.yaml": provider_yaml(dashboards_path),
    }
    for site in sites:
        files[db_dir / f"{site.site.id}.json"] = dashboard_json(site)
    if prometheus is not None:
        if db_dir / SERVICE_FILE in files:
            raise ValueError(f"a site's dashboard would overwrite the service's {SERVICE_FILE}")
        files[db_dir / SERVICE_FILE] = service_dashboard_json()
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
