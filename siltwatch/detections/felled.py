"""Vegetation felled into the water: removed at once.

Lake George §148-11 I(3)(e)[3][a]: "No vegetation shall be felled into any lake,
pond, river, stream or intermittent stream, and, if inadvertently felled into
one of these water bodies, it shall be removed immediately from the water
body." A ``felled_into_water`` row (detail: where) opens ``felled_vegetation``
(subject: the site) at once, as a warning to the site's people: remove it. The
ordinance says "immediately" and gives no hours; when no ``felled_removed`` row
comes within ``felled.removal_h`` (siltwatch's reading of "immediately", cited
as its default) the alert turns critical and the officer hears it. The
``felled_removed`` row resolves it. §148-11 I(3) is for major projects: a site
that says ``project = "minor"`` gets none.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import Description, Evidence, regulatory
from siltwatch.rulekeys import flag, number


class FelledEvidence(Evidence):
    felled_at: str
    where: str
    removal_h: float


def _amount(ev: FelledEvidence, _zone: tzinfo) -> str:
    return f"vegetation in the water since {ev.felled_at}"


# subject: the site id
FELLED = regulatory("felled_vegetation", "vegetation felled into water", FelledEvidence, _amount)

DESCRIPTION = Description(
    key="felled",
    order=51,
    alerts=(FELLED,),
    rule_keys=(flag("felled.remove_immediately"), number("felled.removal_h")),
)
