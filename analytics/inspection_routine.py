"""Routine inspections every N calendar days (reason ``routine``, subject = the site id).

The clock starts at the first event the inspection detector sees for the site
(the first reading of any sensor, or an inspection): siltwatch cannot know
about inspections before it was watching. Every ``inspection.routine_days``
calendar days: a duty due by the end of the local day ``routine_days`` after
the clock start; completing it restarts the clock at the inspection, and so
does a storm inspection where the pack says so (NCG01 Part III §A, see
:mod:`analytics.inspection_storm`). On a large site NY GP Part IV.C's twice
weekly cadence replaces this one (:mod:`analytics.inspection_twice_weekly`).
"""

from __future__ import annotations

from analytics.cited import CitedDays
from analytics.episodes import DutyRecord
from analytics.inspection_desk import DutyDesk
from analytics.inspection_overdue import DutyNote
from analytics.timeutil import iso
from siltwatch.rulepacks import Rules
from siltwatch.vocabulary import DutyReason


def routine_rule(rules: Rules) -> CitedDays | None:
    """The routine cadence in days, where the site's packs set one."""
    value = rules.get("inspection.routine_days")
    return None if value is None else CitedDays(round(float(value.value)), value.cite())


class RoutineCadence:
    """The routine duty of a site: one open at a time, its clock restarted by inspections."""

    def __init__(self, rule: CitedDays, site_id: str) -> None:
        self.rule = rule
        self.site_id = site_id
        self.duty_id: str | None = None  # the current routine duty

    def start(self, t: int, desk: DutyDesk) -> None:
        """The clock (re)starts at ``t``: every N calendar days, by the end of the local day."""
        rule = self.rule
        due = desk.calendar.end_of_calendar_days(t, rule.days)
        note = DutyNote(
            label=f"routine inspection every {rule.days} calendar days",
            cite=rule.cite,
            evidence={"every_days": rule.days, "clock_start": iso(t)},
        )
        self.duty_id = desk.open(DutyReason.ROUTINE, self.site_id, (t, due), note, t).id

    def drives(self, rec: DutyRecord) -> bool:
        """Whether completing ``rec`` restarts this clock (it is the current routine duty)."""
        return rec.id == self.duty_id

    def restart(self, t: int, inspector: str, desk: DutyDesk) -> None:
        """An inspection at ``t`` restarts the clock; it also completes the duty still open."""
        current = desk.record(self.duty_id)
        if current is not None and current.completed_at is None:
            if current.created_at >= t:
                return  # the clock already (re)started at this instant
            desk.complete(current, t, inspector)
        self.start(t, desk)
