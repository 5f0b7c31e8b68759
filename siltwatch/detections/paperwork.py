"""Paperwork before the first disturbance: what the law wants in hand before work starts.

Three provisions ask for something on record before land disturbance begins:

- each contractor signs the SWPPP certification "before undertaking any land
  development activity" (Lake George §148-8 D; Big Flats 17.37.080 D):
  pack key ``paperwork.contractor_certification``, site-log event
  ``certification`` (detail: the contractor's name and firm);
- a copy of the SWPPP (Lake Lure: of the approved plan) is retained at the site
  "from the date of initiation" of construction (Lake George §148-8 F; Big
  Flats 17.37.080 E; Lake Lure 96.05(B)(13)): ``paperwork.plan_on_site``,
  event ``plan_on_site``;
- "No person may initiate a land-disturbing activity before notifying the
  Erosion Control Officer ... of the date that land-disturbing activity will
  begin" (Lake Lure 96.05(B)(11)): ``paperwork.start_notice``, a ``notice`` row
  naming ``start_of_development``;
- "No person shall undertake any land-disturbing activity ... without first
  obtaining a plan approval" (Lake Lure 96.04(C); 96.05(B)(16) deems it a
  violation): ``paperwork.plan_approval``, a ``plan_approved`` row.

- a plan approval "shall be prominently displayed until all construction is
  complete" (Lake Lure 96.05(B)(13)): ``paperwork.approval_displayed``, an
  ``approval_displayed`` row;
- "Temporary erosion controls shall be required to prevent siltation of water
  bodies during construction" (Lake George §148-11 I(2)(f)):
  ``paperwork.erosion_controls_first``, the ``controls_installed`` milestone,
  checked at the first row that opens ground (``disturbed``, ``cleared`` or
  ``graded``; the ``start_of_development`` milestone and ``active`` rows are
  not ground opened: §148-12 A itself lists the start of development before the
  installation of the controls);
- "When deemed necessary by the Erosion Control Officer, a preconstruction
  conference may be required" (Lake Lure 96.05(B)(12)):
  ``paperwork.preconstruction_conference``: only once a ``conference_required``
  row records that the officer required one, each row of work before a
  ``conference_held`` row opens ``paperwork_missing`` (subject
  ``preconstruction_conference``) until it is held.

Lake Lure needs no plan for small disturbances (96.05(A)(1)(b): "within 35
feet of a lake or natural watercourse and do not exceed 100 square feet"; (c):
elsewhere, "do not exceed 2,000 square feet"; (B)(1): a plan "whenever more than
2,000 square feet (100 square feet if ... within 35 feet ...)" is uncovered):
with ``paperwork.plan_required_over_sq_ft``,
``paperwork.plan_required_near_water_over_sq_ft`` and
``paperwork.plan_required_near_water_ft`` set, the plan's papers (approval, copy
on site, approval displayed) are asked for at the row of the site log that
takes the land disturbed so far (each area with a ``disturbed``, ``cleared`` or
``graded`` row, with its acres, cumulatively) past the threshold: 100 sq ft once
any disturbed area lies within 35 ft of water (at exactly 35 ft it is within),
else 2,000; at exactly the threshold no plan is needed.

The first row of work (``disturbed``, ``cleared``, ``graded``, ``active`` of
an area, or the ``start_of_development`` milestone) with one of them not yet
recorded opens ``paperwork_missing`` (subject: the requirement), the town's
business from its opening: work has begun without it. It resolves when the
row is recorded (late, and the alert says so). Which contractor did which work
the site log does not say, so one certification before the first work
satisfies it; each contractor's own first work is not checked.
"""

from __future__ import annotations

from datetime import tzinfo
from enum import StrEnum

from siltwatch.detections.base import Description, Evidence, Officer, regulatory
from siltwatch.rulekeys import flag, number


class Requirement(StrEnum):
    """What must be on record before the first work (the alert's subject)."""

    CONTRACTOR_CERTIFICATION = "contractor_certification"
    PLAN_ON_SITE = "plan_on_site"
    START_NOTICE = "start_notice"
    PLAN_APPROVAL = "plan_approval"
    APPROVAL_DISPLAYED = "approval_displayed"
    EROSION_CONTROLS = "erosion_controls"
    PRECONSTRUCTION_CONFERENCE = "preconstruction_conference"

    @property
    def rule_key(self) -> str:
        """The pack's flag that says a law asks for it: ``paperwork.<requirement>``."""
        return _FLAGS.get(self, f"paperwork.{self}")


# The erosion controls are asked for before any other work: the flag says so.
_FLAGS = {Requirement.EROSION_CONTROLS: "paperwork.erosion_controls_first"}


class PaperworkEvidence(Evidence):
    requirement: str
    work_started_at: str  # the first row of work
    work: str  # its event (and area)
    recorded_at: str | None = None  # when the missing record came, once it did


def _amount(ev: PaperworkEvidence, _zone: tzinfo) -> str:
    what = ev.requirement.replace("_", " ")
    return f"{what} recorded late" if ev.recorded_at else f"no {what} before work began"


# subject: the requirement
PAPERWORK_MISSING = regulatory(
    "paperwork_missing",
    "paperwork missing at the start of work",
    PaperworkEvidence,
    _amount,
    Officer.ON_OPEN,
)

DESCRIPTION = Description(
    key="paperwork",
    order=44,
    alerts=(PAPERWORK_MISSING,),
    rule_keys=(
        *(flag(r.rule_key) for r in Requirement),
        number("paperwork.plan_required_over_sq_ft"),
        number("paperwork.plan_required_near_water_over_sq_ft"),
        number("paperwork.plan_required_near_water_ft"),
    ),
)
