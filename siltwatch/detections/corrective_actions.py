"""Corrective actions: a finding of the field desk's checklist that needs work, tracked to the end.

Lake Lure 96.05(B)(17)(a)(v) asks the inspection record to document "any
significant deviations from the approved erosion and sedimentation control
plan, corrective actions required to correct the deviation and completion of
the corrective actions"; Lake George §148-10 A asks that all practices be
maintained. When a checklist (siltwatch/checklist.py) finds a practice not
installed, not functioning, needing maintenance or deviating from the plan,
its inspection record names the practice in ``findings`` and each opens a duty
of kind ``corrective_action`` (reason ``finding``, subject: the practice).

The due date: ``corrective_action.due_days`` where a pack sets one (a law or
permit that gives a deadline), else the site's ``[field_desk]
corrective_action_days`` (siltwatch/practices.py; 7 by default), cited as the
site's own choice. An open action past its due date raises
``corrective_action_overdue`` (subject: the duty id), routed like the others;
with no legal deadline behind it, it goes to the site's people, not the
officer. The record that closes the action (the console's closure, with its
note and photo) names the duty and completes it.
"""

from __future__ import annotations

from enum import StrEnum

from siltwatch import rulekeys
from siltwatch.detections import base


class CorrectiveReason(StrEnum):
    FINDING = "finding"  # a checklist found the practice needing work


# The duty (subject: the practice) and its overdue alert (subject: the duty id): no legal
# deadline stands behind the date (it is the site's own, or a pack's where one is set), so
# the alert is a diagnostic, the site's.
ACTION = base.deadline_duty(
    "corrective_action", "corrective action", (CorrectiveReason.FINDING,), law=False
)
DUE_DAYS = rulekeys.number(
    "corrective_action.due_days", rulekeys.NON_NEGATIVE
)  # where a law sets the days
DESCRIPTION = base.Description("corrective_actions", 58, duties=(ACTION,), rule_keys=(DUE_DAYS,))
