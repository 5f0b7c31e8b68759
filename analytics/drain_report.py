"""What the drain-time alerts say: their messages and their evidence.

A person reads these: the practice by its kind and id, levels in the sensor's
unit, times in the site's local time, the limit with its citation (Lake George
§148-11 I(3), or the site's override). The numbers behind each message go
into the evidence, the same keys for every drain alert. After a design storm
(Lake George §148-11 I(3)(c)), the message ends by saying the practice met a
storm beyond its design (:func:`beyond_design`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from analytics.drain_event import DrainEvent
from analytics.drain_forecast import ForecastView
from analytics.rain import DesignStormNote
from analytics.recession import RecessionForecast
from analytics.timeutil import MS_PER_H, iso
from siltwatch.config import InfiltrationPractice
from siltwatch.detections.drain import DRAIN_TIME_FORECAST
from siltwatch.rulemath import drain_tolerance_m
from siltwatch.rulepacks import RuleValue
from siltwatch.timefmt import local_time
from siltwatch.units import from_metres

TYPE_LABEL = {
    "infiltration_basin": "infiltration basin",
    "infiltration_trench": "infiltration trench",
    "dry_well": "dry well",
    "porous_pavement": "porous pavement",
    "vegetated_depression": "vegetated depression",
}


def beyond_design(message: str, note: DesignStormNote, zone: ZoneInfo) -> str:
    """``message`` with the design storm the practice met (Lake George §148-11 I(3)(c)):
    it was designed for less, which the officer reading a drain-time alert should know."""
    return f"{message} {note.text(zone, 'the practice')}"


def hours_text(hours: float) -> str:
    return "never (the level is not falling)" if math.isinf(hours) else f"{hours:.0f} h"


@dataclass(frozen=True)
class DrainReport:
    """One practice as its alerts name it, with its limit and the limit's citation."""

    practice_id: str
    practice_type: str
    site_name: str
    sensor: str
    unit: str
    mode: str  # the baseline: "design" or "pre_event"
    tol_m: float
    limit_h: float | None
    rule_cite: str | None

    @classmethod
    def of(
        cls, practice: InfiltrationPractice, site_name: str, unit: str, rule: RuleValue | None
    ) -> DrainReport:
        """The practice and its limit: Lake George §148-11 I(3) by type, or the override."""
        return cls(
            practice_id=practice.id,
            practice_type=practice.type,
            site_name=site_name,
            sensor=practice.level_sensor,
            unit=unit,
            mode=practice.baseline,
            tol_m=drain_tolerance_m(practice.tolerance_metres()),
            limit_h=None if rule is None else float(rule.value),
            rule_cite=None if rule is None else rule.cite(),
        )

    # --- messages ---------------------------------------------------------------------

    def not_drained(self, ev: DrainEvent, t: int, rise: float, zone: ZoneInfo) -> str:
        level = self.level_text(ev.baseline_m + rise)
        return (
            f"{self.label()} has not drained: {(t - ev.peak_at) / MS_PER_H:.1f} h after "
            f"its peak of {self.level_text(ev.peak_level_m)} at {local_time(ev.peak_at, zone)} "
            f"the water is still {self.level_text(rise)} above {self.base_text()} (level "
            f"{level}); the limit is {self.limit_text()} ({self.rule_cite}). Inspect it for "
            "clogging or a blocked outlet, keep sediment out of it and restore infiltration."
        )

    def superseded(self, t: int, zone: ZoneInfo) -> str:
        return (
            f"{self.label()}: the forecast exceedance came true; "
            f"superseded by the drain_time alert at {local_time(t, zone)}."
        )

    def drained(self, kind: str, ev: DrainEvent, t: int, zone: ZoneInfo) -> str:
        """The resolution of the ``kind`` alert when the event drained at ``t``."""
        drain_h = (t - ev.peak_at) / MS_PER_H
        limit = f"(limit {self.limit_text()}, {self.rule_cite})."
        if kind == DRAIN_TIME_FORECAST.kind:
            when = f"{local_time(t, zone)}, {drain_h:.1f} h after its peak"
            return f"{self.label()} drained at {when} {limit}"
        return (
            f"{self.label()} drained back to its design level at {local_time(t, zone)}, "
            f"{drain_h:.1f} h after the peak of {local_time(ev.peak_at, zone)} {limit}"
        )

    def sped_up(self, fc: RecessionForecast) -> str:
        return (
            f"{self.label()}: the recession has sped up; it is now forecast to drain "
            f"{hours_text(fc.drain_h)} after its peak, within the limit of "
            f"{self.limit_text()} ({self.rule_cite})."
        )

    def too_slow(self, ev: DrainEvent, view: ForecastView, zone: ZoneInfo) -> str:
        fc = view.trusted
        if fc is not None:
            outlook = (
                f"the recession forecasts drain-down {hours_text(fc.drain_h)} after the "
                f"peak (at the fastest plausible rate {hours_text(fc.drain_h_fast)})"
            )
        else:
            outlook = (
                f"{view.hours:.0f} h after the peak the level has fallen by only "
                f"{self.level_text(view.fallen_m)}"
            )
        due = ev.peak_at + self.limit_ms()
        return (
            f"{self.label()} is draining too slowly: since its peak of "
            f"{self.level_text(ev.peak_level_m)} at {local_time(ev.peak_at, zone)} {outlook}; "
            f"the limit is {self.limit_text()} ({self.rule_cite}), due "
            f"{local_time(due, zone)}. Inspect it for clogging or a blocked outlet now."
        )

    def gap(self, ev: DrainEvent, last_t: int, t: int, zone: ZoneInfo) -> str:
        gap_h = (t - last_t) / MS_PER_H
        return (
            f"{self.label()}: no level readings for {gap_h:.0f} h (from "
            f"{local_time(last_t, zone)} to {local_time(t, zone)}); the sensor's datum drifts, "
            f"so the event of {local_time(ev.start_at, zone)} is closed without a verdict. "
            "Check the practice on site."
        )

    # --- texts ------------------------------------------------------------------------

    def label(self) -> str:
        kind = TYPE_LABEL.get(self.practice_type, self.practice_type)
        where = f" at {self.site_name}" if self.site_name else ""
        return f"The {kind} {self.practice_id}{where}"

    def limit_ms(self) -> int:
        assert self.limit_h is not None
        return round(self.limit_h * MS_PER_H)

    def limit_text(self) -> str:
        assert self.limit_h is not None
        h = self.limit_h
        return f"{h:g} h ({h / 24:g} d)" if h % 24 == 0 else f"{h:g} h"

    def level_text(self, metres: float) -> str:
        """A level or a rise in the sensor's unit."""
        return f"{from_metres(metres, self.unit):.2f} {self.unit}"

    def base_text(self) -> str:
        return "its design level" if self.mode == "design" else "its dry level before the storm"

    # --- evidence ---------------------------------------------------------------------

    def evidence(
        self,
        ev: DrainEvent,
        t: int,
        rise: float,
        fc: RecessionForecast | None,
        practice_record: dict[str, Any],
    ) -> dict[str, Any]:
        """The numbers of the event at ``t``, then the practice's record (trend, past events)."""
        out: dict[str, Any] = {
            "practice": self.practice_id,
            "type": self.practice_type,
            "sensor": self.sensor,
            "unit": self.unit,
            "baseline_mode": self.mode,
            "baseline_m": round(ev.baseline_m, 4),
            "tolerance_m": round(self.tol_m, 4),
            "peak_at": iso(ev.peak_at),
            "peak_level_m": round(ev.peak_level_m, 4),
            "rise_at_peak_m": round(ev.peak_rise_m, 4),
            "refills": ev.refills,
            "at": iso(t),
            "hours_since_peak": round((t - ev.peak_at) / MS_PER_H, 2),
            "rise_now_m": round(rise, 4),
            "limit_h": self.limit_h,
            "deadline": None if self.limit_h is None else iso(ev.peak_at + self.limit_ms()),
            "event": ev.summary(self.unit),
        }
        return out | practice_record | ({} if fc is None else {"forecast": forecast_evidence(fc)})


def forecast_evidence(fc: RecessionForecast) -> dict[str, Any]:
    return {
        "model": (
            "exponential decay of the rise, least squares on ln(rise) since the peak"
            if fc.model == "exponential"
            else "constant rate of fall of the rise, least squares on the rise since the peak"
        ),
        "k_per_h": round(fc.k_per_h, 5),
        "k_fast_per_h": round(fc.k_fast_per_h, 5),
        "r2": round(fc.r2, 4),
        "points": fc.n,
        "drain_h": None if math.isinf(fc.drain_h) else round(fc.drain_h, 1),
        "drain_h_fast": None if math.isinf(fc.drain_h_fast) else round(fc.drain_h_fast, 1),
    }
