"""Each practice maintained on the schedule the plan sets for it.

Lake George §148-8 B(1)(l) and Big Flats 17.37.080 B(12): the SWPPP holds "a
maintenance schedule to ensure continuous and effective operation of each
erosion and sediment control practice" (pack key ``maintenance.schedule``);
Lake George §148-10 C(1) and Big Flats 17.37.100 C(1): the permanent
practices' "preventive/corrective maintenance program" (``maintenance.program``).
The site log enters the schedule (``maintenance_scheduled``: ``<practice> every
<N> days``, or ``<practice> removed``) and the work (``maintained``:
``<practice> ...``). Each scheduled practice owes a ``maintenance`` duty
(reason ``scheduled``, subject the practice), due at the end of the Nth local
day after the schedule row or the last maintenance, completed by a
``maintained`` row naming it, which starts the next; a new schedule replaces
the old, a removal ends it. A schedule entered before the
``construction_completed`` milestone cites the SWPPP's schedule, one entered
after it the post-construction program. Past its deadline,
``maintenance_overdue`` (the town's business, like an overdue inspection).
"""

from __future__ import annotations

from enum import StrEnum

from siltwatch.detections.base import Description, deadline_duty
from siltwatch.rulekeys import flag


class MaintenanceReason(StrEnum):
    SCHEDULED = "scheduled"


# subject: the practice; its overdue alert's, the duty id
MAINTENANCE = deadline_duty("maintenance", "maintenance", tuple(MaintenanceReason))

DESCRIPTION = Description(
    key="maintenance",
    order=54,
    duties=(MAINTENANCE,),
    rule_keys=(flag("maintenance.schedule"), flag("maintenance.program")),
)
