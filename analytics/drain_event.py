"""One fill of an infiltration practice, and how its recession changes from fill to fill.

A :class:`DrainEvent` is what the drain-time detector (analytics/drain.py)
finds in a practice's level record, from the fill to drain-down: its peak, its
refills, the time back to the design level (what Lake George §148-11 I(3)
limits) and the recession rate measured between 90 % and 10 % of the rise, so
events compare with each other. :func:`clogging_trend` compares those rates
from event to event: a falling rate means the practice is clogging.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analytics.recession import RunningLine
from analytics.timeutil import MS_PER_H, iso
from siltwatch.units import from_metres

TREND_EVENTS = 3  # clogging trend: mean rate of the last three events vs the first three


@dataclass
class Rise:
    """One climb of the level inside an event: the fill itself, then each refill."""

    start_at: int  # the fill's start, or the lowest point before a refill
    from_level_m: float  # the level it climbed from (the baseline for the fill itself)
    peak_at: int
    max_level_m: float  # the highest raw reading of this climb
    max_level_at: int


@dataclass
class DrainEvent:
    """One fill of a practice, from the fill to drain-down; times are epoch ms."""

    practice: str
    start_at: int
    baseline_m: float
    peak_at: int  # where the drain clock starts: the peak of the (median) level of the last rise
    peak_rise_m: float
    rises: list[Rise] = field(default_factory=list)
    refills: int = 0
    t90_at: int | None = None  # the rise fell to 90 % of its peak: the recession rate starts here
    t90_rise_m: float | None = None
    recession_end_at: int | None = None  # 10 % of the rise reached (or drained first)
    recession_end_rise_m: float | None = None
    t10_at: int | None = None
    drained_at: int | None = None
    k_per_h: float | None = None  # exponential decay rate of the rise fitted on the falling limb
    exceeded: bool = False
    forecast_warned: bool = False
    interrupted_at: int | None = None  # closed without a verdict: a data gap (pre_event mode)

    @property
    def peak_level_m(self) -> float:
        return self.baseline_m + self.peak_rise_m

    @property
    def max_level_m(self) -> float:
        """The highest raw reading of the whole event."""
        return max(r.max_level_m for r in self.rises)

    @property
    def drain_h(self) -> float | None:
        """Hours from the (last) peak to drain-down: what the law limits."""
        return None if self.drained_at is None else (self.drained_at - self.peak_at) / MS_PER_H

    @property
    def t10_h(self) -> float | None:
        """Hours from the peak until the rise fell to 10 % (independent of the tolerance)."""
        return None if self.t10_at is None else (self.t10_at - self.peak_at) / MS_PER_H

    @property
    def rate_mm_h(self) -> float | None:
        """Mean fall of the level (mm/h) from 90 % to 10 % of the rise (or to drain-down)."""
        start_at, start_rise = self.t90_at, self.t90_rise_m
        end_at, end_rise = self.recession_end_at, self.recession_end_rise_m
        if start_at is None or start_rise is None or end_at is None or end_rise is None:
            return None
        hours = (end_at - start_at) / MS_PER_H
        if hours <= 0:
            return None
        return (start_rise - end_rise) * 1000.0 / hours

    def summary(self, unit: str) -> dict[str, Any]:
        """JSON-ready numbers for alert evidence."""
        rate = self.rate_mm_h
        return {
            "start_at": iso(self.start_at),
            "peak_at": iso(self.peak_at),
            "baseline_m": round(self.baseline_m, 4),
            "peak_level_m": round(self.peak_level_m, 4),
            "max_level": round(from_metres(self.max_level_m, unit), 3),
            "rises": len(self.rises),
            "rise_m": round(self.peak_rise_m, 4),
            "refills": self.refills,
            "drained_at": None if self.drained_at is None else iso(self.drained_at),
            "drain_h": None if self.drain_h is None else round(self.drain_h, 2),
            "t10_h": None if self.t10_h is None else round(self.t10_h, 2),
            "rate_mm_h": None if rate is None else round(rate, 2),
            "rate_in_h": None if rate is None else round(rate / 25.4, 3),
            "k_per_h": None if self.k_per_h is None else round(self.k_per_h, 4),
            "exceeded": self.exceeded,
        }


def clogging_trend(events: list[DrainEvent], min_rise_m: float) -> dict[str, Any]:
    """Recession rate from event to event: a falling rate means the practice is clogging.

    Compares the mean rate of the last TREND_EVENTS rated events with the first
    TREND_EVENTS, and gives the least-squares slope of rate against event number.
    Small events (rise under ``min_rise_m``) are left out: their rate is noise.
    """
    rates = [
        r
        for e in events
        if e.peak_rise_m >= min_rise_m and (r := e.rate_mm_h) is not None and r > 0
    ]
    out: dict[str, Any] = {"events_rated": len(rates)}
    if len(rates) < 2:
        return out
    n = min(TREND_EVENTS, len(rates) // 2)
    first = sum(rates[:n]) / n
    last = sum(rates[-n:]) / n
    line = RunningLine()
    for i, r in enumerate(rates):
        line.add(float(i), r)
    fit = line.fit()
    out.update(
        first_mm_h=round(first, 2),
        last_mm_h=round(last, 2),
        last_over_first=round(last / first, 3),
        slope_mm_h_per_event=None if fit is None else round(fit.slope, 3),
        compared_events=n,
    )
    return out
