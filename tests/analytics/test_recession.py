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


def linear_limb(
    rate: float, hours: float, r0: float = 0.6, step_h: float = 1 / 12
) -> tuple[RunningLine, RunningLine]:
    """(ln rise, rise) fits of a rise falling at a constant ``rate`` m/h from ``r0`` m."""
    log_line, lin_line = RunningLine(), RunningLine()
    for i in range(round(hours / step_h) + 1):
        t = i * step_h
        log_line.add(t, math.log(r0 - rate * t))
        lin_line.add(t, r0 - rate * t)
    return log_line, lin_line


def test_constant_rate_recession_is_read_as_a_line_not_an_exponential_tail() -> None:
    # r(t) = 0.6 - 0.012 t (m): reaches tol 0.02 m at (0.6 - 0.02) / 0.012 = 48.33 h.
    # An exponential through the first 6 h of that limb (k ~ 0.0215/h) would put it at
    # ln(0.6 / 0.02) / 0.0215 ~ 158 h: a false warning against a 72 h limit.
    log_line, lin_line = linear_limb(0.012, 6.0)
    exp_only = recession_forecast(log_line, 0.02)
    assert exp_only is not None and exp_only.drain_h > 72
    # Over 6 h (short of a decisive span) the optimistic model speaks: the line.
    fc = recession_forecast(log_line, 0.02, lin_line)
    assert fc is not None and fc.model == "linear" and fc.trusted
    # Over a decisive span the better fit speaks: still the line (R² = 1).
    fc = recession_forecast(log_line, 0.02, lin_line, decisive_span_h=5.0)
    assert fc is not None and fc.model == "linear"
    assert fc.k_per_h == pytest.approx(0.012)
    assert fc.drain_h == pytest.approx(48.33, abs=0.01)


def test_a_long_exponential_limb_is_read_as_exponential_once_decisive() -> None:
    # r(t) = 0.5 exp(-0.1 t) over 20 h: ln r is exactly linear (R² = 1), the rise is not.
    log_line, lin_line = RunningLine(), RunningLine()
    for i in range(81):
        t = i * 0.25
        log_line.add(t, math.log(0.5 * math.exp(-0.1 * t)))
        lin_line.add(t, 0.5 * math.exp(-0.1 * t))
    undecided = recession_forecast(log_line, 0.05, lin_line)
    assert undecided is not None and undecided.model == "linear"  # the optimistic one
    fc = recession_forecast(log_line, 0.05, lin_line, decisive_span_h=10.0)
    assert fc is not None and fc.model == "exponential"
    assert fc.drain_h == pytest.approx(math.log(10) / 0.1)
