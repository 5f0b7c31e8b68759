"""deploy/grafana/ is generated; it must be what the code generates today.

Regenerate with::

    siltwatch dashboards --site examples/lake-george-site.toml \
        --site examples/lake-lure-site.toml --out deploy/grafana
"""

from __future__ import annotations

from pathlib import Path

from dashboards.provisioning import (
    InfluxSource,
    PrometheusSource,
    datasource_yaml,
    write_provisioning,
)
from siltwatch.config import load_site

ROOT = Path(__file__).resolve().parents[2]


def test_deploy_grafana_is_up_to_date(tmp_path: Path) -> None:
    sites = [load_site(ROOT / "examples" / f"{n}-site.toml") for n in ("lake-george", "lake-lure")]
    written = write_provisioning(tmp_path, sites, InfluxSource("http://influxdb:8086", "siltwatch"))
    # What Grafana reads: the data sources, the dashboard provider, one dashboard per
    # reference site (named by the site ids in examples/) and the service's — and nothing else is
    # committed that the code no longer writes.
    expected = {
        "provisioning/datasources/siltwatch.yaml",
        "provisioning/dashboards/siltwatch.yaml",
        "dashboards/lg-route9n.json",
        "dashboards/ll-boulevard.json",
        "dashboards/siltwatch-service.json",  # serve itself, from Prometheus
    }
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == sorted(expected)
    committed_files = ROOT / "deploy" / "grafana"
    assert {
        p.relative_to(committed_files).as_posix() for p in committed_files.rglob("*") if p.is_file()
    } == expected, "deploy/grafana/ holds files the code does not write: remove them"
    for path in written:
        rel = path.relative_to(tmp_path)
        committed = ROOT / "deploy" / "grafana" / rel
        assert committed.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"deploy/grafana/{rel} is stale: regenerate it (see this test's docstring)"
        )


def test_kubernetes_grafana_sends_its_token_to_influxdb_2() -> None:
    """deploy/k8s runs InfluxDB 2.x (influxdb.yaml), whose InfluxQL endpoint wants a token:
    its Grafana data source file is the code's version-2 source (regenerate with
    ``siltwatch dashboards … --influx-url http://influxdb:8086 --influx-version 2`` and copy
    provisioning/datasources/siltwatch.yaml to deploy/k8s/grafana/datasources.yaml), the
    kustomization mounts it, and Grafana gets ``$INFLUX_TOKEN`` from a Secret."""
    k8s = ROOT / "deploy" / "k8s"
    source = InfluxSource("http://influxdb:8086", "siltwatch", version="2")
    expected = datasource_yaml(source, PrometheusSource())
    assert (k8s / "grafana" / "datasources.yaml").read_text(encoding="utf-8") == expected
    assert "Token $INFLUX_TOKEN" in expected
    assert "siltwatch.yaml=grafana/datasources.yaml" in (k8s / "kustomization.yaml").read_text()
    grafana = (k8s / "grafana.yaml").read_text(encoding="utf-8")
    env = grafana.split("- name: INFLUX_TOKEN", 1)[1].split("\n", 2)[1]
    assert "secretKeyRef: {name: influxdb-auth, key: grafana-read-token}" in env
    assert "grafana-read-token:" in (k8s / "secrets.yaml").read_text(encoding="utf-8")
