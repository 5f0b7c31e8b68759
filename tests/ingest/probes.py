"""Probe detectors that record what the engine hands them, and the service they run in.

A probe's record is its state, which a snapshot carries across a restart like any
detector's, so "delivered exactly once" is read off it. The service is the live
ingest service of the Lake George example site, fed both turbidity stations a
minute at a time; the restart helpers replay one history of three messages (the
first processed, the second still waiting in the engine at the snapshot, the third
stored after it) and start the service again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest

import analytics.engine
from analytics import statecodec
from analytics.detector import Context, Detector
from analytics.engine import Engine
from analytics.events import SiteLogEntry, StationReport
from analytics.timeutil import MS_PER_DAY, MS_PER_MIN, MS_PER_S, iso
from ingest.service import IngestService
from ingest.store.sqlite import SCHEMA_VERSION, SqliteStore
from siltwatch.config import SiteConfig, load_site
from siltwatch.schema import reading_topic
from tests.ingest.live import EXAMPLES

SITE = load_site(EXAMPLES / "lake-george-site.toml")
SITE_ID = SITE.site.id
T0 = 1777899600000  # 2026-05-04T13:00:00Z
LATENESS_S = 60.0
TEN_YEARS_MS = 3652 * MS_PER_DAY

Seen = TypeVar("Seen")
StatusSeen = tuple[str, int, str, bool]  # (station, t, state, timed)
LogSeen = tuple[str, str | None, int]  # (event, area, t)
Message = tuple[str, bytes]  # (topic, payload)


# --- detectors that record what they are handed ----------------------------------------


class Probe(Detector, Generic[Seen]):
    """Records what the engine hands it, in the order the engine gives it."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []


# A snapshot may only hold analytics classes (analytics/statecodec.py): these test
# detectors are admitted under analytics module names, as the engine admits its own.


class StatusProbe(Probe[StatusSeen]):
    """Records (station, t, state, timed) of every station report."""

    __module__ = "analytics.test_status_probe"
    name = "status-probe"

    def on_status(self, report: StationReport, ctx: Context) -> None:
        self.seen.append((report.station, report.t, report.state, report.timed))


class LogProbe(Probe[LogSeen]):
    """Records (event, area, t) of every site-log entry."""

    __module__ = "analytics.test_site_log_probe"
    name = "site-log-probe"

    def on_site_log(self, entry: SiteLogEntry, ctx: Context) -> None:
        self.seen.append((entry.event, entry.area, entry.t))


statecodec.allow(StatusProbe)
statecodec.allow(LogProbe)


def run_alone(monkeypatch: pytest.MonkeyPatch, probe: type[Probe[Any]]) -> None:
    """Every engine of a test (new, restored, rebuilt) runs ``probe`` alone."""

    def build(site: SiteConfig, ctx: Context) -> list[Detector]:
        return [probe()]

    monkeypatch.setattr(analytics.engine, "build_detectors", build)


def seen_by(engine: Engine, probe: type[Probe[Seen]]) -> list[Seen]:
    """What the engine's ``probe`` was handed, in order."""
    det = engine.detectors[probe.name]
    assert isinstance(det, probe)
    return det.seen


# --- the service -----------------------------------------------------------------------


def at(minute: float) -> int:
    return T0 + round(minute * MS_PER_MIN)


def reading(station: str, sensor: str, minute: float) -> bytes:
    return json.dumps(
        {
            "type": "reading",
            "site": SITE_ID,
            "station": station,
            "sensor": sensor,
            "time": iso(at(minute)),
            "seq": round(minute * 60),
            "value": 8.0,
            "unit": "NTU",
        }
    ).encode()


def minutes(service: IngestService, first: int, last: int) -> None:
    """Both turbidity stations, one reading a minute, each arriving a second after it."""
    for m in range(first, last + 1):
        for station, sensor in (("up-1", "turb-up"), ("down-1", "turb-down")):
            topic = reading_topic(SITE_ID, station, sensor)
            service.handle_message(topic, reading(station, sensor, m), at(m) + MS_PER_S)


def new_service(store: SqliteStore, said: list[str] | None = None) -> IngestService:
    return IngestService(
        SITE,
        store,
        allowed_lateness_s=LATENESS_S,
        say=(said.append if said is not None else None),
    )


@contextmanager
def an_older_store(sqlite_path: Path, script: str) -> Iterator[SqliteStore]:
    """A store of 8 readings (minutes 0 to 3) that ``script`` makes the file an older
    siltwatch wrote, opened again: it is upgraded in place and keeps its readings."""
    store = SqliteStore(sqlite_path)
    minutes(new_service(store), 0, 3)
    store.close()
    db = sqlite3.connect(sqlite_path)
    db.executescript(script)
    db.close()
    store = SqliteStore(sqlite_path)
    try:
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 9
        assert store.reading_count(SITE_ID) == 8
        yield store
    finally:
        store.close()


def capture_line(topic: str, payload: bytes, received_at: int | None = None) -> str:
    """One line of a capture file."""
    entry: dict[str, Any] = {"topic": topic, "payload": json.loads(payload)}
    if received_at is not None:
        entry["received_at"] = iso(received_at)
    return json.dumps(entry) + "\n"


def upstream_capture(first: int, last: int) -> list[str]:
    """Capture lines of the upstream probe, one reading a minute."""
    topic = reading_topic(SITE_ID, "up-1", "turb-up")
    return [capture_line(topic, reading("up-1", "turb-up", m)) for m in range(first, last + 1)]


# --- a history, and a restart ----------------------------------------------------------

History = Callable[[IngestService], None]
HOW = ["snapshot", "rebuild from the store"]


def history(first: Message, second: Message, third: Message) -> History:
    """``first`` (at minute 5.5) processed, ``second`` (at 20.5) still waiting in the
    engine at the snapshot, ``third`` (at 21.25) stored after it."""

    def play(service: IngestService) -> None:
        minutes(service, 0, 5)
        service.handle_message(*first, at(5.5) + 200)
        minutes(service, 6, 20)
        service.handle_message(*second, at(20.5))
        processed = service.engine.processed_to()
        assert processed is not None and at(5.5) <= processed < at(20.5)
        service.snapshot(at(20.6))
        minutes(service, 21, 21)
        service.handle_message(*third, at(21.25) + 100)
        minutes(service, 22, 23)

    return play


def restarted(store: SqliteStore, how: str, play: History) -> tuple[IngestService, IngestService]:
    """The service that played the history, and the one started after it died without a
    word, from its snapshot or (``how``) rebuilt from the store; both run to minute 30."""
    first = new_service(store)
    play(first)
    if how == "rebuild from the store":
        store.drop_snapshots_from(SITE_ID, -(2**62))
    said: list[str] = []
    second = new_service(store, said)
    assert bool(said) == (how != "snapshot"), said
    minutes(second, 24, 30)
    return first, second


def restarted_after_a_late_message(
    store: SqliteStore, play: History, late: Message, dated: int
) -> IngestService:
    """The service snapshots at minute 23.5 after the history, then stores ``late``
    (dated before the snapshot) and dies before it rebuilds: the service started after
    it, which must go back to an older snapshot."""
    first = new_service(store)
    play(first)
    first.snapshot(at(23.5))
    first.handle_message(*late, at(23.6))
    assert first._rebuild_from == dated  # noted; the service dies before it rebuilds
    return new_service(store)
