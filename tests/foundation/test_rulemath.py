"""The rule maths exists once (siltwatch/rulemath.py): the dashboards' reference
lines come from the same functions, on the same values, as the detectors' decisions."""

from __future__ import annotations

from dataclasses import astuple
from typing import Any

import pytest

from analytics import trap_geometry, turbidity_limits
from analytics.drain import DrainTimeDetector
from analytics.engine import Engine
from analytics.sediment import SedimentCapacityDetector
from analytics.turbidity import TurbidityContrast
from dashboards.build import build_dashboard
from siltwatch import rulemath
from siltwatch.config import SiteConfig
from siltwatch.detections import drain as drain_d
from siltwatch.detections import sediment as sediment_d
from siltwatch.detections import turbidity as turbidity_d
from siltwatch.rulepacks import site_rules
from siltwatch.units import from_metres, to_metres
from tests.dashboards.test_build import SITES  # the two example sites


@pytest.fixture(params=sorted(SITES))
def site(request: pytest.FixtureRequest) -> SiteConfig:
    return SITES[request.param]


def _detectors(site: SiteConfig, cls: type[Any]) -> list[Any]:
    return [d for d in Engine(site).detectors.values() if isinstance(d, cls)]


def _steps(site: SiteConfig, title_starts: str) -> list[float]:
    """The threshold (reference line) values of the dashboard panel with that title."""
    for p in build_dashboard(site)["panels"]:
        if p["title"].startswith(title_starts):
            thresholds = p["fieldConfig"]["defaults"].get("thresholds") or {"steps": []}
            return [s["value"] for s in thresholds["steps"] if s["value"] is not None]
    raise AssertionError(f"no panel {title_starts!r}")


def test_the_analytics_classes_add_no_maths_of_their_own() -> None:
    # The snapshot-held classes only rename the shared ones (analytics/statecodec.py).
    assert issubclass(turbidity_limits.LimitRule, rulemath.LimitRule)
    assert issubclass(trap_geometry.TrapGeometry, rulemath.TrapGeometry)
    for name in ("allowed", "limit", "describe", "_terms"):
        assert name not in vars(turbidity_limits.LimitRule)
    for name in ("volume_m3", "fraction_lost", "depth_at_fraction", "design_volume_m3"):
        assert name not in vars(trap_geometry.TrapGeometry)
    assert turbidity_limits.allowed_level is rulemath.allowed_level
    assert trap_geometry.trapezoid_volume is rulemath.trapezoid_volume
    assert trap_geometry.interpolate_storage is rulemath.interpolate_storage


def test_limit_line_is_the_detectors_limit(site: SiteConfig) -> None:
    detectors = {d.pair: d for d in _detectors(site, TurbidityContrast)}
    assert sorted(detectors) == sorted(p.id for p in site.turbidity_pairs)
    for pair in site.turbidity_pairs:
        held = detectors[pair.id].limit
        water_class = site.water(pair.receiving_water).water_class
        table, cite = rulemath.choose_limit(pair.limit, water_class, site_rules(site), pair.id)
        assert table is not None and held is not None
        assert turbidity_d.limit_shape(site, site_rules(site), pair) == table
        assert detectors[pair.id].rule == cite
        assert isinstance(held, turbidity_limits.LimitRule)
        assert astuple(held) == astuple(rulemath.LimitRule.from_shape(table))
        lines = turbidity_d.limit_lines(table)
        assert lines.cap == held.cap
        drawn = [expr for _alias, expr in lines.computed]
        expected = []
        if held.delta is not None:
            expected.append("{x} + " + f"{held.delta:g}")
        if held.pct is not None:
            expected.append("{x} * " + f"{1 + held.pct / 100:g}")
        assert drawn == expected
    for pair in site.turbidity_pairs:
        held = detectors[pair.id].limit
        steps = _steps(site, f"Turbidity {pair.id}")
        assert steps == ([] if held is None or held.cap is None else [held.cap])


def test_trap_lines_are_the_detectors_geometry_and_fractions(site: SiteConfig) -> None:
    detectors = {d.trap_id: d for d in _detectors(site, SedimentCapacityDetector)}
    assert sorted(detectors) == sorted(t.id for t in site.sediment_traps)
    for trap in site.sediment_traps:
        det = detectors[trap.id]
        assert isinstance(det.geometry, trap_geometry.TrapGeometry)
        assert astuple(det.geometry) == astuple(rulemath.TrapGeometry.of(site, trap))
        unit = site.sensor(trap.depth_sensor).unit
        warn, clean = sediment_d.trap_fractions(site_rules(site), trap)
        assert (warn, clean) == (det.warn_fraction, det.cleanout_fraction)
        pack = site_rules(site).require("sediment.warn_fraction")
        assert rulemath.warn_fraction(trap.warn_fraction, pack) == (
            det.warn_fraction,
            det.warn_source,
        )
        expected = [
            round(from_metres(det.geometry.depth_at_fraction(f), unit), 4) for f in (warn, clean)
        ]
        assert [sediment_d.depth_at_fraction(site, trap, f) for f in (warn, clean)] == expected
        if trap.shape is not None:  # drawn as the share of storage lost, as the console does
            assert _steps(site, f"Sediment trap {trap.id}: storage lost") == [
                warn * 100,
                clean * 100,
            ]
        else:  # a stage-storage table: drawn as depth, the lines at the fractions' depths
            assert _steps(site, f"Sediment depth {trap.id}") == expected
        for f, depth in zip((warn, clean), expected, strict=True):
            assert det.geometry.fraction_lost(to_metres(depth, unit)) == pytest.approx(f, abs=1e-3)


def test_drained_line_is_the_detectors_drained_level(site: SiteConfig) -> None:
    detectors = {d.practice_id: d for d in _detectors(site, DrainTimeDetector)}
    assert sorted(detectors) == sorted(p.id for p in site.infiltration_practices)
    for practice in site.infiltration_practices:
        det = detectors[practice.id]
        assert det.tol_m == rulemath.drain_tolerance_m(practice.tolerance_metres())
        drained_m = rulemath.drained_level_m(
            practice.design_level_metres(), practice.tolerance_metres()
        )
        assert drained_m == det.design_m + det.tol_m
        design, drained, unit = drain_d.practice_levels(site, practice)
        assert drained == round(from_metres(drained_m, unit), 6)
        assert _steps(site, f"Water level {practice.id}") == [design, drained]


def test_drained_level_has_the_detectors_floor() -> None:
    assert rulemath.drain_tolerance_m(0.0) == rulemath.MIN_TOLERANCE_M
    assert rulemath.drained_level_m(0.5, 0.0) == pytest.approx(0.501)
    assert rulemath.drained_level_m(0.5, 0.02) == pytest.approx(0.52)


def test_trap_depth_at_fraction_inverts_the_volume() -> None:
    shape = rulemath.TrapGeometry(shape=(6.0, 3.0, 2.0, 0.9))
    table = rulemath.TrapGeometry(table=((0.0, 0.0), (0.3, 40.0), (0.6, 95.0), (1.2, 250.0)))
    for geometry in (shape, table):
        for fraction in (0.1, 0.4, 0.5, 0.9):
            depth = geometry.depth_at_fraction(fraction)
            assert geometry.fraction_lost(depth) == pytest.approx(fraction, abs=1e-9)
