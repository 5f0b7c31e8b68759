"""Turbidity contrast: is the site's discharge clouding the receiving water?

For each configured pair of probes (upstream = background, "natural
conditions"; downstream = below the outfall) the detector compares robust
levels: the median of each probe over a window (``turbidity.window_s`` or the
pair's ``window_s``), the upstream one taken ``travel_time_s`` earlier so both
medians describe the same slug of water. The limit the downstream level must
respect is a function of that background and of the receiving water's class
(analytics/turbidity_limits.py), from the rule pack or the pair's own
``limit``.

Decisions, in the order a downstream reading meets them:

* **Usable data.** A side needs at least half a window of usable readings
  (the shared policy, analytics/quality.py: readings with a hard flag are
  never used; ``spike``-flagged ones are, because the median is what discards
  an isolated outlier, and they are counted in the evidence). Without them the
  contrast *cannot be judged*: after that has lasted ``max(sustain, window +
  travel time)`` a ``data_quality`` alert on the pair says so — never a silent
  pass, never a violation guessed from one probe. The delay is the sustain
  period because no violation could have been sustained inside a shorter blind
  spell, and at least a window so that the start of a recording never alerts.
* **Sustain.** The downstream median must stay above the limit for
  ``turbidity.sustain_s`` (or the pair's ``sustain_s``) without a break before
  an episode opens: a debris spike of a few minutes cannot hold a 15-minute
  median up; a 60-minute plume does. A spell where the contrast could not be
  judged breaks the run.
* **Severity** (siltwatch policy, documented here): ``warning`` on opening;
  ``critical`` — an escalation inside the same episode, never a new alert —
  once the contrast (``downstream - background``) reaches twice the allowed
  contrast, or the downstream median reaches the pack's
  ``turbidity.notify_ntu`` (WA CSWGP S5.A: 250 NTU, notify Ecology within
  24 h; 250 NTU is the yardstick where no pack sets one). The allowed contrast
  is the larger of ``limit - background`` and the limit over a clean (zero)
  background: above NC's cap the "no increase" allowance is only the probes'
  tolerance, and twice a measurement tolerance is not a large violation.
* **Clearing with hysteresis** (``turbidity.clear_fraction``, 0.9): the episode
  clears once the contrast has stayed at or below that fraction of the allowed
  contrast (``downstream <= background + 0.9 × (limit - background)``; the limit
  itself when it lies below background) for one window; it resolves at the
  start of that calm spell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

from analytics.detector import Context, Detector, QuietReading
from analytics.events import SensorReading
from analytics.quality import UNUSABLE, USABLE, grade, unusable_reasons
from analytics.robust import TimeWindow, median_of_sorted
from analytics.timeutil import MS_PER_H, MS_PER_S, iso
from analytics.turbidity_limits import LimitRule
from siltwatch.config import SiteConfig, TurbidityPair
from siltwatch.detections import sensor_health
from siltwatch.detections.turbidity import TURBIDITY_CONTRAST
from siltwatch.rulemath import choose_limit
from siltwatch.rulepacks import Rules
from siltwatch.timefmt import duration, local_time
from siltwatch.vocabulary import Severity

KIND = TURBIDITY_CONTRAST.kind
DATA_QUALITY = sensor_health.DATA_QUALITY.kind

# Where no pack sets a notify level: siltwatch's yardstick (the level Washington's CSWGP
# S5.A makes a notice), named in alerts as siltwatch's policy, never as another state's law.
DEFAULT_CRITICAL_NTU = 250.0
CRITICAL_CONTRAST_MULTIPLE = 2.0
# Upstream readings are kept this long beyond what the aligned window needs, so
# a downstream probe that backfills after an outage still finds its background.
UPSTREAM_HORIZON_MS = 24 * MS_PER_H


class Episode(Enum):
    """Where a pair stands in a contrast episode (the judging side; blindness is apart)."""

    IDLE = "idle"  # under the limit, nothing in progress
    EXCEEDING = "exceeding"  # over the limit, not yet for the sustain period
    OPEN = "open"  # an episode is open (alert raised)
    CLEARING = "clearing"  # open, and calm (at or below the clear level) since ``clear_since``


class Signal(Enum):
    """What one judged downstream reading (or a spell without judgement) says."""

    OVER = "over"  # not open: the downstream median is over the limit
    SUSTAINED = "sustained"  # ... and has been for the sustain period
    WITHIN = "within"  # not open: at or under the limit
    STIRRED = "stirred"  # open: above the clear level
    CALM = "calm"  # open: at or below the clear level
    CALM_HELD = "calm_held"  # ... for one window: the episode resolves
    BLIND = "blind"  # the contrast cannot be judged


# The whole episode machine in one table (h11's _state.py is the model): (state, signal) ->
# the next state. A pair absent here is a bug, never data (``TurbidityContrast._step``).
TRANSITIONS: dict[tuple[Episode, Signal], Episode] = {
    (Episode.IDLE, Signal.OVER): Episode.EXCEEDING,
    (Episode.IDLE, Signal.WITHIN): Episode.IDLE,
    (Episode.IDLE, Signal.BLIND): Episode.IDLE,
    (Episode.EXCEEDING, Signal.OVER): Episode.EXCEEDING,
    # Sustain: over the limit for turbidity.sustain_s without a break opens the episode.
    (Episode.EXCEEDING, Signal.SUSTAINED): Episode.OPEN,
    (Episode.EXCEEDING, Signal.WITHIN): Episode.IDLE,
    # A spell without judgement breaks a sustained run ...
    (Episode.EXCEEDING, Signal.BLIND): Episode.IDLE,
    (Episode.OPEN, Signal.STIRRED): Episode.OPEN,
    (Episode.OPEN, Signal.CALM): Episode.CLEARING,
    (Episode.OPEN, Signal.BLIND): Episode.OPEN,
    (Episode.CLEARING, Signal.CALM): Episode.CLEARING,
    # Clearing with hysteresis: calm (turbidity.clear_fraction) for one window resolves it.
    (Episode.CLEARING, Signal.CALM_HELD): Episode.IDLE,
    (Episode.CLEARING, Signal.STIRRED): Episode.OPEN,
    # ... and a calm spell alike.
    (Episode.CLEARING, Signal.BLIND): Episode.OPEN,
}


@dataclass(frozen=True, slots=True)
class Peak:
    """The worst downstream reading of an episode: the largest excess over the limit."""

    t: int
    downstream: float
    background: float
    limit: float

    @property
    def excess(self) -> float:
        return self.downstream - self.limit


def _r(x: float) -> float:
    return round(x, 2)


def min_usable(window_s: float, interval_s: float) -> int:
    """Readings a window needs before its median is a level: half of those expected."""
    expected = max(1.0, window_s / interval_s)
    return max(1, math.ceil(expected / 2.0 - 1e-9))


def resolve_limit(
    pair: TurbidityPair, water_class: str, rules: Rules
) -> tuple[LimitRule | None, str]:
    """The pair's limit (siltwatch.rulemath.choose_limit) and the citation an alert shows for it."""
    table, cite = choose_limit(pair.limit, water_class, rules, pair.id)
    return (None if table is None else LimitRule.from_shape(table)), cite


class TurbidityContrast(Detector):
    """One upstream/downstream pair: alerts on a sustained contrast over the limit."""

    def __init__(self, site: SiteConfig, pair: TurbidityPair, ctx: Context) -> None:
        rules = ctx.rules
        self.name = f"turbidity.{pair.id}"
        self.pair = pair.id
        self.up = pair.upstream
        self.down = pair.downstream
        water = site.water(pair.receiving_water)
        self.water = water.name or water.id
        self.water_class = water.water_class
        self.site_name = site.site.name or site.site.id
        sensors = site.sensors()
        self.unit = sensors[self.down].unit
        window_s = (
            pair.window_s if pair.window_s is not None else rules.number("turbidity.window_s")
        )
        sustain_s = (
            pair.sustain_s if pair.sustain_s is not None else rules.number("turbidity.sustain_s")
        )
        self.window_s = window_s
        self.sustain_s = sustain_s
        self.travel_s = pair.travel_time_s
        self.window_ms = round(window_s * MS_PER_S)
        self.sustain_ms = round(sustain_s * MS_PER_S)
        self.travel_ms = round(pair.travel_time_s * MS_PER_S)
        self.clear_fraction = rules.number("turbidity.clear_fraction")
        self.blind_ms = max(self.sustain_ms, self.window_ms + self.travel_ms)
        self.limit, self.rule = resolve_limit(pair, water.water_class, rules)
        self.limit_text = "" if self.limit is None else self.limit.describe()
        self.clean_allowance = 0.0 if self.limit is None else self.limit.allowed(0.0)
        notify = rules.get("turbidity.notify_ntu")
        self.critical_ntu = DEFAULT_CRITICAL_NTU if notify is None else float(notify.value)
        self.critical_rule = (
            f"siltwatch severity policy: {DEFAULT_CRITICAL_NTU:g} NTU, no rule pack of this "
            "site sets a notify level"
            if notify is None
            else notify.cite()
        )
        self.up_need = min_usable(window_s, sensors[self.up].interval_s)
        self.down_need = min_usable(window_s, sensors[self.down].interval_s)
        self.up_win = TimeWindow(self.window_ms)
        self.down_win = TimeWindow(self.window_ms)
        self.up_bad: tuple[str, ...] = ()
        self.down_bad: tuple[str, ...] = ()
        # Episode state (plain data: part of the engine snapshot). ``exceed_since``: the
        # start of the run over the limit (EXCEEDING and while open); ``clear_since``: the
        # start of the calm spell (CLEARING).
        self.episode = Episode.IDLE
        self.exceed_since: int | None = None
        self.severity: Severity = Severity.WARNING
        self.clear_since: int | None = None
        self.peak: Peak | None = None
        self.blind_since: int | None = None
        self.blind_open = False
        self.blind_reason = ""

    def sensors(self) -> tuple[str, str]:
        return (self.up, self.down)

    def quiet_reading(self) -> QuietReading:
        # analytics/batch.py plans the pair's windows from arrays (its _PairPlan).
        return QuietReading.MOVES_WINDOWS

    def idle(self) -> bool:
        """Nothing in progress: a judgeable reading under the limit changes nothing but the
        windows (the batch path moves them itself while the pair is idle)."""
        return self.episode is Episode.IDLE and self.blind_since is None and not self.blind_open

    @property
    def open(self) -> bool:
        """An episode is open (an alert raised, clearing or not)."""
        return self.episode is Episode.OPEN or self.episode is Episode.CLEARING

    def _step(self, signal: Signal) -> Episode:
        """The one transition: the episode's next state from the table."""
        self.episode = TRANSITIONS[self.episode, signal]
        return self.episode

    # --- input ----------------------------------------------------------------------

    def on_reading(self, reading: SensorReading, ctx: Context) -> None:
        flags = reading.flags
        # analytics/quality.py: usable, soft (kept and counted) or unusable
        g = grade(flags) if flags else USABLE
        t = reading.t
        if reading.sensor == self.up:
            win = self.up_win
            win.push(t, reading.value, g)
            if g == UNUSABLE:
                self.up_bad = unusable_reasons(flags)
            pending = win.pending
            cutoff = t - self.travel_ms - self.window_ms - UPSTREAM_HORIZON_MS
            if pending[0][0] < cutoff:
                win.drop_pending_before(cutoff)
            return
        self.down_win.add_latest(t, reading.value, g)
        if g == UNUSABLE:
            self.down_bad = unusable_reasons(flags)
        self._evaluate(t, ctx)

    # --- the decision -----------------------------------------------------------------

    def _evaluate(self, t: int, ctx: Context) -> None:
        up = self.up_win
        up.advance(t - self.travel_ms)
        up_values, down_values = up.sorted, self.down_win.sorted
        limit_rule = self.limit
        if limit_rule is None or len(up_values) < self.up_need or len(down_values) < self.down_need:
            self._blind(t, ctx)
            return
        if self.blind_since is not None:
            self._seeing(t, ctx)
        bg = median_of_sorted(up_values)
        dn = median_of_sorted(down_values)
        limit = limit_rule.allowed(bg)
        if self.open:
            self._while_open(t, bg, dn, limit, ctx)
        elif dn > limit:
            if self.episode is Episode.IDLE:
                self.exceed_since = t
                self.peak = Peak(t, dn, bg, limit)
            elif self.peak is not None and dn - limit > self.peak.excess:
                self.peak = Peak(t, dn, bg, limit)
            self._step(Signal.OVER)
            since = t if self.exceed_since is None else self.exceed_since
            if t - since >= self.sustain_ms:
                self._step(Signal.SUSTAINED)
                self._open(t, bg, dn, limit, ctx)
        elif self._step(Signal.WITHIN) is Episode.IDLE:
            self.exceed_since = None
            self.peak = None

    def _is_critical(self, bg: float, dn: float, limit: float) -> bool:
        scale = max(limit - bg, self.clean_allowance)
        return dn >= self.critical_ntu or (
            scale > 0 and dn - bg >= CRITICAL_CONTRAST_MULTIPLE * scale
        )

    def _clear_level(self, bg: float, limit: float) -> float:
        allowance = limit - bg
        if allowance <= 0:
            return limit
        return bg + self.clear_fraction * allowance

    def _open(self, t: int, bg: float, dn: float, limit: float, ctx: Context) -> None:
        self.clear_since = None
        severity = Severity.CRITICAL if self._is_critical(bg, dn, limit) else Severity.WARNING
        self.severity = severity
        ctx.alerts.open(
            KIND,
            self.pair,
            t,
            severity,
            rule=self.rule,
            message=self._message(t, bg, dn, limit, ctx),
            evidence=self._evidence(t, bg, dn, limit),
        )

    def _while_open(self, t: int, bg: float, dn: float, limit: float, ctx: Context) -> None:
        peak = self.peak
        new_peak = peak is None or dn - limit > peak.excess
        if new_peak:
            self.peak = Peak(t, dn, bg, limit)
        escalate = self.severity != Severity.CRITICAL and self._is_critical(bg, dn, limit)
        if escalate:
            self.severity = Severity.CRITICAL
        if escalate or new_peak:
            ctx.alerts.update(
                KIND,
                self.pair,
                t,
                severity=self.severity,
                message=self._message(t, bg, dn, limit, ctx),
                evidence=self._evidence(t, bg, dn, limit),
            )
        if dn <= self._clear_level(bg, limit):
            if self.episode is Episode.OPEN:
                self.clear_since = t
                self._step(Signal.CALM)
            elif self.clear_since is not None and t - self.clear_since >= self.window_ms:
                self._step(Signal.CALM_HELD)
                self._resolve(t, bg, dn, limit, ctx)
            else:
                self._step(Signal.CALM)
        else:
            self._step(Signal.STIRRED)
            self.clear_since = None

    def _resolve(self, t: int, bg: float, dn: float, limit: float, ctx: Context) -> None:
        cleared = self.clear_since if self.clear_since is not None else t
        since = self.exceed_since if self.exceed_since is not None else cleared
        evidence = self._evidence(cleared, bg, dn, limit)
        evidence["cleared_at"] = iso(cleared)
        evidence["duration_s"] = round((cleared - since) / MS_PER_S, 3)
        peak = self.peak
        peak_text = (
            ""
            if peak is None
            else f"; peak {peak.downstream:.1f} {self.unit} against a limit of "
            f"{peak.limit:.1f} at {local_time(peak.t, ctx.zone)}"
        )
        severity_text = (
            f" It reached critical (twice the allowed contrast or {self.critical_ntu:g} "
            f"{self.unit}, {self.critical_rule})."
            if self.severity == Severity.CRITICAL
            else ""
        )
        ctx.alerts.resolve(
            KIND,
            self.pair,
            cleared,
            message=(
                f"Turbidity contrast at {self.pair} ({self.water}, {self.site_name}) cleared at "
                f"{local_time(cleared, ctx.zone)}: downstream {dn:.1f} {self.unit} against an "
                f"upstream background of {bg:.1f} (limit {limit:.1f}). It exceeded the limit "
                f"from {local_time(since, ctx.zone)} for {duration((cleared - since) / MS_PER_S)}"
                f"{peak_text} ({self.rule}).{severity_text} Record the corrective action in the "
                "site log."
            ),
            evidence=evidence,
        )
        self.exceed_since = None
        self.clear_since = None
        self.peak = None
        self.severity = Severity.WARNING

    # --- cannot judge -----------------------------------------------------------------

    def _blind_reasons(self) -> str:
        reasons: list[str] = []
        if self.limit is None:
            reasons.append(
                f"no numeric limit: {self.rule} is narrative, set turbidity_pairs.{self.pair}.limit"
            )
        for side, sensor, win, need, bad in (
            ("upstream", self.up, self.up_win, self.up_need, self.up_bad),
            ("downstream", self.down, self.down_win, self.down_need, self.down_bad),
        ):
            if win.usable >= need:
                continue
            if win.n_hard:
                reasons.append(
                    f"the {side} probe {sensor} sends flagged readings ({', '.join(bad)})"
                )
            elif not win.entries:
                reasons.append(f"no {side} readings from {sensor}")
            else:
                reasons.append(f"only {win.usable} of {need} {side} readings needed from {sensor}")
        return "; ".join(reasons)

    def _blind(self, t: int, ctx: Context) -> None:
        # A spell without judgement breaks a sustained run and a calm spell alike.
        if self._step(Signal.BLIND) is Episode.IDLE:
            self.exceed_since = None
            self.peak = None
        self.clear_since = None
        if self.blind_since is None:
            self.blind_since = t
        if t - self.blind_since < self.blind_ms:
            return
        reason = self._blind_reasons()
        if self.blind_open and reason == self.blind_reason:
            return
        self.blind_reason = reason
        message = (
            f"Turbidity contrast at {self.pair} ({self.water}, {self.site_name}) cannot be "
            f"judged since {local_time(self.blind_since, ctx.zone)}: {reason}. A plume would go "
            f"unseen until both probes report usable data ({self.rule}). Check the probes "
            f"({self.up} upstream, {self.down} downstream): clean, recalibrate or replace."
        )
        evidence = {
            "pair": self.pair,
            "upstream": self.up,
            "downstream": self.down,
            "since": iso(self.blind_since),
            "reason": reason,
            "upstream_usable": self.up_win.usable,
            "downstream_usable": self.down_win.usable,
            "needed": [self.up_need, self.down_need],
            "window_s": self.window_s,
        }
        if self.blind_open:
            ctx.alerts.update(
                DATA_QUALITY, self.pair, t, message=message, evidence=evidence, rule=self.rule
            )
            return
        self.blind_open = True
        ctx.alerts.open(
            DATA_QUALITY,
            self.pair,
            t,
            Severity.WARNING,
            rule=self.rule,
            message=message,
            evidence=evidence,
        )

    def _seeing(self, t: int, ctx: Context) -> None:
        since = self.blind_since
        self.blind_since = None
        if not self.blind_open or since is None:
            return
        self.blind_open = False
        self.blind_reason = ""
        ep = ctx.alerts.get_open(DATA_QUALITY, self.pair)
        evidence = dict(ep.evidence) if ep is not None else {}
        evidence["judged_again_at"] = iso(t)
        ctx.alerts.resolve(
            DATA_QUALITY,
            self.pair,
            t,
            message=(
                f"Turbidity contrast at {self.pair} ({self.water}, {self.site_name}) can be judged "
                f"again from {local_time(t, ctx.zone)}, after {duration((t - since) / MS_PER_S)} without "
                f"usable data ({self.rule})."
            ),
            evidence=evidence,
        )

    # --- texts ------------------------------------------------------------------------

    def _message(self, t: int, bg: float, dn: float, limit: float, ctx: Context) -> str:
        since = self.exceed_since if self.exceed_since is not None else t
        u = self.unit
        text = (
            f"Turbidity contrast at {self.pair} ({self.water}, {self.site_name}): downstream "
            f"{dn:.1f} {u} against an upstream background of {bg:.1f} {u} exceeds the allowed "
            f"{limit:.1f} {u} by {dn - limit:.1f} {u}, sustained since "
            f"{local_time(since, ctx.zone)} ({duration((t - since) / MS_PER_S)}); limit: "
            f"{self.limit_text} ({self.rule})."
        )
        if self.severity == Severity.CRITICAL:
            text += (
                f" Critical: the contrast is at least twice what is allowed, or the downstream "
                f"level reached {self.critical_ntu:g} {u} ({self.critical_rule})."
            )
        text += (
            " Find and stop the discharge: inspect the outfall, silt fences and basin outlet, "
            "and record the corrective action."
        )
        return text

    def _evidence(self, t: int, bg: float, dn: float, limit: float) -> dict[str, Any]:
        since = self.exceed_since if self.exceed_since is not None else t
        ev: dict[str, Any] = {
            "pair": self.pair,
            "upstream": self.up,
            "downstream": self.down,
            "receiving_water": self.water,
            "water_class": self.water_class,
            "unit": self.unit,
            "upstream_level": _r(bg),
            "downstream_level": _r(dn),
            "limit": _r(limit),
            "limit_rule": self.limit_text,
            "limit_basis": "" if self.limit is None else self.limit.limit(bg).basis,
            "excess": _r(dn - limit),
            "exceeding_since": iso(since),
            "duration_s": round((t - since) / MS_PER_S, 3),
            "spike_flagged_in_window": self.up_win.n_soft + self.down_win.n_soft,
            "window_s": self.window_s,
            "sustain_s": self.sustain_s,
            "travel_time_s": self.travel_s,
        }
        peak = self.peak
        if peak is not None:
            ev["peak_at"] = iso(peak.t)
            ev["peak_downstream_level"] = _r(peak.downstream)
            ev["peak_upstream_level"] = _r(peak.background)
            ev["peak_limit"] = _r(peak.limit)
            ev["peak_excess"] = _r(peak.excess)
        return ev


def build(site: SiteConfig, ctx: Context) -> list[Detector]:
    return [TurbidityContrast(site, pair, ctx) for pair in site.turbidity_pairs]
