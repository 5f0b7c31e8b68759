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
The fit is trusted only with enough points (MIN_FIT_POINTS over at least
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
    """What the exponential recession fit says about the drain time (hours after the peak)."""

    k_per_h: float  # fitted decay rate of the rise
    k_fast_per_h: float  # k + 2·se(k): the fastest plausible decay
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


def recession_forecast(line: RunningLine, tol_m: float) -> RecessionForecast | None:
    """Forecast the drain time from a fit of (hours since peak, ln rise in metres).

    None when the fit is not trustworthy yet: fewer than MIN_FIT_POINTS points
    or a limb shorter than MIN_FIT_SPAN_H.
    """
    if line.n < MIN_FIT_POINTS or line.x_max - line.x_min < MIN_FIT_SPAN_H:
        return None
    fit = line.fit()
    if fit is None:
        return None
    k = -fit.slope
    k_fast = k + 2.0 * fit.se_slope
    ln_tol = math.log(tol_m)

    def hours(rate: float) -> float:
        if fit.intercept <= ln_tol:
            return 0.0
        return math.inf if rate <= MIN_DECAY_PER_H else (fit.intercept - ln_tol) / rate

    return RecessionForecast(k, k_fast, fit.r2, fit.n, hours(k), hours(k_fast))
