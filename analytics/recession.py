"""Running least-squares line fits, and the recession model of an infiltration practice.

A detector sees one reading at a time and must keep picklable plain state, so
fits are kept as running sums (n, Σx, Σy, Σx², Σxy, Σy²): adding a point is
O(1) and the state is six numbers. The sums are added in event-time order, so
the same readings give bit-identical fits however they were chunked.

The recession model (docs/drain-time.md): after a peak, the rise of the water
above its baseline decays exponentially,

    r(t) = r0 · exp(−k · (t − t_peak)),

so ln r is a straight line in time with slope −k. It is fitted by least
squares on the falling limb since the peak. The practice counts as drained
when r falls to the tolerance ``tol``, i.e. at ``t_peak + ln(r0 / tol) / k``.
Infiltration through a basin floor under a small head is closer to a constant
rate (a straight line in the rise itself, Green-Ampt-like), so the same limb is
also fitted as a line, r(t) = r0 − q · (t − t_peak). Each model is trusted on
its own terms (below). Over a short limb the two cannot be told apart (an hour
of a straight fall and an hour of a slow exponential look the same), yet they
forecast very different drain times: then the forecast is the more optimistic
of the two, so an early warning needs both models to agree — confidence, not a
guess. Once the limb is long enough to tell them apart (``decisive_span_h``,
a quarter of the limit in the drain detector) the model that explains it
better (higher R²) wins, so a true exponential tail is still caught well
before the limit, and a straight fall is never read as a slow tail.
Each fit is trusted only with enough points (MIN_FIT_POINTS over at least
MIN_FIT_SPAN_H), a line that explains the data (R² >= MIN_R2) and a level
that is not still rising (k + 2·se(k) > 0). The early warning uses the
*fastest plausible* decay, ``k + 2·se(k)``, so it only fires when even an
optimistic reading of the recession misses the limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LineFit:
    """y = intercept + slope·x, with the standard error of the slope and R²."""

    n: int
    slope: float
    intercept: float
    se_slope: float
    r2: float
    x_span: float


@dataclass
class RunningLine:
    """Running sums for a least-squares line; ``fit()`` is O(1)."""

    n: int = 0
    sx: float = 0.0
    sy: float = 0.0
    sxx: float = 0.0
    sxy: float = 0.0
    syy: float = 0.0
    x_min: float = math.inf
    x_max: float = -math.inf

    def add(self, x: float, y: float) -> None:
        self.n += 1
        self.sx += x
        self.sy += y
        self.sxx += x * x
        self.sxy += x * y
        self.syy += y * y
        self.x_min = min(self.x_min, x)
        self.x_max = max(self.x_max, x)

    def fit(self) -> LineFit | None:
        """The least-squares line, or None with fewer than three points or no spread in x."""
        n = self.n
        if n < 3:
            return None
        sxx = self.sxx - self.sx * self.sx / n
        if sxx <= 1e-12 * max(1.0, self.sxx):
            return None
        sxy = self.sxy - self.sx * self.sy / n
        syy = max(self.syy - self.sy * self.sy / n, 0.0)
        slope = sxy / sxx
        intercept = (self.sy - slope * self.sx) / n
        sse = max(syy - slope * sxy, 0.0)
        se = math.sqrt(sse / (n - 2) / sxx)
        # A flat y leaves nothing to explain: R² is taken as 0, not as a perfect fit.
        r2 = 1.0 - sse / syy if syy > 1e-12 * max(1.0, self.syy) else 0.0
        return LineFit(n, slope, intercept, se, r2, self.x_max - self.x_min)


@dataclass(frozen=True)
class RecessionForecast:
    """What a recession fit says about the drain time (hours after the peak).

    For ``model == "exponential"`` the rates are decay rates of the rise (1/h);
    for ``"linear"`` they are rates of fall of the rise (m/h).
    """

    model: str
    k_per_h: float  # fitted rate
    k_fast_per_h: float  # k + 2·se(k): the fastest plausible rate
    r2: float
    n: int
    drain_h: float  # point forecast (inf when the rise does not decay)
    drain_h_fast: float  # forecast with the fastest plausible decay: a lower bound

    @property
    def trusted(self) -> bool:
        """A line that explains the limb, on a level that is not still rising."""
        return self.r2 >= MIN_R2 and self.k_fast_per_h > 0.0


# Fewest points and shortest falling limb before a forecast is trusted.
MIN_FIT_POINTS = 8
MIN_FIT_SPAN_H = 1.0
MIN_R2 = 0.5
MIN_DECAY_PER_H = 1e-6  # slower than this (a 10^6 h e-folding time) is no decay at all
MIN_FALL_M_PER_H = 1e-7  # slower than this (0.1 mm in 1000 h) is no fall at all


def _fit_of(line: RunningLine) -> LineFit | None:
    if line.n < MIN_FIT_POINTS or line.x_max - line.x_min < MIN_FIT_SPAN_H:
        return None
    return line.fit()


def _forecast(model: str, fit: LineFit, target: float, min_rate: float) -> RecessionForecast:
    """Hours until the fitted line ``intercept - rate·x`` reaches ``target``."""
    k = -fit.slope
    k_fast = k + 2.0 * fit.se_slope

    def hours(rate: float) -> float:
        if fit.intercept <= target:
            return 0.0
        return math.inf if rate <= min_rate else (fit.intercept - target) / rate

    return RecessionForecast(model, k, k_fast, fit.r2, fit.n, hours(k), hours(k_fast))


def recession_forecast(
    log_line: RunningLine,
    tol_m: float,
    linear_line: RunningLine | None = None,
    *,
    decisive_span_h: float = math.inf,
) -> RecessionForecast | None:
    """Forecast the drain time from fits of (hours since peak, ln rise) and (hours, rise in m).

    Which model speaks is described in the module docstring; None
    when neither fit is ready: fewer than MIN_FIT_POINTS points or a limb
    shorter than MIN_FIT_SPAN_H.
    """
    candidates: list[RecessionForecast] = []
    exp_fit = _fit_of(log_line)
    if exp_fit is not None:
        candidates.append(_forecast("exponential", exp_fit, math.log(tol_m), MIN_DECAY_PER_H))
    lin_fit = None if linear_line is None else _fit_of(linear_line)
    if lin_fit is not None:
        candidates.append(_forecast("linear", lin_fit, tol_m, MIN_FALL_M_PER_H))
    if not candidates:
        return None
    trusted = [c for c in candidates if c.trusted] or candidates
    if log_line.x_max - log_line.x_min >= decisive_span_h:
        return max(trusted, key=lambda c: (c.r2, c.model == "exponential"))
    return min(trusted, key=lambda c: (c.drain_h_fast, c.model))
