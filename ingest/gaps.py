"""Completeness: the readings a broker lost are seen, fetched back from the station, or
recorded as lost — never silently absent.

Why (design.md, "Wire format": a broker's PUBACK is not the end of a reading's
journey): Mosquitto 2.0.11 stopped with SIGTERM keeps nothing for a persistent
session that was connected at the stop, so readings it had acknowledged to the
stations vanish (issue 23: 14,169 of 24,365 in one 40 s restart). Each station
numbers its sensors' readings (``seq``, kept on its disk) and keeps what it sent
for a retention window (edge/outbox.py). So the service can see a hole and ask:

* **A gap** is a missing run of seqs of one sensor: a reading arrives whose seq
  is more than one past the highest seen, or the station's status says it took
  more readings than arrived while it has nothing waiting (``backlog`` 0).
* **A request** (siltwatch.schema.ResendRequest, published by
  ingest/mqtt/session.py on the station's command topic) goes out
  ``first_request_s`` after the gap opened (readings still in flight or out of
  order fill it first), then with exponential backoff (siltwatch/backoff.py),
  at most ``max_per_tick`` at a time: a request per gap, never a storm.
* **Lost for good**: the station's status (``health.held``) says its oldest
  held reading of the sensor is past the gap (evicted), or no answer filled the
  gap within ``deadline_s`` (the station is gone). The gap becomes a
  :class:`LostRange`, which the service stores as a ``data_gap`` row.

Pure bookkeeping, no I/O: the service clock (ms) comes in with each call, so
tests pin every wait. The store is the truth here too: what changed in a commit
(:meth:`GapTracker.changed`, a :class:`SensorWatch` per sensor) is written in that
commit, and a restarted service restores it (:meth:`GapTracker.restore`) and asks
for its open gaps again at once, so neither a gap nor the highest seq seen is
forgotten by a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from analytics.timeutil import MS_PER_S
from siltwatch import backoff
from siltwatch.schema import HeldReadings

log = logging.getLogger(__name__)

SensorKey = tuple[str, str]  # (station, sensor)


@dataclass(frozen=True)
class GapPolicy:
    """How the service asks for missing readings (``serve`` uses the defaults)."""

    first_request_s: float = 5.0  # a gap this young may still fill by itself
    retry_base_s: float = 15.0  # then the wait doubles ...
    retry_cap_s: float = 600.0  # ... up to this
    deadline_s: float = 6 * 3600.0  # unanswered this long: the station is gone, recorded
    max_per_tick: int = 20  # requests sent at once, over every gap
    max_range: int = 10_000  # readings one request asks for (one batch of the station's)
    max_gaps_per_sensor: int = 1_000  # beyond it the two nearest gaps are merged
    max_jump: int = 10_000_000  # a seq further ahead than this is a new count, not a gap


@dataclass
class Gap:
    """Seqs ``lo`` .. ``hi`` (inclusive) of one sensor, not received."""

    station: str
    sensor: str
    lo: int
    hi: int
    opened_at: int  # service clock, ms
    after_t: int | None  # event time of the reading before the gap, when known
    before_t: int | None  # event time of the reading after it, when known
    requests: int = 0
    next_request_at: int = 0

    @property
    def size(self) -> int:
        return self.hi - self.lo + 1


@dataclass(frozen=True)
class LostRange:
    """A gap no one can fill any more: a ``data_gap`` record."""

    station: str
    sensor: str
    seq_from: int
    seq_to: int
    time_from: int | None  # the last reading before it (event time, ms), when known
    time_to: int | None  # the first reading after it, when known
    reason: str
    recorded_at: int

    @property
    def readings(self) -> int:
        return self.seq_to - self.seq_from + 1


@dataclass(frozen=True)
class SensorWatch:
    """What the tracker knows of one sensor, as the store keeps it.

    ``gaps``: the open gaps as (lo, hi, opened_at, after_t, before_t, requests).
    """

    station: str
    sensor: str
    high: int
    high_t: int
    first: int
    received: int
    lost: int
    gaps: tuple[tuple[int, int, int, int | None, int | None, int], ...]


@dataclass(frozen=True)
class Request:
    """Ask ``station`` for ``sensor``'s seqs ``seq_from`` .. ``seq_to`` again."""

    station: str
    sensor: str
    seq_from: int
    seq_to: int
    request_id: str


@dataclass
class _Track:
    high: int  # the highest seq seen
    high_t: int  # its event time
    first: int  # the first seq seen (completeness counts from it)
    received: int = 1
    lost: int = 0
    gaps: list[Gap] = field(default_factory=list)


class GapTracker:
    """Per (station, sensor): the highest seq seen, the open gaps, what was lost."""

    def __init__(self, policy: GapPolicy | None = None) -> None:
        self.policy = policy or GapPolicy()
        self._tracks: dict[SensorKey, _Track] = {}
        self._serial = 0
        self._changed: set[SensorKey] = set()

    # --- what arrives ---------------------------------------------------------------

    def reading(self, station: str, sensor: str, seq: int | None, t: int, now: int) -> None:
        """One stored (or duplicate) reading."""
        if seq is None:
            return
        key = (station, sensor)
        track = self._tracks.get(key)
        if track is None:
            self._tracks[key] = _Track(high=seq, high_t=t, first=seq)
            self._changed.add(key)
            return
        if seq > track.high + self.policy.max_jump:
            # Not a hole of millions of readings: a station whose count started again
            # elsewhere (or a bogus seq). Count from here; nothing is asked for.
            log.warning(
                "station %s sensor %s: seq jumped from %d to %d; counting from there",
                station,
                sensor,
                track.high,
                seq,
            )
            self._tracks[key] = _Track(high=seq, high_t=t, first=seq)
            self._changed.add(key)
            return
        if seq > track.high:
            self._changed.add(key)
            if seq > track.high + 1:
                self._open(
                    track, Gap(station, sensor, track.high + 1, seq - 1, now, track.high_t, t)
                )
            track.high, track.high_t = seq, t
            track.received += 1
            return
        for i, gap in enumerate(track.gaps):
            if gap.lo <= seq <= gap.hi:
                self._changed.add(key)
                track.received += 1
                self._fill(track, i, seq, t)
                return
        # seq <= high and in no gap: a duplicate (a resend, a QoS 1 redelivery)

    def status(
        self,
        station: str,
        held: Iterable[HeldReadings],
        backlog: int | None,
        now: int,
    ) -> list[LostRange]:
        """A station's status: its held ranges. What it no longer holds is lost; what it
        took but never delivered (nothing waiting) is a gap."""
        lost: list[LostRange] = []
        for h in held:
            track = self._tracks.get((station, h.sensor))
            if track is None:
                continue
            if h.next_seq <= track.high:
                continue  # an older status, or an outbox reset: nothing to learn
            self._changed.add((station, h.sensor))
            tail = h.next_seq - 1 - track.high
            if backlog == 0 and 0 < tail <= self.policy.max_jump:
                self._open(
                    track,
                    Gap(station, h.sensor, track.high + 1, h.next_seq - 1, now, track.high_t, None),
                )
                track.high = h.next_seq - 1
            keep: list[Gap] = []
            for gap in track.gaps:
                if gap.lo < h.oldest_seq:
                    end = min(gap.hi, h.oldest_seq - 1)
                    oldest = "nothing" if h.oldest_seq >= h.next_seq else f"seq {h.oldest_seq} on"
                    lost.append(
                        self._lose(
                            track,
                            gap,
                            gap.lo,
                            end,
                            now,
                            f"evicted: station {station} no longer holds these readings "
                            f"(it holds {oldest} of sensor {h.sensor}; its retention ran out)",
                        )
                    )
                    if end == gap.hi:
                        continue
                    gap.lo = end + 1
                    gap.after_t = None
                keep.append(gap)
            track.gaps = keep
        return lost

    # --- what to do ---------------------------------------------------------------------

    def requests(self, now: int) -> list[Request]:
        """The resend requests due now (at most ``max_per_tick``), oldest gap first."""
        policy = self.policy
        due = sorted(
            (g for t in self._tracks.values() for g in t.gaps if g.next_request_at <= now),
            key=lambda g: (g.opened_at, g.station, g.sensor, g.lo),
        )[: policy.max_per_tick]
        out = []
        for gap in due:
            wait_s = backoff.delay(gap.requests, policy.retry_base_s, policy.retry_cap_s)
            gap.requests += 1
            gap.next_request_at = now + round(wait_s * MS_PER_S)
            self._serial += 1
            hi = min(gap.hi, gap.lo + policy.max_range - 1)
            out.append(
                Request(
                    gap.station,
                    gap.sensor,
                    gap.lo,
                    hi,
                    f"{gap.station}/{gap.sensor}/{gap.lo}-{hi}/{gap.requests}.{self._serial}",
                )
            )
        return out

    def expired(self, now: int) -> list[LostRange]:
        """Gaps no answer filled within ``deadline_s``: lost (the station is gone)."""
        limit = round(self.policy.deadline_s * MS_PER_S)
        lost = []
        for key, track in self._tracks.items():
            keep = []
            for gap in track.gaps:
                if now - gap.opened_at >= limit:
                    self._changed.add(key)
                    lost.append(
                        self._lose(
                            track,
                            gap,
                            gap.lo,
                            gap.hi,
                            now,
                            f"no answer: station {gap.station} did not send these readings "
                            f"again within {self.policy.deadline_s:,.0f} s of "
                            f"{gap.requests} requests",
                        )
                    )
                else:
                    keep.append(gap)
            track.gaps = keep
        return lost

    # --- what is known ------------------------------------------------------------------

    def completeness(self) -> dict[SensorKey, tuple[int, int]]:
        """Per (station, sensor): (received, expected) since the service first saw it."""
        return {key: (t.received, t.high - t.first + 1) for key, t in sorted(self._tracks.items())}

    def open_gaps(self) -> list[Gap]:
        return [g for _key, t in sorted(self._tracks.items()) for g in t.gaps]

    # --- what the store keeps -----------------------------------------------------------

    def changed(self) -> list[SensorWatch]:
        """The sensors whose state changed since the last call (to write in this commit)."""
        keys, self._changed = sorted(self._changed), set()
        return [self._watch(key, self._tracks[key]) for key in keys if key in self._tracks]

    def restore(self, watches: Iterable[SensorWatch]) -> None:
        """Take up what the store kept (a restart): every open gap is asked for at the
        first :meth:`requests`, its backoff going on from the requests already made."""
        for w in watches:
            track = _Track(high=w.high, high_t=w.high_t, first=w.first, received=w.received)
            track.lost = w.lost
            track.gaps = [
                Gap(w.station, w.sensor, lo, hi, opened, after, before, asked, 0)
                for lo, hi, opened, after, before, asked in w.gaps
            ]
            self._tracks[(w.station, w.sensor)] = track

    @staticmethod
    def _watch(key: SensorKey, t: _Track) -> SensorWatch:
        gaps = tuple((g.lo, g.hi, g.opened_at, g.after_t, g.before_t, g.requests) for g in t.gaps)
        return SensorWatch(key[0], key[1], t.high, t.high_t, t.first, t.received, t.lost, gaps)

    # --- inside -------------------------------------------------------------------------

    def _open(self, track: _Track, gap: Gap) -> None:
        gap.next_request_at = gap.opened_at + round(self.policy.first_request_s * MS_PER_S)
        track.gaps.append(gap)
        log.info(
            "gap: station %s sensor %s seq %d..%d (%d readings) missing",
            gap.station,
            gap.sensor,
            gap.lo,
            gap.hi,
            gap.size,
        )
        if len(track.gaps) > self.policy.max_gaps_per_sensor:
            # Bound the memory: merge the two gaps nearest each other (the seqs between
            # them are asked for again; ingest dedupes what comes twice).
            gaps = track.gaps
            i = min(range(len(gaps) - 1), key=lambda k: gaps[k + 1].lo - gaps[k].hi)
            a, b = gaps[i], gaps[i + 1]
            track.received -= b.lo - a.hi - 1
            gaps[i : i + 2] = [
                Gap(a.station, a.sensor, a.lo, b.hi, a.opened_at, a.after_t, b.before_t)
            ]
            gaps[i].next_request_at = a.next_request_at

    def _fill(self, track: _Track, i: int, seq: int, t: int) -> None:
        gap = track.gaps[i]
        if gap.lo == gap.hi:
            del track.gaps[i]
        elif seq == gap.lo:
            gap.lo, gap.after_t = seq + 1, t
        elif seq == gap.hi:
            gap.hi, gap.before_t = seq - 1, t
        else:
            rest = Gap(
                gap.station, gap.sensor, seq + 1, gap.hi, gap.opened_at, t, gap.before_t,
                gap.requests, gap.next_request_at,
            )  # fmt: skip
            gap.hi, gap.before_t = seq - 1, t
            track.gaps.insert(i + 1, rest)

    @staticmethod
    def _lose(track: _Track, gap: Gap, lo: int, hi: int, now: int, reason: str) -> LostRange:
        track.lost += hi - lo + 1
        log.warning(
            "data gap recorded: station %s sensor %s seq %d..%d (%d readings): %s",
            gap.station,
            gap.sensor,
            lo,
            hi,
            hi - lo + 1,
            reason,
        )
        return LostRange(
            gap.station,
            gap.sensor,
            lo,
            hi,
            gap.after_t if lo == gap.lo else None,
            gap.before_t if hi == gap.hi else None,
            reason,
            now,
        )
