"""Calibration: fits recover known curves; ranges flag; config shapes are validated."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from hardware.base import Sample
from hardware.calibrated import CalibratedDriver
from hardware.calibration import (
    LinearCalibration,
    PolynomialCalibration,
    fit_linear,
    fit_polynomial,
)
from siltwatch.schema import QualityFlag

coef = st.floats(-100, 100, allow_nan=False)


@given(coef, coef, coef)
def test_quadratic_fit_recovers_coefficients(c0: float, c1: float, c2: float) -> None:
    raws = [0.0, 0.5, 1.0, 2.0, 3.5, 5.0]
    points = [(x, c0 + c1 * x + c2 * x * x) for x in raws]
    fitted = fit_polynomial(points, 2)
    assert fitted == pytest.approx([c0, c1, c2], abs=1e-6)
    cal = PolynomialCalibration(coefficients=fitted)
    assert cal.apply(2.2) == pytest.approx(c0 + c1 * 2.2 + c2 * 2.2**2, abs=1e-5)


def test_linear_fit_from_formazin_standards() -> None:
    # an OBS-style probe read 0.02, 0.51, 2.46 V in 0, 100, 500 NTU standards
    cal = fit_linear([(0.02, 0.0), (0.51, 100.0), (2.46, 500.0)])
    assert cal.apply(0.51) == pytest.approx(100.0, abs=2.0)
    gain, offset = cal.coefficients()
    assert gain == pytest.approx(204.9, abs=1.0) and offset == pytest.approx(-4.0, abs=2.0)


def test_fit_needs_enough_distinct_points() -> None:
    with pytest.raises(ValueError, match="at least 3 distinct"):
        fit_polynomial([(1.0, 2.0), (1.0, 3.0), (2.0, 4.0)], 2)


def test_linear_calibration_takes_gain_or_points_not_both() -> None:
    with pytest.raises(ValidationError):
        LinearCalibration(gain=2.0, points=[(4.0, 0.0), (20.0, 5.0)])
    with pytest.raises(ValidationError):
        LinearCalibration()
    assert LinearCalibration(gain=2.0, offset=1.0).apply(3.0) == 7.0


class Fixed:
    def __init__(self, value: float, unit: str) -> None:
        self.sample = Sample(value, unit, value, frozenset({QualityFlag.UNCALIBRATED}))

    def read(self) -> Sample:
        return self.sample

    def close(self) -> None:
        pass


def test_out_of_calibrated_range_is_flagged_not_clipped() -> None:
    cal = LinearCalibration(gain=100.0, range=(0.0, 1000.0))
    sample = CalibratedDriver(Fixed(12.0, "V"), "NTU", cal).read()
    assert sample.value == 1200.0 and sample.raw == 12.0
    assert sample.quality == frozenset({QualityFlag.OUT_OF_RANGE})


def test_no_calibration_keeps_the_value_and_says_so() -> None:
    sample = CalibratedDriver(Fixed(1.2, "V"), "NTU").read()
    assert (sample.value, sample.unit) == (1.2, "NTU")
    assert QualityFlag.UNCALIBRATED in sample.quality
