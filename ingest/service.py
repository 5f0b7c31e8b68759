"""The live ingest service: messages in, committed to the store, judged, alerts dispatched.

The two principles of design.md are this module's job:

* **The store is the truth; engine state is a cache.** A batch of messages
  is decoded and committed in one transaction (a group commit) and only then
  acknowledged (``on_committed``); the engine is fed afterwards. On start the
  service restores the newest usable snapshot and replays from the store
  everything stored after it (``Recovery``), so a restart anywhere gives the
  alerts an uninterrupted run gives; a changed site configuration or an
  unreadable snapshot rebuilds the engine from the store instead of refusing
  to start.
* **One bad input changes nothing else.** Every message gets a stored answer:
  readings, an inspection, a station status, a site-log entry, or a rejection
  row with the reason (ingest/decode.py never raises). A reading dated ahead of
  its arrival by more than the clock-skew bound is stored flagged
  ``clock_ahead`` and never moves event time; an inspection or a site-log entry
  so dated is refused; a station status so
  dated (or without a time: a last will) is stored at its arrival time,
  ``timed`` False. A reading that arrives after the engine has already judged
  its window is stored and the affected history is rebuilt from the store in
  event-time order (``_rebuild``) — alerts it should have raised are raised
  then, marked late in their message, and alerts it disproves are withdrawn.

What people hear is derived from what the store already holds: an event is
dispatched only when it changes the stored episode, so a restart or a
rebuild never repeats a notification.

``handle_message``/``handle_batch`` need no broker, so tests drive them
directly; ingest/mqtt/session.py connects them to a real broker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol

from analytics.batch_columns import ReadingColumns, numpy_available
from analytics.engine import (
    BEFORE_SITE_START,
    CLOCK_AHEAD,
    DEFAULT_ALLOWED_LATENESS_S,
    NOT_JUDGED,
    TOO_OLD,
    Engine,
)
from analytics.events import (
    AlertEvent,
    DutyEvent,
    EngineEvent,
    Inspection,
    SensorReading,
    SiteLogEntry,
    StationReport,
)
from analytics.statecodec import SnapshotError
from analytics.timeutil import MS_PER_S, from_ms, to_ms
from ingest.decode import DEFAULT_MAX_CLOCK_SKEW_S as DEFAULT_MAX_CLOCK_SKEW_S
from ingest.decode import (
    Decoded,
    Rejected,
    decode_message,
    to_station_report,
)
from ingest.gaps import GapPolicy, GapTracker, LostRange
from ingest.store.queries import SnapshotRow, SqlStore, StoredAlert
from siltwatch.config import SiteConfig
from siltwatch.counters import Counters
from siltwatch.latemarks import LATE_PREFIX as LATE_PREFIX
from siltwatch.latemarks import WITHDRAWN_PREFIX, WITHDRAWN_REBUILT_PREFIX
from siltwatch.schema import Alert, Duty, ResendRequest, StationStatus
from siltwatch.timefmt import utc_iso

log = logging.getLogger(__name__)

# A reading dated further before its arrival than this is stored flagged ``too_old`` and
# never judged: its clock was reset (1970, a GPS epoch), and judging it would rebuild the
# whole history. Years, not days: recorded weeks or months replayed live (a demo, an
# import through the broker) are real data.
MAX_READING_AGE_MS = 5 * 365 * 86_400_000


class EventHandler(Protocol):
    """Where engine events go next (alerts.dispatch.Dispatcher in the wired system).

    ingest does not import alerts (README.md, "Folders"): the CLI hands the
    dispatcher in.
    """

    def handle(self, events: Iterable[EngineEvent]) -> None: ...


ReadingMirror = Callable[[str, list[tuple[str, SensorReading]]], None]
"""Gets (site, [(station, reading), ...]) for every newly stored reading (ingest/influx/mirror.py)."""

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Incoming:
    """One message as it came off the wire, and the service clock when it arrived."""

    topic: str
    payload: bytes
    received_at: int


class IngestStats(Counters):
    """What the service did with the messages it was given (``serve`` prints it on stop)."""

    messages: int
    readings_stored: int
    duplicates: int
    rejected: int
    inspections: int
    statuses: int  # station statuses stored
    status_duplicates: int  # a retained status delivered again (store.insert_status)
    site_log: int  # site-log entries stored
    site_log_duplicates: int  # the same entry again (store.insert_site_log)
    clock_ahead: int  # readings flagged clock_ahead, statuses placed at their arrival
    too_old: int  # readings flagged too_old (dated more than MAX_READING_AGE_MS back)
    before_site_start: int  # readings flagged before_site_start (dated before [site] start)
    late_readings: int
    rebuilds: int
    commits: int
    rejected_by_reason: dict[str, int]
    data_gaps: int  # gaps recorded as lost for good (ingest/gaps.py)
    readings_lost: int  # readings in them
    resend_requests: int  # resend requests handed to the broker link

    def count_rejection(self, reason: str) -> None:
        """One more rejection, counted under its reason's kind (the text before its colon)."""
        self.rejected += 1
        key = reason.split(":", 1)[0]
        self.rejected_by_reason[key] = self.rejected_by_reason.get(key, 0) + 1


@dataclass
class _Fresh:
    """What one message added to the store, for the engine once the batch is committed."""

    received_at: int
    rows: list[tuple[str, SensorReading]]
    inspections: list[Inspection]
    statuses: list[StationReport]
    site_log: list[SiteLogEntry] = field(default_factory=list)


Committed = list[_Fresh]
"""What one commit added to the store, waiting to be judged (:meth:`IngestService.commit_batch`)."""


@dataclass(frozen=True)
class Rebuilt:
    """A site's engine rebuilt from the store by another process (a fleet restart,
    ingest/sites.py ``rebuild_in_parallel``), for the service to take over.

    The worker only reads: ``blob`` is the whole engine state (``Engine.snapshot``,
    the waiting inputs too), ``events`` what the history raised, not yet stored or
    told, and ``marks`` how far the worker read the store. The service publishes
    the events itself, and takes it only when nothing of its site was stored
    after the marks; otherwise it rebuilds as ever (the store is the truth).
    """

    site_id: str
    blob: bytes
    events: tuple[EngineEvent, ...]
    marks: tuple[int, int, int, int]
    why: str


def _already_told(stored: Alert, event: Alert) -> bool:
    """The event's state is one the stored episode already went through (replayed history).

    An episode only grows: escalations are appended and it is resolved once.
    So an event whose escalations are a prefix of the stored ones, and which
    is not a resolution the store lacks, is not news.
    """
    n = len(event.escalations)
    if event.escalations != stored.escalations[:n]:
        return False
    if event.resolved_at is not None and stored.resolved_at is None:
        return False
    return (
        n < len(stored.escalations)
        or stored.resolved_at is not None
        or (event.resolved_at == stored.resolved_at)
    )


def _duty_known(stored: Duty, event: Duty) -> bool:
    """The stored duty is the event's state or a later one (completed)."""
    return stored == event or (stored.completed_at is not None and event.completed_at is None)


class IngestService:
    """Decode → commit → engine → dispatch, for one site."""

    SNAPSHOT_EVERY = 5_000  # readings fed between engine snapshots
    REBUILD_DELAY_MS = 1_000  # late data is gathered this long before one rebuild
    # Stored readings per chunk of a start or rebuild: large chunks for the batch path
    # (analytics/batch.py take_chunk; a year's rebuild ~20% quicker than at 20,000), held
    # to ~250 MB peak at a year of the example site (benchmarks/year.py).
    CATCH_UP_CHUNK = 100_000

    def __init__(
        self,
        site: SiteConfig,
        store: SqlStore,
        dispatcher: EventHandler | None = None,
        *,
        allowed_lateness_s: float = DEFAULT_ALLOWED_LATENESS_S,
        max_clock_skew_s: float = DEFAULT_MAX_CLOCK_SKEW_S,
        station_idle_s: float | None = None,
        mirror: ReadingMirror | None = None,
        now_ms: int | None = None,
        progress: Progress | None = None,
        say: Callable[[str], None] | None = None,
        lock: threading.RLock | None = None,
        completeness: GapPolicy | None = None,
        rebuilt: Rebuilt | None = None,
        history_only: bool = False,
    ) -> None:
        """``allowed_lateness_s``: how late a reading may arrive and still be judged in order.

        Set it to at least the stations' publishing period (a station that sends
        hourly batches needs more than an hour); alerts wait that long. Later
        readings are still used, through a rebuild. ``max_clock_skew_s``: how far
        ahead of the service's clock an event time may be before it is
        distrusted. ``now_ms`` is the service clock at start (None: the newest
        arrival in the store). ``say`` gets one line for a person when the
        engine has to be rebuilt (why), ``progress`` the rebuild's progress.
        ``lock``: the services of one process that share a store share one lock
        (ingest/sites.py), since the store's one connection holds one transaction.
        ``completeness``: watch each sensor's seqs for readings a broker lost and ask
        the station for them again (ingest/gaps.py); None: do not. ``rebuilt``: the
        engine a worker process rebuilt (:class:`Rebuilt`). ``history_only``: a worker's
        part: the engine rebuilt over a read-only store, nothing written, its events
        kept in ``history`` (None when a usable snapshot made a rebuild needless).
        """
        self.site = site
        self.site_id = site.site.id
        self.store = store
        self.dispatcher = dispatcher
        self.mirror = mirror
        self.stats = IngestStats()
        self.allowed_lateness_s = allowed_lateness_s
        self.station_idle_s = station_idle_s
        self.max_skew_ms = round(max_clock_skew_s * MS_PER_S)
        begun = site.site.start
        self._site_start_ms = (
            None
            if begun is None
            else to_ms(datetime.combine(begun, datetime.min.time(), tzinfo=site.site.zone))
        )
        self.lock = lock if lock is not None else threading.RLock()
        self._progress = progress
        self._say = say or (lambda line: log.warning("%s", line))
        self._since_snapshot = 0
        self._rebuild_from: int | None = None
        self._rebuild_noticed_at: int | None = None
        self._late_ids = store.late_alert_ids(self.site_id)
        self._why_not = ""
        self.gaps = None if completeness is None else GapTracker(completeness)
        if self.gaps is not None:  # the open gaps outlive a restart (asked for again)
            self.gaps.restore(store.seq_watch(self.site_id))
        self.fence_token: int | None = None  # set by fence(): every commit checks it
        self._history_only = history_only
        self.history: list[EngineEvent] | None = None
        self.engine = self._recover(now_ms, rebuilt)

    # --- start: snapshot + replay from the store ------------------------------------

    def _new_engine(self) -> Engine:
        return Engine(
            self.site,
            allowed_lateness_s=self.allowed_lateness_s,
            station_idle_s=self.station_idle_s,
        )

    def _usable_snapshot(self, before: int | None) -> tuple[Engine, SnapshotRow | None]:
        """The newest snapshot consistent with the store (and older than ``before``).

        ``self._why_not`` keeps why the newest one could not be used, for the
        one line a person reads when the engine is rebuilt.
        """
        self._why_not = ""
        for row in self.store.snapshots(self.site_id):
            if before is not None and row.processed_to is not None and row.processed_to >= before:
                continue
            try:
                engine = Engine.restore(self.site, row.blob)
            except SnapshotError as exc:
                self._why_not = self._why_not or str(exc)
                if not self._history_only:  # a worker only reads; the service drops it
                    self.store.drop_snapshot(self.site_id, row)
                continue
            if engine.allowed_lateness_ms != round(self.allowed_lateness_s * MS_PER_S):
                self._why_not = self._why_not or "the allowed lateness changed"
                continue
            earliest = self.store.earliest_stored_after(
                self.site_id,
                row.reading_mark,
                row.inspection_mark,
                row.status_mark,
                row.site_log_mark,
            )
            if (
                earliest is not None
                and row.processed_to is not None
                and earliest <= row.processed_to
            ):
                continue  # data stored after it belongs before it: an older one is needed
            return engine, row
        return self._new_engine(), None

    def _recover(self, now_ms: int | None, rebuilt: Rebuilt | None) -> Engine:
        """Restore the newest usable snapshot and replay what the store holds after it."""
        engine, row = self._usable_snapshot(None)
        count = self.store.reading_count(self.site_id)
        if self._history_only:
            if row is None and count:
                self.history = self._history(engine, row, now_ms, None)
            return engine
        if (
            row is None
            and count
            and rebuilt is not None
            and self.store.earliest_stored_after(self.site_id, *rebuilt.marks) is None
        ):  # a worker rebuilt it and nothing of this site was stored since it read
            engine = Engine.restore(self.site, rebuilt.blob)
            self._say(
                f"the engine of {self.site_id} was rebuilt from the store ({count:,} "
                f"readings) in a worker process: {rebuilt.why or 'no snapshot to start from'}"
            )
            self._publish_history(engine, list(rebuilt.events), late=False, opened_after=None)
            engine.forget_closed()
            return engine
        if row is None and count:
            self._say(
                f"rebuilding the engine of {self.site_id} from the store ({count:,} readings): "
                + (self._why_not or "no snapshot to start from")
            )
        return self._catch_up(engine, row, now_ms, None, late=False)

    def rebuilt(self, marks: tuple[int, int, int, int]) -> Rebuilt | None:
        """A worker's answer (``history_only``), ``marks`` taken before it read the store;
        None when a usable snapshot made the rebuild needless."""
        if self.history is None:
            return None
        blob = self.engine.snapshot()
        return Rebuilt(self.site_id, blob, tuple(self.history), marks, self._why_not)

    def _catch_up(
        self,
        engine: Engine,
        row: SnapshotRow | None,
        now_ms: int | None,
        until: int | None,
        *,
        late: bool,
    ) -> Engine:
        """Feed ``engine`` the stored history after its snapshot, up to the live watermark."""
        events = self._history(engine, row, now_ms, until)
        opened_after = None if row is None else row.processed_to
        self._publish_history(engine, events, late=late, opened_after=opened_after)
        engine.forget_closed()
        return engine

    def _history(
        self, engine: Engine, row: SnapshotRow | None, now_ms: int | None, until: int | None
    ) -> list[EngineEvent]:
        """The stored history after the engine's snapshot fed to it: its events (only read)."""
        after = engine.processed_to()
        for station, progress, arrival in self.store.station_clocks(self.site_id):
            engine.set_station_clock(station, progress, arrival)
        if now_ms is not None:
            engine.expect_stations((st.id for st in self.site.stations if st.sensors), now_ms)
        target = engine.watermark
        if until is not None:
            target = until if target is None else max(target, until)
        if target is None:
            target = after if after is not None else -(2**62)
        total = self.store.reading_count(self.site_id)
        done = 0

        def chunks() -> Iterable[Sequence[SensorReading]]:
            nonlocal done
            read = (
                self.store.reading_columns_after if numpy_available() else self.store.readings_after
            )  # columns: the batch path takes them with no object built per reading
            for chunk in read(self.site_id, after, self.CATCH_UP_CHUNK):
                done += len(chunk)
                if self._progress is not None and row is None:
                    self._progress(done, total)
                yield chunk

        return engine.catch_up(
            chunks(),
            self.store.inspections_after(self.site_id, after),
            target,
            self.store.statuses_after(self.site_id, after),
            self.store.site_log_after(self.site_id, after),
        )

    # --- messages -----------------------------------------------------------------

    def handle_message(self, topic: str, payload: bytes, received_at: int) -> list[EngineEvent]:
        """The pipeline for one message (its own commit); never raises for bad input."""
        return self.handle_batch([Incoming(topic, payload, received_at)])

    def handle_batch(
        self, messages: Sequence[Incoming], on_committed: Callable[[], None] | None = None
    ) -> list[EngineEvent]:
        """Decode and commit ``messages`` in one transaction, call ``on_committed``, then judge.

        ``on_committed`` is where the MQTT acknowledgements go: after the
        commit, before the engine (a crash in between loses nothing — the
        restart replays the store).
        """
        with self.lock:
            fresh = self._commit(messages)
            if on_committed is not None:
                on_committed()
            return self._judge(fresh)

    @property
    def site_ids(self) -> list[str]:
        """The sites this service ingests (one; ingest/sites.py's router has many)."""
        return [self.site_id]

    def fence(self, token: int, owner: str) -> None:
        """Claim the site in the store under ``token`` (ingest/store/fence.py); from now on a
        commit under it is refused once a newer claim is stored (Fenced)."""
        with self.lock:
            self.store.claim_site(self.site_id, token, owner)
            self.fence_token = token

    def commit_batch(self, messages: Sequence[Incoming]) -> Committed:
        """The first half of :meth:`handle_batch`: store every message's answer, one commit.

        For a caller that commits several services' parts before it acknowledges
        any (ingest/sites.py); hand the result to :meth:`judge_committed` after.
        """
        with self.lock:
            return self._commit(messages)

    def judge_committed(self, committed: Committed) -> list[EngineEvent]:
        """The second half of :meth:`handle_batch`: feed what was committed to the engine."""
        with self.lock:
            return self._judge(committed)

    def _commit(self, messages: Sequence[Incoming]) -> list[_Fresh]:
        """Store every message's answer in one transaction; return what is new, per arrival.

        Every accepted message's readings go to the store together
        (``insert_reading_groups``: a few multi-row statements for a group commit of
        one-reading messages, not one statement each), then each message's records.
        """
        fresh: list[_Fresh] = []
        # Decode first: the write transaction is held only for the inserts.
        decoded = [(msg, decode_message(msg.topic, msg.payload, self.site)) for msg in messages]
        stats = self.stats
        with self.store.transaction():
            if self.fence_token is not None:  # a replaced owner writes nothing (Fenced)
                self.store.check_owner(self.site_id, self.fence_token)
            accepted: list[tuple[Incoming, Decoded, list[tuple[str, SensorReading]]]] = []
            inspections: list[list[Inspection]] = []
            for msg, result in decoded:
                stats.messages += 1
                if isinstance(result, Rejected):
                    self._reject(msg, result.reason)
                    continue
                rows, dated = self._judge_clocks(msg, result)
                if dated is not None:
                    accepted.append((msg, result, rows))
                    inspections.append(dated)
            groups = [(rows, msg.received_at) for msg, _result, rows in accepted]
            new_readings = (
                self.store.insert_reading_groups(self.site_id, groups)
                if any(rows for rows, _ in groups)
                else [[] for _ in groups]
            )
            for (msg, result, rows), new, dated in zip(
                accepted, new_readings, inspections, strict=True
            ):
                item = self._store_records(msg, result, rows, new, dated)
                if item is not None:
                    fresh.append(item)
            if self.gaps is not None:
                self._track_gaps(self.gaps, accepted)
                self.store.save_seq_watch(self.site_id, self.gaps.changed())
        stats.commits += 1
        return fresh

    def _store_records(
        self,
        msg: Incoming,
        result: Decoded,
        rows: list[tuple[str, SensorReading]],
        new: list[SensorReading],
        inspections: list[Inspection],
    ) -> _Fresh | None:
        """Count one accepted message's readings (``new`` of ``rows`` were stored) and insert
        its records (inside the commit); what is new, or None."""
        site, store, stats, received_at = self.site_id, self.store, self.stats, msg.received_at
        stats.readings_stored += len(new)
        stats.duplicates += len(rows) - len(new)
        if len(new) < len(rows):
            self._conflicts(msg, rows, new)
        new_ins = [ins for ins in inspections if store.insert_inspection(site, ins, received_at)]
        stats.inspections += len(new_ins)
        new_statuses: list[StationReport] = []
        if result.status is not None:
            report = self._status_report(msg, result.status)
            if store.insert_status(site, report, received_at):
                stats.statuses += 1
                new_statuses.append(report)
            else:
                stats.status_duplicates += 1
        new_log = [
            entry for entry in result.site_log if store.insert_site_log(site, entry, received_at)
        ]
        stats.site_log += len(new_log)
        stats.site_log_duplicates += len(result.site_log) - len(new_log)
        if new or new_ins or new_statuses or new_log:
            return _Fresh(received_at, self._fresh_rows(rows, new), new_ins, new_statuses, new_log)
        return None

    def _track_gaps(
        self,
        gaps: GapTracker,
        accepted: Sequence[tuple[Incoming, Decoded, list[tuple[str, SensorReading]]]],
    ) -> None:
        """Feed the gap tracker every reading and status of the commit; record (in the
        same commit) what a station says it no longer holds."""
        for msg, result, rows in accepted:
            for station, reading in rows:
                gaps.reading(station, reading.sensor, reading.seq, reading.t, msg.received_at)
            status = result.status
            health = status.health if status is not None else None
            if status is not None and health is not None and health.held:
                lost = gaps.status(status.station, health.held, health.backlog, msg.received_at)
                for gap in lost:
                    self._record_gap(gap)

    def _record_gap(self, gap: LostRange) -> None:
        if self.store.insert_data_gap(self.site_id, gap):
            self.stats.data_gaps += 1
            self.stats.readings_lost += gap.readings

    def completeness_due(self, now_ms: int) -> list[ResendRequest]:
        """Record the gaps no answer filled in time; the resend requests due now (for
        ingest/mqtt/session.py to publish). Nothing when gaps are not watched."""
        if self.gaps is None:
            return []
        with self.lock:
            lost = self.gaps.expired(now_ms)
            if lost:
                with self.store.transaction():
                    for gap in lost:
                        self._record_gap(gap)
                    self.store.save_seq_watch(self.site_id, self.gaps.changed())
            requests = [
                ResendRequest(
                    site=self.site_id,
                    station=q.station,
                    sensor=q.sensor,
                    seq_from=q.seq_from,
                    seq_to=q.seq_to,
                    request=q.request_id,
                )
                for q in self.gaps.requests(now_ms)
            ]
            self.stats.resend_requests += len(requests)
            return requests

    def _conflicts(
        self, msg: Incoming, rows: list[tuple[str, SensorReading]], new: list[SensorReading]
    ) -> None:
        """A duplicate (sensor, time) with another value than the stored one is a stored
        rejection naming both values (the first stays: the store is the truth; a silent
        drop would hide a station that re-dates or re-measures)."""
        taken = {(r.sensor, r.t) for r in new}
        dups = [r for _s, r in rows if (r.sensor, r.t) not in taken]
        if len(dups) > 1_000:  # an import run again: one range query, not one per reading
            lo, hi = min(r.t for r in dups), max(r.t for r in dups)
            stored = {
                (sensor, t): float(value)
                for chunk in self.store.reading_rows_between(self.site_id, lo, hi + 1)
                for _station, sensor, t, value, _seq, _flags in chunk
            }
        else:
            stored = self.store.stored_values(self.site_id, [(r.sensor, r.t) for r in dups])
        for r in dups:
            first = stored.get((r.sensor, r.t))
            if first is not None and first != r.value:
                self._reject(
                    msg,
                    f"conflicting duplicate: sensor {r.sensor!r} at {utc_iso(r.t)} is stored "
                    f"with value {first!r}; this message says {r.value!r} (the stored value "
                    "stays)",
                )

    @staticmethod
    def _fresh_rows(
        rows: list[tuple[str, SensorReading]], new: list[SensorReading]
    ) -> list[tuple[str, SensorReading]]:
        """The (station, reading) pairs of ``rows`` whose reading the store took as new."""
        if len(new) == len(rows):
            return rows  # all new (``new`` is ``rows``' readings in order)
        station_of = {r.sensor: s for s, r in rows}
        return [(station_of[r.sensor], r) for r in new]

    def _judge_clocks(
        self, msg: Incoming, decoded: Decoded
    ) -> tuple[list[tuple[str, SensorReading]], list[Inspection] | None]:
        """Flag readings dated ahead of their arrival; refuse inspections and site-log
        entries so dated (a mistyped date must not create or complete duties ahead)."""
        limit = msg.received_at + self.max_skew_ms
        dated = [("inspection", ins.t) for ins in decoded.inspections]
        dated += [("site-log", entry.t) for entry in decoded.site_log]
        for what, t in dated:
            if t > limit:
                ahead_s = (t - msg.received_at) / MS_PER_S
                self._reject(
                    msg,
                    f"clock ahead: {what} time {utc_iso(t)} is {ahead_s:,.0f} s after it "
                    f"arrived (at most {self.max_skew_ms / MS_PER_S:,.0f} s is accepted)",
                )
                return [], None
        return self._flag_times(decoded.readings, msg.received_at), list(decoded.inspections)

    def _flag_times(
        self, readings: Iterable[tuple[str, SensorReading]], received_at: int
    ) -> list[tuple[str, SensorReading]]:
        """Flag readings dated ahead of their arrival, too old, or before the site began."""
        limit = received_at + self.max_skew_ms
        rows: list[tuple[str, SensorReading]] = []
        oldest = received_at - MAX_READING_AGE_MS
        start = self._site_start_ms
        if isinstance(readings, list) and len(readings) > 1_000:  # an import's chunk
            times = [r.t for _s, r in readings]
            if min(times) >= max(oldest, start or oldest) and max(times) <= limit:
                return readings  # none to flag: the chunk as it is
        for station, r in readings:
            if r.t > limit and CLOCK_AHEAD not in r.flags:
                self.stats.clock_ahead += 1
                r = replace(r, flags=r.flags | {CLOCK_AHEAD})
            elif r.t < oldest and TOO_OLD not in r.flags:
                self.stats.too_old += 1
                r = replace(r, flags=r.flags | {TOO_OLD})
            elif start is not None and r.t < start and BEFORE_SITE_START not in r.flags:
                self.stats.before_site_start += 1
                r = replace(r, flags=r.flags | {BEFORE_SITE_START})
            rows.append((station, r))
        return rows

    # --- a bulk import (ingest/recordings/bulk_import.py) ---------------------------------

    def import_columns(self, cols: ReadingColumns, received_at: int) -> bool:
        """:meth:`import_chunk` for a chunk of a fresh store as columns (a CSV's): when no
        reading needs a time flag, none is twice and the store holds nothing of the chunk's
        span, the arrays are stored as they are and fed to ``Engine.feed_columns`` (replay's
        own path), no object per reading; False (nothing done) otherwise."""
        import numpy as np

        t = cols.t
        if not len(t):
            return True
        start = self._site_start_ms or -(2**62)
        low = max(received_at - MAX_READING_AGE_MS, start)
        if int(t[0]) < low or int(t[-1]) > received_at + self.max_skew_ms:
            return False
        same = (t[1:] == t[:-1]) & (cols.code[1:] == cols.code[:-1])
        if bool(np.any(same)):
            return False  # a (sensor, t) twice: import_chunk keeps the first, judges the rest
        station = self.site.station_of()
        stations = [station[name] for name in cols.names]
        with self.lock:
            with self.store.transaction():
                if not self.store.insert_new_reading_columns(
                    self.site_id, cols, stations, received_at
                ):
                    return False
            self.stats.readings_stored += len(t)
            self._publish(self.engine.feed_columns(cols))
            return True

    def import_chunk(
        self, readings: Sequence[tuple[str, SensorReading]], received_at: int, source: str
    ) -> list[SensorReading]:
        """Store one chunk of a recording as a message's readings are stored (the same time
        flags, dedupe, and a stored rejection for a conflicting duplicate; one commit), then
        feed the new ones to the engine on the batch path (``Engine.catch_up``) and store
        the alerts and duties they raise. ``readings`` in event-time order, none before
        what the engine has processed; ``source`` names the file in a rejection. The new
        readings, in order."""
        msg = Incoming(source, b"", received_at)
        with self.lock:
            rows = self._flag_times(readings, received_at)
            with self.store.transaction():
                new = self.store.insert_new_readings(self.site_id, rows, received_at)
                if new is None:  # the store holds some of the chunk's span: a run again
                    new = self.store.insert_readings(self.site_id, rows, received_at)
                if len(new) < len(rows):
                    self._conflicts(msg, rows, new)
            self.stats.readings_stored += len(new)
            self.stats.duplicates += len(rows) - len(new)
            if new:
                self._publish(self.engine.catch_up([new], (), new[-1].t - 1))
            return new

    def _status_report(self, msg: Incoming, status: StationStatus) -> StationReport:
        """The message's status as a report: its own time, or its arrival time when it has
        none (a last will) or one too far ahead to trust (``timed`` False)."""
        report = to_station_report(status, msg.received_at, self.max_skew_ms)
        if status.time is not None and not report.timed:
            self.stats.clock_ahead += 1
            log.warning(
                "status of station %s dated %s, %s s after it arrived: stored at its arrival",
                status.station,
                utc_iso(to_ms(status.time)),
                f"{(to_ms(status.time) - msg.received_at) / MS_PER_S:,.0f}",
            )
        return report

    def _reject(self, msg: Incoming, reason: str) -> None:
        self.stats.count_rejection(reason)
        log.warning("rejected message on %r: %s", msg.topic[:200], reason)
        self.store.insert_rejection(msg.topic, reason, msg.payload, msg.received_at, self.site_id)

    def _judge(self, fresh: list[_Fresh]) -> list[EngineEvent]:
        """Feed what was committed to the engine; late data schedules a rebuild."""
        events: list[EngineEvent] = []
        engine = self.engine
        last_arrival = None
        for item in fresh:
            received_at, rows, inspections = item.received_at, item.rows, item.inspections
            last_arrival = received_at
            processed_to = engine.processed_to()
            on_time: list[SensorReading] = []
            for _station, r in rows:
                if (
                    processed_to is not None
                    and r.t <= processed_to
                    and r.flags.isdisjoint(NOT_JUDGED)
                ):
                    self.stats.late_readings += 1
                    self._late(r.t, received_at)
                else:
                    on_time.append(r)
            if on_time:
                events += engine.feed(on_time, received_at)
                self._since_snapshot += len(on_time)
            for ins in inspections:
                if processed_to is not None and ins.t <= processed_to:
                    self._late(ins.t, received_at)
                else:
                    events += engine.feed_inspection(ins, received_at)
            for report in item.statuses:
                if processed_to is not None and report.t <= processed_to:
                    self._late(report.t, received_at)
                else:
                    events += engine.feed_status(report, received_at)
            for entry in item.site_log:
                if processed_to is not None and entry.t <= processed_to:
                    self._late(entry.t, received_at)
                else:
                    events += engine.feed_site_log(entry, received_at)
        self._publish(events)
        if self.mirror is not None:
            for item in fresh:
                if item.rows:
                    self.mirror(self.site_id, item.rows)
        if last_arrival is not None:
            self._maybe_rebuild(last_arrival)
            if self._since_snapshot >= self.SNAPSHOT_EVERY:
                self.snapshot(last_arrival)
        return events

    def _late(self, t: int, received_at: int) -> None:
        if self._rebuild_from is None or t < self._rebuild_from:
            self._rebuild_from = t
        if self._rebuild_noticed_at is None:
            self._rebuild_noticed_at = received_at

    # --- rebuilding history after late data --------------------------------------

    def _maybe_rebuild(self, now_ms: int) -> None:
        noticed = self._rebuild_noticed_at
        if noticed is not None and now_ms - noticed >= self.REBUILD_DELAY_MS:
            self.rebuild_now(now_ms)

    def rebuild_now(self, now_ms: int) -> None:
        """Apply late data now: roll back to a snapshot before it and replay the store."""
        with self.lock:
            start = self._rebuild_from
            if start is None:
                return
            self._rebuild_from = self._rebuild_noticed_at = None
            self.stats.rebuilds += 1
            old = self.engine
            until = old.processed_to()
            self.store.drop_snapshots_from(self.site_id, start)
            engine, row = self._usable_snapshot(start)
            log.info(
                "late data from %s for %s: rebuilding from %s",
                utc_iso(start),
                self.site_id,
                "the start"
                if row is None or row.processed_to is None
                else utc_iso(row.processed_to),
            )
            engine.adopt_clock(old)
            self.engine = self._catch_up(engine, row, now_ms, until, late=True)
            self._since_snapshot = 0
            self.snapshot(now_ms)

    # --- publishing: only what changes what the store holds ---------------------

    def _publish(self, events: list[EngineEvent], *, late: bool = False) -> None:
        """Store each event's alert or duty and dispatch the ones that change something.

        The dispatch comes first and the alert is stored after it. The store
        answers "was this already told?", so an alert stored before its messages
        were queued and then a crash (``kill -9``, power) would be told to nobody:
        the restart finds it stored and stays quiet. In this order the crash
        leaves it unstored instead. The restart's catch-up makes the same event
        again and dispatches it again. The outbox names a delivery by the alert,
        the event and the address (alerts/outbox.py ``delivery_id``), so a
        message already queued is a logged duplicate, never a second text.
        """
        out: list[EngineEvent] = []
        told: dict[str, Alert] = {}  # what this call has told, not yet stored
        to_store: list[tuple[Alert, bool]] = []
        for event in events:
            if isinstance(event, DutyEvent):
                known = self.store.stored_duty(self.site_id, event.duty.id)
                if known is None or not _duty_known(known, event.duty):
                    self.store.save_duty(self.site_id, event.duty)
                out.append(event)
                continue
            before = told.get(event.alert.id)
            if before is None:
                stored = self.store.stored_alert(self.site_id, event.alert.id)
                if stored is not None and not stored.withdrawn:
                    before = stored.alert
                known_before = stored is not None
            else:
                known_before = True
            if before is not None and _already_told(before, event.alert):
                continue  # replayed history (a restart, a rebuild), not news
            is_late = event.alert.id in self._late_ids or (late and not known_before)
            alert = event.alert
            if is_late:
                self._late_ids.add(alert.id)
                alert = alert.model_copy(update={"message": LATE_PREFIX + alert.message})
            told[alert.id] = alert
            to_store.append((alert, is_late))
            out.append(AlertEvent(event.type, event.at, alert))
        if self.dispatcher is not None and out:
            self.dispatcher.handle(out)
        for alert, is_late in to_store:
            self.store.save_alert(self.site_id, alert, late=is_late)

    def _publish_history(
        self, engine: Engine, events: list[EngineEvent], *, late: bool, opened_after: int | None
    ) -> None:
        """Publish a catch-up's events; withdraw stored episodes the history no longer has."""
        self._publish(events, late=late)
        known = {ep.id for ep in engine.ctx.alerts.episodes}
        since = "" if opened_after is None else from_ms(opened_after).isoformat()
        reached = engine.processed_to()
        withdrawn: list[EngineEvent] = []
        for stored in self.store.alerts_opened_after(self.site_id, since):
            opened = round(stored.alert.opened_at.timestamp() * MS_PER_S)
            if stored.withdrawn or stored.alert.id in known or reached is None or opened > reached:
                continue
            withdrawn.append(self._withdraw(stored, engine, late=late))
        if self.dispatcher is not None and withdrawn:
            self.dispatcher.handle(withdrawn)

    def _withdraw(self, stored: StoredAlert, engine: Engine, *, late: bool = True) -> AlertEvent:
        """``late``: late readings disproved it; else a rebuild (a changed configuration)."""
        prefix = WITHDRAWN_PREFIX if late else WITHDRAWN_REBUILT_PREFIX
        alert = stored.alert
        at = engine.processed_to() or 0
        ended = alert.resolved_at or from_ms(max(at, int(alert.opened_at.timestamp() * MS_PER_S)))
        alert = alert.model_copy(update={"message": prefix + alert.message, "resolved_at": ended})
        self.store.withdraw_alert(self.site_id, alert)
        log.warning(
            "alert %s (%s %s) withdrawn after %s",
            alert.id,
            alert.kind,
            alert.subject,
            "late data" if late else "a rebuild under the current configuration",
        )
        return AlertEvent("resolved", int(alert.opened_at.timestamp() * MS_PER_S), alert)

    # --- the clock, the end, snapshots ---------------------------------------------

    def tick(self, now_ms: int) -> list[EngineEvent]:
        """The service's clock: silence is noticed, pending late data is applied."""
        with self.lock:
            self._maybe_rebuild(now_ms)
            events = self.engine.advance_clock(now_ms)
            self._publish(events)
            return events

    def finish(self, end_ms: int | None = None) -> list[EngineEvent]:
        """End the run at ``end_ms`` as a replay does (pending late data applied first)."""
        with self.lock:
            if self._rebuild_from is not None:
                self.rebuild_now(self.engine.clock or 0)
            events = self.engine.finish(end_ms)
            self._publish(events)
            return events

    def snapshot(self, taken_at: int) -> None:
        """Persist the engine (only when it reflects every stored reading in order)."""
        with self.lock:
            if self._rebuild_from is not None:
                return  # late data pending: this state is about to be replaced
            self.engine.forget_closed()
            self.store.save_snapshot(
                self.site_id,
                self.engine.snapshot_processed(),
                taken_at,
                processed_to=self.engine.processed_to(),
                marks=self.store.marks(),
            )
            self._since_snapshot = 0

    def close(self, now_ms: int) -> None:
        """Apply pending late data and leave a snapshot (SIGTERM, Ctrl-C)."""
        with self.lock:
            if self._rebuild_from is not None:
                self.rebuild_now(now_ms)
            self.snapshot(now_ms)
