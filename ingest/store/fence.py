"""A paused owner must not write on waking: it checks that it still owns its sites first.

Why: ``serve`` frozen (SIGSTOP, a VM paused, a laptop lid) past its MQTT
keepalive has its lease cleared by its last will; a second ``serve`` then
starts for the site. When the first resumes, its threads carry on where they
stopped: the commit worker would store the batch in its hands, and paho would
reconnect and publish its lease again over the new owner's (issue 23: both
served, each storing every reading).

:class:`FreezeWatch` notices that this process was not running: a heartbeat
thread ticks every :data:`BEAT_S`; a gap longer than :data:`FREEZE_S` (or a
lost connection, :meth:`suspect`) makes the ownership *suspect*. While it is
suspect nothing is committed; ingest/mqtt/session.py reads the retained leases
again, and either finds them still its own (or free) and goes on, or finds
another owner and stops, saying so, without writing or acknowledging anything.
Each lease carries a ``token`` (the claim's time in ms, larger than any token
it saw), so a newer claim is told from an older one.
"""

from __future__ import annotations

import threading
import time

BEAT_S = 0.2
FREEZE_S = 5.0


class FreezeWatch:
    """Suspects ownership after a pause of the whole process or a lost connection."""

    def __init__(self, freeze_s: float = FREEZE_S) -> None:
        self.freeze_s = freeze_s
        self._lock = threading.Lock()
        self._beat = time.monotonic()
        self._suspect = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="freeze-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(BEAT_S):
            self.suspected()  # notes a gap before moving the beat on
            with self._lock:
                self._beat = time.monotonic()

    def suspect(self) -> None:
        with self._lock:
            self._suspect = True

    def suspected(self) -> bool:
        """Whether ownership must be checked before the next write."""
        with self._lock:
            if time.monotonic() - self._beat > self.freeze_s:
                self._suspect = True
            return self._suspect

    def cleared(self) -> None:
        """Ownership checked: writes may go on."""
        with self._lock:
            self._suspect = False
            self._beat = time.monotonic()


def lease_token(lease: bytes) -> int | None:
    """The ``token`` of a retained lease, or None (an empty or an older lease)."""
    import json

    try:
        token = json.loads(lease).get("token")
    except (ValueError, AttributeError):
        return None
    return token if isinstance(token, int) else None
