"""The site log's maintenance rows: a practice's schedule, and its maintenance done.

``maintenance_scheduled``: ``<practice> every <N> days [free text]`` (the
schedule the plan sets for that practice, from then on) or ``<practice>
removed [free text]`` (the practice is gone: nothing more is owed);
``maintained``: ``<practice> [free text]``. A practice is named by one word
(``silt-fence-east``, ``basin-a``): the site file's id of a practice or trap,
or the plan's name of any other erosion and sediment control.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCHEDULE = re.compile(r"^(\S+)\s+every\s+(\d+)\s+days?\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
_REMOVED = re.compile(r"^(\S+)\s+removed\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
FORMAT = (
    "'<practice> every <N> days' (e.g. 'silt-fence-east every 7 days, after each rain') "
    "or '<practice> removed'"
)


@dataclass(frozen=True)
class Schedule:
    """One ``maintenance_scheduled`` row: ``every_days`` None when the practice was removed."""

    practice: str
    every_days: int | None
    text: str


def parse_schedule(detail: str | None) -> Schedule:
    """The schedule a ``maintenance_scheduled`` row states; ValueError saying the format."""
    text = (detail or "").strip()
    if m := _SCHEDULE.match(text):
        days = int(m.group(2))
        if days < 1:
            raise ValueError(f"a maintenance schedule runs every 1 day or more; got {days}")
        return Schedule(m.group(1), days, m.group(3).strip())
    if m := _REMOVED.match(text):
        return Schedule(m.group(1), None, m.group(2).strip())
    given = f"got {text[:60]!r}" if text else "none given"
    raise ValueError(f"event 'maintenance_scheduled' names {FORMAT}; {given}")


def maintained_practice(detail: str | None) -> str:
    """The practice a ``maintained`` row names (its first word); ValueError when none."""
    words = (detail or "").split()
    if not words:
        raise ValueError(
            "event 'maintained' names the practice maintained (its first word); none given"
        )
    return words[0]
