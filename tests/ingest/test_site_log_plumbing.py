"""The site log as an engine input: ordered, stored with the message's commit, replayed.

What people record on the site (areas disturbed, cleared, graded, covered;
milestones; notices; corrective actions) reaches every detector's
``on_site_log`` in event time, never moves event time, is stored once, and a
restart or a rebuild delivers each entry exactly once. The detectors of most
tests here are one :class:`LogProbe` that records what the engine hands it, so
"delivered exactly once" is read off its state, which a snapshot carries across
a restart like any detector's. The last tests run the real commands: ``replay
--site-log`` and ``siltwatch log`` against a real Mosquitto and a real
``siltwatch serve``.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from analytics.engine import Engine
from analytics.events import Inspection, SensorReading, SiteLogEntry, StationReport
from analytics.timeutil import iso
from ingest.decode import Decoded, Rejected, decode_message
from ingest.recordings.formats import RecordingError, read_capture, read_inspections, read_site_log
from ingest.recordings.replay import replay_file, replay_site
from ingest.store.queries import SqlStore
from ingest.store.sqlite import SqliteStore
from siltwatch.schema import inspections_topic, parse_topic, site_log_topic
from tests.analytics import recorders
from tests.analytics.recorders import Log, Q, Recorder, each_detector, out_of_order, rain, recorded
from tests.analytics.test_rain import gauge_site
from tests.ingest import probes
from tests.ingest.conftest import BACKENDS
from tests.ingest.live import ROOT, ServeProcess, loopback_broker, password_file, run_cli
from tests.ingest.probes import SITE, SITE_ID, TEN_YEARS_MS, at, minutes, new_service
from tests.ingest.probes import LogSeen as Seen
from tests.servers import MosquittoServer

SITE_FILE = ROOT / "examples" / "lake-george-site.toml"
AREAS = "north-cut, pad-b, stockpile"  # the example site's areas, as messages list them


# --- detectors that record what they are handed ----------------------------------------


@pytest.fixture
def only_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every engine of a test (new, restored, rebuilt) runs the probe alone."""
    probes.run_alone(monkeypatch, probes.LogProbe)


def probe(engine: Engine) -> list[Seen]:
    return probes.seen_by(engine, probes.LogProbe)


# --- the engine ------------------------------------------------------------------------


def test_entries_come_after_the_other_inputs_and_reach_every_detector() -> None:
    # Fed out of order, site-log entries first; ties at one instant.
    site_log = [
        SiteLogEntry(2 * Q, "cleared", "north", "Dana"),
        SiteLogEntry(Q, "milestone", None, "Jo", "controls_installed"),
        SiteLogEntry(Q, "disturbed", "north", "Dana"),
    ]
    engine, log = out_of_order(site_log, [StationReport("st", Q, "online")])
    assert recorded(log) == recorders.handed_in_order(
        # Two entries at one instant: by their fields, not by the order they came in.
        at_q=[("status online", "st"), ("disturbed", "Dana"), ("milestone", "Jo")],
        at_2q=[("cleared", "Dana")],
    )
    entries = [(n, kind, t) for n, kind, _who, t in log if kind in ("disturbed", "milestone")]
    assert entries == each_detector("ab", [("disturbed", Q), ("milestone", Q)])
    assert (engine.stats.site_log, engine.stats.inspections, engine.stats.statuses) == (3, 1, 1)


def test_equal_keys_mean_equal_entries_and_ties_never_compare_payloads() -> None:
    log: Log = []
    engine = Engine(gauge_site(), detectors=[Recorder("a", log)])
    same = SiteLogEntry(Q, "corrective_action", None, "Dana", "al-1 silt fence mended")
    # Fields that would join to one text with a naive separator are still told apart.
    split_one = SiteLogEntry(Q, "active", "a", "b|c")
    split_two = SiteLogEntry(Q, "active", "a|b", "c")
    for entry in (same, same, split_one, split_two):
        engine.feed_site_log(entry)
    # Inspections that differ only in their record fields, at one instant.
    engine.feed_inspection(Inspection(Q, "Jo", phone="828-555-0100"))
    engine.feed_inspection(Inspection(Q, "Jo", phone="828-555-0199", signed=True))
    engine.feed_inspection(Inspection(Q, "Jo"))
    engine.feed([rain(2 * Q)])
    engine.finish()
    kinds = [kind for kind, _who, _t in recorded(log)]
    assert kinds.count("corrective_action") == 2 and kinds.count("active") == 2
    assert kinds.count("inspection") == 3


def test_an_entry_never_moves_a_watermark_live_or_in_a_replay() -> None:
    log: Log = []
    live = Engine(gauge_site(), detectors=[Recorder("a", log)])
    t0 = 100 * Q
    live.feed([rain(t0)], received_at=t0 + 1_000)
    before = live.watermark
    live.feed_site_log(SiteLogEntry(t0 + TEN_YEARS_MS, "active", "x", "Dana"), t0 + 2_000)
    assert live.watermark == before and live.processed_to() == before
    assert live.clock == t0 + 2_000, "the arrival still advances the service's clock"

    replay = Engine(gauge_site(), detectors=[Recorder("b", log)])
    replay.feed([rain(Q)])
    before = replay.watermark
    replay.feed_site_log(SiteLogEntry(Q + TEN_YEARS_MS, "active", "x", "Dana"))
    assert replay.watermark == before
    # An inspection in a replay still moves the replay watermark, as it always has.
    replay.feed_inspection(Inspection(Q + 2 * Q, "Jo"))
    assert replay.watermark != before


def test_an_entry_dated_before_what_was_processed_is_used_at_once_and_noted_late() -> None:
    log: Log = []
    engine = Engine(gauge_site(), detectors=[Recorder("a", log)])
    engine.feed([rain(Q), rain(10 * Q)], received_at=10 * Q)
    assert engine.late_from is None
    # An inactive row is dated at the last day of work: days back, on purpose.
    engine.feed_site_log(SiteLogEntry(2 * Q, "inactive", "pad", "Dana"), received_at=10 * Q + 1)
    assert engine.late_from == 2 * Q
    assert ("a", "inactive", "Dana", 2 * Q) in log


@pytest.mark.usefixtures("only_the_probe")
def test_catch_up_and_snapshots_carry_entries() -> None:
    engine = Engine(gauge_site())
    cover = SiteLogEntry(3 * Q, "permanent_cover", "x", "D")
    engine.catch_up(
        [[rain(Q), rain(2 * Q), rain(3 * Q)]],
        [],
        2 * Q,
        [],
        [SiteLogEntry(Q, "graded", "x", "Dana"), cover],
    )
    assert probe(engine) == [("graded", "x", Q)]
    assert engine.stats.site_log == 2
    # The cover is still waiting: a full snapshot keeps it, the live service's leaves it
    # to be re-read from its store.
    restored = Engine.restore(engine.site, engine.snapshot())
    assert [entry[3] for entry in restored._buffer if entry[1] == 3] == [cover]
    assert (restored.stats.site_log, probe(restored)) == (2, [("graded", "x", Q)])
    restored.finish(3 * Q)
    assert probe(restored) == [("graded", "x", Q), ("permanent_cover", "x", 3 * Q)]
    assert Engine.restore(engine.site, engine.snapshot_processed())._buffer == []


# --- the store -------------------------------------------------------------------------


@pytest.mark.parametrize("store_db", BACKENDS, indirect=True)
def test_store_round_trip_duplicate_refusal_and_marks(store: SqlStore) -> None:
    cleared = SiteLogEntry(at(10), "cleared", "north-cut", "Dana Ruiz")
    milestone = SiteLogEntry(at(1), "milestone", None, "Jo Whitaker", "controls_installed")
    assert store.add_site_log(SITE_ID, cleared, at(11))
    assert not store.add_site_log(SITE_ID, cleared, at(12)), "the same entry delivered again"
    assert store.add_site_log(SITE_ID, milestone, at(13))
    by_another = SiteLogEntry(at(10), "cleared", "north-cut", "Jo Whitaker")
    assert store.add_site_log(SITE_ID, by_another, at(14)), "another person's entry"
    with_detail = SiteLogEntry(at(10), "cleared", "north-cut", "Dana Ruiz", "west half")
    assert store.add_site_log(SITE_ID, with_detail, at(15)), "another detail"
    assert store.site_log(SITE_ID) == [milestone, cleared, by_another, with_detail]
    assert store.site_log_after(SITE_ID, at(1)) == [cleared, by_another, with_detail]
    assert store.site_log("another-site") == []

    marks = store.marks()
    assert marks[3] >= 4  # PostgreSQL's ids may skip one a refused duplicate drew
    assert store.earliest_stored_after(SITE_ID, *marks[:3], 1) == at(1)
    assert store.earliest_stored_after(SITE_ID, *marks) is None
    store.save_snapshot(SITE_ID, b"x", at(20), processed_to=at(5), marks=marks)
    assert store.snapshots(SITE_ID)[0].site_log_mark == marks[3]


@pytest.mark.parametrize("store_db", BACKENDS, indirect=True)
def test_the_inspection_record_fields_round_trip(store: SqlStore) -> None:
    full = Inspection(
        at(1),
        "Jo Whitaker",
        None,
        affiliation="Whitaker Erosion Control",
        address="12 Main St, Lake Lure NC",
        phone="828-555-0100",
        signed=True,
        deviations="silt fence moved 20 ft east",
        corrective_actions="inlet protection replaced 2026-05-05",
    )
    unsigned = Inspection(at(2), "Dana Ruiz", "du-1", signed=False)
    assert store.add_inspection(SITE_ID, full, at(1))
    assert store.add_inspection(SITE_ID, unsigned, at(2))
    assert store.inspections_after(SITE_ID, None) == [full, unsigned]


V3_TABLES = """
DROP TABLE site_log; DROP TABLE snapshots; DROP TABLE inspections;
CREATE TABLE snapshots (
    site TEXT NOT NULL, processed_to INTEGER NOT NULL, reading_mark INTEGER NOT NULL,
    inspection_mark INTEGER NOT NULL, taken_at INTEGER NOT NULL, blob BLOB NOT NULL,
    status_mark INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (site, processed_to)
);
CREATE TABLE inspections (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, t INTEGER NOT NULL, inspector TEXT NOT NULL, duty TEXT NOT NULL DEFAULT '',
    received_at INTEGER NOT NULL DEFAULT 0,
    UNIQUE (site, t, inspector, duty)
);
INSERT INTO snapshots VALUES ('lg-route9n', 5, 8, 1, 7, x'00', 0);
INSERT INTO inspections (site, t, inspector, duty, received_at)
    VALUES ('lg-route9n', 1777899600000, 'Jo', '', 1);
PRAGMA user_version=3;
"""


@pytest.mark.usefixtures("only_the_probe")
def test_a_version_3_store_gains_the_site_log_in_place(sqlite_path: Path) -> None:
    with probes.an_older_store(sqlite_path, V3_TABLES) as store:  # the file version 3 wrote
        (row,) = store.snapshots(SITE_ID)
        assert (row.processed_to, row.reading_mark, row.site_log_mark, row.blob) == (5, 8, 0, b"\0")
        assert store.inspections_after(SITE_ID, None) == [Inspection(at(0), "Jo")]
        entry = SiteLogEntry(at(9), "inactive", "pad-b", "Dana Ruiz")
        assert store.add_site_log(SITE_ID, entry, at(9))
        assert store.marks() == (8, 1, 0, 1)
        assert store.earliest_stored_after(SITE_ID, 8, 1, 0, row.site_log_mark) == at(9)


# --- decoding --------------------------------------------------------------------------

LOG = site_log_topic(SITE_ID)


def entry_payload(event: str, t: int, area: str | None = None, **more: Any) -> bytes:
    body: dict[str, Any] = {"type": "site_log", "site": SITE_ID, "time": iso(t), "event": event}
    if area is not None:
        body["area"] = area
    body.setdefault("by", "Dana Ruiz")
    body.update(more)
    return json.dumps(body).encode()


def test_the_log_topic_decodes_to_entries() -> None:
    assert parse_topic(LOG).kind == "log" and LOG == "siltwatch/v1/lg-route9n/log"
    got = decode_message(LOG, entry_payload("cleared", at(1), "north-cut"), SITE)
    assert isinstance(got, Decoded)
    assert got.site_log == [SiteLogEntry(at(1), "cleared", "north-cut", "Dana Ruiz")]
    assert (got.readings, got.inspections, got.status) == ([], [], None)
    notice = entry_payload("notice", at(2), detail="construction_completed", by="Jo")
    got = decode_message(LOG, notice, SITE)
    assert isinstance(got, Decoded)
    assert got.site_log == [SiteLogEntry(at(2), "notice", None, "Jo", "construction_completed")]


@pytest.mark.parametrize(
    ("topic", "payload", "reason"),
    [
        (
            LOG,
            entry_payload("cleared", at(1), "south-cut"),
            f"unknown area: 'south-cut' is not an area of site 'lg-route9n' (its areas: {AREAS})",
        ),
        (
            LOG,
            entry_payload("cleared", at(1)),
            "invalid payload: field 'area': event 'cleared' names the area it concerns",
        ),
        (
            LOG,
            entry_payload("milestone", at(1), "pad-b", detail="controls_installed"),
            "invalid payload: field 'area': event 'milestone' is about the whole site",
        ),
        (
            LOG,
            entry_payload("milestone", at(1), detail="fence_up"),
            "invalid payload: field 'detail': event 'milestone' names a milestone, one of "
            "start_of_development,",
        ),
        (LOG, entry_payload("sprayed", at(1), "pad-b"), "invalid payload: field 'event': Input"),
        (LOG, entry_payload("active", at(1), "pad-b", by=""), "invalid payload: field 'by'"),
        (
            LOG,
            entry_payload("active", at(1), "pad-b", detail="x" * 1001),
            "invalid payload: field 'detail'",
        ),
        (
            LOG,
            entry_payload("active", at(1), "pad-b", site="other-site"),
            "wrong topic: site-log entry for site 'other-site' published on",
        ),
        (f"{LOG}/extra", entry_payload("active", at(1), "pad-b"), "wrong topic"),
    ],
)
def test_a_bad_entry_is_rejected_with_its_reason(topic: str, payload: bytes, reason: str) -> None:
    got = decode_message(topic, payload, SITE)
    assert isinstance(got, Rejected)
    assert got.reason.startswith(reason), got.reason


# --- the live service ------------------------------------------------------------------

E1: Seen = ("cleared", "north-cut", at(5.5))
E2: Seen = ("milestone", None, at(20.5))  # still waiting in the engine at the snapshot
E3: Seen = ("inactive", "pad-b", at(21.25))  # stored after the snapshot
CLEARED = entry_payload("cleared", at(5.5), "north-cut")
MILESTONE = entry_payload("milestone", at(20.5), detail="controls_installed", by="Jo")
INACTIVE = entry_payload("inactive", at(21.25), "pad-b")


@pytest.mark.usefixtures("only_the_probe")
def test_the_service_stores_an_entry_and_feeds_it_in_event_time(store: SqliteStore) -> None:
    service = new_service(store)
    minutes(service, 0, 5)
    service.handle_message(LOG, CLEARED, at(5.5) + 200)
    assert probe(service.engine) == [], "not before the watermark passes it"
    assert store.site_log(SITE_ID) == [SiteLogEntry(at(5.5), "cleared", "north-cut", "Dana Ruiz")]
    minutes(service, 6, 10)
    assert probe(service.engine) == [E1]
    # The same message again (QoS 1 after a reconnect): stored and fed once.
    service.handle_message(LOG, CLEARED, at(10.5))
    minutes(service, 11, 12)
    assert probe(service.engine) == [E1]
    assert (service.stats.site_log, service.stats.site_log_duplicates) == (1, 1)
    assert len(store.site_log(SITE_ID)) == 1
    assert store.rejections() == []


@pytest.mark.usefixtures("only_the_probe")
def test_a_bad_entry_is_stored_as_a_rejection_and_changes_nothing_else(store: SqliteStore) -> None:
    service = new_service(store)
    minutes(service, 0, 5)
    service.handle_message(LOG, entry_payload("cleared", at(5.5), "south-cut"), at(5.5))
    ahead = entry_payload("active", at(5.6) + TEN_YEARS_MS, "pad-b")
    service.handle_message(LOG, ahead, at(5.6))
    service.handle_message(LOG, CLEARED, at(5.7))
    minutes(service, 6, 10)
    unknown, clock = store.rejections()
    assert unknown == (LOG, f"unknown area: 'south-cut' is not an area of site 'lg-route9n' "
                       f"(its areas: {AREAS})")  # fmt: skip
    assert clock[1].startswith("clock ahead: site-log time 2036-"), clock
    assert service.stats.rejected == 2
    assert probe(service.engine) == [E1]
    assert store.reading_count(SITE_ID) == 22


@pytest.mark.usefixtures("only_the_probe")
def test_inspection_record_fields_are_stored_from_the_wire(store: SqliteStore) -> None:
    service = new_service(store)
    minutes(service, 0, 3)
    record = {
        "type": "inspection",
        "site": SITE_ID,
        "time": iso(at(3.5)),
        "inspector": "Jo Whitaker",
        "affiliation": "Whitaker Erosion Control",
        "phone": "828-555-0100",
        "signed": True,
        "deviations": "",
        "corrective_actions": "silt fence mended",
    }
    service.handle_message(inspections_topic(SITE_ID), json.dumps(record).encode(), at(3.6))
    (stored,) = store.inspections_after(SITE_ID, None)
    assert stored == Inspection(
        at(3.5),
        "Jo Whitaker",
        affiliation="Whitaker Erosion Control",
        phone="828-555-0100",
        signed=True,
        corrective_actions="silt fence mended",
    )
    bad = dict(record, signed="yes")  # on the wire a signature is a JSON boolean
    service.handle_message(inspections_topic(SITE_ID), json.dumps(bad).encode(), at(3.7))
    assert store.rejections()[-1][1].startswith("invalid payload: field 'signed'")


# E1 processed, E2 still waiting in the engine at the snapshot, E3 stored after it.
_history = probes.history((LOG, CLEARED), (LOG, MILESTONE), (LOG, INACTIVE))


@pytest.mark.usefixtures("only_the_probe")
@pytest.mark.parametrize("how", probes.HOW)
def test_a_restarted_service_delivers_each_entry_exactly_once(store: SqliteStore, how: str) -> None:
    first, second = probes.restarted(store, how, _history)
    assert probe(second.engine) == [E1, E2, E3]
    assert probe(first.engine) == [E1, E2, E3]


@pytest.mark.usefixtures("only_the_probe")
def test_an_entry_dated_back_is_applied_in_order_by_a_rebuild(store: SqliteStore) -> None:
    service = new_service(store)
    _history(service)
    # Work in pad-b stopped at minute 2: recorded only now, dated back on purpose.
    back = entry_payload("inactive", at(2.5), "pad-b", by="Jo")
    service.handle_message(LOG, back, at(24))
    assert service._rebuild_from == at(2.5)
    service.rebuild_now(at(24) + 1)
    assert service.stats.rebuilds == 1
    minutes(service, 24, 30)
    assert probe(service.engine) == [("inactive", "pad-b", at(2.5)), E1, E2, E3]


@pytest.mark.usefixtures("only_the_probe")
def test_a_late_entry_takes_a_restart_to_an_older_snapshot(store: SqliteStore) -> None:
    """An entry stored after a snapshot but dated before it: the site-log mark finds it."""
    late = (LOG, entry_payload("graded", at(10.5), "stockpile"))
    second = probes.restarted_after_a_late_message(store, _history, late, at(10.5))
    minutes(second, 24, 30)
    assert probe(second.engine) == [E1, ("graded", "stockpile", at(10.5)), E2, E3]


# --- the site-log CSV, captures and replay ----------------------------------------------

GOOD_LOG = """time,event,area,by,detail
2026-05-04T09:30:00-04:00,milestone,,Jo Whitaker,controls_installed
2026-05-04T10:00:00-04:00,cleared,north-cut,Dana Ruiz,
2026-05-04T16:00:00Z,corrective_action,,Dana Ruiz,al-123 silt fence mended
2026-05-04T09:00:00-04:00,disturbed,stockpile,Dana Ruiz,
2026-06-30T17:00:00-04:00,inactive,pad-b,Dana Ruiz,
"""

BAD_LOG = """time,event,area,by,detail
2026-05-04T10:00:00,cleared,north-cut,Dana Ruiz,
yesterday,cleared,north-cut,Dana Ruiz,
2026-05-04T10:00:00Z,sprayed,north-cut,Dana Ruiz,
2026-05-04T10:00:00Z,cleared,south-cut,Dana Ruiz,
2026-05-04T10:00:00Z,cleared,,Dana Ruiz,
2026-05-04T10:00:00Z,notice,pad-b,Dana Ruiz,controls_installed
2026-05-04T10:00:00Z,milestone,,Dana Ruiz,fence_up
2026-05-04T10:00:00Z,notice,,Dana Ruiz,
2026-05-04T10:00:00Z,active,pad-b,,
2026-05-04T10:00:00Z,active,pad-b,Dana Ruiz,this one is fine
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_site_log_csv_reads_every_row(tmp_path: Path) -> None:
    entries = read_site_log(write(tmp_path, "log.csv", GOOD_LOG), [a.id for a in SITE.areas])
    assert [(e.event, e.area, e.by, e.detail) for e in entries] == [
        ("milestone", None, "Jo Whitaker", "controls_installed"),
        ("cleared", "north-cut", "Dana Ruiz", ""),
        ("corrective_action", None, "Dana Ruiz", "al-123 silt fence mended"),
        ("disturbed", "stockpile", "Dana Ruiz", ""),
        ("inactive", "pad-b", "Dana Ruiz", ""),
    ]
    assert [e.t for e in entries] == [at(30), at(60), at(180), at(0), at(60 * 24 * 57 + 8 * 60)]
    # The detail column may be left out where no row needs one.
    plain = "time,event,area,by\n2026-05-04T10:00:00-04:00,graded,pad-b,Dana Ruiz\n"
    (graded,) = read_site_log(write(tmp_path, "plain.csv", plain), ["pad-b"])
    assert graded == SiteLogEntry(at(60), "graded", "pad-b", "Dana Ruiz", "")


def test_every_bad_row_is_named_by_file_line_and_what_was_expected(tmp_path: Path) -> None:
    path = write(tmp_path, "log.csv", BAD_LOG)
    with pytest.raises(RecordingError) as info:
        read_site_log(path, [a.id for a in SITE.areas])
    f = str(path)
    assert info.value.lines == [
        f"{f}:2: column 'time': '2026-05-04T10:00:00' has no UTC offset (add 'Z' or e.g. "
        "'-04:00'; local times are ambiguous)",
        f"{f}:3: column 'time': 'yesterday' is not an ISO 8601 time (expected e.g. "
        "2026-05-04T13:00:00Z)",
        f"{f}:4: column 'event': 'sprayed' is not a site-log event (expected one of disturbed, "
        "cleared, graded, active, inactive, temporary_cover, completed, seeded, "
        "permanent_cover, extra_measures, milestone, notice, certification, plan_on_site, plan_approved, "
        "felled_into_water, felled_removed, corrective_action, on_site, approval_displayed, "
        "conference_required, conference_held, plan_changed, as_built, maintenance_scheduled, "
        "maintained, violation, violation_corrected)",
        f"{f}:5: column 'area': 'south-cut' is not an area of the site (its areas: {AREAS})",
        f"{f}:6: column 'area': event 'cleared' names the area it concerns; none given "
        f"(the site's areas: {AREAS})",
        f"{f}:7: column 'area': event 'notice' is about the whole site and names no area; "
        "got 'pad-b'",
        f"{f}:8: column 'detail': event 'milestone' names a milestone, one of "
        "start_of_development, controls_installed, clearing_completed, "
        "rough_grading_completed, final_grading_completed, storm_drainage_completed, "
        "construction_completed, construction_season_closed, final_landscaping_completed, "
        "landscaping_established, final_acceptance, maintenance_agreement; got 'fence_up'",
        f"{f}:9: column 'detail': event 'notice' names a milestone, one of "
        "start_of_development, controls_installed, clearing_completed, "
        "rough_grading_completed, final_grading_completed, storm_drainage_completed, "
        "construction_completed, construction_season_closed, final_landscaping_completed, "
        "landscaping_established, final_acceptance, maintenance_agreement; none given",
        f"{f}:10: column 'by': empty (who did it or recorded it must be named)",
    ]


def test_at_most_twenty_bad_rows_are_listed_and_the_rest_counted(tmp_path: Path) -> None:
    rows = "".join(f"2026-05-04T10:{m:02d}:00Z,cleared,nowhere,Dana,\n" for m in range(25))
    path = write(tmp_path, "log.csv", "time,event,area,by,detail\n" + rows)
    with pytest.raises(RecordingError) as info:
        read_site_log(path, ["pad-b"])
    assert len(info.value.lines) == 21
    assert info.value.lines[0].startswith(f"{path}:2: column 'area': 'nowhere'")
    assert info.value.lines[-1] == f"{path}: ... and 5 more bad rows"


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "log.csv", "time,event,by\n2026-05-04T10:00:00Z,cleared,Dana\n")
    with pytest.raises(RecordingError) as info:
        read_site_log(path, ["pad-b"])
    assert info.value.lines == [
        f"{path}:1: header 'time,event,by' lacks column(s) area (expected time,event,area,by)"
    ]


INSPECTIONS = """time,inspector,duty,affiliation,address,phone,signed,deviations,corrective_actions
2026-05-05T09:30:00-04:00,Jo Whitaker,,Whitaker ECS,"12 Main St, Lake Lure",828-555-0100,yes,,fence mended
2026-05-06T09:30:00-04:00,Dana Ruiz,,,,,No,inlet moved,
2026-05-07T09:30:00-04:00,Dana Ruiz,,,,,,,
2026-05-08T09:30:00-04:00,Dana Ruiz,,,,,maybe,,
"""


def test_the_inspections_csv_takes_the_record_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "inspections.csv", INSPECTIONS)
    with pytest.raises(RecordingError) as info:
        read_inspections(path)
    assert info.value.lines == [
        f"{path}:5: column 'signed': 'maybe' is not yes or no "
        "(expected yes, no, true, false, 1 or 0)"
    ]
    good = write(tmp_path, "good.csv", INSPECTIONS.rsplit("\n", 2)[0] + "\n")
    first, second, third = read_inspections(good)
    assert first == Inspection(
        first.t,
        "Jo Whitaker",
        None,
        affiliation="Whitaker ECS",
        address="12 Main St, Lake Lure",
        phone="828-555-0100",
        signed=True,
        corrective_actions="fence mended",
    )
    assert (second.signed, second.deviations) == (False, "inlet moved")
    assert third == Inspection(third.t, "Dana Ruiz")


@pytest.mark.usefixtures("only_the_probe")
def test_replay_merges_the_site_log_in_event_time(tmp_path: Path) -> None:
    readings = [SensorReading("turb-up", at(m), 5.0) for m in range(0, 6 * 60, 15)]
    log = read_site_log(write(tmp_path, "log.csv", GOOD_LOG), [a.id for a in SITE.areas])
    result = replay_site(SITE, readings, site_log=log, keep_engine=True)
    assert result.engine is not None
    # In event time, the entry after the last reading (June) not fed: the run ends there.
    assert probe(result.engine) == [
        ("disturbed", "stockpile", at(0)),
        ("milestone", None, at(30)),
        ("cleared", "north-cut", at(60)),
        ("corrective_action", None, at(180)),
    ]
    assert result.stats.site_log == 4


def test_an_empty_site_log_changes_no_replay_output(tmp_path: Path) -> None:
    examples = ROOT / "examples"
    empty = write(tmp_path, "log.csv", "time,event,area,by,detail\n")
    plain = replay_file(SITE_FILE, examples / "lake-george-storm.csv")
    logged = replay_file(SITE_FILE, examples / "lake-george-storm.csv", site_log=empty)
    assert logged.alerts_jsonl() == plain.alerts_jsonl()
    assert logged.duties_jsonl() == plain.duties_jsonl()


@pytest.mark.usefixtures("only_the_probe")
def test_a_capture_replays_the_site_log_and_checks_its_areas(tmp_path: Path) -> None:
    lines = probes.upstream_capture(0, 30)
    lines.insert(9, probes.capture_line(LOG, CLEARED))
    lines.append(probes.capture_line(LOG, MILESTONE))
    path = write(tmp_path, "capture.jsonl", "".join(lines))
    capture = read_capture(path, SITE.sensors(), [a.id for a in SITE.areas])
    assert len(capture.site_log) == 2
    result = replay_file(SITE, path)
    assert result.stats.site_log == 2

    bad_line = probes.capture_line(LOG, entry_payload("cleared", at(1), "south-cut"))
    bad = write(tmp_path, "bad.jsonl", bad_line)
    with pytest.raises(RecordingError) as info:
        read_capture(bad, SITE.sensors(), [a.id for a in SITE.areas])
    assert info.value.lines == [
        f"{bad}:1: 'south-cut' is not an area of site 'lg-route9n' (its areas: {AREAS})"
    ]


def test_replay_with_a_bad_site_log_exits_1_naming_each_row(tmp_path: Path) -> None:
    def replay(log: str) -> subprocess.CompletedProcess[str]:
        return run_cli(
            "replay", str(ROOT / "examples" / "lake-george-storm.csv"),
            "--site", str(SITE_FILE), "--site-log", str(write(tmp_path, "log.csv", log)),
            "--alerts-out", str(tmp_path / "a.jsonl"), "--duties-out", str(tmp_path / "d.jsonl"),
        )  # fmt: skip

    done = replay(BAD_LOG)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    path = tmp_path / "log.csv"
    assert len(lines) == 9 and all(line.startswith(f"error: {path}:") for line in lines)
    assert "Traceback" not in done.stderr

    done = replay(GOOD_LOG)
    assert done.returncode == 0, done.stderr
    assert "and 4 site-log entries of site 'lg-route9n'" in done.stdout


# --- siltwatch log, through a real broker to a real serve --------------------------------


def test_log_refuses_what_the_site_does_not_have_before_any_broker(tmp_path: Path) -> None:
    unreachable = "mqtt://127.0.0.1:9"  # never reached: the entry is checked first
    cases = [
        (("cleared", "--area", "south-cut"), f"error: --area: 'south-cut' is not an area of the "
         f"site (the areas of site 'lg-route9n': {AREAS})"),
        (("cleared",), "error: --area: event 'cleared' names the area it concerns; none given "
         f"(the areas of site 'lg-route9n': {AREAS})"),
        (("milestone", "--detail", "fence_up"), "error: --detail: the milestone 'fence_up' is "
         "not one of the plan's phases: start of development, controls installed,"),
        (("active", "--area", "pad-b", "--time", "2026-05-04T10:00:00"), "error: --time: "
         "'2026-05-04T10:00:00' has no UTC offset"),
        (("active", "--area", "pad-b", "--time", "2099-05-04T10:00:00Z"), "error: --time: "
         "2099-05-04T10:00:00Z is ahead of now"),
    ]  # fmt: skip
    for args, error in cases:
        done = run_cli("log", *args, "--site", str(SITE_FILE), "--broker", unreachable, "--by", "D")
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert done.stderr.startswith(error), (args, done.stderr)
        assert len(done.stderr.splitlines()) == 1, done.stderr
    done = run_cli("log", "planted", "--site", str(SITE_FILE))
    assert done.returncode == 2 and "invalid choice: 'planted'" in done.stderr
    for args in (("active", "--area", "pad-b"), ("milestone", "--detail", "Clearing completed")):
        # Well formed (a milestone may be typed in words): only the broker is missing.
        done = run_cli("log", *args, "--site", str(SITE_FILE), "--broker", unreachable,
                       "--by", "D")  # fmt: skip
        assert done.returncode == 1
        assert done.stderr.startswith("error: cannot reach the MQTT broker at mqtt://127.0.0.1:9:")


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-log-", log_types=("all",))


def stored_site_log(db: Path) -> list[tuple[Any, ...]]:
    """The serving store's site log, read-only (never contends with the writer)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
        try:
            return con.execute("SELECT t, event, area, who, detail FROM site_log").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []


@pytest.mark.integration
def test_siltwatch_log_reaches_the_store_of_a_running_serve(
    broker: MosquittoServer, tmp_path: Path
) -> None:
    url = f"mqtt://{broker.host}:{broker.port}"
    db = tmp_path / "site.sqlite3"
    ingest_pw = tmp_path / "ingest"
    ingest_pw.mkdir()
    serve = ServeProcess(
        [
            "--site", str(SITE_FILE), "--broker", url,
            "--username", "ingest", "--password-file", str(password_file(ingest_pw, "ingest-pw")),
            "--db", str(db), "--alert-log", str(tmp_path / "alerts.jsonl"), "--tick-s", "0.5",
        ],
        tmp_path / "serve.log",
    )  # fmt: skip
    try:
        _log_through(broker, serve, tmp_path)
    finally:
        serve.stop_quietly()


def _log_through(broker: MosquittoServer, serve: ServeProcess, tmp_path: Path) -> None:
    url = f"mqtt://{broker.host}:{broker.port}"
    db = tmp_path / "site.sqlite3"
    serve.start(wait_s=20.0)
    deadline = time.monotonic() + 10.0
    while not re.search(r"Sending SUBACK to siltwatch-ingest-lg-route9n$", broker.log_text(), re.M):
        assert time.monotonic() < deadline, f"serve never subscribed:\n{serve.output}"
        time.sleep(0.05)

    when = "2026-05-04T10:00:00-04:00"
    station_pw = tmp_path / "station"
    station_pw.mkdir()
    done = run_cli(
        "log", "inactive", "--area", "pad-b", "--by", "Dana Ruiz", "--time", when,
        "--detail", "crew moved to building A",
        "--site", str(SITE_FILE), "--broker", url,
        "--username", "station", "--password-file", str(password_file(station_pw, "station-pw")),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(
        "logged inactive in pad-b (crew moved to building A) by Dana Ruiz at "
        "2026-05-04T14:00:00Z on siltwatch/v1/lg-route9n/log: acknowledged by " + url
    ), done.stdout
    expected = (at(60), "inactive", "pad-b", "Dana Ruiz", "crew moved to building A")
    deadline = time.monotonic() + 10.0
    while stored_site_log(db) != [expected]:
        assert time.monotonic() < deadline, f"never stored: {stored_site_log(db)}\n{serve.output}"
        time.sleep(0.1)
    # A wrong password is refused before anything is published.
    wrong = run_cli(
        "log", "inactive", "--area", "pad-b", "--by", "Dana Ruiz", "--site", str(SITE_FILE),
        "--broker", url, "--username", "station",
        "--password-file", str(password_file(tmp_path, "not-the-password")),
    )  # fmt: skip
    assert wrong.returncode == 1
    assert wrong.stderr == f"error: the MQTT broker at {url} refused the login: Not authorized\n"
    assert serve.terminate(timeout=25.0) == 0, serve.output
    assert "site_log=1," in serve.output and "rejected=0," in serve.output, serve.output
    assert stored_site_log(db) == [expected]
