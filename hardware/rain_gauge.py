"""Tipping-bucket rain gauge on a GPIO pin (reed switch to ground, internal pull-up).

Every bucket tip closes the reed switch for a few milliseconds, and the
contact chatters. We debounce in our own code (gpiozero's ``bounce_time`` is
not honoured by every pin factory, e.g. ``MockFactory``): an edge within
``debounce_s`` of the last *accepted* tip is chatter and ignored.

Durability: each accepted tip is committed to SQLite immediately (tips are at
most a few per second), so a reboot mid-interval keeps every tip. ``read()``
reports the depth of the tips not yet reported and hands the agent a
``commit`` that marks them reported *inside the transaction that stores the
reading* — so a crash between reading and storing neither loses nor doubles
tips. For that the tip counter lives in the agent's outbox file (the agent
passes it as ``state_db``; it is deliberately not configurable); standalone
callers run ``sample.commit`` on a connection to ``state_db`` themselves.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hardware.base import Sample
from hardware.sqlite_state import open_state_db

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rain_gauge (
    gauge TEXT PRIMARY KEY,
    tips_total INTEGER NOT NULL DEFAULT 0,
    tips_reported INTEGER NOT NULL DEFAULT 0
)
"""


class TippingBucketParams(BaseModel):
    """Driver parameters in the station TOML (``kind = "tipping_bucket"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["tipping_bucket"] = "tipping_bucket"
    pin: int = Field(ge=0, le=40, description="BCM GPIO number the reed switch is wired to")
    mm_per_tip: float = Field(default=0.2, gt=0, description="rain depth of one bucket tip")
    debounce_s: float = Field(default=0.05, ge=0, description="ignore edges closer than this")
    pull_up: bool = True


class TipStore:
    """The durable tip counter of one gauge: ``tips_total`` and ``tips_reported``."""

    def __init__(self, path: Path | str, gauge: str) -> None:
        self.path = Path(path)
        self.gauge = gauge
        self._lock = threading.Lock()
        self._conn = open_state_db(path, check_same_thread=False)
        self._conn.execute(_SCHEMA)
        self._conn.execute("INSERT OR IGNORE INTO rain_gauge(gauge) VALUES (?)", (gauge,))

    def add_tip(self) -> None:
        with self._lock:
            self._conn.execute(
                "UPDATE rain_gauge SET tips_total = tips_total + 1 WHERE gauge = ?", (self.gauge,)
            )

    def counts(self) -> tuple[int, int]:
        """(tips_total, tips_reported)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT tips_total, tips_reported FROM rain_gauge WHERE gauge = ?", (self.gauge,)
            ).fetchone()
        return int(row[0]), int(row[1])

    def mark_reported(self, conn: sqlite3.Connection, reported_before: int, total: int) -> None:
        """Mark tips up to ``total`` reported, in the caller's transaction on ``conn``.

        Guarded by the previous value so a stale sample cannot rewind the counter.
        """
        conn.execute(
            "UPDATE rain_gauge SET tips_reported = ? WHERE gauge = ? AND tips_reported = ?",
            (total, self.gauge, reported_before),
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class TippingBucketGauge:
    """Counts debounced tips on a GPIO pin; ``read()`` gives rain depth since the last reading."""

    def __init__(
        self,
        gauge_id: str,
        params: TippingBucketParams,
        state_db: Path | str,
        *,
        pin_factory: Any = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        from gpiozero import Button  # imported here: only stations with a gauge need gpiozero

        self.params = params
        self.store = TipStore(state_db, gauge_id)
        self._monotonic = monotonic
        self._last_tip: float | None = None
        self._button = Button(
            params.pin, pull_up=params.pull_up, bounce_time=None, pin_factory=pin_factory
        )
        self._button.when_pressed = self._on_edge

    def _on_edge(self) -> None:
        now = self._monotonic()
        if self._last_tip is not None and now - self._last_tip < self.params.debounce_s:
            log.debug(
                "rain gauge pin %d: chatter %.4f s after a tip ignored",
                self.params.pin,
                now - self._last_tip,
            )
            return
        self._last_tip = now
        self.store.add_tip()

    def read(self) -> Sample:
        total, reported = self.store.counts()
        tips = total - reported
        store = self.store

        def commit(conn: sqlite3.Connection) -> None:
            store.mark_reported(conn, reported, total)

        return Sample(
            value=tips * self.params.mm_per_tip, unit="mm", raw=float(tips), commit=commit
        )

    def close(self) -> None:
        self._button.close()
        self.store.close()
