"""Provisioning files written by code, and the push to a Grafana stand-in over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dashboards.build import DATASOURCE_UID, build_dashboard
from dashboards.provisioning import InfluxSource, write_provisioning
from dashboards.push import PushError, push
from siltwatch.config import load_site
from tests.dashboards.http_standin import Recorded, Reply, StandIn

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SITES = [load_site(EXAMPLES / f"{n}-site.toml") for n in ("lake-george", "lake-lure")]


def test_provisioning_names_the_datasource_every_panel_uses(tmp_path: Path) -> None:
    written = write_provisioning(tmp_path, SITES, InfluxSource("http://influxdb:8086", "siltwatch"))
    names = sorted(str(p.relative_to(tmp_path)) for p in written)
    assert names == [
        "dashboards/lg-route9n.json",
        "dashboards/ll-boulevard.json",
        "dashboards/siltwatch-service.json",  # serve itself (dashboards/service.py)
        "provisioning/dashboards/siltwatch.yaml",
        "provisioning/datasources/siltwatch.yaml",
    ]
    ds = yaml.safe_load((tmp_path / "provisioning/datasources/siltwatch.yaml").read_text())
    [source, prometheus] = ds["datasources"]
    assert prometheus["uid"] == "siltwatch-prometheus" and prometheus["type"] == "prometheus"
    assert ds["apiVersion"] == 1
    assert source["uid"] == DATASOURCE_UID and source["type"] == "influxdb"
    assert source["jsonData"] == {"dbName": "siltwatch", "httpMode": "POST"}
    provider = yaml.safe_load((tmp_path / "provisioning/dashboards/siltwatch.yaml").read_text())
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards/siltwatch"
    board = json.loads((tmp_path / "dashboards/lg-route9n.json").read_text())
    assert board == build_dashboard(SITES[0])


def test_v2_datasource_uses_influxql_with_a_token_header_from_the_environment(
    tmp_path: Path,
) -> None:
    write_provisioning(
        tmp_path,
        [],
        InfluxSource("http://influxdb:8086", "siltwatch", version="2"),
        prometheus=None,
    )
    ds = yaml.safe_load((tmp_path / "provisioning/datasources/siltwatch.yaml").read_text())
    [source] = ds["datasources"]
    assert source["jsonData"]["version"] == "InfluxQL"
    assert source["jsonData"]["httpHeaderName1"] == "Authorization"
    assert source["secureJsonData"] == {"httpHeaderValue1": "Token $INFLUX_TOKEN"}


class FakeGrafana:
    """Answers as Grafana 11's HTTP API does for the calls push makes."""

    def __init__(self, *, datasource_exists: bool = False, token: str = "glsa_test") -> None:
        self.datasource_exists = datasource_exists
        self.token = token

    def __call__(self, req: Recorded) -> Reply:
        if req.headers.get("authorization") != f"Bearer {self.token}":
            return Reply(401, {"message": "invalid API key"})
        if req.method == "GET" and req.path == f"/api/datasources/uid/{DATASOURCE_UID}":
            if self.datasource_exists:
                return Reply(200, {"id": 7, "uid": DATASOURCE_UID})
            return Reply(404, {"message": "Data source not found"})
        if req.method == "POST" and req.path == "/api/datasources":
            return Reply(
                200, {"id": 7, "message": "Datasource added", "name": "siltwatch InfluxDB"}
            )
        if req.method == "PUT" and req.path == f"/api/datasources/uid/{DATASOURCE_UID}":
            return Reply(200, {"id": 7, "message": "Datasource updated"})
        if req.method == "POST" and req.path == "/api/dashboards/db":
            uid = req.json()["dashboard"]["uid"]
            return Reply(200, {"status": "success", "uid": uid, "url": f"/d/{uid}/x", "version": 1})
        return Reply(404, {"message": "Not found"})


def test_push_creates_the_datasource_and_saves_each_dashboard_with_overwrite() -> None:
    source = InfluxSource("http://influxdb:8086", "siltwatch", version="2")
    with StandIn(FakeGrafana()) as grafana:
        result = push(grafana.url, "glsa_test", SITES, source, influx_secret="tok-123")
    calls = [(r.method, r.path) for r in grafana.requests]
    assert calls == [
        ("GET", f"/api/datasources/uid/{DATASOURCE_UID}"),
        ("POST", "/api/datasources"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
    ]
    assert all(r.headers["authorization"] == "Bearer glsa_test" for r in grafana.requests)
    created = grafana.requests[1].json()
    assert created["uid"] == DATASOURCE_UID and created["type"] == "influxdb"
    assert created["secureJsonData"] == {"httpHeaderValue1": "Token tok-123"}
    for req, site in zip(grafana.requests[2:], SITES, strict=True):
        body = req.json()
        assert body["overwrite"] is True
        assert body["dashboard"] == build_dashboard(site)
    assert result.datasource == "created"
    assert result.dashboards == ["/d/siltwatch-lg-route9n/x", "/d/siltwatch-ll-boulevard/x"]


def test_push_with_prometheus_adds_its_data_source_and_the_service_dashboard() -> None:
    from dashboards.provisioning import PrometheusSource
    from dashboards.service import build_service_dashboard

    prometheus = PrometheusSource("http://prometheus:9090")
    with StandIn(FakeGrafana()) as grafana:
        result = push(
            grafana.url, "glsa_test", SITES[:1], InfluxSource("http://i:8086", "s"),
            prometheus=prometheus,
        )  # fmt: skip
    uid = prometheus.datasource()["uid"]
    assert [(r.method, r.path) for r in grafana.requests] == [
        ("GET", f"/api/datasources/uid/{DATASOURCE_UID}"),
        ("POST", "/api/datasources"),
        ("GET", f"/api/datasources/uid/{uid}"),
        ("POST", "/api/datasources"),
        ("POST", "/api/dashboards/db"),
        ("POST", "/api/dashboards/db"),
    ]
    sent = grafana.requests[3].json()
    assert sent["type"] == "prometheus" and sent["url"] == "http://prometheus:9090"
    assert "editable" not in sent
    assert grafana.requests[5].json()["dashboard"] == build_service_dashboard()
    assert result.prometheus == "created" and len(result.dashboards) == 2


def test_push_updates_an_existing_datasource_by_uid() -> None:
    with StandIn(FakeGrafana(datasource_exists=True)) as grafana:
        result = push(grafana.url, "glsa_test", SITES[:1], InfluxSource("http://i:8086", "s"))
    assert [(r.method, r.path) for r in grafana.requests][:2] == [
        ("GET", f"/api/datasources/uid/{DATASOURCE_UID}"),
        ("PUT", f"/api/datasources/uid/{DATASOURCE_UID}"),
    ]
    assert result.datasource == "updated"


def test_a_bad_token_is_named() -> None:
    with StandIn(FakeGrafana()) as grafana, pytest.raises(PushError) as caught:
        push(grafana.url, "wrong", SITES, InfluxSource("http://i:8086", "s"))
    assert "HTTP 401" in str(caught.value) and "data source" in str(caught.value)
    assert len(grafana.requests) == 1
