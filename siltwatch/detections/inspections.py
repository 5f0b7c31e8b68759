"""Inspection duties: routine, after a storm, twice weekly on large sites, quarterly.

NCG01 Part III §A and the packs' inspection rules (Lake George §148-12, Lake
Lure §96-10, the NY and EPA general permits): a qualified inspector must
inspect on a cadence and within a deadline after a qualifying storm. The
detectors (analytics/inspections.py and analytics/rain.py) keep the site's
daily rain record, find storms, create the duties and raise an alert when a
deadline passes with no inspection recorded — that alert is the town's
business from the moment it opens.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING

from siltwatch.detections.base import (
    ConfigView,
    Dashboard,
    Description,
    Evidence,
    OfficerWords,
    Section,
    deadline_duty,
    diagnostic,
    rules_set,
)
from siltwatch.detections.design_storms import DesignStormReason
from siltwatch.panels import Panel, Series
from siltwatch.rulekeys import NON_NEGATIVE, RuleKey, flag, number
from siltwatch.vocabulary import DutyReason

if TYPE_CHECKING:
    from siltwatch.rules import Rules
    from siltwatch.sitemodel import RainGauge, SiteConfig

ROLLING_RAIN_H = 24  # the storm rule's window as the rain panel draws it


class RecordEvidence(Evidence):
    inspector: str
    missing: list[str]
    duties: list[str]


def _lacks(ev: RecordEvidence, _zone: tzinfo) -> str:
    return f"record lacks {', '.join(ev.missing)}"


# Lake Lure 96.05(B)(17)(b): the record's fields; the site's people fix it, not the town.
RECORD_INCOMPLETE = diagnostic(
    "inspection_record_incomplete", "inspection record incomplete", RecordEvidence, _lacks
)
# The design-storm reason is declared with its detection (siltwatch/detections/design_storms.py).
INSPECTION = deadline_duty("inspection", "inspection", (*DutyReason, *DesignStormReason))


def _officer(view: ConfigView) -> OfficerWords | None:
    if rules_set(
        view.rules,
        "inspection.routine_days",
        "inspection.storm_threshold_in",
        "inspection.quarterly",
    ):
        return ("duty", "overdue inspections")
    return None


def _panel(site: SiteConfig, _rules: Rules, gauge: RainGauge) -> Panel:
    return Panel(
        title=f"Rain {gauge.id}",
        unit=site.sensor(gauge.sensor).unit,
        description=(
            "Bars: rain per interval. Line: the rain of the 24 h up to the end of each hour "
            "(right axis), what storm-triggered inspections count."
        ),
        series=(
            Series(gauge.sensor, "rain", "sum", fill="0"),
            Series(
                gauge.sensor, f"{ROLLING_RAIN_H} h total", rolling_h=ROLLING_RAIN_H, right_axis=True
            ),
        ),
        bars=True,
    )


DESCRIPTION = Description(
    key="inspections",
    order=40,
    alerts=(RECORD_INCOMPLETE,),
    duties=(INSPECTION,),
    rule_keys=(
        number("rain.storm_gap_h"),
        number("rain.min_storm_in", NON_NEGATIVE),
        number("inspection.routine_days"),
        number("inspection.twice_weekly_over_acres", NON_NEGATIVE),
        number("inspection.twice_weekly_min_gap_days", NON_NEGATIVE),
        flag("inspection.routine_by_site_log"),
        number("inspection.storm_threshold_in", NON_NEGATIVE),
        number("inspection.storm_window_h"),
        number("inspection.storm_due_h"),
        flag("inspection.storm_due_next_business_day"),
        flag("inspection.storm_resets_routine"),
        flag("inspection.quarterly"),
        flag("inspection.phase"),
        number("inspection.phase_due_days"),
        flag("inspection.phase_area_grading"),
        flag("inspection.phase_temporary_cover"),
        RuleKey("inspection.record_fields", (list,)),
        RuleKey("calendar.business_hours", (str,)),
        RuleKey("calendar.weekend", (list,)),
    ),
    section=Section("rain_gauges", "rain gauge", sensor_refs=(("sensor", "rain"),)),
    officer_sends=_officer,
    dashboard=Dashboard("Rain", 20, _panel),
)
