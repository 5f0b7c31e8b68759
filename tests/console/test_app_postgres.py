"""The console over a PostgreSQL store: the same pages as over SQLite, and what people
record (acknowledgements, comments) kept in the shared database.

A fleet's workers share one PostgreSQL database (docs/postgres.md); the console
reads the record store through the same queries as over a SQLite file
(ingest/store/queries.py) and keeps its book in the same database (console/book.py).
The week is the Lake George example judged once into a template database and
copied for each test (tests/console/app_world.py ``week_database``).
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.book import ConsoleBook
from console.notes import NoteKind
from tests.console.app_world import (
    OFFICER,
    OPERATOR,
    ROOT,
    SID,
    SITE_FILE,
    VIEWER,
    World,
    make_world,
    week_database,
)
from tests.servers import PostgresServer

pytestmark = pytest.mark.integration

_CSRF_VALUE = re.compile(r'(name="csrf" value=")[^"]*(")')
# The moment a report was generated: in its header and in its printed pages' footer.
_GENERATED = re.compile(r"<dt>Generated</dt><dd>[^<]*</dd>|generated \d{4}-\d\d-\d\d \d\d:\d\d \w+")


@pytest.fixture
def pg_world(postgres: PostgresServer, tmp_path: Path) -> Iterator[World]:
    name = f"siltwatch_console_{secrets.token_hex(4)}"
    url = week_database(postgres, name)
    world = make_world(tmp_path, db=url, real_reports=True)
    try:
        yield world
    finally:
        world.console.store.close()
        world.book.close()
        postgres.drop_database(name)


def page(world: World, path: str, who: str = VIEWER) -> str:
    """The page as ``who`` sees it, without its (random) CSRF tokens."""
    response = world.login(who).get(path)
    assert response.status_code == 200, (path, response.status_code)
    return _CSRF_VALUE.sub(r"\1-\2", response.text)


def test_every_page_reads_the_same_from_postgresql_as_from_sqlite(
    pg_world: World, tmp_path: Path
) -> None:
    lite = make_world(tmp_path, real_reports=True)
    plume = lite.plume_id()
    assert pg_world.plume_id() == plume
    paths = [
        "/",
        f"/sites/{SID}",
        f"/sites/{SID}?from=2026-05-05&to=2026-05-06",
        f"/sites/{SID}/alerts/{plume}",
        f"/sites/{SID}/duties",
        f"/sites/{SID}/report?from=2026-05-04&to=2026-05-10",
    ]
    for path in paths:
        assert page(pg_world, path) == page(lite, path), path
    overview = page(pg_world, "/")
    # Not two empty pages: the week is there (station health, last readings, plots).
    assert "12.43 V" in overview and "2026-05-11 00:00 EDT" in overview
    assert page(pg_world, f"/sites/{SID}").count("<svg") >= 4


def test_an_acknowledgement_is_kept_in_the_database_for_every_reader(pg_world: World) -> None:
    plume = pg_world.plume_id()
    done = pg_world.post_form(OPERATOR, f"/sites/{SID}/alerts/{plume}/acknowledge")
    assert done.status_code == 303, done.text
    late = pg_world.post_form(OFFICER, f"/sites/{SID}/alerts/{plume}/acknowledge")
    assert late.headers["location"].endswith("done=already"), "the first acknowledgement stands"
    # Another process (the delivery worker of another worker pod) reads the same answer.
    other = ConsoleBook(str(pg_world.db))
    try:
        ack = other.acknowledged(SID, plume)
        assert ack is not None and ack.by == OPERATOR and ack.via == "console"
        kinds = [n.kind for n in other.notes(SID, plume)]
        assert kinds.count(NoteKind.ACKNOWLEDGED) == 1
        assert (OPERATOR, "acknowledged", "via console") in [
            (e.who, e.action, e.detail) for e in other.audit_log([SID]) if e.alert_id == plume
        ]
    finally:
        other.close()
    report = page(pg_world, f"/sites/{SID}/report?from=2026-05-04&to=2026-05-10")
    assert OPERATOR in report, "the acknowledgement recorded in the console is in the report"


def test_a_comment_is_kept_in_the_database(pg_world: World) -> None:
    plume = pg_world.plume_id()
    said = "Silt fence at outfall-a re-staked; turbidity curtain checked."
    done = pg_world.post_form(OFFICER, f"/sites/{SID}/alerts/{plume}/comment", {"text": said})
    assert done.status_code == 303, done.text
    notes = pg_world.book.notes(SID, plume)
    assert [(n.kind, n.by, n.text) for n in notes] == [(NoteKind.COMMENT, OFFICER, said)]
    assert said in page(pg_world, f"/sites/{SID}/alerts/{plume}")


def test_the_report_command_reads_a_postgresql_store_as_a_sqlite_file(
    pg_world: World, tmp_path: Path
) -> None:
    """``siltwatch report --db postgresql://…``: the same report as from the SQLite week
    (but the moment it was generated), the console's acknowledgement in it."""
    plume = pg_world.plume_id()
    pg_world.post_form(OPERATOR, f"/sites/{SID}/alerts/{plume}/acknowledge")
    lite = make_world(tmp_path, real_reports=True)
    lite.post_form(OPERATOR, f"/sites/{SID}/alerts/{plume}/acknowledge")
    reports = {}
    for name, db in (("postgres", str(pg_world.db)), ("sqlite", str(lite.db))):
        out = tmp_path / f"{name}.html"
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", "report", "--site", str(SITE_FILE),
             "--db", db, "--from", "2026-05-04", "--to", "2026-05-10", "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        reports[name] = _GENERATED.sub("", out.read_text(encoding="utf-8"))
    assert reports["postgres"] == reports["sqlite"]
    assert "Route 9N mixed-use" in reports["postgres"] and OPERATOR in reports["postgres"]
