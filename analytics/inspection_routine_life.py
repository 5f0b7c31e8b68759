"""Routine inspections over the site's life, as its site log tells it (``inspection.routine_by_site_log``).

Lake George §148-10 A points to the state permit's Part IV for inspections
(NY GP-0-25-001 Part IV.C): a qualified inspector inspects while the site is
under construction, every 7 calendar days, or twice every 7 days when more than
5 acres are disturbed at one time, until final stabilization. Where a pack
sets this key, the site log, not the sensors, says when that is:

* the clock starts at the first disturbance: a ``disturbed``, ``cleared`` or
  ``graded`` row, or the ``start_of_development`` milestone (a sensor reading
  or an inspection before that starts nothing: nothing is yet disturbed);
* it ends at final stabilization: every area of the site with
  ``permanent_cover``. The ``construction_completed`` milestone alone does not
  end it (ground may still be open after the work is done; the protective
  reading); an open routine duty is then completed as "not required". Ground
  opened again starts the clock again;
* the twice-weekly cadence is chosen from the acres open at one time: an area
  is open from its first ``disturbed``/``cleared``/``graded`` row until a
  ``temporary_cover`` or ``permanent_cover`` row (as the disturbed-area limit
  counts them, analytics/site_limits.py); more than
  ``inspection.twice_weekly_over_acres`` (5.0 acres is not more than 5) switches
  to twice weekly from that row, back to weekly when they fall to it or below.
  A duty of the cadence left stays owed until an inspection completes it.

This module keeps the facts (open and covered areas) and says what changed;
the inspection detector (analytics/inspections.py) runs the cadences.
"""

from __future__ import annotations

from enum import StrEnum

from analytics.events import SiteLogEntry
from analytics.site_limits import COVERING, OPENING
from siltwatch.vocabulary import Milestone, SiteEvent


class Change(StrEnum):
    START = "start"  # the first disturbance: the routine clock starts
    STOP = "stop"  # final stabilization: no more routine duties
    RESUME = "resume"  # ground opened again after final stabilization
    ACRES = "acres"  # the open acres changed (the cadence may switch)


class RoutineLife:
    """What the site log says about the routine inspections' span and cadence."""

    def __init__(self, acres: dict[str, float], cite: str) -> None:
        self.acres = dict(acres)  # area id -> acres (the site file's)
        self.cite = cite
        self.started = False
        self.stopped = False
        self.open_areas: set[str] = set()
        self.covered: set[str] = set()  # areas with permanent cover

    def open_acres(self) -> float:
        return round(sum(self.acres[a] for a in self.open_areas), 4)

    def on_entry(self, entry: SiteLogEntry) -> list[Change]:
        """Take one site-log row; what it changes, in order."""
        out: list[Change] = []
        event, area = entry.event, entry.area
        start = event in OPENING or (
            event == SiteEvent.MILESTONE and entry.detail == Milestone.START_OF_DEVELOPMENT
        )
        if start and not self.started:
            self.started = True
            out.append(Change.START)
        if area is None or area not in self.acres:
            return out
        before = self.open_acres()
        if event in OPENING:
            self.open_areas.add(area)
            self.covered.discard(area)
            if self.stopped:
                self.stopped = False
                out.append(Change.RESUME)
        elif event in COVERING:
            self.open_areas.discard(area)
            if event == SiteEvent.PERMANENT_COVER:
                self.covered.add(area)
            if self.started and not self.stopped and self.covered == set(self.acres):
                self.stopped = True
                out.append(Change.STOP)
        if self.open_acres() != before:
            out.append(Change.ACRES)
        return out

    @property
    def running(self) -> bool:
        return self.started and not self.stopped
