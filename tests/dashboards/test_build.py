"""The dashboard JSON: built for both reference sites, valid, deterministic, complete."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dash_m

from analytics.trap_geometry import TrapGeometry
from dashboards.build import DATASOURCE_UID, build_dashboard, dashboard_json, dashboard_uid
from siltwatch.config import SiteConfig, load_site
from siltwatch.detections import drain as drain_d
from siltwatch.detections import sediment as sediment_d
from siltwatch.rulepacks import site_rules
from siltwatch.units import to_metres
from tests.dashboards.grafana_macros import panel, panels

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SITES = {
    "lake-george": load_site(EXAMPLES / "lake-george-site.toml"),
    "lake-lure": load_site(EXAMPLES / "lake-lure-site.toml"),
}


@pytest.fixture(params=sorted(SITES))
def site(request: pytest.FixtureRequest) -> SiteConfig:
    return SITES[request.param]


def test_every_panel_has_the_datasource_and_a_raw_influxql_query(site: SiteConfig) -> None:
    board = build_dashboard(site)
    found = list(panels(board))
    assert len(found) == 2 + len(site.turbidity_pairs) + len(site.rain_gauges) + len(
        site.infiltration_practices
    ) + len(site.sediment_traps)
    for p in found:
        assert p["datasource"] == {"type": "influxdb", "uid": DATASOURCE_UID}, p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["rawQuery"] is True and t["query"].startswith("SELECT "), p["title"]
            assert t["datasource"]["uid"] == DATASOURCE_UID
            assert "'$site'" in t["query"]
    [anno] = [a for a in board["annotations"]["list"] if a["datasource"]["uid"] == DATASOURCE_UID]
    assert anno["target"]["query"] == anno["query"] and "$timeFilter" in anno["query"]
    assert board["templating"]["list"][0]["name"] == "site"
    assert board["templating"]["list"][0]["query"] == site.site.id


def test_builds_are_byte_identical_and_uids_stable(site: SiteConfig, tmp_path: Path) -> None:
    # Determinism across processes, not within one: ``siltwatch dashboards`` run as a
    # user runs it, with its own hash seed (set and dict iteration orders differ),
    # must write the bytes this process builds.
    source = next(p for p in EXAMPLES.glob("*-site.toml") if load_site(p).site.id == site.site.id)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "dashboards",
            "--site",
            str(source),
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=EXAMPLES.parent,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "dashboards" / f"{site.site.id}.json").read_text(encoding="utf-8")
    assert written == dashboard_json(site)
    board = build_dashboard(site)
    assert board["uid"] == f"siltwatch-{site.site.id}"
    assert [p["id"] for p in board["panels"]] == list(range(1, len(board["panels"]) + 1))
    assert dashboard_uid("x" * 64) == dashboard_uid("x" * 64) and len(dashboard_uid("x" * 64)) <= 40


def _without_annotation_extras(board: dict[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(board))
    for a in copy["annotations"]["list"]:
        for key in ("query", "rawQuery", "textColumn", "tagsColumn", "target"):
            a.pop(key, None)
    return copy


def test_the_json_is_a_valid_dashboard_by_the_sdk_model_round_trip(site: SiteConfig) -> None:
    board = build_dashboard(site)
    model = dash_m.Dashboard.from_json(board)
    again = json.loads(json.dumps(model, cls=JSONEncoder))
    # The SDK's AnnotationQuery has no InfluxDB query fields (it reads ``target`` as the
    # built-in annotation filter); everything else survives the round trip unchanged.
    assert _without_annotation_extras(again) == _without_annotation_extras(board)
    assert again["schemaVersion"] >= 39  # the Grafana 11 schema build, not 10.1


def test_lake_george_draws_its_delta_limit_as_upstream_plus_25() -> None:
    board = build_dashboard(SITES["lake-george"])
    p = panel(board, "Turbidity outfall-a")
    queries = {t["refId"]: t["query"] for t in p["targets"]}
    assert 'median("value") + 25 AS "limit: upstream + 25"' in queries["C"]
    assert "'turb-up'" in queries["C"] and "'turb-down'" in queries["B"]
    assert p["interval"] == "900s"  # at least the detector's 15-minute window


def test_lake_lure_draws_its_cap_as_a_threshold_line() -> None:
    board = build_dashboard(SITES["lake-lure"])
    p = panel(board, "Turbidity cove")
    assert [t["refId"] for t in p["targets"]] == ["A", "B"]
    defaults = p["fieldConfig"]["defaults"]
    assert defaults["thresholds"]["steps"][-1]["value"] == 25.0
    assert defaults["custom"]["thresholdsStyle"]["mode"] == "dashed"
    assert "no increase over background" in p["description"]


@pytest.mark.parametrize("name", sorted(SITES))
def test_trap_lines_sit_where_the_analytics_count_capacity(name: str) -> None:
    site = SITES[name]
    for trap in site.sediment_traps:
        unit = site.sensor(trap.depth_sensor).unit
        if trap.shape is not None:
            geometry = TrapGeometry(shape=trap.shape.metres())
        else:
            geometry = TrapGeometry(table=tuple(site.stage_storage_m(trap) or ()))
        for fraction in sediment_d.trap_fractions(site_rules(site), trap):
            depth = to_metres(sediment_d.depth_at_fraction(site, trap, fraction), unit)
            lost = geometry.volume_m3(depth) / geometry.design_volume_m3
            assert lost == pytest.approx(fraction, abs=1e-3)


def test_practice_lines_are_in_the_sensor_unit() -> None:
    site = SITES["lake-george"]
    assert drain_d.practice_levels(site, site.infiltration_practices[0]) == (0.0, 0.05, "ft")


@pytest.mark.parametrize("name", sorted(SITES))
def test_charts_fill_each_row(name: str) -> None:
    """No half-width chart with nothing beside it: each line of panels spans all 24 columns."""
    board = build_dashboard(SITES[name])
    lines: dict[int, list[dict[str, Any]]] = {}
    for p in board["panels"]:
        if p["type"] != "row":
            lines.setdefault(p["gridPos"]["y"], []).append(p)
    assert lines
    for y, line in lines.items():
        assert sum(p["gridPos"]["w"] for p in line) == 24, (y, [p["title"] for p in line])
        xs = sorted(p["gridPos"]["x"] for p in line)
        assert xs[0] == 0
    # and the rows stack without overlapping
    ys = [p["gridPos"]["y"] for p in board["panels"]]
    assert ys == sorted(ys)


def test_the_trap_is_shown_as_a_share_of_its_storage_like_the_console() -> None:
    p = panel(build_dashboard(SITES["lake-george"]), "Sediment trap trap-1: storage lost")
    defaults = p["fieldConfig"]["defaults"]
    assert defaults["unit"] == "percent"
    assert [s["value"] for s in defaults["thresholds"]["steps"][1:]] == [40.0, 50.0]
    assert not p["fieldConfig"]["overrides"]  # the measured series, not a dashed reference


def test_open_alerts_are_coloured_by_severity() -> None:
    p = panel(build_dashboard(SITES["lake-george"]), "Open alerts")
    (override,) = [
        o for o in p["fieldConfig"]["overrides"] if o["matcher"]["options"] == "severity"
    ]
    props = {prop["id"]: prop["value"] for prop in override["properties"]}
    assert props["custom.cellOptions"] == {"type": "color-background"}
    options = props["mappings"][0]["options"]
    assert {k: v["color"] for k, v in options.items()} == {
        "critical": "red",
        "warning": "orange",
        "info": "blue",
    }


def test_the_provisioned_data_sources_are_not_the_default() -> None:
    """A Grafana that already has a default data source keeps it; the panels name theirs."""
    from dashboards.provisioning import InfluxSource, PrometheusSource

    for version in ("1", "2"):
        assert (
            InfluxSource("http://influxdb:8086", "siltwatch", version=version).datasource()[
                "isDefault"
            ]
            is False
        )
    assert PrometheusSource().datasource()["isDefault"] is False
    board = build_dashboard(SITES["lake-george"])
    for p in board["panels"]:
        if p["type"] != "row":
            assert p["datasource"]["uid"] == DATASOURCE_UID, p["title"]
