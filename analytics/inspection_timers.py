"""The inspection duties' timers, typed: what each one means, and its tag in one place.

The engine keeps a timer as ``(at, detector name, tag)`` with a plain string
tag (that keeps its queue and its snapshot simple). The inspection regimes
never build or parse such strings: they schedule a typed timer below, and
:func:`encode` / :func:`decode` are the only code that knows the tag format.

The tag texts are the ones siltwatch has always written (``due|<duty id>``,
``quarter|<date>`` ...): timers due at the same instant fire in the order of
their tags, so keeping the texts keeps the order of the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from enum import StrEnum


class TimerKind(StrEnum):
    """The kinds of inspection timer: the part of the tag before ``|``."""

    DUE = "due"
    WEEK = "tw-period"
    SECOND = "tw-second"
    QUARTER = "quarter"
    COVER = "cover"


@dataclass(frozen=True, slots=True)
class DueTimer:
    """A duty's deadline: it is overdue now unless it was completed."""

    duty_id: str


@dataclass(frozen=True, slots=True)
class WeekTimer:
    """A new 7-day period of the twice-weekly cadence starts (its first local day)."""

    period: date


@dataclass(frozen=True, slots=True)
class SecondTimer:
    """The second inspection of a twice-weekly period may now be done."""

    period: date
    first_day: date


@dataclass(frozen=True, slots=True)
class QuarterTimer:
    """A calendar quarter starts (its first local day)."""

    quarter: date


@dataclass(frozen=True, slots=True)
class CoverTimer:
    """The configured permanent-cover date starts: the quarterly duties end."""

    day: date


InspectionTimer = DueTimer | WeekTimer | SecondTimer | QuarterTimer | CoverTimer


def encode(timer: InspectionTimer) -> str:
    """The engine tag of ``timer``."""
    match timer:
        case DueTimer(duty_id):
            return f"{TimerKind.DUE}|{duty_id}"
        case WeekTimer(period):
            return f"{TimerKind.WEEK}|{period.isoformat()}"
        case SecondTimer(period, first_day):
            return f"{TimerKind.SECOND}|{period.isoformat()},{first_day.isoformat()}"
        case QuarterTimer(quarter):
            return f"{TimerKind.QUARTER}|{quarter.isoformat()}"
        case CoverTimer(day):
            return f"{TimerKind.COVER}|{day.isoformat()}"


def decode(tag: str) -> InspectionTimer | None:
    """The timer an engine tag stands for; None for a tag this module did not write."""
    kind, _, arg = tag.partition("|")
    if kind == TimerKind.DUE:
        return DueTimer(arg)
    if kind == TimerKind.WEEK:
        return WeekTimer(date.fromisoformat(arg))
    if kind == TimerKind.SECOND:
        period, first_day = arg.split(",")
        return SecondTimer(date.fromisoformat(period), date.fromisoformat(first_day))
    if kind == TimerKind.QUARTER:
        return QuarterTimer(date.fromisoformat(arg))
    if kind == TimerKind.COVER:
        return CoverTimer(date.fromisoformat(arg))
    return None
