"""Design storms: rain beyond the storms the site's controls are designed for.

Lake George §148-11 I(3)(c)[1],[2] designs stormwater controls for the
10-year/24-hour storm and attenuates the 25-year (and, over five acres, the
100-year) storm; Lake Lure 96.08(A) designs erosion and sediment controls for
the 10-year storm, or the 25-year storm where the project discharges to a lake
or natural watercourse. The site declares each design storm's 24-hour depth
(``[[design_storms]]``, from NOAA Atlas 14 for its location). When a gauge's
rain of the last 24 h reaches one, the rain detector (analytics/rain.py)
publishes ``DesignStormExceeded``; ``design_storm_exceeded`` (info, siltwatch's
own record: the town is not told) stays open until that storm ends, the
practices get an inspection duty (reason ``design_storm``, due per
``design_storm.inspection_due_days``), and the drain-time and sediment-trap
alerts raised from then until the next storm say that the storm was beyond the
design.

The site's ``rain_day_in`` / ``rain_day_mm`` (Lake Lure 96.03: working days are
days on which the weather permits work) needs the site's own gauges too; it is
checked here, with the design storms, as the other use of the daily rain record
a site file switches on.
"""

from __future__ import annotations

from datetime import tzinfo
from enum import StrEnum

from siltwatch.detections.base import (
    ConfigView,
    Description,
    Evidence,
    diagnostic,
    repeated_names,
    short_number,
)
from siltwatch.rulekeys import NON_NEGATIVE, RuleKey, number


class DesignStormReason(StrEnum):
    """Why an inspection duty exists (``reason`` in DUTIES.jsonl; kind ``inspection``)."""

    DESIGN_STORM = "design_storm"  # subject: the storm id; the inspection description lists it


class DesignStormEvidence(Evidence):
    gauge: str
    design_storm: str  # its name, as the site file gives it
    design_depth_in: float
    depth_24h_in: float
    window_start: str  # the 24 h whose rain reached it: (window_start, window_end]
    window_end: str


def _amount(ev: DesignStormEvidence, _zone: tzinfo) -> str:
    depth, design = short_number(ev.depth_24h_in, 2), short_number(ev.design_depth_in, 2)
    return f"{depth} in in 24 h, beyond the {ev.design_storm} depth of {design} in"


# subject: the rain gauge id
DESIGN_STORM_EXCEEDED = diagnostic(
    "design_storm_exceeded", "design storm exceeded", DesignStormEvidence, _amount
)


def _check(view: ConfigView) -> None:
    """Design storms and rain days are read at the site's own gauges; names are unique."""
    has_gauges = bool(view.items("rain_gauges"))
    storms = view.items("design_storms")
    if storms and not has_gauges:
        view.problem(
            "design_storms",
            "design storms are measured at the site's rain gauges: add a [[rain_gauges]] entry",
        )
    for i, name, first in repeated_names(storms, "name"):
        view.problem(
            f"design_storms[{i}].name",
            f"duplicate design storm {name!r} (also at design_storms[{first}])",
        )
    site = view.data.get("site")
    if isinstance(site, dict) and not has_gauges:
        for key in ("rain_day_in", "rain_day_mm"):
            if key in site:
                view.problem(
                    f"site.{key}",
                    "rain days are read at the site's rain gauges: add a [[rain_gauges]] entry",
                )


DESCRIPTION = Description(
    key="design_storms",
    # Before the inspection duties (40): its detector lives in analytics.rain, whose
    # rain detector the inspections build; it completes its own duties first.
    order=39,
    engine_module="analytics.rain",
    alerts=(DESIGN_STORM_EXCEEDED,),
    rule_keys=(
        RuleKey("design_storm.standard", (str,)),
        number("design_storm.inspection_due_days", NON_NEGATIVE),
    ),
    check_config=_check,
)
