"""What the site log's disturbed area says about the permit and the project's class.

Three thresholds of land disturbance decide what a site needs, and the site log
says how much land the work has touched: each site area with a ``disturbed``,
``cleared`` or ``graded`` row counts with its acres (the site file's), once,
cumulatively (land once disturbed stays part of the "land disturbance" and of the
land the activity "affects", whatever cover follows: the reading that protects
the water).

- Lake George §148-11 C(3): "no person shall cause or create a land disturbance
  greater than 5,000 square feet without first having received a stormwater
  management permit" (pack key ``permit.required_over_sq_ft``): once more than
  that is disturbed with no ``plan_approved`` row in the log (the permit, issued
  with the approval of the SWPPP), ``permit_missing`` opens, critical, until the
  row is recorded;
- Lake George §148-11 E(1)(a): a minor project is "any building, land-clearing
  or development activity affecting less than 15,000 square feet of land";
  Lake Lure 96.05(B)(1),(2): a minor plan for "less than one acre", a major plan
  "whenever one acre or more is to be uncovered" (``project.minor_under_sq_ft``):
  a site whose file says ``project = "minor"`` and whose log reaches that much
  opens ``project_class_exceeded``: the site is run under the minor class while
  the law makes it major (its duties and plan are those of a major project).
  The officer hears both from their opening.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import Description, Evidence, Officer, regulatory
from siltwatch.rulekeys import number


class ScopeEvidence(Evidence):
    disturbed_sq_ft: float  # the land the site log shows disturbed so far
    threshold_sq_ft: float
    areas: str  # the areas counted, by id
    recorded_at: str | None = None  # the permit, once recorded


def _permit(ev: ScopeEvidence, _zone: tzinfo) -> str:
    if ev.recorded_at:
        return f"permit recorded after {ev.disturbed_sq_ft:,.0f} sq ft were disturbed"
    return f"{ev.disturbed_sq_ft:,.0f} sq ft disturbed (over {ev.threshold_sq_ft:,.0f}), no permit"


def _class(ev: ScopeEvidence, _zone: tzinfo) -> str:
    return f"{ev.disturbed_sq_ft:,.0f} sq ft disturbed on a minor project (under {ev.threshold_sq_ft:,.0f})"


# subject: the site id (both)
PERMIT_MISSING = regulatory(
    "permit_missing",
    "land disturbed without the permit",
    ScopeEvidence,
    _permit,
    Officer.ON_OPEN,
)
CLASS_EXCEEDED = regulatory(
    "project_class_exceeded",
    "a minor project grown major",
    ScopeEvidence,
    _class,
    Officer.ON_OPEN,
)

DESCRIPTION = Description(
    key="site_scope",
    order=53,
    alerts=(PERMIT_MISSING, CLASS_EXCEEDED),
    rule_keys=(number("permit.required_over_sq_ft"), number("project.minor_under_sq_ft")),
)
