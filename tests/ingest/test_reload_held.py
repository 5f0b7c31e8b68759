"""A reload changes nothing it should not: held readings come back, bad files are refused.

In process, over a real SQLite store (issue 23, item 2): readings refused only
because the configuration did not know their station are held and taken back
when a configuration that knows it starts, and the alerts are then what a
replay of everything gives; a site file that drops every station, or a sensor
that is still reporting, is refused with one line; a withdrawal after a
configuration change says so instead of blaming late readings.
"""

from __future__ import annotations

from pathlib import Path

from analytics.timeutil import MS_PER_S
from ingest.held import readmit
from ingest.reload_guard import RECENT_MS, reload_refusal
from ingest.service import Incoming, IngestService
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from siltwatch.latemarks import WITHDRAWN_PREFIX, WITHDRAWN_REBUILT_PREFIX
from tests.ingest.live import EXAMPLES, Outgoing, run_cli
from tests.ingest.test_event_time import END, READINGS, SITE, SITE_ID, expected, on_time, outputs


def deliver(service: IngestService, arrivals: list[tuple[int, Outgoing]]) -> None:
    """In arrival order, in group commits of up to 100 messages as ingest takes them."""
    for start in range(0, len(arrivals), 100):
        chunk = arrivals[start : start + 100]
        service.handle_batch([Incoming(m.topic, m.payload, at) for at, m in chunk])


def _cut_down(tmp_path: Path) -> Path:
    path = tmp_path / "cut.toml"
    path.write_text(f'[site]\nid = "{SITE_ID}"\n', encoding="utf-8")
    return path


def test_readings_held_under_a_cut_down_file_come_back_and_alerts_equal_a_replay(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    arrivals = sorted(on_time(READINGS), key=lambda a: a[0])
    split = len(arrivals) * 2 // 5
    cut = IngestService(load_site(_cut_down(tmp_path)), store)
    deliver(cut, arrivals[:split])
    assert store.reading_count(SITE_ID) == 0
    assert store.rejection_count() == split
    assert {reason.split(":")[0] for _t, reason in store.rejections()} == {"unknown station"}

    # The full file again (every station and sensor added back): what was held comes back.
    full = IngestService(SITE, store)
    done = readmit(full)
    assert (done.messages, done.held) == (split, 0)
    assert store.rejection_count() == 0
    assert store.reading_count(SITE_ID) == split
    deliver(full, arrivals[split:])
    full.finish(END)
    assert store.reading_count(SITE_ID) == len(arrivals)
    assert outputs(store) == expected()
    assert readmit(full).messages == 0, "taken back once"


def test_what_the_configuration_still_does_not_know_stays_held(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    (stray,) = [m for _t, m in on_time(READINGS[:1])]
    topic = f"siltwatch/v1/{SITE_ID}/up-9/turb-x/reading"
    service = IngestService(SITE, store)
    service.handle_message(topic, stray.payload, READINGS[0].t)
    assert readmit(IngestService(SITE, store)).held == 1
    assert store.rejection_count() == 1


def test_a_held_batch_is_kept_whole(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    payload = b'{"type": "batch", "padding": "' + b"x" * 50_000 + b'"}'
    store.add_rejection(
        f"siltwatch/v1/{SITE_ID}/up-9/t/reading", "unknown station: x", payload, 1, SITE_ID
    )
    store.add_rejection(
        f"siltwatch/v1/{SITE_ID}/up-1/t/reading", "bad payload: x", payload, 1, SITE_ID
    )
    ((_i, _topic, kept, _at),) = store.held_rejections(SITE_ID)
    assert kept == payload
    (other,) = store.db.execute(
        "SELECT payload FROM rejections WHERE reason LIKE 'bad%'"
    ).fetchone()
    assert len(other) == 10_000


def test_a_file_with_no_sensors_is_refused_as_a_reload(tmp_path: Path) -> None:
    cut = _cut_down(tmp_path)
    line = reload_refusal(cut, SITE, load_site(cut), recent=[])
    assert line == (
        f"{cut}: reload refused: the new file has no sensors at all (the running configuration "
        f"has 3 stations, 5 sensors); site '{SITE_ID}' keeps the configuration it runs "
        "(--allow-orphaning forces it)"
    )


def test_a_file_that_drops_a_reporting_sensor_is_refused_and_a_quiet_one_is_not(
    tmp_path: Path,
) -> None:
    text = (EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8")
    fewer = tmp_path / "fewer.toml"
    # Drop the basin's level sensor (and the trap that reads it): a real edit.
    start = text.index('  [[stations.sensors]]\n  id = "sed-trap-1"')
    end = text.index("\n\n", start)
    trap = text.index("[[sediment_traps]]")
    trap_end = text.index("\n\n", trap)
    fewer.write_text(text[:start] + text[end:trap] + text[trap_end + 2 :], encoding="utf-8")
    new = load_site(fewer)
    assert "sed-trap-1" not in new.sensors()
    line = reload_refusal(fewer, SITE, new, recent=["turb-up", "sed-trap-1"])
    assert line is not None and line.startswith(
        f"{fewer}: reload refused: it drops sensors 'sed-trap-1', which delivered readings in "
        f"the last {RECENT_MS // 86_400_000} days"
    )
    assert reload_refusal(fewer, SITE, new, recent=["turb-up"]) is None


def test_a_withdrawal_after_a_configuration_change_says_so(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    service = IngestService(SITE, store)
    deliver(service, sorted(on_time(READINGS), key=lambda a: a[0]))
    service.close(END)
    text = (EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8")
    lenient = tmp_path / "lenient.toml"
    lenient.write_text(text.replace("over_background_ntu = 25", "over_background_ntu = 100000"))
    IngestService(load_site(lenient), store, now_ms=END + MS_PER_S)
    withdrawn = [s.alert for s in store.alerts_opened_after(SITE_ID, "") if s.withdrawn]
    assert withdrawn, "the plume is no longer found under the lenient limit"
    for alert in withdrawn:
        assert alert.message.startswith(WITHDRAWN_REBUILT_PREFIX)
        assert not alert.message.startswith(WITHDRAWN_PREFIX)


def test_config_check_warns_of_a_file_that_watches_nothing(tmp_path: Path) -> None:
    done = run_cli("config", "check", str(_cut_down(tmp_path)))
    assert done.returncode == 0
    assert "warning: no stations with sensors: this file watches nothing" in done.stdout
