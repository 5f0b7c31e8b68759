"""Turbidity contrast: hand-computed plumes through the real engine.

Every case uses 1-minute readings, the default 15-minute median window (15
readings), 30-minute sustain and clear fraction 0.9, unless it says otherwise.
The arithmetic that recurs: a downstream step from a low to a high level at
minute 60 moves the 15-reading median once 8 of the 15 readings are high, at
minute 67; the exceedance is then sustained 30 minutes later, at minute 97. A
step back down at minute 160 brings the median below the clear level at
minute 167; the episode resolves there once the calm has held one window (15
minutes, confirmed at minute 182).
"""

from __future__ import annotations

from typing import Any

import pytest

from analytics.engine import Engine
from tests.analytics.turbidity_helpers import at_min, level, of_kind, pair_site, run, series

KIND = "turbidity_contrast"


def plume(
    site_kwargs: dict[str, Any],
    background: float,
    down_level: float,
    *,
    baseline: float | None = None,
) -> Engine:
    """Upstream flat at ``background`` for 4 h; downstream ``down_level`` from minute 60 to 159."""
    base = background if baseline is None else baseline
    site = pair_site(**site_kwargs)
    up = series("turb-up", 0, level(background, 240))
    down = series("turb-down", 0, level(base, 60) + level(down_level, 100) + level(base, 80))
    return run(site, up + down)


def assert_one_episode(engine: Engine, severity: str, basis: str) -> dict[str, Any]:
    alerts = of_kind(engine, KIND)
    assert len(alerts) == 1, engine.alerts()
    alert = alerts[0]
    assert at_min(alert.opened_at) == 97
    assert alert.resolved_at is not None and at_min(alert.resolved_at) == 167
    assert alert.severity == severity
    assert basis in alert.message or basis in str(alert.evidence)
    ev = alert.evidence
    assert ev["exceeding_since"] == "2026-06-01T13:07:00Z"  # minute 67
    assert ev["duration_s"] == 100 * 60  # minute 67 to minute 167
    return ev


NC_STREAM: dict[str, Any] = {"packs": ("nc-ncg01",), "water_class": "stream"}
NC_TROUT: dict[str, Any] = {"packs": ("nc-ncg01",), "water_class": "trout_stream"}
NC_LAKE: dict[str, Any] = {"packs": ("nc-ncg01",), "water_class": "lake"}
WA: dict[str, Any] = {"packs": ("wa-cswgp",), "water_class": "stream"}
NY: dict[str, Any] = {"packs": ("ny-lake-george",), "limit": {"over_background_ntu": 25}}


@pytest.mark.parametrize(
    ("case", "site_kwargs", "background", "down_level", "expected"),
    [
        # Critical needs a contrast of twice max(limit - background, limit over clean water).
        # 15A NCAC 02B .0211: stream 50 NTU. 45 passes; 70 fails (contrast 60 < 2 x 50).
        ("NC stream below cap", NC_STREAM, 10.0, 45.0, None),
        ("NC stream over cap", NC_STREAM, 10.0, 70.0, ("warning", "50 NTU cap")),
        # Background 60 over the 50 cap: no increase, limit 60 + max(1, 3) = 63
        # (contrast 6 < 2 x 50: a tolerance is not an allowance, so only a warning).
        ("NC high background, within tolerance", NC_STREAM, 60.0, 62.0, None),
        ("NC high background, increase", NC_STREAM, 60.0, 66.0, ("warning", "no increase")),
        # Trout waters 10 NTU: 9 passes; 12 fails (contrast 9 < 2 x 10).
        ("NC trout below", NC_TROUT, 3.0, 9.0, None),
        ("NC trout over", NC_TROUT, 3.0, 12.0, ("warning", "10 NTU cap")),
        # Lakes 25 NTU: 24 passes; 27 fails (contrast 22 < 2 x 25).
        ("NC lake below", NC_LAKE, 5.0, 24.0, None),
        ("NC lake over", NC_LAKE, 5.0, 27.0, ("warning", "25 NTU cap")),
        # WAC 173-201A-200, background 20 <= 50: limit 25. 24 passes; 28 fails
        # (contrast 8 < 2 x 5); 31 is critical (contrast 11 >= 10).
        ("WA low background below", WA, 20.0, 24.0, None),
        ("WA low background over", WA, 20.0, 28.0, ("warning", "5 NTU over a background")),
        ("WA low background twice", WA, 20.0, 31.0, ("critical", "5 NTU over a background")),
        # Background 80 > 50: limit 88. 86 passes; 95 fails (contrast 15 < 2 x 8).
        ("WA high background below", WA, 80.0, 86.0, None),
        ("WA high background over", WA, 80.0, 95.0, ("warning", "10 % over a background")),
        # NY narrative proxy: the site's 25 NTU over background, limit 33 over 8.
        ("NY proxy below", NY, 8.0, 32.0, None),
        ("NY proxy over", NY, 8.0, 34.0, ("warning", "25 NTU over background")),
    ],
)
def test_limit_shapes_through_the_engine(
    case: str,
    site_kwargs: dict[str, Any],
    background: float,
    down_level: float,
    expected: tuple[str, str] | None,
) -> None:
    engine = plume(site_kwargs, background, down_level)
    if expected is None:
        assert of_kind(engine, KIND) == [], case
    else:
        severity, basis = expected
        ev = assert_one_episode(engine, severity, basis)
        assert ev["upstream_level"] == pytest.approx(background, abs=0.011)
        assert ev["peak_downstream_level"] == pytest.approx(down_level, abs=0.011)
    # No probe problem in any of these: nothing but the contrast may alert.
    assert [a for a in engine.alerts() if a.kind != KIND] == []


def test_citations_and_message() -> None:
    ny = plume(NY, 8.0, 40.0)
    (alert,) = of_kind(ny, KIND)
    assert alert.rule == "site proxy for Lake George §148-9 B"
    for part in (
        "outfall-a",
        "Test Brook",
        "Test site",
        "2026-06-01 09:07 EDT",
        "Lake George §148-9 B",
    ):
        assert part in alert.message
    nc = plume(NC_LAKE, 5.0, 27.0)
    (alert,) = of_kind(nc, KIND)
    assert alert.rule == "per 15A NCAC 02B .0211"  # a secondary source says "per"
    wa = plume(WA, 20.0, 28.0)
    (alert,) = of_kind(wa, KIND)
    assert alert.rule == "per WAC 173-201A-200"


def test_debris_spike_does_not_alert_but_a_plume_does() -> None:
    """Two readings at 600 NTU (debris on the optics) vs 60 minutes at 50 NTU, NY proxy 25."""
    site = pair_site(**NY)
    up = series("turb-up", 0, level(8.0, 240))
    debris = [*level(10.0, 50), 600.0, 600.0, *level(10.0, 188)]
    engine = run(site, up + series("turb-down", 0, debris))
    assert of_kind(engine, KIND) == []
    health = engine.detectors["health"]
    assert health.flag_counts("turb-down") == {"spike": 1}  # type: ignore[attr-defined]

    plume_60 = level(10.0, 100) + level(50.0, 60) + level(10.0, 80)
    engine = run(site, up + series("turb-down", 0, plume_60))
    (alert,) = of_kind(engine, KIND)
    # Median over 33 from minute 107 (8 of 15 readings at 50); sustained at 137;
    # back under the clear level 8 + 0.9 x 25 = 30.5 at minute 167.
    assert at_min(alert.opened_at) == 137
    assert alert.resolved_at is not None and at_min(alert.resolved_at) == 167
    assert alert.severity == "warning"  # contrast 42 < 2 x 25


def test_a_twenty_minute_burst_is_not_sustained() -> None:
    """20 minutes at 60 NTU hold the median over the limit only minutes 107-126: < 30 min."""
    site = pair_site(**NY)
    up = series("turb-up", 0, level(8.0, 200))
    down = series("turb-down", 0, level(10.0, 100) + level(60.0, 20) + level(10.0, 80))
    assert of_kind(run(site, up + down), KIND) == []


def test_escalation_happens_inside_the_episode() -> None:
    """45 NTU (contrast 37, warning) then 100 NTU (contrast 92 >= 2 x 25, critical)."""
    site = pair_site(**NY)
    up = series("turb-up", 0, level(8.0, 240))
    down = series(
        "turb-down", 0, level(10.0, 60) + level(45.0, 60) + level(100.0, 40) + level(10.0, 80)
    )
    engine = run(site, up + down)
    (alert,) = of_kind(engine, KIND)
    assert alert.severity == "critical"
    # Median reaches 58 (= 8 + 2 x 25) once 8 readings are at 100: minute 127.
    assert [(at_min(e.at), e.severity) for e in alert.escalations] == [
        (97, "warning"),
        (127, "critical"),
    ]
    assert alert.resolved_at is not None and at_min(alert.resolved_at) == 167
    assert alert.evidence["peak_downstream_level"] == pytest.approx(100.0, abs=0.011)


def test_notify_level_makes_it_critical() -> None:
    """WA: a background of 300 allows 330; 340 is only 40 over it, but >= 250 NTU (S5.A)."""
    engine = plume(WA, 300.0, 340.0)
    (alert,) = of_kind(engine, KIND)
    assert alert.severity == "critical"
    assert "WA CSWGP S5.A" in alert.message


def test_travel_time_aligns_the_background() -> None:
    """A natural turbid slug passes upstream at minutes 60-239 and downstream an hour later.

    With the pair's travel time of 3600 s the downstream reading at t is compared
    with the upstream level at t - 1 h: the same water, no contrast. Without it,
    the slug's tail downstream (minutes 240-299) meets a clean background for an
    hour and would be taken for a plume.
    """
    up = series("turb-up", 0, level(5.0, 60) + level(100.0, 180) + level(5.0, 120))
    down = series("turb-down", 0, level(5.0, 120) + level(100.0, 180) + level(5.0, 60))
    aligned = run(pair_site(**NY, travel_time_s=3600), up + down)
    assert of_kind(aligned, KIND) == []
    assert of_kind(aligned, "data_quality") == []
    naive = run(pair_site(**NY), up + down)
    assert len(of_kind(naive, KIND)) == 1


def test_missing_upstream_is_data_quality_never_a_violation() -> None:
    """Upstream stops at minute 59 while a 100 NTU plume runs downstream."""
    site = pair_site(**NY)
    up = series("turb-up", 0, level(8.0, 60))
    down = series("turb-down", 0, level(10.0, 60) + level(100.0, 180))
    engine = run(site, up + down)
    assert of_kind(engine, KIND) == []
    (dq,) = of_kind(engine, "data_quality", "outfall-a")
    # Upstream window under 8 usable readings from minute 67; blind 30 min -> 97.
    assert at_min(dq.opened_at) == 97
    assert dq.resolved_at is None
    assert "cannot be judged" in dq.message and "no upstream readings" in dq.message
    assert dq.rule == "site proxy for Lake George §148-9 B"
    (offline,) = of_kind(engine, "sensor_offline", "turb-up")
    assert at_min(offline.opened_at) == 64  # last reading 59 + 5 x 1 min


def test_fouled_upstream_is_data_quality_never_a_violation() -> None:
    """Upstream reads -20 NTU (physically impossible) from minute 60 to 179; downstream plume."""
    site = pair_site(**NY)
    up = series("turb-up", 0, level(8.0, 60) + level(-20.0, 120) + level(8.0, 60))
    down = series("turb-down", 0, level(10.0, 60) + level(100.0, 110) + level(10.0, 70))
    engine = run(site, up + down)
    assert of_kind(engine, KIND) == []
    (pair_dq,) = of_kind(engine, "data_quality", "outfall-a")
    assert at_min(pair_dq.opened_at) == 97
    assert "flagged readings (out_of_range)" in pair_dq.evidence["reason"]
    # Judged again once 8 good upstream readings (180-187) are in the window. At one
    # instant the engine takes sensors in id order, turb-down before turb-up, so the
    # downstream reading at 187 still sees 7 of them: minute 188.
    assert pair_dq.resolved_at is not None and at_min(pair_dq.resolved_at) == 188
    (probe_dq,) = of_kind(engine, "data_quality", "turb-up")
    assert at_min(probe_dq.opened_at) == 64  # the fifth consecutive bad reading
    assert probe_dq.resolved_at is not None and at_min(probe_dq.resolved_at) == 180


def test_a_pair_without_a_numeric_limit_says_so() -> None:
    """NY's standard is narrative: without the site's proxy the pair cannot be judged."""
    site = pair_site(packs=("ny-lake-george",))
    up = series("turb-up", 0, level(8.0, 60))
    down = series("turb-down", 0, level(100.0, 60))
    engine = run(site, up + down)
    assert of_kind(engine, KIND) == []
    (dq,) = of_kind(engine, "data_quality", "outfall-a")
    assert at_min(dq.opened_at) == 30  # blind from the first reading, for the 30-min sustain
    assert "no numeric limit" in dq.message


def test_pair_window_and_sustain_override_the_pack() -> None:
    """window 300 s (5 readings, 3 needed), sustain 600 s: step at 60 -> median 62 -> open 72."""
    site = pair_site(**NY, window_s=300, sustain_s=600)
    up = series("turb-up", 0, level(8.0, 120))
    down = series("turb-down", 0, level(10.0, 60) + level(60.0, 30) + level(10.0, 30))
    (alert,) = of_kind(run(site, up + down), KIND)
    assert at_min(alert.opened_at) == 72
    # Back down at 90: median under 30.5 at 92, calm for one window (5 min) -> resolved at 92.
    assert alert.resolved_at is not None and at_min(alert.resolved_at) == 92
