"""Running least squares and the exponential recession forecast (hand-computed)."""

from __future__ import annotations

import math

import pytest

from analytics.recession import RunningLine, recession_forecast


def test_running_line_on_four_points_by_hand() -> None:
    # x = 0..3, y = 1, 3, 2, 5: mean x 1.5, mean y 2.75, Sxx = 5, Sxy = 5.5, Syy = 8.75.
    # slope 1.1, intercept 1.1; residuals -0.1, 0.8, -1.3, 0.6 -> SSE 2.7;
    # se(slope) = sqrt(2.7 / 2 / 5) = 0.5196; R^2 = 1 - 2.7 / 8.75 = 0.6914.
    line = RunningLine()
    for x, y in [(0, 1), (1, 3), (2, 2), (3, 5)]:
        line.add(float(x), float(y))
    fit = line.fit()
    assert fit is not None
    assert fit.slope == pytest.approx(1.1)
    assert fit.intercept == pytest.approx(1.1)
    assert fit.se_slope == pytest.approx(math.sqrt(0.27))
    assert fit.r2 == pytest.approx(1 - 2.7 / 8.75)
    assert fit.x_span == 3.0


def test_running_line_needs_three_points_and_spread() -> None:
    line = RunningLine()
    line.add(1.0, 1.0)
    line.add(2.0, 2.0)
    assert line.fit() is None
    same_x = RunningLine()
    for y in (1.0, 2.0, 3.0):
        same_x.add(5.0, y)
    assert same_x.fit() is None


def exponential_limb(k: float, hours: float, step_h: float = 0.25) -> RunningLine:
    line = RunningLine()
    n = round(hours / step_h)
    for i in range(n + 1):
        t = i * step_h
        line.add(t, math.log(0.5 * math.exp(-k * t)))
    return line


def test_exact_exponential_forecasts_ln_r0_over_tol_divided_by_k() -> None:
    # r(t) = 0.5 m * exp(-0.1 t); tol 0.05 m -> drained at ln(10) / 0.1 = 23.03 h.
    fc = recession_forecast(exponential_limb(0.1, 2.0), 0.05)
    assert fc is not None
    assert fc.k_per_h == pytest.approx(0.1)
    assert fc.drain_h == pytest.approx(math.log(10) / 0.1)
    assert fc.drain_h_fast == pytest.approx(fc.drain_h)  # no scatter: se = 0
    assert fc.trusted


def test_forecast_waits_for_eight_points_over_an_hour() -> None:
    # 0.75 h at 15 min = 4 points: too few.
    assert recession_forecast(exponential_limb(0.1, 0.75), 0.05) is None
    # 9 points over 0.8 h: enough points, too short.
    assert recession_forecast(exponential_limb(0.1, 0.8, step_h=0.1), 0.05) is None


def test_a_rising_level_is_not_a_recession() -> None:
    fc = recession_forecast(exponential_limb(-0.05, 3.0), 0.05)
    assert fc is not None
    assert math.isinf(fc.drain_h)
    assert not fc.trusted
