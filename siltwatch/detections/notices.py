"""Notices: the town told 48 hours before each construction milestone.

Lake George §148-12 A and Big Flats 17.37.110 A: the applicant notifies the
town at least 48 hours before each of the eight milestones those sections list
(``notice.milestones``: start of development, installation of erosion and
sediment controls, completion of site clearing, rough grading, final grading,
close of the construction season, completion of final landscaping, successful
establishment of landscaping in public areas). Other milestones (storm drainage,
construction completed) need no notice: an alert for them would be one the law
never asked for. The site log records both (``notice`` and ``milestone`` rows
naming the milestone); a listed milestone with no notice of it at least that
long before raises ``notice_missing``, which the officer hears once: it is a
fact to know, not a condition that clears.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import Description, Evidence, Officer, regulatory
from siltwatch.rulekeys import NON_NEGATIVE, RuleKey, number


class NoticeEvidence(Evidence):
    milestone: str
    reached_at: str
    needed_by: str
    notice_at: str | None = None  # the latest notice of it, if one came too late


def _amount(ev: NoticeEvidence, _zone: tzinfo) -> str:
    if ev.notice_at is None:
        return f"no notice of {ev.milestone}"
    return f"notice of {ev.milestone} too late"


# subject: the milestone
NOTICE_MISSING = regulatory(
    "notice_missing", "milestone notice missing", NoticeEvidence, _amount, Officer.ONCE
)

DESCRIPTION = Description(
    key="notices",
    order=47,
    alerts=(NOTICE_MISSING,),
    rule_keys=(
        number("notice.before_inspection_h", NON_NEGATIVE),
        RuleKey("notice.milestones", (list,)),
    ),
)
