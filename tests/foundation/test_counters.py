"""The shared counters base (siltwatch/counters.py): empty starts, the printed form, the list."""

from __future__ import annotations

import pytest

from analytics.engine import EngineStats
from siltwatch.counters import Counters


class Taken(Counters):
    """A made-up set of counters, one of each kind a counter may be."""

    messages: int
    seconds: float
    last_error: str
    errors: list[str]
    by_reason: dict[str, int]


def test_every_counter_starts_empty_and_containers_are_not_shared() -> None:
    first, second = Taken(), Taken()
    first.messages += 2
    first.errors.append("boom")
    first.by_reason["bad json"] = 1

    assert second.as_dict() == {
        "messages": 0,
        "seconds": 0.0,
        "last_error": "",
        "errors": [],
        "by_reason": {},
    }
    assert first != second
    assert Taken() == second


def test_the_printed_form_is_the_one_serve_prints() -> None:
    taken = Taken()
    taken.messages = 3
    assert str(taken) == ("Taken(messages=3, seconds=0.0, last_error='', errors=[], by_reason={})")


def test_numbers_list_the_numeric_counters_in_declared_order() -> None:
    taken = Taken()
    taken.messages, taken.seconds = 7, 1.5
    assert taken.numbers() == [("messages", 7), ("seconds", 1.5)]
    assert list(taken.as_dict()) == ["messages", "seconds", "last_error", "errors", "by_reason"]


def test_a_counter_of_another_type_is_refused_with_its_name() -> None:
    with pytest.raises(TypeError, match=r"Odd\.when: a counter is an int, float, str"):

        class Odd(Counters):
            when: tuple[int, int]


def test_the_engine_counters_keep_their_names_and_start_at_zero() -> None:
    stats = EngineStats()
    assert stats.numbers()[:2] == [("readings_in", 0), ("readings_processed", 0)]
    assert stats.unknown_sensors == {}
    # A snapshot written before a counter existed restores it as 0 (the class default).
    assert EngineStats.statuses == 0


def test_adding_sums_numbers_and_keyed_counts_and_leaves_text_and_lists() -> None:
    total, one, two = Taken(), Taken(), Taken()
    one.messages, one.seconds, one.last_error = 2, 0.5, "one"
    one.errors.append("x")
    one.by_reason.update({"not JSON": 1, "wrong unit": 2})
    two.messages = 3
    two.by_reason["not JSON"] = 4
    total.add(one)
    total.add(two)
    assert (total.messages, total.seconds, total.last_error, total.errors) == (5, 0.5, "", [])
    assert total.by_reason == {"not JSON": 5, "wrong unit": 2}
    assert one.by_reason == {"not JSON": 1, "wrong unit": 2}  # the parts are not changed
