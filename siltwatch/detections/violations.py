"""Violations: the town's notice of violation or stop-work order, from the site log.

A ``violation`` row records that the town served a notice of violation or a
stop-work order (Lake George §148-14 B; Big Flats 17.37.130 A, B); a
``violation_corrected`` row that the town accepted the correction. While a
violation is open:

- ``violation_open`` (subject: the violation id) says so; the officer, who
  served it, hears it once when it opens. Its evidence and message carry the
  weeks it has continued, refreshed every 7 days — under Big Flats 17.37.130 D
  "each week's continued violation shall constitute a separate additional
  violation", so there they also count the violations;
- no further work but site stabilization (Lake George §148-12 A; Big Flats
  17.37.110 A, and 17.37.130 B for a stop-work order): a row of work
  (``active``, ``disturbed``, ``cleared``, ``graded``) raises
  ``work_during_violation`` (subject: the area), the town's business from its
  opening, until the violation is corrected; cover rows are stabilization;
- the notice's remedy schedule (``remedy by`` in the row; Lake George §148-14
  B(1)(d), Big Flats 17.37.130 A(4)) is a duty of kind ``remedy``, and one past
  its deadline raises ``remedy_overdue``;
- the right to appeal (Lake George §148-14 B(1)(f): "within 15 days of
  service") is a duty of kind ``appeal`` reminding the operator; it lapses at
  its deadline without an alert (a missed appeal is no breach).
"""

from __future__ import annotations

from datetime import tzinfo
from enum import StrEnum

from siltwatch.detections.base import (
    Description,
    DutySpec,
    Evidence,
    Officer,
    deadline_duty,
    regulatory,
)
from siltwatch.rulekeys import flag, number
from siltwatch.timefmt import local_time


class ViolationReason(StrEnum):
    """Why a remedy or appeal duty exists (``reason`` in DUTIES.jsonl)."""

    NOTICE_OF_VIOLATION = "notice_of_violation"


class ViolationEvidence(Evidence):
    violation: str
    served_at: str
    weeks: int  # full weeks it has continued (as of ``as_of``)
    violations: int | None = None  # separate violations so far, where each week is one


def _violation_amount(ev: ViolationEvidence, zone: tzinfo) -> str:
    served = local_time(ev.served_at, zone, short=True)
    if ev.violations is not None:
        return f"{ev.violations} violation(s): {ev.weeks} week(s) since {served}"
    return f"{ev.weeks} week(s) since {served}" if ev.weeks else f"served {served}"


class WorkEvidence(Evidence):
    area: str
    event: str  # the site-log event of the work
    at: str
    violations: list[str]  # the violations open then


def _work_amount(ev: WorkEvidence, zone: tzinfo) -> str:
    return (
        f"{ev.event} in {ev.area} at {local_time(ev.at, zone, short=True)} "
        f"while {', '.join(ev.violations)} is open"
    )


# subject: the violation id
VIOLATION_OPEN = regulatory(
    "violation_open", "violation open", ViolationEvidence, _violation_amount, Officer.ONCE
)
# subject: the area
WORK_DURING_VIOLATION = regulatory(
    "work_during_violation", "work during a violation", WorkEvidence, _work_amount, Officer.ON_OPEN
)
# subject: the violation id; its overdue alert's, the duty id
REMEDY = deadline_duty("remedy", "remedy", tuple(ViolationReason))
# A reminder: the right to appeal lapses at its deadline, which is no breach (no alert).
APPEAL = DutySpec("appeal", "appeal", tuple(ViolationReason))

DESCRIPTION = Description(
    key="violations",
    order=48,
    alerts=(VIOLATION_OPEN, WORK_DURING_VIOLATION),
    duties=(REMEDY, APPEAL),
    rule_keys=(
        flag("violation.notice"),
        flag("violation.remedy_schedule"),
        number("violation.appeal_days"),
        flag("violation.weekly_count"),
        flag("violation.stabilization_only"),
    ),
)
