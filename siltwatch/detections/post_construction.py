"""The post-construction calendar: what is owed after construction is completed.

From the site log's milestones, the duties the ordinances set for the
permanent stormwater facilities, each a duty of kind ``post_construction``
with its reason: the annual operation and maintenance report (Lake George
§148-10 C(4)), recurring yearly from ``construction_completed``; the inspection
that ends the performance guarantee, counted from the town's
``final_acceptance`` (Lake George §148-13 A: two years; Big Flats 17.37.120 A:
one year); the inspection by a licensed Professional Engineer at least once in
every five-year period, counted from the ``maintenance_agreement`` or the
completion if that comes first, and its written report within 30 days of it
(Big Flats Schedule B (4)); the as-built plans after final construction (Lake
George §148-12 B, where the approved plan was changed; Big Flats 17.37.110 B),
due by siltwatch's cited default and completed by an ``as_built`` row. An inspection record naming the duty completes
it; one past its deadline raises ``post_construction_overdue``, the town's
business from its opening, like an overdue inspection.
"""

from __future__ import annotations

from enum import StrEnum

from siltwatch.detections.base import Description, deadline_duty
from siltwatch.rulekeys import flag, number


class PostConstructionReason(StrEnum):
    """What is owed (``reason`` in DUTIES.jsonl)."""

    ANNUAL_REPORT = "annual_report"  # Lake George §148-10 C(4)
    GUARANTEE_INSPECTION = "guarantee_inspection"  # Lake George §148-13 A; Big Flats 17.37.120 A
    ENGINEER_INSPECTION = "engineer_inspection"  # Big Flats Schedule B (4)
    ENGINEER_REPORT = "engineer_report"  # Big Flats Schedule B (4)
    AS_BUILT = "as_built"  # Lake George §148-12 B; Big Flats 17.37.110 B


# subject: the site id; its overdue alert's, the duty id
POST_CONSTRUCTION = deadline_duty(
    "post_construction", "post-construction", tuple(PostConstructionReason)
)

DESCRIPTION = Description(
    key="post_construction",
    order=49,
    duties=(POST_CONSTRUCTION,),
    rule_keys=(
        number("post_construction.annual_report_years"),
        number("post_construction.guarantee_inspection_years"),
        number("post_construction.engineer_inspection_years"),
        number("post_construction.engineer_report_days"),
        flag("post_construction.as_built"),
        flag("post_construction.as_built_if_changed"),
        number("post_construction.as_built_days"),
    ),
)
