"""Phase inspections (reason ``phase``, subject = the milestone).

Lake Lure 96.05(B)(17)(c): "The inspection shall be performed during or after
each of the following phases of a plan: (i) installation of perimeter erosion
and sediment control measures; (ii) clearing and grubbing of existing ground
cover; (iii) completion of any phase of grading of slopes or fills ...; (iv)
completion of storm drainage facilities; (v) completion of construction or
development". The site log's ``milestone`` rows mark the phases; each creates
an inspection duty, completed like any other by the next inspection. The
ordinance names no deadline: ``inspection.phase_due_days`` is siltwatch's
default, cited as such (the duty is due at the end of that local day).

The phases are not only site-wide. (c)(iii) asks for an inspection after "any
phase of grading of slopes or fills", and 96.05(B)(17) after "each phase of the
plan has been completed and after establishment of temporary ground cover": an
area's ``graded`` row (``inspection.phase_area_grading``) and its
``temporary_cover`` row (``inspection.phase_temporary_cover``) each create an
inspection duty for that area (subject ``<area>:<event>``), due as the
milestone ones are. A site-wide grading milestone still creates its own: the
law asks for both, and one inspection after both completes both.
"""

from __future__ import annotations

from analytics.cited import CitedDays
from analytics.inspection_desk import DutyDesk
from analytics.inspection_overdue import DutyNote
from analytics.timeutil import iso
from siltwatch.rulepacks import Rules
from siltwatch.vocabulary import DutyReason, Milestone, SiteEvent

# The milestones that are the ordinance's phases, with its words.
PHASES: dict[str, str] = {
    Milestone.CONTROLS_INSTALLED: "(i) installation of perimeter erosion and sediment controls",
    Milestone.CLEARING_COMPLETED: "(ii) clearing and grubbing of existing ground cover",
    Milestone.ROUGH_GRADING_COMPLETED: "(iii) completion of a phase of grading (rough grading)",
    Milestone.FINAL_GRADING_COMPLETED: "(iii) completion of a phase of grading (final grading)",
    Milestone.STORM_DRAINAGE_COMPLETED: "(iv) completion of storm drainage facilities",
    Milestone.CONSTRUCTION_COMPLETED: "(v) completion of construction or development",
}


# The rows of one area that are phases, with the law's words.
AREA_PHASES: dict[str, str] = {
    SiteEvent.GRADED: "completion of a phase of grading of slopes or fills",
    SiteEvent.TEMPORARY_COVER: "establishment of temporary ground cover",
}


def area_phase_rules(rules: Rules) -> dict[str, CitedDays]:
    """The area rows that start a phase inspection under the site's packs, each with its
    own citation and the phase deadline (siltwatch's default, cited as such)."""
    asked = {
        SiteEvent.GRADED: rules.get("inspection.phase_area_grading"),
        SiteEvent.TEMPORARY_COVER: rules.get("inspection.phase_temporary_cover"),
    }
    found: dict[str, CitedDays] = {}
    for event, rule in asked.items():
        if rule is not None and rule.value is True:
            due = rules.require("inspection.phase_due_days")
            found[event] = CitedDays(int(due.value), f"{rule.cite()}; due per {due.cite()}")
    return found


def phase_rule(rules: Rules) -> CitedDays | None:
    """The days a phase inspection is due in, where the site's packs ask for phase inspections."""
    phase = rules.get("inspection.phase")
    if phase is None or phase.value is not True:
        return None
    due = rules.require("inspection.phase_due_days")
    return CitedDays(int(due.value), f"{phase.cite()}; due per {due.cite()}")


class PhaseDuties:
    """A duty for each phase milestone the site log records."""

    def __init__(self, rule: CitedDays, area_rules: dict[str, CitedDays] | None = None) -> None:
        self.rule = rule
        self.area_rules = area_rules or {}

    def on_area_row(self, event: str, area: str, t: int, desk: DutyDesk) -> None:
        """An area's ``graded`` or ``temporary_cover`` row, where the packs ask for it."""
        rule = self.area_rules.get(event)
        if rule is None:
            return
        words = AREA_PHASES[event]
        note = DutyNote(
            label=f"inspection of area {area} after {words}",
            cite=rule.cite,
            evidence={"area": area, "event": event, "reached_at": iso(t)},
        )
        due = desk.calendar.end_of_calendar_days(t, rule.days)
        desk.open(DutyReason.PHASE, f"{area}:{event}", (t, due), note, t)

    def on_milestone(self, milestone: str, t: int, desk: DutyDesk) -> None:
        words = PHASES.get(milestone)
        if words is None:
            return
        rule = self.rule
        note = DutyNote(
            label=f"phase inspection after {words}",
            cite=rule.cite,
            evidence={"milestone": milestone, "reached_at": iso(t)},
        )
        due = desk.calendar.end_of_calendar_days(t, rule.days)
        desk.open(DutyReason.PHASE, milestone, (t, due), note, t)
