"""Plan approval: the approved plan the site works under, and its expiry.

Lake Lure 96.05(B)(8): "The Erosion Control Officer may establish an expiration
date, not to exceed 3 years, for plans approved under this ordinance"; and
96.05(B)(16): whoever "conducts a land disturbing activity except in accordance
with provisions of an approved plan shall be deemed in violation". A
``plan_approved`` row (detail ``expires YYYY-MM-DD``, siltwatch/plans.py)
records the approval and its last day. When that day ends before the
``construction_completed`` milestone and no later approval renews it,
``plan_expired`` opens (critical; subject: the site), the town's business from
its opening, and stays open until a renewal or the completion is recorded. An
expiry set more than ``plan.max_years`` after the approval is held to that
bound (the officer cannot set a later one), and the alert says so. An approval
without an expiry date does not expire.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import Description, Evidence, Officer, regulatory
from siltwatch.rulekeys import number


class PlanEvidence(Evidence):
    approved_at: str
    expires_on: str  # the last day the approval held (local date)
    capped: bool  # the row's date was later than the bound allows


def _amount(ev: PlanEvidence, _zone: tzinfo) -> str:
    return f"approval expired after {ev.expires_on}"


# subject: the site id
PLAN_EXPIRED = regulatory(
    "plan_expired", "plan approval expired", PlanEvidence, _amount, Officer.ON_OPEN
)

DESCRIPTION = Description(
    key="plan_approval",
    order=42,
    alerts=(PLAN_EXPIRED,),
    rule_keys=(number("plan.max_years"),),
)
