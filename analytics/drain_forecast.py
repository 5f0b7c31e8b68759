"""The early warning: will the fill in progress drain within its limit?

The ``drain_time_forecast`` warning (analytics/drain.py) is raised before the
limit passes when the recession fitted since the peak (analytics/recession.py)
says it will be missed — even at the fastest plausible rate, by a margin — or
when the level is not falling at all. It is withdrawn when a trusted forecast
drains within the limit again. What the recession says at one moment is a
:class:`ForecastView`; the detector turns it into alert changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from analytics.drain_fill import FillTracker
from analytics.recession import RecessionForecast
from analytics.timeutil import MS_PER_H

FORECAST_MARGIN = 0.10  # warn when even the fastest plausible recession misses the limit by 10 %
STALLED_FRACTION = 0.25  # ... or when a quarter of the limit has passed with no measurable fall


@dataclass(frozen=True, slots=True)
class ForecastView:
    """What the recession says at one moment about the fill in progress."""

    forecast: RecessionForecast | None
    limit_h: float
    hours: float  # since the peak
    fallen_m: float  # fall of the rise since the peak
    stalled: bool  # a quarter of the limit gone and not one tolerance of fall

    @classmethod
    def of(cls, tracker: FillTracker, t: int, limit_h: float) -> ForecastView | None:
        """The view at ``t``; None without a fill in progress."""
        fill = tracker.fill
        if fill is None:
            return None
        ev = fill.event
        hours = (t - ev.peak_at) / MS_PER_H
        fallen = ev.peak_rise_m - fill.last_rise_m
        # Not draining at all: a quarter of the limit gone and not one tolerance of fall.
        stalled = hours >= STALLED_FRACTION * limit_h and fallen < tracker.tol_m
        return cls(tracker.forecast(limit_h), limit_h, hours, fallen, stalled)

    @property
    def trusted(self) -> RecessionForecast | None:
        """The forecast, if it is one to act on (a fit that explains a falling limb)."""
        fc = self.forecast
        return fc if fc is not None and fc.trusted else None

    def warns(self) -> bool:
        """Raise the warning: even the fastest plausible recession is late, or none at all."""
        fc = self.trusted
        late = fc is not None and fc.drain_h_fast >= self.limit_h * (1.0 + FORECAST_MARGIN)
        return late or self.stalled

    def clears(self) -> bool:
        """Withdraw the warning: a trusted forecast drains within the limit again."""
        fc = self.trusted
        return fc is not None and fc.drain_h <= self.limit_h and not self.stalled

    def speaks(self) -> bool:
        """Whether there is anything new to say (else an open warning keeps its message)."""
        return self.trusted is not None or self.stalled
