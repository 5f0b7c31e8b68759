"""A second value for the same (sensor, time) and a reading dated 1970 are said, not swallowed.

Before (issue 23, item 6): the conflicting duplicate was dropped with no rejection
row, and the 1970 reading was stored with no flag (and, judged as late data, it
would rebuild the site's whole history).
"""

from __future__ import annotations

import json
from pathlib import Path

from analytics.events import SensorReading
from analytics.timeutil import MS_PER_S, from_ms
from ingest.service import Incoming, IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.timefmt import utc_iso
from tests.ingest.live import reading_messages
from tests.ingest.test_event_time import END, READINGS, SITE, START, expected, on_time, outputs
from tests.ingest.test_reload_held import deliver


def _message(value: float, t: int = START) -> tuple[str, bytes]:
    (m,) = reading_messages(SITE, [SensorReading("turb-up", t, value)])
    return m.topic, m.payload


def test_a_conflicting_duplicate_is_a_rejection_with_both_values(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(SITE, store)
    service.handle_message(*_message(8.2), START + MS_PER_S)
    service.handle_message(*_message(8.2), START + 2 * MS_PER_S)  # the same again: a duplicate
    service.handle_message(*_message(9.9), START + 3 * MS_PER_S)
    assert store.reading_count(SITE.site.id) == 1
    ((value,),) = store.db.execute("SELECT value FROM readings").fetchall()
    assert value == 8.2, "the stored value stays"
    ((topic, reason),) = store.rejections()
    assert topic.endswith("/turb-up/reading")
    assert reason == (
        f"conflicting duplicate: sensor 'turb-up' at {utc_iso(START)} is stored with value "
        "8.2; this message says 9.9 (the stored value stays)"
    )
    assert service.stats.duplicates == 2 and service.stats.rejected == 1


def test_a_conflict_inside_one_group_commit_is_found_too(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(SITE, store)
    service.handle_batch(
        [Incoming(*_message(8.2), START + MS_PER_S), Incoming(*_message(7.0), START + MS_PER_S)]
    )
    ((_topic, reason),) = store.rejections()
    assert "value 8.2; this message says 7.0" in reason


def test_a_reading_dated_1970_is_stored_flagged_and_changes_nothing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(SITE, store)
    arrivals = sorted(on_time(READINGS), key=lambda a: a[0])
    half = len(arrivals) // 2
    deliver(service, arrivals[:half])
    topic, payload = _message(500.0, t=0)
    service.handle_message(topic, payload, arrivals[half][0])
    deliver(service, arrivals[half:])
    service.finish(END)
    ((flags,),) = store.db.execute("SELECT flags FROM readings WHERE t = 0").fetchall()
    assert "too_old" in flags
    assert service.stats.too_old == 1 and service.stats.rebuilds == 0
    assert outputs(store) == expected()
    assert json.loads(payload)["time"].startswith("1970-01-01")


def test_readings_before_the_sites_start_are_stored_flagged_and_not_judged(tmp_path: Path) -> None:
    """A bench test ten days before the work began (a plume of 500 NTU downstream) is in
    the record, flagged ``before_site_start``, and changes no alert, no duty, no history."""
    begun = from_ms(START).astimezone(SITE.site.zone).date()
    site = SITE.model_copy(update={"site": SITE.site.model_copy(update={"start": begun})})
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(site, store)
    arrivals = sorted(on_time(READINGS), key=lambda a: a[0])
    half = len(arrivals) // 2
    deliver(service, arrivals[:half])
    bench = START - 10 * 86_400 * MS_PER_S
    for k in range(12):
        for sensor, value in (("turb-up", 5.0), ("turb-down", 500.0)):
            (m,) = reading_messages(site, [SensorReading(sensor, bench + k * 600_000, value)])
            service.handle_message(m.topic, m.payload, arrivals[half][0])
    deliver(service, arrivals[half:])
    service.finish(END)
    flags = store.db.execute("SELECT flags FROM readings WHERE t < ?", (START,)).fetchall()
    assert len(flags) == 24 and all("before_site_start" in f for (f,) in flags)
    assert service.stats.before_site_start == 24 and service.stats.rebuilds == 0
    assert outputs(store) == expected()
