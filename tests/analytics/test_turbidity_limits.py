"""The limit arithmetic of every shape, checked against numbers worked out by hand."""

from __future__ import annotations

import itertools

import pytest

from analytics.turbidity_limits import LimitRule, allowed_level, no_increase_tolerance
from siltwatch.rulepacks import resolve_rules

NC_STREAM = {"max_ntu": 50.0, "no_increase_over_background": True}
NC_TROUT = {"max_ntu": 10.0, "no_increase_over_background": True}
NC_LAKE = {"max_ntu": 25.0, "no_increase_over_background": True}
WA = {"over_background_ntu": 5.0, "over_background_pct": 10.0, "pct_above_background_ntu": 50.0}
NY_PROXY = {"over_background_ntu": 25.0}


# 15A NCAC 02B .0211: a cap, and no increase over a background above the cap.
NC_CASES = [
    # Streams: 50 NTU while the background is at or below it.
    (NC_STREAM, 10.0, 50.0, "50 NTU cap"),
    (NC_STREAM, 50.0, 50.0, "50 NTU cap"),
    # Background 60 > 50: no increase, tolerance max(1, 0.05 * 60 = 3) -> 63.
    (NC_STREAM, 60.0, 63.0, "no increase"),
    # Trout waters 10 NTU; background 12: tolerance max(1, 0.6) = 1 -> 13.
    (NC_TROUT, 3.0, 10.0, "10 NTU cap"),
    (NC_TROUT, 12.0, 13.0, "no increase"),
    # Lakes 25 NTU; background 30: tolerance max(1, 1.5) = 1.5 -> 31.5.
    (NC_LAKE, 5.0, 25.0, "25 NTU cap"),
    (NC_LAKE, 30.0, 31.5, "no increase"),
]


@pytest.mark.parametrize(
    ("shape", "background", "expected", "basis_part"),
    [
        *NC_CASES,
        # WAC 173-201A-200: 5 NTU over a background <= 50 ...
        (WA, 20.0, 25.0, "5 NTU over a background of 50 NTU or less"),
        (WA, 50.0, 55.0, "5 NTU over"),
        # ... 10 % over a background > 50: 80 * 1.1 = 88; 120 * 1.1 = 132.
        (WA, 80.0, 88.0, "10 % over a background above 50 NTU"),
        (WA, 120.0, 132.0, "10 %"),
        # NY narrative proxy (Lake George §148-9 B): the site's 25 NTU over background.
        (NY_PROXY, 8.0, 33.0, "25 NTU over background"),
        # A probe offset below zero shifts the limit with it (delta shapes need no clamp).
        (NY_PROXY, -0.5, 24.5, "25 NTU over background"),
        # Percent only (Oregon-style): 100 * 1.1 = 110; a negative background gets no allowance.
        ({"over_background_pct": 10.0}, 100.0, 110.0, "10 % over background"),
        ({"over_background_pct": 10.0}, -0.5, -0.5, "10 % over background"),
        # A bare cap stays a cap even when the background is above it.
        ({"max_ntu": 50.0}, 60.0, 50.0, "50 NTU cap"),
        # Several criteria without the piecewise key: every one must hold -> the smallest.
        ({"max_ntu": 50.0, "over_background_ntu": 10.0}, 20.0, 30.0, "10 NTU over background"),
        ({"max_ntu": 50.0, "over_background_ntu": 10.0}, 45.0, 50.0, "50 NTU cap"),
    ],
)
def test_allowed_level_by_hand(
    shape: dict[str, float | bool], background: float, expected: float, basis_part: str
) -> None:
    limit = allowed_level(shape, background)
    assert limit.value == pytest.approx(expected, abs=1e-9)
    assert basis_part in limit.basis
    # The hot path gives the same number without building the text.
    assert LimitRule.from_shape(shape).allowed(background) == pytest.approx(expected, abs=1e-9)


def test_no_increase_tolerance_is_one_ntu_or_five_percent() -> None:
    assert no_increase_tolerance(10.0) == 1.0
    assert no_increase_tolerance(20.0) == 1.0
    assert no_increase_tolerance(100.0) == pytest.approx(5.0)


def test_nc_limit_never_drops_when_background_crosses_the_cap() -> None:
    """At the cap the limit switches from the cap to background + tolerance: no step down."""
    rule = LimitRule.from_shape(NC_STREAM)
    levels = [rule.allowed(b / 10.0) for b in range(0, 1000)]
    assert all(b >= a for a, b in itertools.pairwise(levels))
    assert rule.allowed(50.0) == 50.0
    # Just above the cap: 50.1 + max(1, 0.05 x 50.1 = 2.505) = 52.605.
    assert rule.allowed(50.1) == pytest.approx(52.605)


def test_shipped_packs_give_the_documented_limits() -> None:
    """The NC and WA packs hold exactly the shapes the hand cases above use."""
    nc = resolve_rules(["nc-ncg01"])
    assert nc.require("turbidity.limit.stream").value == NC_STREAM
    assert nc.require("turbidity.limit.trout_stream").value == NC_TROUT
    assert nc.require("turbidity.limit.lake").value == {
        "max_ntu": 25,
        "no_increase_over_background": True,
    }
    wa = resolve_rules(["wa-cswgp"])
    assert wa.require("turbidity.limit.any").value == WA


def test_a_table_without_a_number_is_refused() -> None:
    with pytest.raises(ValueError, match="no numeric criterion"):
        allowed_level({"no_increase_over_background": True}, 10.0)


def test_describe_reads_like_the_rule() -> None:
    assert LimitRule.from_shape(WA).describe() == (
        "5 NTU over a background up to 50 NTU, 10 % over a higher background"
    )
    assert LimitRule.from_shape(NC_LAKE).describe() == (
        "at most 25 NTU; no increase where background exceeds it"
    )
