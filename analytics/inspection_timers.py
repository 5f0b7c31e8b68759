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

    word = TimerKind.WEEK
    period: date


@dataclass(frozen=True, slots=True)
class SecondTimer(TimerTag):
    """The second inspection of a twice-weekly period may now be done."""

    word = TimerKind.SECOND
    period: date
    first_day: date

    def text(self) -> str:  # its two days stand together, after a comma
        return f"{self.word}|{self.period.isoformat()},{self.first_day.isoformat()}"


@dataclass(frozen=True, slots=True)
class QuarterTimer(TimerTag):
    """A calendar quarter starts (its first local day)."""

    word = TimerKind.QUARTER
    quarter: date


@dataclass(frozen=True, slots=True)
class CoverTimer(TimerTag):
    """The configured permanent-cover date starts: the quarterly duties end."""

    word = TimerKind.COVER
    day: date


InspectionTimer = DueTimer | WeekTimer | SecondTimer | QuarterTimer | CoverTimer
