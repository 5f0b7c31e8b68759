"""Vegetation felled into the water, Lake George §148-11 I(3)(e)[3][a]: "removed immediately".

The ordinance gives no hours; siltwatch warns the site's people at once and
tells the officer (critical) when the vegetation is still in the water 24 hours
later (its cited default). Times are America/New_York (EDT, UTC-4).
"""

from __future__ import annotations

from siltwatch.config import SiteConfig
from tests.analytics.site_log_helpers import alerts, iso, log, run

FELLED = log("2026-06-03T10:00-04:00", "felled_into_water", detail="birch into West Brook")


def test_still_in_the_water_a_day_later_turns_critical(george: SiteConfig) -> None:
    engine = run(george, [FELLED], end="2026-06-10T00:00-04:00")
    (alert,) = alerts(engine, "felled_vegetation")
    assert alert.rule == "Lake George §148-11 I(3)(e)[3][a]"
    assert alert.opened_at == iso("2026-06-03T14:00Z") and alert.resolved_at is None
    # Warning at the felling, critical at Thu 06-04 10:00 EDT, 24 h on.
    assert [(e.at.isoformat(), e.severity) for e in alert.escalations] == [
        ("2026-06-03T14:00:00+00:00", "warning"),
        ("2026-06-04T14:00:00+00:00", "critical"),
    ]
    assert "birch into West Brook" in alert.message
    assert "The Stormwater Management Officer is notified." in alert.message


def test_removed_within_the_day_stays_a_warning(george: SiteConfig) -> None:
    removed = log("2026-06-04T09:59-04:00", "felled_removed")
    engine = run(george, [FELLED, removed], end="2026-06-10T00:00-04:00")
    (alert,) = alerts(engine, "felled_vegetation")
    assert alert.severity == "warning"
    assert alert.resolved_at == iso("2026-06-04T13:59Z")


def test_a_minor_project_or_another_town_gets_none(george: SiteConfig, lure: SiteConfig) -> None:
    minor = george.model_copy(update={"site": george.site.model_copy(update={"project": "minor"})})
    assert alerts(run(minor, [FELLED], end="2026-06-10T00:00-04:00"), "felled_vegetation") == []
    assert alerts(run(lure, [FELLED], end="2026-06-10T00:00-04:00"), "felled_vegetation") == []
