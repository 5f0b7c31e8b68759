"""Turbidity limits: the downstream level the law allows, given the upstream background.

Pure arithmetic on one limit table (a rule-pack value or a pair's ``limit``,
docs/replay-contract.md) and one background level, so every shape can be
checked by hand. All numbers are in the sensors' unit (NTU; FNU is treated as
numerically equal).

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

NO_INCREASE_TOLERANCE_NTU = 1.0
NO_INCREASE_TOLERANCE_FRACTION = 0.05


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
    def from_shape(cls, shape: Mapping[str, float | bool]) -> LimitRule:
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
