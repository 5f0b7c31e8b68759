"""Timer tags are typed values (analytics/timers.py) that order as their texts always did.

Timers of one detector due at the same instant fire in the order of their
tags, and that order reaches the outputs; the example replays hold the whole
of it byte for byte (tests/foundation). These tests hold the pieces: a typed
tag orders exactly as the text siltwatch used to write for it, against typed
tags and plain-string tags alike, and a snapshot brings typed tags back as
the same values (statecodec writes them as objects with named fields).
"""

from __future__ import annotations

import heapq
import json
import zlib
from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from analytics import statecodec
from analytics.drain import DrainDeadline
from analytics.inspection_timers import QuarterTimer, SecondTimer, WeekTimer
from analytics.post_construction import Reason, ReminderOpens
from analytics.revegetation import CheckDue, SurvivalDue, SurvivalOpens
from analytics.stabilization import AreaIdle
from analytics.timers import DutyDue, Tag, order_text
from analytics.violations import ViolationWeek

ids = st.text(alphabet="abcdefghij-0123456789|:", min_size=1, max_size=8)
times = st.integers(min_value=0, max_value=2**41)
days = st.dates(min_value=date(2020, 1, 1), max_value=date(2040, 12, 31))

tags: st.SearchStrategy[Tag] = st.one_of(
    ids,
    ids.map(DutyDue),
    ids.map(AreaIdle),
    times.map(DrainDeadline),
    st.builds(ViolationWeek, ids, times),
    st.builds(ReminderOpens, st.sampled_from(list(Reason)), st.integers(1, 30), times),
    ids.map(CheckDue),
    ids.map(SurvivalDue),
    st.builds(SurvivalOpens, ids, times, times),
    days.map(WeekTimer),
    st.builds(SecondTimer, days, days),
    days.map(QuarterTimer),
)


def test_each_tag_says_the_text_siltwatch_always_wrote() -> None:
    assert order_text(DutyDue("d1")) == "due|d1"
    assert order_text(ViolationWeek("v1", 123)) == "week|v1|123"
    assert order_text(ReminderOpens(Reason.ANNUAL_REPORT, 2, 99)) == (
        f"open|{Reason.ANNUAL_REPORT.value}|2|99"
    )
    assert order_text(SurvivalOpens("north", 5, 7)) == "open|north|5|7"
    assert order_text(AreaIdle("pad-b")) == "idle:pad-b"
    assert order_text(DrainDeadline(42)) == "deadline:42"
    assert order_text(SecondTimer(date(2026, 5, 4), date(2026, 5, 5))) == (
        "tw-second|2026-05-04,2026-05-05"
    )
    assert order_text("turb-up") == "turb-up"


@given(st.lists(st.tuples(st.integers(0, 3), tags), max_size=30))
def test_timers_pop_in_the_order_of_their_texts(timers: list[tuple[int, Tag]]) -> None:
    heap: list[tuple[int, str, Tag]] = []
    for at, tag in timers:
        heapq.heappush(heap, (at, "det", tag))
    popped = [heapq.heappop(heap) for _ in range(len(heap))]
    keys = [(at, order_text(tag)) for at, _name, tag in popped]
    assert keys == sorted(keys)


@given(tags, tags)
def test_two_tags_compare_as_their_texts(a: Tag, b: Tag) -> None:
    assert ((a, 0) < (b, 0)) == ((order_text(a), 0) < (order_text(b), 0))


@given(st.lists(tags, max_size=12))
def test_a_snapshot_gives_the_tags_back_as_values(values: list[Tag]) -> None:
    blob = statecodec.encode_state({"tags": values}, header={"version": 0}, skip=frozenset())
    _header, encoded = statecodec.read_header(blob)
    back = statecodec.decode_state(json.loads(json.dumps(encoded)))["tags"]
    assert [order_text(t) for t in back] == [order_text(t) for t in values]
    assert [type(t) for t in back] == [type(t) for t in values]
    text = zlib.decompress(blob).decode()
    for tag in values:
        if not isinstance(tag, str):  # readable: the class and its named fields
            assert f"{type(tag).__module__}:{type(tag).__qualname__}" in text
