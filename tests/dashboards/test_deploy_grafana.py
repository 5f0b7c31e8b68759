"""deploy/grafana/ is generated; it must be what the code generates today.

Regenerate with::

    siltwatch dashboards --site examples/lake-george-site.toml \
        --site examples/lake-lure-site.toml --out deploy/grafana
"""

from __future__ import annotations

from pathlib import Path

from dashboards.provisioning import InfluxSource, write_provisioning
from siltwatch.config import load_site

ROOT = Path(__file__).resolve().parents[2]


def test_deploy_grafana_is_up_to_date(tmp_path: Path) -> None:
    sites = [load_site(ROOT / "examples" / f"{n}-site.toml") for n in ("lake-george", "lake-lure")]
    written = write_provisioning(tmp_path, sites, InfluxSource("http://influxdb:8086", "siltwatch"))
    for path in written:
        rel = path.relative_to(tmp_path)
        committed = ROOT / "deploy" / "grafana" / rel
        assert committed.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"deploy/grafana/{rel} is stale: regenerate it (see this test's docstring)"
        )
