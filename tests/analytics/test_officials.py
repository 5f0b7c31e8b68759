"""Overdue alerts name the official of the town whose law it is (officer.title).

Lake George §148-8 A and Big Flats 17.37.070 name a "stormwater management
officer"; Lake Lure 96.03 an "Erosion Control Officer". A New York message that
names Lake Lure's office tells the officer reading it that the text was not
written for their town.
"""

from __future__ import annotations

import pytest

from analytics.events import SiteLogEntry
from siltwatch.config import SiteConfig
from siltwatch.officials import GENERIC_TITLE, officer_notified, officer_title
from siltwatch.rulepacks import RuleValue, site_rules
from tests.analytics.site_log_helpers import alerts, log, run

# A notice of violation served Wed 2026-07-01 with its remedy due by the end of Fri
# 07-10 (local midnight 07-11 00:00 EDT = 04:00 UTC); nothing corrected it.
NOTICE = log("2026-07-01T12:00-04:00", "violation", detail="V-9 remedy by 2026-07-10")
# 96.05(B)(17)(c)(i): controls installed Wed 07-01 15:00 EDT, the phase inspection due by
# the end of the 2nd day after (siltwatch's cited default) = 07-04 04:00 UTC; none came.
INSTALLED = log("2026-07-01T15:00-04:00", "milestone", detail="controls_installed")


@pytest.mark.parametrize(
    ("fixture", "row", "kind", "due", "said", "unsaid"),
    [
        ("george", NOTICE, "remedy_overdue", "2026-07-11T04:00:00+00:00",
         "The Stormwater Management Officer is notified.", "Erosion Control"),
        ("flats", NOTICE, "remedy_overdue", "2026-07-11T04:00:00+00:00",
         "The Stormwater Management Officer is notified.", "Erosion Control"),
        ("lure", INSTALLED, "inspection_overdue", "2026-07-04T04:00:00+00:00",
         "The Erosion Control Officer is notified.", "Stormwater Management"),
    ],
)  # fmt: skip
def test_an_overdue_duty_names_the_towns_own_official(
    fixture: str,
    row: SiteLogEntry,
    kind: str,
    due: str,
    said: str,
    unsaid: str,
    request: pytest.FixtureRequest,
) -> None:
    site: SiteConfig = request.getfixturevalue(fixture)
    engine = run(site, [row], end="2026-07-15T00:00-04:00")
    (late,) = [a for a in alerts(engine, kind) if a.opened_at.isoformat() == due]
    assert said in late.message
    assert unsaid not in late.message and "erosion-control officer" not in late.message


def test_the_title_comes_from_the_pack_with_its_citation(
    george: SiteConfig, lure: SiteConfig, flats: SiteConfig
) -> None:
    george_rule = site_rules(george).require("officer.title")
    assert (george_rule.value, george_rule.citation) == (
        "Stormwater Management Officer",
        "Lake George §148-8 A",
    )
    assert site_rules(flats).require("officer.title").citation == "Big Flats 17.37.070"
    assert site_rules(lure).require("officer.title").citation == "Lake Lure 96.03"
    assert officer_title(site_rules(lure)) == "the Erosion Control Officer"


def test_a_site_under_no_pack_naming_its_official_hears_of_the_towns_officer() -> None:
    class NoRules:
        def get(self, key: str) -> RuleValue | None:
            return None

    assert officer_title(NoRules()) == GENERIC_TITLE
    assert officer_notified(NoRules()) == "The town's officer is notified."
