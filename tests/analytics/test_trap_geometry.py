"""Trap storage by volume, not depth: hand-computed trapezoid and stage-storage figures."""

from __future__ import annotations

import pytest

from analytics.trap_geometry import TrapGeometry, interpolate_storage, trapezoid_volume
from siltwatch.config import SiteConfig, TrapShape

FT = 0.3048


def test_lake_george_trap_volumes_by_hand() -> None:
    # Lake George reference trap: bottom 20 ft x 10 ft, side slope z = 2 (H:V), 3 ft deep.
    # V(h) = L*W*h + z*h^2*(L+W) + (4/3)*z^2*h^3
    # V(3)   = 200*3   + 2*9*30    + (4/3)*4*27    = 600 + 540 + 144 = 1284 ft^3
    # V(1.5) = 200*1.5 + 2*2.25*30 + (4/3)*4*3.375 = 300 + 135 + 18  =  453 ft^3
    assert trapezoid_volume(20.0, 10.0, 2.0, 3.0) == pytest.approx(1284.0)
    assert trapezoid_volume(20.0, 10.0, 2.0, 1.5) == pytest.approx(453.0)
    # Half the depth holds only 453 / 1284 = 35.3 % of the volume: far below half.
    ratio = trapezoid_volume(20.0, 10.0, 2.0, 1.5) / trapezoid_volume(20.0, 10.0, 2.0, 3.0)
    assert ratio == pytest.approx(0.35280, abs=1e-5)
    assert ratio < 0.4


def test_formula_matches_the_integral_of_the_plan_area() -> None:
    # The plan area (L + 2zy)(W + 2zy) is quadratic in y, so Simpson's rule is exact.
    length, width, z, h = 20.0, 10.0, 2.0, 3.0

    def area(y: float) -> float:
        return (length + 2 * z * y) * (width + 2 * z * y)

    simpson = h / 6 * (area(0.0) + 4 * area(h / 2) + area(h))
    assert trapezoid_volume(length, width, z, h) == pytest.approx(simpson)
    # Vertical walls (z = 0) are a box.
    assert trapezoid_volume(4.0, 3.0, 0.0, 2.0) == pytest.approx(24.0)


def test_half_capacity_is_reached_only_at_about_1_9_ft_of_the_3_ft() -> None:
    shape = TrapShape(bottom_length_ft=20, bottom_width_ft=10, side_slope=2, depth_ft=3)
    geo = TrapGeometry(shape=shape.metres())
    assert geo.design_volume_m3 == pytest.approx(1284.0 * FT**3)
    # Units cancel: the same fractions in metres as in feet.
    assert geo.fraction_lost(1.5 * FT) == pytest.approx(453.0 / 1284.0)
    # V(1.9) = 380 + 216.6 + 36.58 = 633.2 < 642 = half < V(2.0) = 400 + 240 + 42.67 = 682.7
    assert geo.fraction_lost(1.9 * FT) == pytest.approx(633.18 / 1284.0, abs=1e-4)
    assert geo.fraction_lost(1.9 * FT) < 0.5 < geo.fraction_lost(2.0 * FT)
    # Below the bottom and above the storage depth the fraction is clamped to 0 and 1.
    assert geo.fraction_lost(-0.1) == 0.0
    assert geo.fraction_lost(5.0) == pytest.approx(1.0)


LAKE_LURE_TABLE = [(0.0, 0.0), (0.3, 40.0), (0.6, 95.0), (0.9, 165.0), (1.2, 250.0)]


def test_lake_lure_stage_storage_interpolation_by_hand() -> None:
    # Between rows: linear. 0.45 m is half-way 0.3 -> 0.6: 40 + 0.5*(95-40) = 67.5 m^3.
    assert interpolate_storage(LAKE_LURE_TABLE, 0.45) == pytest.approx(67.5)
    # 0.75 m: 95 + 0.5*(165-95) = 130 m^3; on a row: the row's volume.
    assert interpolate_storage(LAKE_LURE_TABLE, 0.75) == pytest.approx(130.0)
    assert interpolate_storage(LAKE_LURE_TABLE, 0.9) == pytest.approx(165.0)
    assert interpolate_storage(LAKE_LURE_TABLE, 1.5) == 250.0
    assert interpolate_storage(LAKE_LURE_TABLE, -1.0) == 0.0
    geo = TrapGeometry(table=tuple(LAKE_LURE_TABLE))
    assert geo.design_volume_m3 == 250.0
    assert geo.fraction_lost(0.45) == pytest.approx(67.5 / 250)  # 27 %
    assert geo.fraction_lost(0.75) == pytest.approx(130.0 / 250)  # 52 %: past cleanout


def test_stage_storage_in_feet_is_converted_by_the_config() -> None:
    site = SiteConfig.model_validate(
        {
            "site": {"id": "s"},
            "stations": [
                {
                    "id": "st",
                    "sensors": [
                        {"id": "sed", "kind": "sediment_depth", "unit": "ft", "interval_s": 3600}
                    ],
                }
            ],
            "sediment_traps": [
                {"id": "t", "depth_sensor": "sed", "stage_storage": [[0, 0], [1, 100], [2, 300]]}
            ],
        }
    )
    table = site.stage_storage_m(site.sediment_traps[0])
    assert table is not None
    geo = TrapGeometry(table=tuple(table))
    # 1.5 ft -> 100 + 0.5*200 = 200 ft^3 of 300 ft^3.
    assert geo.fraction_lost(1.5 * FT) == pytest.approx(2 / 3)
    assert geo.design_volume_m3 == pytest.approx(300 * FT**3)


def test_geometry_needs_exactly_one_description() -> None:
    with pytest.raises(ValueError):
        TrapGeometry()
    with pytest.raises(ValueError):
        TrapGeometry(shape=(1.0, 1.0, 1.0, 1.0), table=((0.0, 0.0), (1.0, 1.0)))
