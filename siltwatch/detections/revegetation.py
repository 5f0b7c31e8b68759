"""Revegetation quality: the cover crop held until it takes, and its survival for a year.

Lake George §148-11 I(3)(e)[3][c][1]: reseeding is "accompanied by placement of
straw mulch ... to control erosion until such time as the cover crop is
established over 90% of the seeded area"; [3][d]: "Any area of revegetation
must exhibit survival of a minimum of 75% of the cover crop throughout the
year immediately following revegetation. Revegetation must be repeated in
successive years until the minimum 75% survival for one year is achieved."

Each revegetation of an area (its ``seeded`` or ``permanent_cover`` row) makes
two reminders, duties of kind ``revegetation`` (subject: the area):

- ``cover_crop_90``: check that the mulch stays until the crop covers 90 % of
  the seeded area. The ordinance names no date; ``revegetation.cover_check_days``
  is siltwatch's default, cited as such, and its overdue alert
  (``revegetation_check_overdue``) goes to the site's people, not the officer;
- ``survival_75``: the survival check at the end of the year following
  revegetation (``revegetation.survival_years``, the first anniversary's end),
  opened 30 days before it; the law's own date, so its overdue alert
  (``revegetation_overdue``) is the town's business.

An inspection record naming the duty completes it (the inspector found 90 %
cover, or 75 % survival). When survival fell short, the area is revegetated
again: its next ``seeded`` row starts a new year. §148-11 I(3) applies to major
projects: a site that says ``project = "minor"`` gets none.
"""

from __future__ import annotations

from enum import StrEnum

from siltwatch.detections.base import Description, deadline_duty
from siltwatch.rulekeys import number


class RevegetationReason(StrEnum):
    """What is checked (``reason`` in DUTIES.jsonl)."""

    SURVIVAL_75 = "survival_75"  # §148-11 I(3)(e)[3][d]
    COVER_CROP_90 = "cover_crop_90"  # §148-11 I(3)(e)[3][c][1]


# Both subject: the area; their overdue alerts', the duty id. The survival check's date
# is the law's; the cover-crop check's is siltwatch's default, so its overdue alert is
# the site's people's.
SURVIVAL = deadline_duty(
    "revegetation", "revegetation survival check", (RevegetationReason.SURVIVAL_75,)
)
CHECK = deadline_duty(
    "revegetation_check", "cover-crop check", (RevegetationReason.COVER_CROP_90,), law=False
)

DESCRIPTION = Description(
    key="revegetation",
    order=50,
    duties=(SURVIVAL, CHECK),
    rule_keys=(
        number("revegetation.survival_years"),
        number("revegetation.cover_check_days"),
    ),
)
