"""``data_gap`` records (ingest/gaps.py) in the store contract: the SQLite file and a
PostgreSQL database keep them the same way — once per (sensor, first seq), in the order
recorded, summed per station for the console — and an IngestService that is told by a
station's status that a range is gone records it, in the same commit."""

from __future__ import annotations

import json

import pytest

from console.views import station_rows
from ingest.gaps import GapPolicy, LostRange
from ingest.service import IngestService
from ingest.store.queries import SqlStore
from siltwatch.config import load_site
from tests.ingest.conftest import BACKENDS
from tests.ingest.live import EXAMPLES

both = pytest.mark.parametrize("store_db", BACKENDS, indirect=True)
SITE = "lg-route9n"


def gap(station: str, sensor: str, lo: int, hi: int, why: str = "evicted: test") -> LostRange:
    return LostRange(station, sensor, lo, hi, 1_000 * lo, None, why, 5_000)


@both
def test_a_data_gap_is_kept_once_in_order_and_summed_per_station(store: SqlStore) -> None:
    assert store.add_data_gap(SITE, gap("up-1", "turb-up", 10, 19))
    assert store.add_data_gap(SITE, gap("down-1", "turb-down", 3, 3))
    assert store.add_data_gap(SITE, gap("up-1", "turb-up", 40, 44))
    assert not store.add_data_gap(SITE, gap("up-1", "turb-up", 10, 19, "again"))
    assert store.add_data_gap("other", gap("up-1", "turb-up", 10, 19))
    assert store.data_gaps(SITE) == [
        gap("up-1", "turb-up", 10, 19),
        gap("down-1", "turb-down", 3, 3),
        gap("up-1", "turb-up", 40, 44),
    ]
    assert store.data_gaps(SITE, "down-1") == [gap("down-1", "turb-down", 3, 3)]
    assert store.data_gap_totals(SITE) == {"up-1": (2, 15), "down-1": (1, 1)}


def _reading(seq: int) -> bytes:
    return json.dumps(
        {"v": 1, "type": "reading", "site": SITE, "station": "up-1", "sensor": "turb-up",
         "time": f"2026-05-05T18:{seq:02d}:00Z", "seq": seq, "value": 5.0, "unit": "NTU"}
    ).encode()  # fmt: skip


def _status(oldest: int, next_seq: int) -> bytes:
    return json.dumps(
        {"v": 1, "type": "status", "site": SITE, "station": "up-1", "state": "online",
         "time": "2026-05-05T18:30:00Z",
         "health": {"backlog": 0, "retention_s": 60.0, "held": [
             {"sensor": "turb-up", "oldest_seq": oldest, "next_seq": next_seq}]}}
    ).encode()  # fmt: skip


@both
def test_a_range_the_station_no_longer_holds_is_recorded_and_the_rest_asked_for(
    store: SqlStore,
) -> None:
    site = load_site(EXAMPLES / "lake-george-site.toml")
    service = IngestService(site, store, None, completeness=GapPolicy(first_request_s=1))
    topic = f"siltwatch/v1/{SITE}/up-1/turb-up/reading"
    arrived = 1_780_000_000_000
    for seq in (0, 1, 9):
        service.handle_message(topic, _reading(seq), arrived)
    assert service.completeness_due(arrived) == []  # still young
    [request] = service.completeness_due(arrived + 1_000)
    assert (request.station, request.sensor, request.seq_from, request.seq_to) == (
        "up-1", "turb-up", 2, 8,
    )  # fmt: skip
    service.handle_message(f"siltwatch/v1/{SITE}/up-1/status", _status(5, 10), arrived + 2_000)
    [lost] = store.data_gaps(SITE)
    assert (lost.station, lost.sensor, lost.seq_from, lost.seq_to) == ("up-1", "turb-up", 2, 4)
    assert "evicted" in lost.reason and service.stats.readings_lost == 3
    for seq in (5, 6, 7, 8):
        service.handle_message(topic, _reading(seq), arrived + 3_000)
    assert service.gaps is not None and service.gaps.open_gaps() == []
    assert service.gaps.completeness() == {("up-1", "turb-up"): (7, 10)}
    assert store.reading_count(SITE) == 7


@both
def test_an_open_gap_outlives_a_restart_and_is_asked_for_again_at_once(store: SqlStore) -> None:
    """The store is the truth: a service that restarts takes up the gaps it was asking
    for, the highest seq it saw (a hole across the restart is seen) and its counts."""
    site = load_site(EXAMPLES / "lake-george-site.toml")
    policy = GapPolicy(first_request_s=1, retry_base_s=60)
    before = IngestService(site, store, None, completeness=policy)
    topic = f"siltwatch/v1/{SITE}/up-1/turb-up/reading"
    arrived = 1_780_000_000_000
    for seq in (0, 1, 9):
        before.handle_message(topic, _reading(seq), arrived)
    [asked] = before.completeness_due(arrived + 1_000)
    assert before.completeness_due(arrived + 2_000) == []  # the next ask is a minute away

    after = IngestService(site, store, None, completeness=policy)  # serve restarted
    assert after.gaps is not None
    assert [(g.lo, g.hi) for g in after.gaps.open_gaps()] == [(2, 8)]
    [again] = after.completeness_due(arrived + 3_000)  # at once, not only for new gaps
    assert (again.seq_from, again.seq_to) == (asked.seq_from, asked.seq_to) == (2, 8)
    after.handle_message(topic, _reading(12), arrived + 4_000)  # 10, 11 lost meanwhile
    assert [(g.lo, g.hi) for g in after.gaps.open_gaps()] == [(2, 8), (10, 11)]
    for seq in (2, 3, 4, 5, 6, 7, 8, 10, 11):
        after.handle_message(topic, _reading(seq), arrived + 5_000)
    assert after.gaps.open_gaps() == []
    assert after.gaps.completeness() == {("up-1", "turb-up"): (13, 13)}
    assert IngestService(site, store, None, completeness=policy).gaps.open_gaps() == []  # type: ignore[union-attr]


@both
def test_the_console_shows_each_stations_completeness_and_what_was_lost(store: SqlStore) -> None:
    site = load_site(EXAMPLES / "lake-george-site.toml")
    service = IngestService(site, store, None, completeness=GapPolicy(first_request_s=1))
    topic = f"siltwatch/v1/{SITE}/up-1/turb-up/reading"
    arrived = 1_780_000_000_000
    for seq in (0, 1, 2, 9):
        service.handle_message(topic, _reading(seq), arrived)
    service.handle_message(f"siltwatch/v1/{SITE}/up-1/status", _status(5, 10), arrived + 1_000)
    assert store.completeness_totals(SITE) == {"up-1": (4, 10)}
    rows = {r.id: r for r in station_rows(site, store)}
    assert rows["up-1"].complete == "40.0 % (4 of 10)"
    assert rows["up-1"].lost == "2 lost (1 gap)"  # seqs 3, 4: evicted
    assert rows["down-1"].complete == "—"  # nothing heard: nothing to count
