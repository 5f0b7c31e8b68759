"""Buffers: ground opened inside the strip the law keeps undisturbed.

Lake George §148-11 I(2)(h)[1]: "Within 35 feet extending inland from all points
along the mean high-water mark, no vegetation may be removed"; beyond 35 feet
cutting is allowed, so an area whose nearest edge is exactly 35 ft from the
water is still within. Lake Lure 96.07(A)(2): trout waters have "an undisturbed
buffer zone 25 feet wide": an area 25 ft away leaves exactly that strip, one at
24.9 ft cuts into it. Times are America/New_York (EDT, UTC-4).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from siltwatch.config import Area, ReceivingWater, SiteConfig
from tests.analytics.site_files import load_problems
from tests.analytics.site_log_helpers import alerts, iso, log, run


def with_area(site: SiteConfig, distance_ft: float, **extra: Any) -> SiteConfig:
    """``site`` with one more area, ``shore``, ``distance_ft`` from the water."""
    shore = Area.model_validate(
        {"id": "shore", "acres": 0.1, "slope_pct": 4, "distance_to_water_ft": distance_ft, **extra}
    )
    return site.model_copy(update={"areas": [*site.areas, shore]})


def with_waters(site: SiteConfig, *waters: tuple[str, str]) -> SiteConfig:
    """``site`` with more receiving waters (the Lake Lure example has the lake, class lake)."""
    more = [ReceivingWater.model_validate({"id": i, "class": c}) for i, c in waters]
    return site.model_copy(update={"receiving_waters": [*site.receiving_waters, *more]})


CLEARED = log("2026-06-03T10:00-04:00", "cleared", "shore")
RESTORED = log("2026-06-20T16:00-04:00", "permanent_cover", "shore")


def test_clearing_within_35_feet_of_lake_george_until_it_is_replanted(
    george: SiteConfig,
) -> None:
    site = with_area(george, 35.0)
    engine = run(site, [CLEARED, RESTORED], end="2026-06-30T00:00-04:00")
    (alert,) = alerts(engine, "buffer_disturbed")
    assert alert.subject == "shore" and alert.severity == "critical"
    assert alert.rule == "Lake George §148-11 I(2)(h)[1]"
    assert alert.opened_at == iso("2026-06-03T14:00Z")
    assert alert.resolved_at == iso("2026-06-20T20:00Z")
    assert alert.evidence["buffer_ft"] == 35 and alert.evidence["distance_to_water_ft"] == 35
    assert "Buffer restored" in alert.message and "permanent ground cover" in alert.message


def test_the_opening_message_cites_the_strip(george: SiteConfig) -> None:
    engine = run(with_area(george, 12.0), [CLEARED], end="2026-06-10T00:00-04:00")
    (alert,) = alerts(engine, "buffer_disturbed")
    assert alert.resolved_at is None
    assert (
        "area shore was cleared on 2026-06-03 10:00 EDT (recorded by Dana Ruiz); it lies "
        "12 ft from the water, inside the 35-ft buffer, and under Lake George "
        "§148-11 I(2)(h)[1] no vegetation may be removed within it" in alert.message
    )


@pytest.mark.parametrize(
    ("distance", "extra", "alerted"),
    [
        (35.5, {}, False),  # beyond 35 feet: cutting allowed
        (10.0, {"buffer_exception": True}, False),  # an approved lake access
        (0.0, {}, True),
    ],
)
def test_only_what_lies_within_35_feet_and_is_not_excepted(
    george: SiteConfig, distance: float, extra: dict[str, Any], alerted: bool
) -> None:
    engine = run(with_area(george, distance, **extra), [CLEARED], end="2026-06-10T00:00-04:00")
    assert bool(alerts(engine, "buffer_disturbed")) is alerted


@pytest.mark.parametrize(
    ("distance", "waters", "nearest", "alerted"),
    [
        # The site's lake and a trout stream; the area names no nearest water, so it is
        # taken to be near the trout stream (the reading that protects the water).
        (24.9, [("rocky-br", "trout_stream")], None, True),
        (25.0, [("rocky-br", "trout_stream")], None, False),  # the 25-ft strip is left whole
        (10.0, [], None, False),  # only the lake: no trout water
        (10.0, [("rocky-br", "trout_stream")], "lake-lure", False),  # nearest is the lake
        (10.0, [("rocky-br", "trout_stream")], "rocky-br", True),
        (10.0, [("rocky-br", "trout_stream")], None, True),
    ],
)
def test_lake_lure_trout_buffer(
    lure: SiteConfig,
    distance: float,
    waters: list[tuple[str, str]],
    nearest: str | None,
    alerted: bool,
) -> None:
    site = with_area(with_waters(lure, *waters), distance, nearest_water=nearest)
    graded = log("2026-06-01T08:00-04:00", "graded", "shore")
    engine = run(site, [graded], end="2026-06-10T00:00-04:00")
    found = alerts(engine, "buffer_disturbed")
    assert bool(found) is alerted
    if alerted:
        assert found[0].rule == "Lake Lure 96.07(A)(2)"
        assert found[0].opened_at == iso("2026-06-01T12:00Z")
        assert "inside the 25-ft buffer" in found[0].message


def test_one_alert_per_area_while_it_stays_open(george: SiteConfig) -> None:
    rows = [CLEARED, log("2026-06-04T10:00-04:00", "graded", "shore")]
    engine = run(with_area(george, 20.0), rows, end="2026-06-10T00:00-04:00")
    assert len(alerts(engine, "buffer_disturbed")) == 1


def test_nearest_water_must_be_a_receiving_water_of_the_site(tmp_path: Path) -> None:
    doc = {
        "site": {"id": "s", "timezone": "America/New_York"},
        "receiving_waters": [{"id": "lake-lure", "class": "lake"}],
        "areas": [
            {
                "id": "shore",
                "acres": 0.1,
                "slope_pct": 2,
                "distance_to_water_ft": 10,
                "nearest_water": "rocky-br",
            }
        ],
    }
    assert load_problems(tmp_path, doc) == [
        "areas[0].nearest_water: 'rocky-br' is not a receiving water of the site "
        "(its receiving waters: lake-lure)"
    ]
