"""The rolling medians against brute force: the hot-path bookkeeping must not drift."""

from __future__ import annotations

import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from analytics.robust import CountWindow, TimeWindow, mad_of_sorted, median_of_sorted

values = st.floats(min_value=-10.0, max_value=1000.0, allow_nan=False)


def test_median_and_mad_by_hand() -> None:
    assert median_of_sorted([1.0, 2.0, 10.0]) == 2.0
    assert median_of_sorted([1.0, 2.0, 4.0, 10.0]) == 3.0
    # |x - 2| = 1, 0, 8 -> median 1
    assert mad_of_sorted([1.0, 2.0, 10.0], 2.0) == 1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(values, min_size=1, max_size=80), st.integers(min_value=1, max_value=20))
def test_count_window_is_the_median_of_the_last_n(xs: list[float], size: int) -> None:
    window = CountWindow(size)
    for i, x in enumerate(xs):
        window.add(x)
        assert window.median() == statistics.median(xs[max(0, i + 1 - size) : i + 1])


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=1, max_value=300), values, st.sampled_from([0, 1, 2])),
        min_size=1,
        max_size=80,
    ),
    st.integers(min_value=1, max_value=900),
    st.integers(min_value=0, max_value=600),
)
def test_time_windows_hold_exactly_the_readings_in_their_span(
    steps: list[tuple[int, float, int]], span_s: int, lag_s: int
) -> None:
    """A trailing window (push/advance, lagging by ``lag``) and a leading one (add_latest)."""
    span, lag = span_s * 1000, lag_s * 1000
    trailing, leading = TimeWindow(span), TimeWindow(span)
    seen: list[tuple[int, float, int]] = []
    t = 0
    for gap_s, value, grade in steps:
        t += gap_s * 1000
        seen.append((t, value, grade))
        trailing.push(t, value, grade)
        trailing.advance(t - lag)
        leading.add_latest(t, value, grade)
        for window, end in ((trailing, t - lag), (leading, t)):
            inside = [(v, g) for (u, v, g) in seen if end - span < u <= end]
            usable = sorted(v for v, g in inside if g != 2)
            assert window.sorted == usable
            assert window.n_soft == sum(1 for _, g in inside if g == 1)
            assert window.n_hard == sum(1 for _, g in inside if g == 2)
