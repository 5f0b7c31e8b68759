"""The gap tracker (ingest/gaps.py): holes in a sensor's seqs are asked for, with
backoff, filled by what arrives, and recorded as lost when the station no longer holds
them or never answers. Pure: every time is given."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.gaps import GapPolicy, GapTracker
from siltwatch.schema import HeldReadings

S = 1_000  # ms
POLICY = GapPolicy(first_request_s=5, retry_base_s=10, retry_cap_s=40, deadline_s=300)


def feed(tracker: GapTracker, seqs: list[int], now: int = 0, sensor: str = "turb") -> None:
    for seq in seqs:
        tracker.reading("up-1", sensor, seq, 1_000_000 + seq * 60 * S, now)


def held(oldest: int, next_seq: int, sensor: str = "turb") -> list[HeldReadings]:
    return [HeldReadings(sensor=sensor, oldest_seq=oldest, next_seq=next_seq)]


def test_a_hole_is_asked_for_after_a_pause_then_with_growing_waits_never_more() -> None:
    tracker = GapTracker(POLICY)
    feed(tracker, [0, 1, 2, 7, 8])
    assert [(g.lo, g.hi) for g in tracker.open_gaps()] == [(3, 6)]
    assert tracker.requests(4 * S) == []  # may still fill by itself
    [first] = tracker.requests(5 * S)
    assert (first.station, first.sensor, first.seq_from, first.seq_to) == ("up-1", "turb", 3, 6)
    sent_at = [5 * S]
    for now in range(5 * S + 100, 200 * S, 100):  # polled ten times a second
        sent_at += [now for _ in tracker.requests(now)]
    waits = [b - a for a, b in itertools.pairwise(sent_at)]
    assert waits[:3] == [10 * S, 20 * S, 40 * S] and set(waits[3:]) == {40 * S}
    assert tracker.completeness() == {("up-1", "turb"): (5, 9)}


def test_readings_that_arrive_fill_the_hole_in_any_order() -> None:
    tracker = GapTracker(POLICY)
    feed(tracker, [0, 10])
    feed(tracker, [5, 1, 9, 2, 3])
    assert [(g.lo, g.hi) for g in tracker.open_gaps()] == [(4, 4), (6, 8)]
    feed(tracker, [4, 6, 7, 8, 8, 3])  # duplicates change nothing
    assert tracker.open_gaps() == []
    assert tracker.completeness() == {("up-1", "turb"): (11, 11)}


def test_what_the_station_no_longer_holds_is_lost_the_rest_is_still_asked() -> None:
    tracker = GapTracker(POLICY)
    feed(tracker, [0, 1, 20])
    lost = tracker.status("up-1", held(10, 21), backlog=0, now=3 * S)
    assert [(g.seq_from, g.seq_to, g.time_from) for g in lost] == [(2, 9, 1_000_000 + 60 * S)]
    assert "evicted" in lost[0].reason and "seq 10" in lost[0].reason
    assert [(g.lo, g.hi) for g in tracker.open_gaps()] == [(10, 19)]
    assert [(q.seq_from, q.seq_to) for q in tracker.requests(10 * S)] == [(10, 19)]


def test_a_status_says_readings_never_arrived_only_when_nothing_waits_to_be_sent() -> None:
    tracker = GapTracker(POLICY)
    feed(tracker, [0, 1, 2])
    assert tracker.status("up-1", held(0, 6), backlog=3, now=0) == []
    assert tracker.open_gaps() == []  # the station is still sending them
    tracker.status("up-1", held(0, 6), backlog=0, now=0)
    assert [(g.lo, g.hi) for g in tracker.open_gaps()] == [(3, 5)]


def test_an_unanswered_hole_is_lost_at_the_deadline() -> None:
    tracker = GapTracker(POLICY)
    feed(tracker, [0, 5])
    assert tracker.expired(299 * S) == []
    [lost] = tracker.expired(300 * S)
    assert (lost.seq_from, lost.seq_to, lost.readings) == (1, 4, 4)
    assert "no answer" in lost.reason and tracker.open_gaps() == []


def test_requests_are_bounded_per_tick_and_in_size() -> None:
    policy = GapPolicy(first_request_s=0, max_per_tick=3, max_range=100)
    tracker = GapTracker(policy)
    for n in range(10):
        feed(tracker, [0, 1_000], sensor=f"s{n}")
    first = tracker.requests(0)
    assert len(first) == 3 and all(q.seq_to - q.seq_from + 1 == 100 for q in first)
    assert len(tracker.requests(0)) == 3  # the next three, not the same again


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**31))
def test_arrival_order_does_not_change_what_is_missing(n: int, seed: int) -> None:
    rng = random.Random(seed)
    kept = sorted(rng.sample(range(n + 1), k=rng.randint(1, n + 1)))
    shuffled = kept[:]
    rng.shuffle(shuffled)
    in_order, any_order = GapTracker(POLICY), GapTracker(POLICY)
    feed(in_order, kept)
    feed(any_order, [kept[0], kept[-1], *shuffled])  # first and last seen first
    missing = set(range(kept[0], kept[-1] + 1)) - set(kept)
    for tracker in (in_order, any_order):
        holes = {q for g in tracker.open_gaps() for q in range(g.lo, g.hi + 1)}
        assert holes == missing
        assert tracker.completeness()[("up-1", "turb")] == (len(kept), kept[-1] - kept[0] + 1)


def test_a_seq_millions_ahead_is_a_new_count_not_a_hole_to_ask_for() -> None:
    tracker = GapTracker(GapPolicy(first_request_s=0, max_jump=1_000))
    feed(tracker, [0, 1, 2, 2**62, 2**62 + 1])
    assert tracker.open_gaps() == [] and tracker.requests(0) == []
    assert tracker.completeness() == {("up-1", "turb"): (2, 2)}
