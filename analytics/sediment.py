"""Sediment-trap capacity: clean the trap out before half its storage is gone.

Lake George §148-10 A and Big Flats 17.37.100 A require removing sediment from
a trap or pond when its design capacity is reduced by 50 %. A sediment-depth
sensor gives the height of the sediment surface above the trap bottom; the
trap's geometry (trapezoid or stage-storage table, siltwatch/rulemath.py)
turns it into the fraction of the design *volume* lost.

One ``sediment_capacity`` episode per fill cycle: it opens as a warning at
``sediment.warn_fraction`` (default 40 %, a trap's ``warn_fraction`` wins),
escalates to critical at ``sediment.cleanout_fraction`` (50 %) and resolves
when a cleanout is seen.

Robust to a noisy sensor (docs/drain-time.md, "Sediment"):

* the depth is the median of the last five readings (two spikes in a row
  cannot move it);
* sediment does not shrink except at a cleanout, so the fraction lost is the
  monotone envelope (running maximum) of that median since the last cleanout;
* a cleanout is a fall of that median by at least 10 % of the design volume
  below the envelope; it resolves the alert, restarts the envelope and is
  logged (``cleanouts()`` and the alert's evidence). A smaller cleanout (a
  nearly empty trap) goes unnoticed, which is harmless: the envelope simply
  waits until the new sediment passes the old level.

Forecast: the fraction lost is fitted by least squares against the cumulative
rain (inches, mean over the site's rain gauges) since the last cleanout; the
slope is the accumulation per inch of rain, and the inches still to fall
before 50 % follow from it. The forecast is given only when the slope is
positive by more than two standard errors, over at least half an inch of rain.

After a design storm (the site's ``[[design_storms]]``, Lake George §148-11
I(3)(c), Lake Lure 96.08(A)): an episode that speaks (opens, escalates, is
refreshed) from the moment a gauge's 24-hour rain reached a design storm's
depth until the next storm at that gauge names the storm in that message and
every later one of the episode, and in its evidence (``design_storm``): the
trap met a storm beyond its design.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import tzinfo
from statistics import median
from typing import Any

from analytics.detector import Context, Detector
from analytics.events import DetectorEvent, SensorReading
from analytics.quality import usable
from analytics.rain import DESIGN_STORM_EVENTS, DesignStormMemory, DesignStormNote
from analytics.recession import RunningLine
from analytics.timeutil import iso
from analytics.trap_geometry import TrapGeometry
from siltwatch.config import SedimentTrap, SiteConfig
from siltwatch.detections.sediment import SEDIMENT_CAPACITY
from siltwatch.rulemath import warn_fraction
from siltwatch.rulepacks import RuleValue
from siltwatch.timefmt import local_time
from siltwatch.units import from_metres, to_metres, to_mm
from siltwatch.vocabulary import Severity, severity_rank

KIND = SEDIMENT_CAPACITY.kind

SMOOTH_READINGS = 5
MIN_READINGS = 3  # no decision before three readings of a trap
CLEANOUT_DROP = 0.10  # a cleanout removes at least 10 % of the design volume
FORECAST_MIN_POINTS = 5
FORECAST_MIN_RAIN_IN = 0.5
MM_PER_IN = 25.4


def pct(fraction: float) -> str:
    return f"{fraction * 100:.0f} %"


@dataclass(frozen=True)
class Cleanout:
    """A cleanout seen in the data: when, and how much storage it gave back."""

    trap: str
    at: int
    fraction_before: float
    fraction_after: float
    depth_before_m: float
    depth_after_m: float
    removed_m3: float

    def summary(self) -> dict[str, Any]:
        return {
            "at": iso(self.at),
            "fraction_before": round(self.fraction_before, 4),
            "fraction_after": round(self.fraction_after, 4),
            "depth_before_m": round(self.depth_before_m, 4),
            "depth_after_m": round(self.depth_after_m, 4),
            "removed_m3": round(self.removed_m3, 3),
        }


@dataclass(frozen=True)
class AccumulationForecast:
    per_inch: float  # fraction of design capacity lost per inch of rain
    inches_to_cleanout: float  # more rain until the cleanout fraction is reached
    points: int
    rain_span_in: float


class SedimentCapacityDetector(Detector):
    """One sediment trap: fraction of design volume lost, escalation, cleanouts, forecast."""

    handles = DESIGN_STORM_EVENTS  # the design storms the trap meets (analytics/rain.py)

    def __init__(
        self,
        *,
        trap: SedimentTrap,
        geometry: TrapGeometry,
        site_name: str,
        unit: str,
        rain_sensors: dict[str, str],
        warn: RuleValue,
        cleanout: RuleValue,
    ) -> None:
        self.name = f"sediment/{trap.id}"
        self.trap_id = trap.id
        self.site_name = site_name
        self.depth_sensor = trap.depth_sensor
        self.unit = unit
        self.geometry = geometry
        self.rain_units = dict(rain_sensors)  # rain sensor id -> unit, in config order
        self.warn_fraction, self.warn_source = warn_fraction(trap.warn_fraction, warn)
        # Lake George §148-10 A / Big Flats 17.37.100 A: remove sediment at 50 % loss of design capacity.
        self.cleanout_fraction = float(cleanout.value)
        self.rule_cite = cleanout.cite()
        # Who asks for the cleanout: the law a pack cites, or, where no pack of the
        # site sets a level, siltwatch's own default, named as one (not passed off as law).
        self.rule_says = (
            "siltwatch's default (no rule pack of this site sets a cleanout level) calls for"
            if cleanout.verified == "default"
            else f"{self.rule_cite} requires"
        )
        self._recent: list[tuple[int, float]] = []  # (t, depth m)
        self._rain_mm: dict[str, float] = dict.fromkeys(self.rain_units, 0.0)
        self.envelope_fraction = 0.0
        self.envelope_depth_m = 0.0
        self.envelope_at: int | None = None
        self._fit = RunningLine()
        self._level: Severity | None = None
        self._cleanouts: list[Cleanout] = []
        self.ignored_readings = 0
        self.design = DesignStormMemory()
        self.design_said: DesignStormNote | None = None  # the storm the open episode names

    # --- public views --------------------------------------------------------------

    def sensors(self) -> tuple[str, ...]:
        return (self.depth_sensor, *self.rain_units)

    def cleanouts(self) -> list[Cleanout]:
        return list(self._cleanouts)

    def rain_in(self) -> float:
        """Cumulative rain since the start, inches: the mean over the site's gauges."""
        if not self._rain_mm:
            return 0.0
        return sum(self._rain_mm.values()) / len(self._rain_mm) / MM_PER_IN

    def forecast(self) -> AccumulationForecast | None:
        line = self._fit
        if line.n < FORECAST_MIN_POINTS or line.x_max - line.x_min < FORECAST_MIN_RAIN_IN:
            return None
        fit = line.fit()
        if fit is None or fit.slope <= 2.0 * fit.se_slope or fit.slope <= 0.0:
            return None
        remaining = max(self.cleanout_fraction - self.envelope_fraction, 0.0) / fit.slope
        return AccumulationForecast(fit.slope, remaining, fit.n, fit.x_span)

    # --- engine callbacks -------------------------------------------------------------

    def on_event(self, event: DetectorEvent, ctx: Context) -> None:
        self.design.on_event(event)

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        # Depths and rain alike: not evidence unless usable (analytics/quality.py); counted.
        if not usable(reading.flags) or not math.isfinite(reading.value):
            self.ignored_readings += 1
            return
        unit = self.rain_units.get(reading.sensor)
        if unit is not None:
            if reading.value > 0:
                self._rain_mm[reading.sensor] += to_mm(reading.value, unit)
            return
        self._depth(reading.t, to_metres(reading.value, self.unit), ctx)

    def _depth(self, t: int, depth_m: float, ctx: Context) -> None:
        self._recent.append((t, depth_m))
        if len(self._recent) > SMOOTH_READINGS:
            del self._recent[0]
        if len(self._recent) < MIN_READINGS:
            return
        geometry = self.geometry
        depth = median(d for _, d in self._recent)
        fraction = geometry.fraction_lost(depth)
        env = self.envelope_fraction
        if env - fraction >= CLEANOUT_DROP:
            self._cleanout(t, depth, fraction, ctx)
            return
        if fraction > env:
            self.envelope_fraction = fraction
            self.envelope_depth_m = depth
            self.envelope_at = t
        self._fit.add(self.rain_in(), fraction)
        self._escalate(t, ctx)

    def _cleanout(self, t: int, depth: float, fraction: float, ctx: Context) -> None:
        # The cleanout happened at the first reading of the window that is already low.
        limit = self.envelope_fraction - CLEANOUT_DROP
        low = [(ts, d) for ts, d in self._recent if self.geometry.fraction_lost(d) <= limit]
        at = low[0][0] if low else t
        event = Cleanout(
            self.trap_id,
            at,
            self.envelope_fraction,
            fraction,
            self.envelope_depth_m,
            depth,
            (self.envelope_fraction - fraction) * self.geometry.design_volume_m3,
        )
        self._cleanouts.append(event)
        self._recent = low
        self.envelope_fraction, self.envelope_depth_m, self.envelope_at = fraction, depth, at
        self._fit = RunningLine()
        self._fit.add(self.rain_in(), fraction)
        self._level = None
        if ctx.alerts.is_open(KIND, self.trap_id):
            message, evidence = self._beyond_design(
                f"{self._label()} was cleaned out at {local_time(at, ctx.zone)}: storage lost fell from "
                f"{pct(event.fraction_before)} to {pct(event.fraction_after)} of the design "
                f"volume ({self._volume_text(event.removed_m3)} removed); "
                f"{self.rule_cite} is met again.",
                self._evidence(at, cleanout=event),
                ctx,
            )
            ctx.alerts.resolve(KIND, self.trap_id, at, message=message, evidence=evidence)
        self.design_said = None  # the episode, if any, ended

    def _escalate(self, t: int, ctx: Context) -> None:
        env = self.envelope_fraction
        target: Severity | None = None
        if env >= self.cleanout_fraction:
            # Lake George §148-10 A: design capacity reduced by 50 %: clean out
            target = Severity.CRITICAL
        elif env >= self.warn_fraction:
            target = Severity.WARNING
        if target is None:
            return
        if self._level is not None and severity_rank(target) < severity_rank(self._level):
            target = self._level  # no de-escalation: sediment does not shrink
        message, evidence = self._beyond_design(
            self._message(target, ctx.zone), self._evidence(t), ctx
        )
        if self._level is None:
            ctx.alerts.open(
                KIND,
                self.trap_id,
                t,
                target,
                rule=self.rule_cite,
                message=message,
                evidence=evidence,
            )
        else:
            ctx.alerts.update(
                KIND, self.trap_id, t, severity=target, message=message, evidence=evidence
            )
        self._level = target

    def _beyond_design(
        self, message: str, evidence: dict[str, Any], ctx: Context
    ) -> tuple[str, dict[str, Any]]:
        """The episode's message and evidence, naming the design storm the trap met, if any.

        The storm in force when the episode first speaks after one was exceeded
        (until the next storm at that gauge) is named in that message and every
        later one of the episode.
        """
        note = self.design_said
        if note is None:
            note = self.design_said = self.design.current()
            if note is None:
                return message, evidence
        text = note.text(ctx.zone, "the trap")
        return f"{message} {text}", evidence | {"design_storm": note.evidence()}

    # --- texts ----------------------------------------------------------------------------

    def _label(self) -> str:
        where = f" at {self.site_name}" if self.site_name else ""
        return f"Sediment trap {self.trap_id}{where}"

    def _volume_text(self, m3: float) -> str:
        if self.unit in ("ft", "in"):
            return f"{m3 / 0.3048**3:,.0f} ft³"
        return f"{m3:,.1f} m³"

    def _forecast_text(self) -> str:
        fc = self.forecast()
        if fc is None:
            return "Not enough rain since the last cleanout to forecast the fill rate yet."
        return (
            f"At the current rate of {fc.per_inch * 100:.1f} % per inch, "
            f"{pct(self.cleanout_fraction)} after about {fc.inches_to_cleanout:.1f} more inches "
            "of rain."
        )

    def _message(self, severity: Severity, zone: tzinfo) -> str:
        env = self.envelope_fraction
        design = self.geometry.design_volume_m3
        since = local_time(self.envelope_at, zone) if self.envelope_at is not None else "?"
        lost = (
            f"{self._label()} has lost {pct(env)} of its design storage "
            f"({self._volume_text(env * design)} of {self._volume_text(design)}; sediment "
            f"{from_metres(self.envelope_depth_m, self.unit):.2f} {self.unit} deep, as of {since})"
        )
        if severity == Severity.CRITICAL:
            return (
                f"{lost}: at or past the {pct(self.cleanout_fraction)} at which {self.rule_says} "
                "removing the sediment. Clean the trap out now."
            )
        return (
            f"{lost}: past the {pct(self.warn_fraction)} warning ({self.warn_source}); "
            f"{self.rule_says} a cleanout at {pct(self.cleanout_fraction)}. "
            f"{self._forecast_text()} Schedule the cleanout."
        )

    def _evidence(self, t: int, cleanout: Cleanout | None = None) -> dict[str, Any]:
        fc = self.forecast()
        design = self.geometry.design_volume_m3
        return {
            "trap": self.trap_id,
            "sensor": self.depth_sensor,
            "unit": self.unit,
            "at": iso(t),
            "fraction_lost": round(self.envelope_fraction, 4),
            "sediment_depth_m": round(self.envelope_depth_m, 4),
            "sediment_volume_m3": round(self.envelope_fraction * design, 3),
            "design_volume_m3": round(design, 3),
            "warn_fraction": self.warn_fraction,
            "cleanout_fraction": self.cleanout_fraction,
            "rain_since_cleanout_in": round(self._fit.x_max - self._fit.x_min, 2)
            if self._fit.n
            else 0.0,
            "forecast": None
            if fc is None
            else {
                "model": "least squares of fraction lost vs cumulative rain since the last cleanout",
                "pct_per_inch": round(fc.per_inch * 100, 3),
                "pct_per_10mm": round(fc.per_inch * 100 * 10 / MM_PER_IN, 3),
                "inches_to_cleanout": round(fc.inches_to_cleanout, 2),
                "points": fc.points,
            },
            "cleanout": None if cleanout is None else cleanout.summary(),
            "cleanouts": [c.summary() for c in self._cleanouts[-5:]],
            "ignored_readings": self.ignored_readings,
        }


def rain_sensors(site: SiteConfig) -> dict[str, str]:
    """The site's rain gauges (sensor id -> unit); all rain sensors if no gauge is declared."""
    sensors = site.sensors()
    ids = [g.sensor for g in site.rain_gauges] or [
        s.id for s in sensors.values() if s.kind == "rain"
    ]
    return {sid: sensors[sid].unit for sid in dict.fromkeys(ids)}


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    """One detector per sediment trap."""
    sensors = site.sensors()
    warn = ctx.rules.require("sediment.warn_fraction")
    cleanout = ctx.rules.require("sediment.cleanout_fraction")
    rain = rain_sensors(site)
    return [
        SedimentCapacityDetector(
            trap=trap,
            geometry=TrapGeometry.of(site, trap),
            site_name=site.site.name,
            unit=sensors[trap.depth_sensor].unit,
            rain_sensors=rain,
            warn=warn,
            cleanout=cleanout,
        )
        for trap in site.sediment_traps
    ]
