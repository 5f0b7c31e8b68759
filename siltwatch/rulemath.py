"""The rule maths, once: what the detectors decide with and the dashboards draw.

Pure arithmetic — no I/O, no clock — in the one package both ``analytics/``
and ``dashboards/`` may import (README.md, "Folders"), so a reference line on
a dashboard is computed by the very function the detector uses:

* **turbidity limits** (:class:`LimitRule`, :func:`allowed_level`): the
  downstream level the law allows over a background, and :func:`choose_limit`,
  which limit table applies to a pair (its own ``limit``, else the rule packs'
  limit for the receiving water's class, else ``turbidity.limit.any``);
* **trap storage** (:class:`TrapGeometry`): volume below a sediment surface,
  the fraction of design capacity lost, and its inverse, the depth at which a
  fraction is lost; :func:`warn_fraction` picks the trap's warning level;
* **drained level** (:func:`drain_tolerance_m`, :func:`drained_level_m`): a
  practice is drained within its tolerance (at least 1 mm) of its baseline.

The detectors hold :class:`LimitRule` and :class:`TrapGeometry` in their state;
engine snapshots rebuild only analytics classes, so ``analytics.turbidity_limits``
and ``analytics.trap_geometry`` define same-named subclasses that add nothing.

Turbidity limits
----------------

All numbers are in the sensors' unit (NTU; FNU is treated as numerically equal).

| shape (keys of the table) | allowed downstream level | source |
|---|---|---|
| ``max_ntu = C`` | ``C`` | absolute cap |
| ``max_ntu = C, no_increase_over_background = true`` | ``C`` while background ≤ C; ``background + tol`` above it | 15A NCAC 02B .0211 (NC: 50 stream, 10 trout, 25 lake) |
| ``over_background_ntu = D`` | ``background + D`` | delta; the NY narrative proxy (Lake George §148-9 B) |
| ``over_background_pct = P`` | ``background + max(background, 0) × P / 100`` | percent (OR: 10 %) |
| ``over_background_ntu = D, over_background_pct = P, pct_above_background_ntu = B`` | ``background + D`` while background ≤ B; ``background × (1 + P/100)`` above | WAC 173-201A-200 (WA: 5 NTU / 10 % / 50 NTU) |
| several of the above without ``pct_above_background_ntu`` | the smallest of the terms: every criterion must hold | |

``tol`` is the *no-increase tolerance*: "no increase over background" cannot be
judged more finely than two field probes agree. Two optical probes, each
accurate to about ±2 % of reading or a few tenths of an NTU, and medians over
a window (which remove noise but not calibration bias) leave a systematic
difference of up to roughly 5 % between them; so "no increase" means the
downstream median exceeds the upstream median by no more than
``max(1 NTU, 5 % of background)``. Below that, an increase is not measurable.

The background is used as measured (a probe offset of -0.5 NTU shifts both
sides alike and cancels in a delta); only the percent allowance is floored at
zero, so a negative background never yields a negative allowance.

Trap storage
------------

The law counts *capacity* (Lake George §148-10 A, Big Flats 17.37.100 A: remove
sediment when design capacity is reduced by 50 %), and capacity is a volume.
A trap widens upward, so the bottom half of its depth holds far less than half
of its volume: the fraction lost must be computed by volume, never by depth.
Two ways to describe a trap, both in metres (the config converts):

* a trapezoidal basin with the same side slope ``z`` (horizontal : vertical)
  on all four sides. At height ``y`` above the bottom the plan is
  ``(L + 2zy) x (W + 2zy)``, so the volume below ``h`` is the integral

      V(h) = ∫0^h (L + 2zy)(W + 2zy) dy = L·W·h + z·h²·(L + W) + (4/3)·z²·h³

  (the prismoidal formula: it is exact for this shape, not an approximation);
* a stage-storage table ``[(depth, volume below it), ...]``, interpolated
  linearly between rows.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from siltwatch.rules import Rules, RuleValue
    from siltwatch.sitemodel import SedimentTrap, SiteConfig

# --- turbidity limits ---------------------------------------------------------------

NO_INCREASE_TOLERANCE_NTU = 1.0
NO_INCREASE_TOLERANCE_FRACTION = 0.05


def class_limit(rules: Rules, water_class: str) -> RuleValue | None:
    """The rule packs' limit for a receiving-water class, else their ``turbidity.limit.any``."""
    return rules.get(f"turbidity.limit.{water_class}") or rules.get("turbidity.limit.any")


def choose_limit(
    override: Mapping[str, float | bool] | None, water_class: str, rules: Rules, pair_id: str
) -> tuple[Mapping[str, float | bool] | None, str]:
    """A pair's limit table (its own ``limit`` wins over the packs') and the citation an alert shows."""
    by_class = class_limit(rules, water_class)
    standard = rules.get("turbidity.standard")
    if override is not None:
        if by_class is not None:
            cite = f"site override of {by_class.citation}"
        elif standard is not None:
            # Lake George §148-9 B is narrative ("substantial visible contrast"):
            # the pair's limit is the site's numeric proxy for it.
            cite = f"site proxy for {standard.cite()}"
        else:
            cite = f"site limit of turbidity pair {pair_id}"
        return override, cite
    if by_class is not None:
        table: Mapping[str, float | bool] = by_class.value
        return table, by_class.cite()
    return None, standard.cite() if standard is not None else "no turbidity rule"


@dataclass(frozen=True, slots=True)
class Limit:
    """The allowed downstream level and, in words, which branch of the rule set it."""

    value: float
    basis: str


def no_increase_tolerance(background: float) -> float:
    """How far downstream may sit above background and still count as "no increase"."""
    return max(NO_INCREASE_TOLERANCE_NTU, NO_INCREASE_TOLERANCE_FRACTION * background)


def _num(shape: Mapping[str, float | bool], key: str) -> float | None:
    value = shape.get(key)
    if value is None or isinstance(value, bool):
        return None
    return float(value)


def _fmt(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True, slots=True)
class LimitRule:
    """A limit table, parsed once: :meth:`allowed` runs for every downstream reading."""

    cap: float | None = None
    no_increase: bool = False
    delta: float | None = None
    pct: float | None = None
    knee: float | None = None

    @classmethod
    def from_shape(cls, shape: Mapping[str, float | bool]) -> Self:
        rule = cls(
            cap=_num(shape, "max_ntu"),
            no_increase=shape.get("no_increase_over_background") is True,
            delta=_num(shape, "over_background_ntu"),
            pct=_num(shape, "over_background_pct"),
            knee=_num(shape, "pct_above_background_ntu"),
        )
        if rule.cap is None and rule.delta is None and rule.pct is None:
            raise ValueError(f"turbidity limit {dict(shape)!r} has no numeric criterion")
        return rule

    def _terms(self, background: float) -> list[tuple[float, str]]:
        terms: list[tuple[float, str]] = []
        cap = self.cap
        if cap is not None:
            if self.no_increase and background > cap:
                # 15A NCAC 02B .0211: where natural background exceeds the standard,
                # no increase over background (judged within the probes' tolerance).
                tol = no_increase_tolerance(background)
                terms.append(
                    (
                        background + tol,
                        f"no increase over a background above {_fmt(cap)} NTU "
                        f"(tolerance {tol:.2g} NTU)",
                    )
                )
            else:
                terms.append((cap, f"{_fmt(cap)} NTU cap"))
        delta, pct, knee = self.delta, self.pct, self.knee
        if knee is not None and delta is not None and pct is not None:
            # WAC 173-201A-200: 5 NTU over a background <= 50 NTU, 10 % over one > 50 NTU.
            if background <= knee:
                terms.append(
                    (
                        background + delta,
                        f"{_fmt(delta)} NTU over a background of {_fmt(knee)} NTU or less",
                    )
                )
            else:
                terms.append(
                    (
                        background * (1.0 + pct / 100.0),
                        f"{_fmt(pct)} % over a background above {_fmt(knee)} NTU",
                    )
                )
        else:
            if delta is not None:
                terms.append((background + delta, f"{_fmt(delta)} NTU over background"))
            if pct is not None:
                terms.append(
                    (
                        background + max(background, 0.0) * pct / 100.0,
                        f"{_fmt(pct)} % over background",
                    )
                )
        return terms

    def allowed(self, background: float) -> float:
        """The allowed downstream level (the hot path: numbers only)."""
        cap = self.cap
        best = float("inf")
        if cap is not None:
            if self.no_increase and background > cap:
                best = background + no_increase_tolerance(background)
            else:
                best = cap
        delta, pct, knee = self.delta, self.pct, self.knee
        if knee is not None and delta is not None and pct is not None:
            term = background + delta if background <= knee else background * (1.0 + pct / 100.0)
            best = min(best, term)
        else:
            if delta is not None:
                best = min(best, background + delta)
            if pct is not None:
                best = min(best, background + max(background, 0.0) * pct / 100.0)
        return best

    def limit(self, background: float) -> Limit:
        """The allowed level with the branch that set it, in words (the smallest term)."""
        value, basis = min(self._terms(background), key=lambda term: term[0])
        return Limit(value, basis)

    def describe(self) -> str:
        """The limit table in words, for alert messages."""
        parts: list[str] = []
        if self.cap is not None:
            parts.append(f"at most {_fmt(self.cap)} NTU")
            if self.no_increase:
                parts.append("no increase where background exceeds it")
        delta, pct, knee = self.delta, self.pct, self.knee
        if knee is not None and delta is not None and pct is not None:
            parts.append(
                f"{_fmt(delta)} NTU over a background up to {_fmt(knee)} NTU, "
                f"{_fmt(pct)} % over a higher background"
            )
        else:
            if delta is not None:
                parts.append(f"{_fmt(delta)} NTU over background")
            if pct is not None:
                parts.append(f"{_fmt(pct)} % over background")
        return "; ".join(parts)


def allowed_level(shape: Mapping[str, float | bool], background: float) -> Limit:
    """The downstream level allowed over ``background`` by the limit table ``shape``.

    Raises ValueError for a table without any numeric criterion (the config
    model refuses those already; this guards direct callers).
    """
    return LimitRule.from_shape(shape).limit(background)


# --- trap storage -------------------------------------------------------------------


def trapezoid_volume(length: float, width: float, side_slope: float, h: float) -> float:
    """Volume below height ``h`` of a trapezoidal basin (any consistent length unit)."""
    if h <= 0.0:
        return 0.0
    z = side_slope
    return length * width * h + z * h * h * (length + width) + (4.0 / 3.0) * z * z * h**3


def interpolate_storage(table: list[tuple[float, float]], h: float) -> float:
    """Volume below ``h`` from a stage-storage table (linear between rows, clamped at the ends)."""
    if h <= table[0][0]:
        return table[0][1]
    if h >= table[-1][0]:
        return table[-1][1]
    i = bisect_right([d for d, _ in table], h)
    (d0, v0), (d1, v1) = table[i - 1], table[i]
    return v0 + (v1 - v0) * (h - d0) / (d1 - d0)


@dataclass(frozen=True)
class TrapGeometry:
    """One trap's storage curve in metres; picklable plain data.

    ``shape`` is (bottom length, bottom width, side slope, storage depth);
    ``table`` the stage-storage rows. Exactly one is set. The design volume is
    the volume at the storage depth (shape) or at the table's last row.
    """

    shape: tuple[float, float, float, float] | None = None
    table: tuple[tuple[float, float], ...] | None = None

    def __post_init__(self) -> None:
        if (self.shape is None) == (self.table is None):
            raise ValueError("a trap geometry needs exactly one of shape or table")

    @classmethod
    def of(cls, site: SiteConfig, trap: SedimentTrap) -> Self:
        """The geometry of a configured trap, converted to metres."""
        if trap.shape is not None:
            return cls(shape=trap.shape.metres())
        table = site.stage_storage_m(trap)
        assert table is not None
        return cls(table=tuple(table))

    @property
    def design_depth_m(self) -> float:
        if self.shape is not None:
            return self.shape[3]
        assert self.table is not None
        return self.table[-1][0]

    @property
    def design_volume_m3(self) -> float:
        return self.volume_m3(self.design_depth_m)

    def volume_m3(self, depth_m: float) -> float:
        """Storage volume below a sediment surface ``depth_m`` above the bottom (clamped to the design depth)."""
        h = min(max(depth_m, 0.0), self.design_depth_m)
        if self.shape is not None:
            length, width, z, _ = self.shape
            return trapezoid_volume(length, width, z, h)
        assert self.table is not None
        return interpolate_storage(list(self.table), h)

    def fraction_lost(self, depth_m: float) -> float:
        """Fraction of the design storage volume filled with sediment, 0..1."""
        return self.volume_m3(depth_m) / self.design_volume_m3

    def depth_at_fraction(self, fraction: float) -> float:
        """The sediment depth (m) at which ``fraction`` of the design storage is lost:
        the inverse of :meth:`fraction_lost` (the dashboards' trap lines)."""
        target = fraction * self.design_volume_m3
        if self.table is not None:
            table = self.table
            vols = [v for _, v in table]
            i = max(1, bisect_left(vols, target))
            (d0, v0), (d1, v1) = table[i - 1], table[i]
            return d1 if v1 == v0 else d0 + (d1 - d0) * (target - v0) / (v1 - v0)
        lo, hi = 0.0, self.design_depth_m
        for _ in range(60):  # bisection: the volume grows monotonically with depth
            mid = (lo + hi) / 2
            if self.volume_m3(mid) < target:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2


def warn_fraction(trap_warn: float | None, pack_warn: RuleValue) -> tuple[float, str]:
    """A trap's warning fraction and where it comes from: its own ``warn_fraction``, else the packs'."""
    if trap_warn:
        return float(trap_warn), "trap warn_fraction"
    return float(pack_warn.value), pack_warn.cite()


# --- drain-down ---------------------------------------------------------------------

MIN_TOLERANCE_M = 0.001  # a tolerance below 1 mm is read as 1 mm


def drain_tolerance_m(tolerance_m: float) -> float:
    """How close to its baseline a practice's level must fall to count as drained."""
    return max(tolerance_m, MIN_TOLERANCE_M)


def drained_level_m(design_level_m: float, tolerance_m: float) -> float:
    """The level (m) at or below which a practice measured against its design level is drained."""
    return design_level_m + drain_tolerance_m(tolerance_m)
