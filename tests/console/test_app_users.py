"""``siltwatch users``: accounts and roles from the command line, errors for people.

Run through the real command (``app.cli.main``) against a store file;
what it writes is then what the console logs in with.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from console.book import ConsoleBook
from tests.console.app_world import ROOT, SID, make_world

PASSWORD = "turbid-water-9"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "store.sqlite3"
    ConsoleBook(db).close()
    return db


@pytest.fixture
def password_file(tmp_path: Path) -> Path:
    path = tmp_path / "pw"
    path.write_text(PASSWORD + "\n", encoding="utf-8")
    return path


def users(*args: str) -> int:
    return main(["users", *args])


def test_add_grant_list_revoke_remove(
    store: Path, password_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(store)
    assert users("add", "Jo Park", "--db", db, "--password-file", str(password_file),
                 "--role", f"{SID}:operator", "--role", "ll-hwy64:viewer") == 0  # fmt: skip
    assert "added Jo Park (operator on lg-route9n, viewer on ll-hwy64)" in capsys.readouterr().out
    assert users("grant", "Jo Park", "--db", db, "--role", f"{SID}:officer") == 0
    assert "Jo Park is officer on lg-route9n (was operator)" in capsys.readouterr().out
    assert users("revoke", "Jo Park", "--db", db, "--site", "ll-hwy64") == 0
    assert users("list", "--db", db) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Jo Park\tlg-route9n:officer"
    book = ConsoleBook(store)
    try:
        assert book.accounts.verify("Jo Park", PASSWORD)
        assert not book.accounts.verify("Jo Park", PASSWORD.upper())
        stored = book.db.execute("SELECT password_hash FROM console_users").fetchone()[0]
        assert stored.startswith("$argon2id$") and PASSWORD not in stored
    finally:
        book.close()
    assert users("remove", "Jo Park", "--db", db) == 0
    assert users("list", "--db", db) == 0
    assert "no users yet" in capsys.readouterr().out


def test_a_new_password_replaces_the_old(store: Path, password_file: Path, tmp_path: Path) -> None:
    db = str(store)
    users("add", "Jo Park", "--db", db, "--password-file", str(password_file))
    other = tmp_path / "pw2"
    other.write_text("a-whole-new-secret\n", encoding="utf-8")
    assert users("passwd", "Jo Park", "--db", db, "--password-file", str(other)) == 0
    book = ConsoleBook(store)
    try:
        assert book.accounts.verify("Jo Park", "a-whole-new-secret")
        assert not book.accounts.verify("Jo Park", PASSWORD)
    finally:
        book.close()


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["add", "Jo", "--role", "lg-route9n:boss"], "the role must be one of operator, qualified_inspector, officer, viewer"),
        (["add", "Jo", "--role", "lg-route9n"], "expected SITE:ROLE"),
        (["add", "Jo;drop", "--role", "lg-route9n:viewer"], "user name 'Jo;drop'"),
        (["grant", "Nobody", "--role", "lg-route9n:viewer"], "no user 'Nobody'"),
        (["revoke", "Nobody", "--site", "lg-route9n"], "has no role on site"),
        (["remove", "Nobody"], "no user 'Nobody'"),
    ],
)  # fmt: skip
def test_mistakes_are_explained(
    store: Path, password_file: Path, capsys: pytest.CaptureFixture[str], args: list[str], why: str
) -> None:
    extra = ["--password-file", str(password_file)] if args[0] == "add" else []
    assert users(*args, "--db", str(store), *extra) == 1
    assert why in capsys.readouterr().err


def test_a_short_password_is_refused(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    short = tmp_path / "short"
    short.write_text("abc\n", encoding="utf-8")
    assert users("add", "Jo", "--db", str(store), "--password-file", str(short)) == 1
    assert "at least 10 characters" in capsys.readouterr().err


def test_a_missing_store_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert users("list", "--db", str(tmp_path / "nope.sqlite3")) == 1
    assert "nope.sqlite3: no such store" in capsys.readouterr().err


def test_without_a_terminal_the_password_must_come_from_a_file(store: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "users", "add", "Jo", "--db", str(store)],
        capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1
    assert "use --password-file FILE" in done.stderr


def test_a_person_added_by_the_command_logs_in_to_the_console(
    tmp_path: Path, password_file: Path
) -> None:
    world = make_world(tmp_path)
    assert users("add", "Jo Park", "--db", str(world.db), "--password-file", str(password_file),
                 "--role", f"{SID}:viewer") == 0  # fmt: skip
    client = world.login("Jo Park", PASSWORD)
    assert "you are viewer" in client.get("/").text
    assert "user_added" in {a for _w, a, _i, _d in world.actions()}
