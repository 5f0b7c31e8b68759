"""repeated_names: the shared duplicate-id/name check of the configuration checks."""

from __future__ import annotations

from typing import Any

from siltwatch.detections.base import repeated_names


def test_reports_each_repeat_with_the_first_index() -> None:
    items: list[dict[str, Any]] = [
        {"id": "a"},
        {"id": "b"},
        {"id": "a"},
        {"id": 3},
        {},
        {"id": "a"},
        {"id": "b"},
    ]
    assert list(repeated_names(items, "id")) == [(2, "a", 0), (5, "a", 0), (6, "b", 1)]


def test_no_repeats() -> None:
    assert list(repeated_names([{"name": "x"}, {"name": "y"}], "name")) == []
