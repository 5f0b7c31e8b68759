"""Time for the agent: an injectable clock, and whether the Pi's clock can be trusted.

Why injectable: tests and the benchmark run the agent against a controlled or
accelerated clock; nothing in ``edge`` calls ``datetime.now`` directly.

Why a sync check: a Raspberry Pi has no RTC battery; after a power cut it
boots with the last saved time (fake-hwclock) or 1970 until NTP answers.
Readings taken then are stamped with the Pi's time and flagged
``clock_unsynced`` (never re-dated by guesswork), so ingest can tell.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import subprocess
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

log = logging.getLogger(__name__)

SANE_YEAR = 2024


class Clock(Protocol):
    def now(self) -> datetime:
        """Current UTC time (aware)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps, in the same scale as ``now``."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Wait ``seconds`` of this clock's time or until ``event`` is set; True if set."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(max(0.0, seconds))


class ScaledClock:
    """Simulated time running ``factor`` times faster than real time from ``start``.

    The benchmark runs a simulated hour in a fraction of one.
    """

    def __init__(self, factor: float, start: datetime | None = None) -> None:
        self.factor = factor
        self._start = start or datetime.now(UTC)
        self._mono0 = time.monotonic()

    def monotonic(self) -> float:
        return (time.monotonic() - self._mono0) * self.factor

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self.monotonic())

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds / self.factor)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(max(0.0, seconds) / self.factor)


class ManualClock:
    """A clock tests move by hand; ``sleep`` advances it instead of waiting."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._mono = 0.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            self._mono += seconds

    def set_wall(self, when: datetime) -> None:
        """Step the wall clock only (NTP correcting a bad boot time)."""
        with self._lock:
            self._now = when

    def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))

    def wait(self, event: threading.Event, seconds: float) -> bool:
        if not event.is_set():
            self.advance(max(0.0, seconds))
        return event.is_set()


@dataclass(frozen=True)
class SyncState:
    synced: bool
    offset_s: float | None = None
    source: str = ""


def _longs(*names: str) -> list[tuple[str, type[ctypes.c_long]]]:
    """Consecutive ``long`` members of a C struct, in order."""
    return [(name, ctypes.c_long) for name in names]


class _Timex(ctypes.Structure):
    """``struct timex`` from <sys/timex.h> (Linux, 64-bit longs); only the head is read."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        *_longs("offset", "freq", "maxerror", "esterror"),
        ("status", ctypes.c_int),
        *_longs("constant", "precision", "tolerance", "time_sec", "time_usec", "tick"),
        ("_rest", ctypes.c_byte * 128),
    ]


TIME_ERROR = 5  # adjtimex return: clock not synchronized (kernel STA_UNSYNC)
STA_NANO = 0x2000


def adjtimex_state() -> SyncState | None:
    """The kernel's view (adjtimex(2), read-only): synced and the NTP offset; None if unavailable."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        tx = _Timex()
        state = libc.adjtimex(ctypes.byref(tx))
    except (OSError, AttributeError):
        return None
    if state < 0:
        return None
    scale = 1e-9 if tx.status & STA_NANO else 1e-6
    return SyncState(state != TIME_ERROR, tx.offset * scale, "adjtimex")


def timedatectl_state() -> SyncState | None:
    """systemd's ``NTPSynchronized`` property; None where timedatectl is missing."""
    try:
        result = subprocess.run(
            ["timedatectl", "show", "-p", "NTPSynchronized", "--value"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    answer = result.stdout.strip()
    if result.returncode != 0 or answer not in ("yes", "no"):
        return None
    return SyncState(answer == "yes", None, "timedatectl")


SyncMethod = Literal["auto", "timedatectl", "adjtimex", "year", "assume_synced"]


class ClockSync:
    """Decides whether the clock is sane; cached for ``recheck_s`` (checks can fork)."""

    def __init__(self, clock: Clock, method: SyncMethod = "auto", recheck_s: float = 60.0) -> None:
        self.clock = clock
        self.method = method
        self.recheck_s = recheck_s
        self._cached: SyncState | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()

    def _probe(self) -> SyncState:
        if self.method == "assume_synced":
            return SyncState(True, None, "assumed")
        if self.method in ("auto", "timedatectl"):
            state = timedatectl_state()
            if state is not None:
                return state
        if self.method in ("auto", "adjtimex"):
            state = adjtimex_state()
            if state is not None:
                return state
        return SyncState(True, None, "year check only")

    def state(self) -> SyncState:
        """Synced only when the year is sane *and* the probe agrees."""
        year_ok = self.clock.now().year >= SANE_YEAR
        with self._lock:
            mono = self.clock.monotonic()
            if self._cached is None or mono - self._checked_at >= self.recheck_s:
                self._cached = self._probe()
                self._checked_at = mono
            cached = self._cached
        if not year_ok:
            return SyncState(False, cached.offset_s, f"year < {SANE_YEAR}")
        return cached
