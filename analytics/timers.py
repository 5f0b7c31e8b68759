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
from typing import ClassVar


class TimerTag:
    """Base of the typed timer tags (each a frozen dataclass).

    A tag declares its ``word`` (what the timer means) and its fields; its text is
    the word and then each field's ``str`` in declared order, each after ``sep``
    (``due|<duty id>``, ``idle:<area>``). One rule writes every tag's text, so the
    order of timers due at the same instant is kept in one place.
    """

    __slots__ = ()
    __match_args__: ClassVar[tuple[str, ...]]  # the fields, in order (@dataclass writes it)
    word: ClassVar[str]
    sep: ClassVar[str] = "|"

    def text(self) -> str:
        """The tag as siltwatch always wrote it: it orders timers due at the same instant."""
        values = (str(getattr(self, name)) for name in self.__match_args__)
        return self.sep.join((self.word, *values))

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

    word = "due"
    duty_id: str
