"""The inspection duties' timers, typed: what each one means, as a timer tag.

The inspection regimes schedule the typed timers below (analytics/timers.py:
each is a :class:`~analytics.timers.TimerTag`) and the inspection detector
matches them by type when they fire; nothing builds or parses a tag string.

Each timer's ``text`` is the tag siltwatch has always written (``due|<duty
id>``, ``quarter|<date>`` ...): timers due at the same instant fire in the
order of those texts, so keeping them keeps the order of the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from enum import StrEnum

from analytics.timers import DutyDue, TimerTag


class TimerKind(StrEnum):
    """The kinds of inspection timer: the part of the tag text before ``|``."""

    DUE = "due"
    WEEK = "tw-period"
    SECOND = "tw-second"
    QUARTER = "quarter"
    COVER = "cover"


DueTimer = DutyDue
"""A duty's deadline: it is overdue now unless it was completed (``due|<duty id>``)."""


@dataclass(frozen=True, slots=True)
class WeekTimer(TimerTag):
    """A new 7-day period of the twice-weekly cadence starts (its first local day)."""

    period: date

    def text(self) -> str:
        return f"{TimerKind.WEEK}|{self.period.isoformat()}"


@dataclass(frozen=True, slots=True)
class SecondTimer(TimerTag):
    """The second inspection of a twice-weekly period may now be done."""

    period: date
    first_day: date

    def text(self) -> str:
        return f"{TimerKind.SECOND}|{self.period.isoformat()},{self.first_day.isoformat()}"


@dataclass(frozen=True, slots=True)
class QuarterTimer(TimerTag):
    """A calendar quarter starts (its first local day)."""

    quarter: date

    def text(self) -> str:
        return f"{TimerKind.QUARTER}|{self.quarter.isoformat()}"


@dataclass(frozen=True, slots=True)
class CoverTimer(TimerTag):
    """The configured permanent-cover date starts: the quarterly duties end."""

    day: date

    def text(self) -> str:
        return f"{TimerKind.COVER}|{self.day.isoformat()}"


InspectionTimer = DueTimer | WeekTimer | SecondTimer | QuarterTimer | CoverTimer
