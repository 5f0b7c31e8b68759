"""Timer tags, typed: what a detector's timer means, as a value, not a string to split.

The engine keeps a timer as ``(at, detector name, tag)``
(:meth:`analytics.detector.Context.schedule`). A tag is either a plain string
that *is* the timer's subject (a sensor id, a duty id, a gauge id: nothing to
parse), or a :class:`TimerTag`: a frozen dataclass per meaning with typed
fields, which the detector's ``on_timer`` matches by type. No detector builds
a tag string or splits one on ``|``.

Snapshots hold a TimerTag as they hold any analytics object, its class and
named fields (analytics/statecodec.py is the one encoder and decoder), so a
snapshot stays readable.

Order. Timers of one detector due at the same instant fire in the order of
their tags, and that order reaches the outputs. A tag orders by the text
siltwatch has always written for it (``due|<duty id>``, ``week|<id>|<t>`` ...,
:meth:`TimerTag.text`), so typing the tags kept every output byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass


class TimerTag:
    """Base of the typed timer tags (each a frozen dataclass)."""

    __slots__ = ()

    def text(self) -> str:
        """The tag as siltwatch always wrote it: it orders timers due at the same instant."""
        raise NotImplementedError

    def __lt__(self, other: object) -> bool:
        if isinstance(other, TimerTag | str):
            return self.text() < order_text(other)
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if isinstance(other, TimerTag | str):
            return self.text() > order_text(other)
        return NotImplemented


Tag = str | TimerTag
"""What a timer carries: its subject's id, or a typed tag."""


def order_text(tag: Tag) -> str:
    """The text a tag orders by (a plain string is its own)."""
    return tag if isinstance(tag, str) else tag.text()


@dataclass(frozen=True, slots=True)
class DutyDue(TimerTag):
    """A duty's deadline: it is overdue now unless it was completed."""

    duty_id: str

    def text(self) -> str:
        return f"due|{self.duty_id}"
