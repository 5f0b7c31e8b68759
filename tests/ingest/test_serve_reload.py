"""``systemctl reload`` of a single-site ``serve``: SIGHUP re-reads, and a bad file changes nothing.

Against a real Mosquitto and a real ``serve --site FILE`` child process (issue 23,
item 2). Before: SIGHUP killed a single-site serve without a word, and a fleet took
a file cut down to ``[site] id = ...`` as its new configuration, turning every
acknowledged reading into an "unknown station" rejection for good.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.ingest.live import EXAMPLES, Outgoing, ServeProcess, loopback_broker, reading_messages
from tests.ingest.test_event_time import READINGS, SITE
from tests.ingest.test_fleet import fleet_args, publish, wait_stored
from tests.servers import MosquittoServer


@pytest.fixture
def broker() -> Iterator[MosquittoServer]:
    yield from loopback_broker("siltwatch-reload-")


def _hup(serve: ServeProcess, said: str, within_s: float = 30.0) -> str:
    """SIGHUP, then the first new output line containing ``said``."""
    assert serve.proc is not None
    before = len(serve.output.splitlines())
    serve.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + within_s
    while True:
        fresh = [ln for ln in serve.output.splitlines()[before:] if said in ln]
        if fresh:
            return fresh[0]
        assert serve.proc.poll() is None, f"serve ended on SIGHUP:\n{serve.output}"
        assert time.monotonic() < deadline, serve.output
        time.sleep(0.1)


def _site_file(tmp_path: Path) -> Path:
    """The Lake George site file, in a folder of the test's own."""
    path = tmp_path / "lake-george.toml"
    path.write_text((EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8"))
    return path


def _storm_in_two(split: int) -> tuple[list[Outgoing], list[Outgoing]]:
    """The Lake George storm week's messages (its turbidity plume and drain alerts),
    cut in two at ``split``: what is sent before the reload and what after."""
    messages = reading_messages(SITE, READINGS)
    return messages[:split], messages[split:]


@contextmanager
def _served(
    broker: MosquittoServer, work: Path, name: str, *extra: str
) -> Iterator[tuple[ServeProcess, Path]]:
    """A started ``serve`` child (ticking every 0.5 s) and its store; stopped on the way out."""
    args = fleet_args(broker, work, name, *extra, "--tick-s", "0.5")
    serve = ServeProcess(args, work / f"{name}.log")
    try:
        serve.start(wait_s=30.0)
        yield serve, work / f"{name}.sqlite3"
    finally:
        serve.stop_quietly()


def _count(db: Path, sql: str) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute(sql).fetchone()[0])


def test_a_cut_down_file_is_refused_and_nothing_is_lost_rejected_or_withdrawn(
    tmp_path: Path, broker: MosquittoServer
) -> None:
    site_file = _site_file(tmp_path)  # fleet-01: a plume in its first hour
    full = site_file.read_text(encoding="utf-8")
    first, second = _storm_in_two(len(READINGS) * 3 // 5)
    with _served(broker, tmp_path, "one", "--site", str(site_file)) as (serve, db):
        publish(broker, first, "reload-pub-1").close()
        wait_stored([db], len(first), [serve])
        alerts_before = _count(db, "SELECT count(*) FROM alerts")

        site_file.write_text('[site]\nid = "lg-route9n"\n', encoding="utf-8")
        refused = _hup(serve, "reload refused")
        assert refused == (
            f"error: {site_file}: reload refused: the new file has no sensors at all (the "
            "running configuration has 3 stations, 5 sensors); site 'lg-route9n' keeps the "
            "configuration it runs (--allow-orphaning forces it)"
        )
        publish(broker, second, "reload-pub-2").close()
        wait_stored([db], len(first) + len(second), [serve])

        site_file.write_text(full, encoding="utf-8")
        assert _hup(serve, "reloaded the site file").endswith(": unchanged")
        assert serve.terminate(timeout=30) == 0, serve.output
    assert "Traceback" not in serve.output, serve.output
    assert _count(db, "SELECT count(*) FROM readings") == len(first) + len(second)
    assert _count(db, "SELECT count(*) FROM rejections") == 0
    assert _count(db, "SELECT count(*) FROM alerts WHERE withdrawn <> 0") == 0
    assert _count(db, "SELECT count(*) FROM alerts") >= alerts_before
    assert _count(db, "SELECT count(*) FROM alerts") > 0, "the plume was found, and stays"


def test_readings_held_while_a_forced_cut_down_file_ran_come_back_on_the_next_reload(
    tmp_path: Path, broker: MosquittoServer
) -> None:
    site_file = _site_file(tmp_path)
    full = site_file.read_text(encoding="utf-8")
    first, second = _storm_in_two(len(READINGS) // 2)
    orphaning = ("--site", str(site_file), "--allow-orphaning")
    with _served(broker, tmp_path, "two", *orphaning) as (serve, db):
        publish(broker, first, "held-pub-1").close()
        wait_stored([db], len(first), [serve])
        site_file.write_text('[site]\nid = "lg-route9n"\n', encoding="utf-8")
        assert "configuration changed, new engine" in _hup(serve, "reloaded the site file")
        publish(broker, second, "held-pub-2").close()
        deadline = time.monotonic() + 30
        while _count(db, "SELECT count(*) FROM rejections") < len(second):
            assert time.monotonic() < deadline, serve.output
            time.sleep(0.1)
        site_file.write_text(full, encoding="utf-8")
        _hup(serve, "reloaded the site file")
        wait_stored([db], len(first) + len(second), [serve])
        assert serve.terminate(timeout=30) == 0, serve.output
    assert f"{len(second)} held messages taken back" in serve.output, serve.output
    assert _count(db, "SELECT count(*) FROM rejections") == 0
    assert _count(db, "SELECT count(*) FROM readings") == len(first) + len(second)


def test_a_fleet_refuses_a_cut_down_file_for_that_site_and_keeps_serving_it(
    tmp_path: Path, broker: MosquittoServer
) -> None:
    sites = tmp_path / "sites"
    sites.mkdir()
    site_file = sites / "lake-george.toml"
    site_file.write_text(_site_file(tmp_path).read_text(encoding="utf-8"), encoding="utf-8")
    first, second = _storm_in_two(len(READINGS) // 2)
    with _served(broker, tmp_path, "fleet", "--sites", str(sites)) as (serve, db):
        publish(broker, first, "fleet-reload-1").close()
        wait_stored([db], len(first), [serve])
        site_file.write_text('[site]\nid = "lg-route9n"\n', encoding="utf-8")
        refused = _hup(serve, "reload refused")
        assert refused.startswith(
            f"error: {site_file}: reload refused: the new file has no sensors"
        )
        publish(broker, second, "fleet-reload-2").close()
        wait_stored([db], len(first) + len(second), [serve])
        assert serve.terminate(timeout=30) == 0, serve.output
    assert "changed none; 1 unchanged" in serve.output, serve.output
    assert _count(db, "SELECT count(*) FROM rejections") == 0
    assert _count(db, "SELECT count(*) FROM alerts WHERE withdrawn <> 0") == 0
