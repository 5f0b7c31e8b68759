"""Site limits: how much ground is open at once, and earthwork in the cold season.

From the site log's area events (docs/replay-contract.md): an area is open
from ``disturbed``/``cleared``/``graded`` until its ``temporary_cover`` or
``permanent_cover``.

- Lake George §148-8 B(1)(d) and Big Flats 17.37.080 B(4): "not more than five
  acres shall be disturbed at any one time unless pursuant to an approved
  SWPPP" — ``area.max_disturbed_acres``; a site whose SWPPP allows more sets
  its own value in ``[rule_overrides]``.
- Lake Lure 96.08(B)(1): uncovered areas in High Quality Water zones "limited
  at any time to a maximum total area of 20 acres" —
  ``area.max_uncovered_acres_hqw`` (HQW areas only).
- Lake George §148-11 I(3)(e)[3][e]: clearing or grading between October 15
  and April 15 needs extra measures during revegetation —
  ``cover.cold_season`` (``["10-15", "04-15"]``): a reminder on the area until
  it is covered; and when such an area is revegetated (a ``seeded`` or
  ``permanent_cover`` row) with no ``extra_measures`` row of the area at or
  before it (screen mesh, netting, extra mulch, silt fence: what was done),
  ``cold_season_measures_missing`` opens (warning; the town hears it once)
  until the area's ``extra_measures`` row is recorded.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import (
    Description,
    Evidence,
    Officer,
    diagnostic,
    regulatory,
    short_number,
)
from siltwatch.rulekeys import NON_NEGATIVE, RuleKey, number


class AreaLimitEvidence(Evidence):
    open_acres: float
    limit_acres: float
    areas: list[str]


class ColdSeasonEvidence(Evidence):
    area: str
    event: str


def _over(ev: AreaLimitEvidence, _zone: tzinfo) -> str:
    return f"{short_number(ev.open_acres, 2)} acres open (limit {ev.limit_acres:g})"


def _cold(ev: ColdSeasonEvidence, _zone: tzinfo) -> str:
    return f"{ev.event} in the cold season: extra measures"


# subject: "site", or "hqw" for the HQW zones
DISTURBED_AREA = regulatory(
    "disturbed_area_limit",
    "disturbed area over the limit",
    AreaLimitEvidence,
    _over,
    Officer.ON_OPEN,
)
# subject: the area (and COLD_MEASURES's)
COLD_SEASON = diagnostic(
    "cold_season_earthwork", "cold-season earthwork", ColdSeasonEvidence, _cold
)


def _measures(ev: ColdSeasonEvidence, _zone: tzinfo) -> str:
    return f"{ev.area} revegetated without the cold season's extra measures"


COLD_MEASURES = regulatory(
    "cold_season_measures_missing",
    "cold-season revegetation without extra measures",
    ColdSeasonEvidence,
    _measures,
    Officer.ONCE,
)

DESCRIPTION = Description(
    key="site_limits",
    order=46,
    alerts=(DISTURBED_AREA, COLD_SEASON, COLD_MEASURES),
    rule_keys=(
        number("area.max_disturbed_acres", NON_NEGATIVE),
        number("area.max_uncovered_acres_hqw", NON_NEGATIVE),
        RuleKey("cover.cold_season", (list,)),
    ),
)
