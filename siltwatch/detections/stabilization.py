"""Stabilization: exposed ground covered by the law's deadlines, from the site log.

What people do on site (docs/replay-contract.md, "Site areas and the site
log") starts the clocks: an area left inactive (logged so, or 7 days without
substantial activity) must be stabilized within 10 days of its last substantial
activity (Lake George §148-11 I(3)(e)[1],[2]); cleared ground on a slope over
15 % or within 500 ft of water may not stay uncovered for more than 24 hours
(§148-11 I(3)(e)[3][b]); cleared ground is revegetated within 10 days of the
substantial completion of its clearing and construction (§148-11 I(3)(e)[3][c]);
these three are for major projects inside the Lake George Park only
(siltwatch/applicability.py). Graded slopes are covered within 21 calendar days
of a phase of grading (Lake Lure 96.07(B)), and get permanent ground cover
within 15 working days or 90 calendar days, whichever is shorter (96.07(D));
in a High Quality Water zone, within 15 working days or 60 calendar days of the
completion of construction or development (96.08(B)(5)). Each
is a duty of kind ``stabilization`` with its reason, completed by the cover
recorded in the log; one past its deadline raises ``stabilization_overdue``,
the town's business from its opening, like an overdue inspection.
"""

from __future__ import annotations

from enum import StrEnum

from siltwatch.detections.base import Description, Section, deadline_duty
from siltwatch.rulekeys import NON_NEGATIVE, flag, number


class StabilizationReason(StrEnum):
    """Why an area must be covered (``reason`` in DUTIES.jsonl); subject: the area id."""

    INACTIVE_AREA = "inactive_area"  # Lake George §148-11 I(3)(e)[2]
    EXPOSED_24H = "exposed_24h"  # Lake George §148-11 I(3)(e)[3][b]
    REVEGETATION = "revegetation"  # Lake George §148-11 I(3)(e)[3][c]
    GRADED_SLOPES = "graded_slopes"  # Lake Lure 96.07(B)
    PERMANENT_COVER = "permanent_cover"  # Lake Lure 96.07(D); 96.08(B)(5) (its own rule)


# subject: the area; its overdue alert's, the duty id
STABILIZATION = deadline_duty("stabilization", "stabilization", tuple(StabilizationReason))

DESCRIPTION = Description(
    key="stabilization",
    order=45,
    duties=(STABILIZATION,),
    rule_keys=(
        number("stabilization.inactive_days"),
        number("stabilization.revegetation_days"),
        number("cover.exposed_near_water_h"),
        number("cover.steep_slope_pct", NON_NEGATIVE),
        number("cover.near_water_ft", NON_NEGATIVE),
        number("cover.graded_slopes_days"),
        number("cover.permanent_working_days"),
        number("cover.permanent_calendar_days"),
        number("cover.permanent_calendar_days_hqw"),
        flag("cover.hqw_from_area_completed"),
    ),
    section=Section("areas", "area"),
)
