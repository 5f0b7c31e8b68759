"""Writing siltwatch's data to InfluxDB, so Grafana can show it.

SQLite stays the record (ingest/store/sqlite.py); InfluxDB is a mirror for the
dashboards. Two transports send the same line protocol (ingest/influx/line_protocol.py):

* :class:`InfluxV1Writer` — ``POST /write?db=..&precision=ms`` with the
  standard library, for InfluxDB 1.x (and the 1.x API that 2.x/3.x keep);
* :class:`InfluxV2Writer` — influxdb-client's *synchronous* write API to
  ``/api/v2/write`` with org, bucket and token, for InfluxDB 2.x/3.x and 1.8+.

Both batch (``batch_size`` lines a request) and neither drops data silently:
the client library's default batching writer only logs failed writes
(docs/dashboards.md, "Writing: durable, never silent"), so it is not used. A
retryable failure (a 429/5xx answer or no connection) is retried with
exponential backoff, honouring ``Retry-After``; a failure that persists, or
one that retrying cannot fix (bad data, bad token), raises
:class:`InfluxWriteError` carrying the HTTP status and the server's own reason.
Writes are idempotent (a point with the same series and time replaces itself),
so a retried batch never duplicates.

:class:`InfluxMirror` is what the live service holds: it queues lines, tries to
write them on every call without ever sleeping under the ingest lock, and
keeps what failed for the next attempt.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from analytics.events import AlertEvent, DutyEvent, EngineEvent, SensorReading
from ingest.influx.line_protocol import alert_line, duty_line, reading_lines
from ingest.influx.recopy import DroppedSpan, StoreRecopy
from siltwatch import backoff
from siltwatch.config import SiteConfig
from siltwatch.counters import Counters

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Answers that say the data itself is wrong: sending the same lines again cannot help.
DATA_ERROR_STATUS = frozenset({400, 413, 422})
DEFAULT_BATCH = 5_000


class InfluxWriteError(Exception):
    """A write that did not succeed; the text names the server's reason."""

    def __init__(self, message: str, *, status: int | None, retryable: bool) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable

    @property
    def data_error(self) -> bool:
        """True when InfluxDB refused the lines themselves (type conflict, bad syntax)."""
        return self.status in DATA_ERROR_STATUS


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a write is retried.

    ``sleep`` is injected so tests can count the waits instead of taking them.
    """

    attempts: int = 5
    first_backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep

    def backoff(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        wait = backoff.delay(attempt - 1, self.first_backoff_s, self.max_backoff_s)
        if retry_after_s is not None:
            wait = max(wait, min(retry_after_s, self.max_backoff_s))
        return wait


class LineWriter(Protocol):
    """Anything that durably writes line protocol or raises :class:`InfluxWriteError`."""

    def write_lines(self, lines: Sequence[str]) -> None: ...

    def close(self) -> None: ...


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


class _RetryingWriter:
    """Batches lines and retries each batch; subclasses send one batch."""

    what = "InfluxDB"

    def __init__(self, *, batch_size: int, retry: RetryPolicy) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.retry = retry
        self.requests = 0  # HTTP requests made, retries included

    def _send(self, body: str) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def write_lines(self, lines: Sequence[str]) -> None:
        """Write every line or raise; batches already written stay written (idempotent)."""
        for start in range(0, len(lines), self.batch_size):
            self._write_batch("\n".join(lines[start : start + self.batch_size]))

    def _write_batch(self, body: str) -> None:
        attempt = 0
        while True:
            attempt += 1
            self.requests += 1
            try:
                self._send(body)
                return
            except _Retryable as exc:
                if attempt >= self.retry.attempts:
                    raise InfluxWriteError(
                        f"{exc.message} (gave up after {attempt} attempt"
                        f"{'s' if attempt > 1 else ''})",
                        status=exc.status,
                        retryable=True,
                    ) from None
                wait = self.retry.backoff(attempt, exc.retry_after_s)
                log.warning("%s; retrying in %.1f s", exc.message, wait)
                self.retry.sleep(wait)

    def close(self) -> None:
        """Nothing is buffered between calls, so there is nothing to flush."""


class _Retryable(Exception):
    def __init__(self, message: str, status: int | None, retry_after_s: float | None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s


def _fail(what: str, status: int | None, reason: str, retry_after_s: float | None) -> None:
    """Raise the right exception for an HTTP status (None: no answer at all)."""
    message = f"{what} write failed: " + (
        f"HTTP {status}: {reason}" if status is not None else reason
    )
    if status is None or status in RETRYABLE_STATUS:
        raise _Retryable(message, status, retry_after_s)
    raise InfluxWriteError(message, status=status, retryable=False)


def _reason(body: bytes, fallback: str) -> str:
    """The server's reason: 1.x says ``{"error": ..}``, 2.x ``{"code": .., "message": ..}``."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text or fallback
    if isinstance(data, dict):
        if "message" in data:
            code = data.get("code")
            return f"{code}: {data['message']}" if code else str(data["message"])
        if "error" in data:
            return str(data["error"])
    return text or fallback


class InfluxV1Writer(_RetryingWriter):
    """``POST /write`` of the InfluxDB 1.x HTTP API (stdlib only)."""

    def __init__(
        self,
        url: str,
        database: str,
        *,
        username: str | None = None,
        password: str | None = None,
        retention_policy: str | None = None,
        timeout_s: float = 10.0,
        batch_size: int = DEFAULT_BATCH,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, retry=retry or RetryPolicy())
        params = {"db": database, "precision": "ms"}
        if retention_policy:
            params["rp"] = retention_policy
        self.endpoint = f"{url.rstrip('/')}/write?{urllib.parse.urlencode(params)}"
        self.what = f"InfluxDB {url.rstrip('/')} database {database!r}"
        self.username, self.password = username, password
        self.timeout_s = timeout_s

    def _send(self, body: str) -> None:
        req = urllib.request.Request(self.endpoint, data=body.encode("utf-8"), method="POST")
        req.add_header("Content-Type", "text/plain; charset=utf-8")
        if self.username is not None:
            import base64

            cred = f"{self.username}:{self.password or ''}".encode()
            req.add_header("Authorization", "Basic " + base64.b64encode(cred).decode("ascii"))
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                resp.read()
        except urllib.error.HTTPError as exc:
            reason = _reason(exc.read(), str(exc.reason))
            _fail(self.what, exc.code, reason, _retry_after(exc.headers.get("Retry-After")))
        except (urllib.error.URLError, OSError) as exc:
            why = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            _fail(self.what, None, f"no answer: {why}", None)


class InfluxV2Writer(_RetryingWriter):
    """influxdb-client's synchronous write API: ``POST /api/v2/write`` with a token."""

    def __init__(
        self,
        url: str,
        *,
        org: str,
        bucket: str,
        token: str,
        gzip: bool = False,
        timeout_s: float = 10.0,
        batch_size: int = DEFAULT_BATCH,
        retry: RetryPolicy | None = None,
    ) -> None:
        from influxdb_client.client.influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import SYNCHRONOUS

        super().__init__(batch_size=batch_size, retry=retry or RetryPolicy())
        self.org, self.bucket = org, bucket
        self.what = f"InfluxDB {url.rstrip('/')} bucket {bucket!r} (org {org!r})"
        # retries=False: our RetryPolicy is the only one, so a write is never retried
        # twice over nor given up on silently by a second layer.
        self.client: Any = InfluxDBClient(
            url=url,
            token=token,
            org=org,
            enable_gzip=gzip,
            timeout=int(timeout_s * 1000),
            retries=False,
        )
        self.api: Any = self.client.write_api(write_options=SYNCHRONOUS)

    def _send(self, body: str) -> None:
        from influxdb_client.domain.write_precision import WritePrecision
        from influxdb_client.rest import ApiException
        from urllib3.exceptions import HTTPError as Urllib3Error

        try:
            self.api.write(
                bucket=self.bucket, org=self.org, record=body, write_precision=WritePrecision.MS
            )
        except ApiException as exc:
            status = int(exc.status) if exc.status is not None else None
            raw = exc.body if isinstance(exc.body, bytes) else str(exc.body or "").encode()
            reason = _reason(raw, str(exc.reason or "no reason given"))
            _fail(self.what, status, reason, _retry_after(getattr(exc, "retry_after", None)))
        except (Urllib3Error, OSError) as exc:
            _fail(self.what, None, f"no answer: {exc}", None)

    def close(self) -> None:
        self.api.close()
        self.client.close()


# --- the live service's mirror ----------------------------------------------------------


class MirrorStats(Counters):
    """What the mirror wrote, refused and dropped (logged; read by the tests)."""

    written: int  # lines InfluxDB accepted
    failures: int  # write attempts that failed
    refused: int  # lines InfluxDB refused as bad data (logged with the reason)
    dropped: int  # lines evicted because the queue was full (logged)
    recopied: int  # lines copied again from the store after a drop (ingest/influx/recopy.py)
    last_error: str
    pending: int


class InfluxMirror:
    """Mirrors a site's readings, alerts and duties into InfluxDB for Grafana.

    It is the ``mirror`` hook of :class:`ingest.service.IngestService` (new readings)
    and an event handler (alerts and duties; the CLI fans the service's events out
    to it and to the dispatcher). It never raises into the ingest pipeline and never
    sleeps there: a failed write keeps its lines queued, and the next call — a new
    message or the service's tick calling :meth:`flush` — retries once the backoff
    has passed. Lines InfluxDB refuses as bad data are counted and logged with the
    server's reason, never retried forever; a queue beyond ``max_pending`` lines (days
    of outage) drops its oldest lines with an error in the log. Either way the data
    stays in SQLite, the record; with ``recopy`` (serve gives it one) the mirror copies
    what it dropped back from the store once InfluxDB takes writes again.
    """

    def __init__(
        self,
        site: SiteConfig,
        writer: LineWriter,
        *,
        clock: Callable[[], float] = time.monotonic,
        first_backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        max_pending: int = 1_000_000,
        auto_flush: bool = True,
        recopy: StoreRecopy | None = None,
    ) -> None:
        """``auto_flush=False``: callers only queue, and a :class:`MirrorFlusher` thread
        writes, so a slow or hung InfluxDB never holds up the ingest pipeline."""
        self.site_id = site.site.id
        self.auto_flush = auto_flush
        self._lock = threading.Lock()  # guards ``pending``; never held during a write
        self.writer = writer
        self.clock = clock
        self.first_backoff_s, self.max_backoff_s = first_backoff_s, max_backoff_s
        self.max_pending = max_pending
        self.kinds = {s.id: (s.kind, s.unit) for s in site.sensors().values()}
        self.pending: list[str] = []
        self.stats = MirrorStats()
        self.recopy = recopy
        self._dropped = DroppedSpan()  # what was dropped and not yet handed to ``recopy``
        self._failures_in_row = 0
        self._next_attempt = float("-inf")

    # -- inputs ----------------------------------------------------------------------

    def __call__(self, site: str, rows: Sequence[tuple[str, SensorReading]]) -> None:
        """The service's reading hook: ``rows`` are the new (station, reading) pairs."""
        self._queue(reading_lines(site, rows, self.kinds))

    def handle(self, events: Iterable[EngineEvent]) -> None:
        """Alerts and duties, as the engine reports their changes."""
        lines = []
        for event in events:
            if isinstance(event, AlertEvent):
                lines.append(alert_line(self.site_id, event.alert))
            elif isinstance(event, DutyEvent):
                lines.append(duty_line(self.site_id, event.duty, overdue=event.type == "overdue"))
        self._queue(lines)

    def _queue(self, lines: list[str]) -> None:
        if lines:
            with self._lock:
                self.pending.extend(lines)
                self._trim()
                self.stats.pending = len(self.pending)
        if self.auto_flush:
            self.flush()

    def _trim(self) -> None:
        """Drop the oldest points beyond ``max_pending`` (caller holds the lock)."""
        excess = len(self.pending) - self.max_pending
        if excess > 0:
            self._dropped.add(self.pending[:excess])
            del self.pending[:excess]
            self.stats.dropped += excess
            log.error(
                "InfluxDB mirror queue full: dropped the %d oldest points "
                "(they remain in the SQLite store)",
                excess,
            )

    # -- writing ---------------------------------------------------------------------

    def flush(self, *, force: bool = False) -> bool:
        """Try to write what is queued; True when nothing is left.

        Without ``force`` it waits out the backoff after a failure (it is called
        on every message, so a down server must not be hammered).
        """
        if not force and self.clock() < self._next_attempt:
            return not self.pending
        with self._lock:
            # Take the batch out of the queue: points queued meanwhile wait behind it.
            batch, self.pending = self.pending, []
        if not batch:
            return self._recopy_next()
        try:
            self.writer.write_lines(batch)
        except InfluxWriteError as exc:
            self.stats.failures += 1
            self.stats.last_error = str(exc)
            if exc.data_error:
                self.stats.refused += len(batch)
                log.error("InfluxDB refused %d points, not retried: %s", len(batch), exc)
                self._failures_in_row = 0
                with self._lock:
                    self.stats.pending = len(self.pending)
                    return not self.pending
            with self._lock:
                self.pending[:0] = batch  # back at the front, oldest first
                self._trim()
                self.stats.pending = len(self.pending)
            self._failures_in_row += 1
            wait = backoff.delay(
                self._failures_in_row - 1, self.first_backoff_s, self.max_backoff_s
            )
            self._next_attempt = self.clock() + wait
            log.warning(
                "InfluxDB mirror: %d points queued, next attempt in %.0f s: %s",
                self.stats.pending,
                wait,
                exc,
            )
            return False
        self.stats.written += len(batch)
        self._failures_in_row = 0
        self._next_attempt = float("-inf")
        with self._lock:
            self.stats.pending = len(self.pending)
            if self.pending:
                return False
        return self._recopy_next()

    def _recopy_next(self) -> bool:
        """The queue is empty and InfluxDB took the last write: queue the next chunk of
        what was dropped, read back from the store. True when there is nothing to copy."""
        if self.recopy is None:
            return True
        with self._lock:
            dropped, self._dropped = self._dropped, DroppedSpan()
        if dropped:
            self.recopy.add(dropped)
        if not self.recopy.busy:
            return True
        try:
            lines = self.recopy.next_lines(self.kinds)
        except Exception as exc:  # the store is the record: say so, retry on the next flush
            log.error("InfluxDB mirror: cannot copy dropped points again from the store: %s", exc)
            return False
        if not lines:
            return True
        with self._lock:
            self.pending.extend(lines)
            self.stats.pending = len(self.pending)
        self.stats.recopied += len(lines)
        return False

    def close(self, *, attempts: int = 3, sleep: Callable[[float], None] = time.sleep) -> None:
        """Flush at shutdown (a few tries), then say loudly what could not be written."""
        for attempt in range(attempts):
            if self.flush(force=True):
                break
            if attempt + 1 < attempts:
                sleep(backoff.delay(attempt, self.first_backoff_s, self.max_backoff_s))
        if self.pending:
            log.error(
                "InfluxDB mirror stopped with %d points unwritten (they remain in SQLite): %s",
                len(self.pending),
                self.stats.last_error,
            )
        self.writer.close()


class Flushable(Protocol):
    """What a :class:`MirrorFlusher` flushes: one mirror, or a fleet's (ingest/influx/fleet.py)."""

    def flush(self) -> bool: ...


class MirrorFlusher:
    """Writes a mirror's queue from its own thread, every ``interval_s``.

    With it the ingest pipeline only queues points (``auto_flush=False``): an
    InfluxDB that hangs until its timeout stalls this thread, never ingest.
    """

    def __init__(self, mirror: Flushable, interval_s: float = 1.0) -> None:
        self.mirror = mirror
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="influx-mirror", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.mirror.flush()
            except Exception:  # a bug must be loud, but must not end the mirroring
                log.exception("InfluxDB mirror flush failed")

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        """True while the flushing thread runs (liveness: /healthz)."""
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


class EventFanOut:
    """Hands the service's engine events to several handlers, in order.

    The service takes one event handler; the CLI gives it the dispatcher and the
    InfluxDB mirror through this, so ingest/service.py needs no second hook.
    """

    def __init__(self, handlers: Sequence[Any]) -> None:
        self.handlers = list(handlers)

    def handle(self, events: Iterable[EngineEvent]) -> None:
        batch = list(events)
        for handler in self.handlers:
            handler.handle(batch)
