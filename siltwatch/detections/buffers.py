"""Buffers: ground opened inside a strip the law keeps undisturbed.

Lake George §148-11 I(2)(h)[1]: "Within 35 feet extending inland from all
points along the mean high-water mark, no vegetation may be removed. This area
shall be maintained as an undisturbed natural buffer strip." Lake Lure
96.07(A)(2): trout waters "shall have an undisturbed buffer zone 25 feet wide",
measured horizontally from the top of the bank ((2)(b)).

An area's ``distance_to_water_ft`` (to the nearest edge of the area) places it
inside a buffer: within 35 ft (``buffer.no_removal_ft``; at exactly 35 ft it is
not yet "beyond 35 feet"), or closer than 25 ft to a trout water
(``buffer.trout_ft``: a 25-ft-wide strip ends at 25 ft). The trout buffer
applies when the area's ``nearest_water`` is a trout stream or lake, or, when
the area names none, when any of the site's receiving waters is (the reading
that protects the water: the site file does not say which water is nearest).
A ``disturbed``, ``cleared`` or ``graded`` row in such an area opens
``buffer_disturbed`` (critical; subject: the area), the town's business from
its opening, until the area's ``permanent_cover`` row says it was restored.
An area whose approved plan allows the disturbance (``buffer_exception``: lake
access, or work on, over or under the water) raises nothing.
"""

from __future__ import annotations

from datetime import tzinfo

from siltwatch.detections.base import (
    ConfigView,
    Description,
    Evidence,
    Officer,
    regulatory,
    short_number,
)
from siltwatch.rulekeys import number


class BufferEvidence(Evidence):
    area: str
    event: str  # the site-log event that opened the ground
    distance_to_water_ft: float
    buffer_ft: float
    buffer: str  # "no_removal" or "trout"


def _amount(ev: BufferEvidence, _zone: tzinfo) -> str:
    distance, width = short_number(ev.distance_to_water_ft, 1), short_number(ev.buffer_ft, 1)
    return f"{ev.event} {distance} ft from water, inside the {width}-ft buffer"


# subject: the area
BUFFER_DISTURBED = regulatory(
    "buffer_disturbed", "buffer disturbed", BufferEvidence, _amount, Officer.ON_OPEN
)


def _check(view: ConfigView) -> None:
    """An area's nearest_water names one of the site's receiving waters."""
    waters = {w.get("id") for w in view.items("receiving_waters")}
    for i, area in enumerate(view.items("areas")):
        named = area.get("nearest_water")
        if named is not None and named not in waters:
            known = ", ".join(sorted(str(w) for w in waters)) or "none"
            view.problem(
                f"areas[{i}].nearest_water",
                f"{named!r} is not a receiving water of the site (its receiving waters: {known})",
            )


DESCRIPTION = Description(
    key="buffers",
    order=43,
    alerts=(BUFFER_DISTURBED,),
    rule_keys=(number("buffer.no_removal_ft"), number("buffer.trout_ft")),
    check_config=_check,
)
