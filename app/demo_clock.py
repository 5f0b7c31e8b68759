"""The demo's own clock: its week ends *now*, and time goes on from there.

``siltwatch demo`` replays a scripted storm week from May 2026. Read against
the wall clock, every open duty would be "overdue by 210 days" and a form
typed into the console would be dated months after the data. The demo
therefore lives in its own time: :class:`DemoClock` starts at the end of the
week (the newest event time of its recordings) and runs at the wall clock's
pace from there, so the console, the messages and the forms all say "now" in
the demo's time ("overdue by 4.5 days").

Two readings of it, because the live engine (analytics/engine.py) judges time
by arrivals: :meth:`DemoClock.now_ms` is the people's now (the console, the
forms, the messages); :meth:`DemoClock.arrival_ms` is when the service sees
messages arrive. While the stations flush the week they are the same. Once the
stations have sent everything they go quiet, and the service must see them
silent for longer than the station idle time before event time runs on at the
clock's pace (the module docstring of analytics/engine.py): :meth:`quiet`
moves arrival time on by that much, so event time runs just ahead of the
people's now and a form submitted in the console is judged within seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MS_PER_S = 1000
QUIET_MARGIN_MS = 60 * MS_PER_S  # beyond the idle time: the stations are surely silent


class DemoClock:
    """Epoch milliseconds in the demo's time: ``anchor_ms`` at construction, then on."""

    def __init__(self, anchor_ms: int, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.anchor_ms = anchor_ms
        self._monotonic = monotonic
        self._t0 = monotonic()
        self._lead_ms = 0

    def now_ms(self) -> int:
        """The people's now: the end of the week plus the time the demo has run."""
        return self.anchor_ms + round((self._monotonic() - self._t0) * MS_PER_S)

    def seconds(self) -> float:
        """:meth:`now_ms` in epoch seconds (the console's and the channels' clocks)."""
        return self.now_ms() / MS_PER_S

    def arrival_ms(self) -> int:
        """When the service sees a message arrive (see the module docstring)."""
        return self.now_ms() + self._lead_ms

    def quiet(self, station_idle_ms: int) -> None:
        """The stations have sent their week: from now on the service finds them silent."""
        self._lead_ms = max(self._lead_ms, station_idle_ms + QUIET_MARGIN_MS)
