"""The book contract: the console's tables give the same answers in the SQLite file and
in a PostgreSQL database.

Every test runs on both backends (``store_db`` parametrized, as the store's own
contract in tests/ingest/test_store_contract.py): accounts, sessions, the login
rate limit, one acknowledgement per episode (two books racing on one database,
as two processes would), notes, the audit log, single-use links, the link
secret, binary values, silences. A SQLite file made with the first schema (``user`` and
``by`` unquoted) still opens and reads.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest
from argon2 import PasswordHasher

from console.auth import MAX_FAILURES, MAX_FAILURES_PER_IP, SESSION_MS, WINDOW_MS, Sessions
from console.book import AuditEntry, BookError, ConsoleBook, UserInfo, token_digest
from console.notes import Note, NoteKind
from console.report.cli import notes_in
from console.silences import Silence
from console.users_cli import main as users_main
from ingest.store.from_url import is_postgres_url, open_store, open_store_read_only
from tests.conftest import BACKENDS

both = pytest.mark.parametrize("store_db", BACKENDS, indirect=True)

A, B = "lg-route9n", "ll-hwy64"
PASSWORD = "turbid-water-9"
DANA, JO = "Dana Ruiz", "Jo Park"
T = TypeVar("T")


@pytest.fixture
def book(store_db: str) -> Iterator[ConsoleBook]:
    """The book in the test's database."""
    b = ConsoleBook(store_db)
    yield b
    b.close()


@pytest.fixture
def other(store_db: str, book: ConsoleBook) -> Iterator[ConsoleBook]:
    """A second book on the same database: another process (serve and the users command,
    or two workers of a fleet)."""
    b = ConsoleBook(store_db)
    yield b
    b.close()


def together(*calls: Callable[[], T]) -> list[T]:
    """Run the calls at once, one thread each, released by one barrier; their results."""
    barrier = threading.Barrier(len(calls))
    results: list[T | None] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[i] = calls[i]()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return [r for r in results if r is not None]


# --- where the book is --------------------------------------------------------------------


@both
def test_the_book_says_where_it_is_without_a_password(book: ConsoleBook, store_db: str) -> None:
    if is_postgres_url(store_db):
        assert book.path is None and book.where == store_db  # the test server has no password
    else:
        assert book.path == Path(store_db) and book.where == store_db
    book.ping()


def test_an_unreachable_postgresql_book_is_refused_without_its_password() -> None:
    with pytest.raises(BookError) as refused:
        ConsoleBook("postgresql://siltwatch:hunter22@127.0.0.1:1/siltwatch")
    said = str(refused.value)
    assert "postgresql://siltwatch:***@127.0.0.1:1/siltwatch" in said
    assert "cannot open the PostgreSQL store" in said and "hunter22" not in said


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "store.sqlite3"
    junk.write_bytes(b"not a database, just words " * 100)
    with pytest.raises(BookError, match="is not a usable siltwatch SQLite store"):
        ConsoleBook(junk)


@both
def test_the_book_lives_next_to_the_store_and_the_report_finds_its_notes(store_db: str) -> None:
    store = open_store(store_db)
    try:
        assert notes_in(store) is None, "no console tables yet: the report opens no book"
        book = ConsoleBook(store_db)
        book.acknowledge(A, "plume-1", DANA, 1000)
        book.close()
        found = notes_in(store)
        assert isinstance(found, ConsoleBook)
        try:
            assert found.notes(A, "plume-1") == [
                Note(A, "plume-1", NoteKind.ACKNOWLEDGED, DANA, 1000)
            ]
        finally:
            found.close()
    finally:
        store.close()
    open_store_read_only(store_db).close()  # the store's own schema is untouched


# --- accounts -----------------------------------------------------------------------------


@both
def test_an_account_is_added_verified_granted_revoked_and_removed(book: ConsoleBook) -> None:
    people = book.accounts
    assert people.add(f"  {DANA} ", PASSWORD, 1000) == DANA
    with pytest.raises(BookError, match="already exists"):
        people.add(DANA, "another-password", 2000)
    assert people.verify(DANA, PASSWORD)
    assert not people.verify(DANA, PASSWORD.upper())
    assert not people.verify(JO, PASSWORD), "an unknown user is refused"
    assert people.grant(DANA, A, "operator") is None
    assert people.grant(DANA, A, "officer") == "operator", "one role per site: replaced"
    assert people.grant(DANA, B, "viewer") is None
    with pytest.raises(BookError, match="no user"):
        people.grant(JO, A, "viewer")
    assert people.all() == [UserInfo(DANA, 1000, {A: "officer", B: "viewer"})]
    assert people.revoke(DANA, B) == "viewer"
    with pytest.raises(BookError, match="has no role on site"):
        people.revoke(DANA, B)
    people.set_password(DANA, "a-whole-new-secret")
    assert people.verify(DANA, "a-whole-new-secret") and not people.verify(DANA, PASSWORD)
    token = Sessions(book).open(DANA, 5000)
    people.remove(DANA)
    assert not people.exists(DANA) and people.roles(DANA) == {} and people.all() == []
    assert Sessions(book).user(token, 5001) is None, "their sessions went with the account"
    with pytest.raises(BookError, match="no user"):
        people.remove(DANA)
    with pytest.raises(BookError, match="no user"):
        people.set_password(DANA, PASSWORD)


@both
def test_the_users_command_manages_accounts_in_either_store(
    store_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    password_file = tmp_path / "pw"
    password_file.write_text(PASSWORD + "\n", encoding="utf-8")
    assert users_main(["add", JO, "--db", store_db, "--password-file", str(password_file),
                       "--role", f"{A}:operator"]) == 0  # fmt: skip
    assert users_main(["grant", JO, "--db", store_db, "--role", f"{B}:viewer"]) == 0
    assert users_main(["list", "--db", store_db]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{JO}\t{A}:operator, {B}:viewer"
    book = ConsoleBook(store_db)
    try:
        assert book.accounts.verify(JO, PASSWORD)
        actions = [e.action for e in book.audit_log([A, B], also_by=None)]
        assert actions == ["role_granted"], "site-less lines are not about a site"
    finally:
        book.close()
    assert users_main(["remove", JO, "--db", store_db]) == 0
    assert users_main(["remove", JO, "--db", store_db]) == 1
    assert f"error: no user '{JO}'" in capsys.readouterr().err


# --- sessions and the login rate limit ---------------------------------------------------


@both
def test_a_session_opens_names_its_person_expires_and_closes(
    book: ConsoleBook, other: ConsoleBook
) -> None:
    book.accounts.add(DANA, PASSWORD, 0)
    book.accounts.grant(DANA, A, "operator")
    sessions = Sessions(book)
    token = sessions.open(DANA, 10_000)
    second = sessions.open(DANA, 10_000)
    me = sessions.user(token, 10_001)
    assert me is not None and me.name == DANA and me.roles == {A: "operator"}
    assert len(me.csrf) == 64 and int(me.csrf, 16) >= 0
    you = sessions.user(second, 10_001)
    assert you is not None and you.csrf != me.csrf, "each session has its own CSRF secret"
    assert Sessions(other).user(token, 10_001) == me, "another process sees the same session"
    assert sessions.user(token, 10_000 + SESSION_MS) is None, "expired"
    assert sessions.user("not-a-token", 10_001) is None and sessions.user(None, 10_001) is None
    stored = book.db.execute("SELECT token_hash FROM console_sessions ORDER BY token_hash")
    assert sorted(r[0] for r in stored) == sorted([token_digest(token), token_digest(second)])
    sessions.close(token)
    assert sessions.user(token, 10_001) is None and sessions.user(second, 10_001) == you
    sessions.open(DANA, 10_000 + SESSION_MS)  # a new login sweeps the expired sessions away
    assert book.db.execute("SELECT count(*) FROM console_sessions").value() == 1


@both
def test_failed_logins_slow_an_account_from_every_address_but_never_lock_it(
    book: ConsoleBook, other: ConsoleBook
) -> None:
    sessions, t0 = Sessions(book), 1_000_000
    for i in range(MAX_FAILURES - 1):
        sessions.failed(DANA, "10.0.0.1", t0 + i)
    assert not sessions.blocked(DANA, "10.0.0.1", t0 + 10)
    sessions.failed(DANA, "10.0.0.1", t0 + 5)
    assert sessions.wait_s(DANA, "10.0.0.1", t0 + 10) == 1
    assert Sessions(other).blocked(DANA, "10.0.0.1", t0 + 10), "every process counts them"
    assert sessions.blocked(DANA, "10.0.0.2", t0 + 10), "the account, from any address"
    assert not sessions.blocked(JO, "10.0.0.1", t0 + 10), "another name"
    assert not sessions.blocked(DANA, "10.0.0.1", t0 + 5 + 1000), "slowed, not locked"
    assert not sessions.blocked(DANA, "10.0.0.1", t0 + 10, device="dana-laptop"), "own device"
    sessions.failed(DANA, "10.0.0.1", t0 + 6)
    assert sessions.wait_s(DANA, "10.0.0.1", t0 + 6) == 2, "each failure doubles the wait"
    sessions.succeeded(DANA, "10.0.0.1")
    assert not sessions.blocked(DANA, "10.0.0.1", t0 + 10)


@both
def test_many_names_from_one_address_block_the_address(book: ConsoleBook) -> None:
    sessions, t0 = Sessions(book), 1_000_000
    for i in range(MAX_FAILURES_PER_IP):
        sessions.failed(f"guess-{i}", "10.0.0.9", t0 + i)
    assert sessions.blocked("a-fresh-name", "10.0.0.9", t0 + 100)
    assert not sessions.blocked("a-fresh-name", "10.0.0.8", t0 + 100)
    sessions.failed("late", "10.0.0.8", t0 + WINDOW_MS + 100)  # sweeps what left the window
    assert book.db.execute("SELECT count(*) FROM console_login_attempts").value() == 1


# --- acknowledgements and notes -----------------------------------------------------------


@both
def test_two_books_racing_to_acknowledge_an_episode_leave_one_acknowledgement(
    book: ConsoleBook, other: ConsoleBook
) -> None:
    for n in range(15):
        alert_id = f"plume-{n}"
        results = together(
            partial(book.acknowledge, A, alert_id, DANA, 1000, "console"),
            partial(other.acknowledge, A, alert_id, JO, 1001, "sms"),
        )
        assert sorted(new for _ack, new in results) == [False, True], alert_id
        (winner,) = [ack for ack, new in results if new]
        assert [ack for ack, _new in results] == [winner, winner], "the loser sees the winner"
        assert book.acknowledged(A, alert_id) == other.acknowledged(A, alert_id) == winner
        kinds = [note.kind for note in book.notes(A, alert_id)]
        assert kinds == [NoteKind.ACKNOWLEDGED]
    late, new = book.acknowledge(A, "plume-0", "Sam Lee", 9000)
    assert not new and late == book.acknowledged(A, "plume-0")
    assert book.acknowledged(B, "plume-0") is None, "another site's episode is its own"


@both
def test_notes_come_oldest_first_and_a_comment_may_hold_anything(
    book: ConsoleBook, store_db: str
) -> None:
    odd = "Curtain re-set\x00; 50 % \"done\" 'ok' ? -- é"
    book.add_note(A, "plume-1", NoteKind.COMMENT, JO, 3000, "third", "console")
    book.acknowledge(A, "plume-1", DANA, 1000, "link")
    book.add_note(A, "plume-1", NoteKind.CORRECTIVE_ACTION, DANA, 2000, "silt fence", "console")
    book.add_note(A, "plume-1", NoteKind.COMMENT, JO, 2000, odd, "console")
    book.add_note(A, "plume-2", NoteKind.COMMENT, JO, 500, "elsewhere", "console")
    kept = odd.replace("\x00", "\ufffd") if is_postgres_url(store_db) else odd
    assert book.notes(A, "plume-1") == [
        Note(A, "plume-1", NoteKind.ACKNOWLEDGED, DANA, 1000, "", "link"),
        Note(A, "plume-1", NoteKind.CORRECTIVE_ACTION, DANA, 2000, "silt fence"),
        Note(A, "plume-1", NoteKind.COMMENT, JO, 2000, kept),
        Note(A, "plume-1", NoteKind.COMMENT, JO, 3000, "third"),
    ]
    assert book.notes(B, "plume-1") == []
    with pytest.raises(ValueError, match="use acknowledge"):
        book.add_note(A, "plume-1", NoteKind.ACKNOWLEDGED, JO, 4000, "", "console")


# --- the audit log ------------------------------------------------------------------------


@both
def test_the_audit_log_shows_a_site_s_lines_and_a_person_s_own_newest_first(
    book: ConsoleBook,
) -> None:
    book.audit(1000, DANA, "login")
    book.audit(2000, DANA, "acknowledged", site=A, alert_id="plume-1", detail="via console")
    book.audit(3000, JO, "comment", site=B, alert_id="plume-9", detail="x" * 5000)
    book.audit(3000, JO, "login")
    book.audit(4000, JO, "inspection", site=A)

    def seen(entries: list[AuditEntry]) -> list[tuple[int, str, str]]:
        return [(e.at_ms, e.who, e.action) for e in entries]

    assert seen(book.audit_log([A])) == [(4000, JO, "inspection"), (2000, DANA, "acknowledged")]
    assert book.audit_log([A])[1] == AuditEntry(
        2000, DANA, "acknowledged", A, "plume-1", "via console"
    )
    assert seen(book.audit_log([B, A, A])) == [
        (4000, JO, "inspection"), (3000, JO, "comment"), (2000, DANA, "acknowledged"),
    ]  # fmt: skip
    assert seen(book.audit_log([A], also_by=DANA)) == [
        (4000, JO, "inspection"), (2000, DANA, "acknowledged"), (1000, DANA, "login"),
    ]  # fmt: skip
    assert seen(book.audit_log([], also_by=JO)) == [(3000, JO, "login")], "no site: own lines"
    assert book.audit_log([]) == []
    assert seen(book.audit_log([A, B], limit=2)) == [
        (4000, JO, "inspection"), (3000, JO, "comment"),
    ]  # fmt: skip
    assert len(book.audit_log([B])[0].detail) == 2000, "a detail is cut at 2000 characters"


# --- single-use links and the link secret -------------------------------------------------


@both
def test_a_link_is_spent_once_whichever_process_sees_it(
    book: ConsoleBook, other: ConsoleBook
) -> None:
    link = "v1.lg-route9n.plume-1.dana.abcdef"
    assert book.link_used_at(link) is None
    assert book.spend_link(link, 1000)
    assert not other.spend_link(link, 2000), "the second press loses"
    assert other.link_used_at(link) == 1000
    assert book.db.execute("SELECT token FROM console_used_links").fetchall() == [
        (token_digest(link),)
    ], "only the token's digest is kept"
    for n in range(10):
        raced = f"{link}-{n}"
        spent = together(
            partial(book.spend_link, raced, 3000), partial(other.spend_link, raced, 3001)
        )
        assert sorted(spent) == [False, True], raced


@both
def test_what_workers_do_once_between_them_is_decided_once(
    book: ConsoleBook, other: ConsoleBook
) -> None:
    """``first_time``: a site's daily digest, sent by one worker of a fleet only."""
    key = "digest-lg-route9n-2026-05-06-email-dana"
    assert book.first_time(key, 1000)
    assert not other.first_time(key, 2000) and not book.first_time(key, 3000)
    for n in range(10):
        raced = together(
            partial(book.first_time, f"{key}-{n}", 1), partial(other.first_time, f"{key}-{n}", 2)
        )
        assert sorted(raced) == [False, True]


@both
def test_the_link_secret_is_made_once_and_shared_by_every_book(
    book: ConsoleBook, other: ConsoleBook, store_db: str
) -> None:
    first, second = together(book.link_secret, other.link_secret)
    assert type(first) is bytes and len(first) == 32
    assert first == second == book.link_secret()
    again = ConsoleBook(store_db)
    try:
        assert again.link_secret() == first, "made once per store, kept across restarts"
    finally:
        again.close()


@both
def test_binary_values_come_back_as_bytes(book: ConsoleBook) -> None:
    secret = book.link_secret()
    Sessions(book).open(DANA, 1000)
    stored = book.db.execute("SELECT value FROM console_settings WHERE key = 'link_secret'")
    assert type(stored.value()) is bytes and stored.value() == secret
    csrf = book.db.execute("SELECT csrf_secret FROM console_sessions").value()
    assert type(csrf) is bytes and len(csrf) == 32


# --- one connection, many threads ---------------------------------------------------------


@both
def test_another_thread_s_write_is_not_swallowed_by_a_transaction_that_rolls_back(
    book: ConsoleBook,
) -> None:
    inside = threading.Event()

    def doomed() -> None:
        with contextlib.suppress(RuntimeError), book.db.write():
            book.audit(1000, "doomed", "login")
            inside.set()
            time.sleep(0.3)  # the other thread's write comes now
            raise RuntimeError("rolled back")

    worker = threading.Thread(target=doomed)
    worker.start()
    assert inside.wait(10)
    book.audit(2000, "kept", "login")  # waits for the transaction; not part of it
    worker.join(10)
    assert [e.who for e in book.audit_log([], also_by="kept")] == ["kept"]
    assert book.audit_log([], also_by="doomed") == []


# --- a SQLite book made by an earlier siltwatch -----------------------------------------

FIRST_SCHEMA = """
CREATE TABLE console_users (
    name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, created_ms INTEGER NOT NULL
);
CREATE TABLE console_roles (
    user TEXT NOT NULL, site TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('operator', 'qualified_inspector', 'officer', 'viewer')),
    PRIMARY KEY (user, site)
);
CREATE TABLE console_sessions (
    token_hash TEXT PRIMARY KEY, user TEXT NOT NULL, created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL, csrf_secret BLOB NOT NULL
);
CREATE TABLE console_login_attempts (
    id INTEGER PRIMARY KEY, user TEXT NOT NULL, ip TEXT NOT NULL, at_ms INTEGER NOT NULL
);
CREATE INDEX console_login_attempts_at ON console_login_attempts (at_ms);
CREATE TABLE console_audit (
    id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, who TEXT NOT NULL, action TEXT NOT NULL,
    site TEXT NOT NULL DEFAULT '', alert_id TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX console_audit_site ON console_audit (site, at_ms);
CREATE TABLE console_notes (
    id INTEGER PRIMARY KEY, site TEXT NOT NULL, alert_id TEXT NOT NULL, kind TEXT NOT NULL,
    by TEXT NOT NULL, at_ms INTEGER NOT NULL, text TEXT NOT NULL DEFAULT '',
    via TEXT NOT NULL DEFAULT 'console'
);
CREATE INDEX console_notes_alert ON console_notes (site, alert_id, id);
CREATE UNIQUE INDEX console_notes_one_ack
    ON console_notes (site, alert_id) WHERE kind = 'acknowledged';
CREATE TABLE console_used_links (token TEXT PRIMARY KEY, used_at INTEGER NOT NULL);
CREATE TABLE console_settings (key TEXT PRIMARY KEY, value BLOB NOT NULL);
"""


def test_a_book_file_made_with_the_first_schema_opens_reads_and_writes(tmp_path: Path) -> None:
    path = tmp_path / "siltwatch.sqlite3"
    secret, csrf = bytes(range(32)), bytes(range(32, 64))
    old = sqlite3.connect(path)
    with old:
        old.executescript(FIRST_SCHEMA)
        old.execute(
            "INSERT INTO console_users VALUES (?, ?, 0)", (DANA, PasswordHasher().hash(PASSWORD))
        )
        old.execute("INSERT INTO console_roles VALUES (?, ?, 'operator')", (DANA, A))
        old.execute(
            "INSERT INTO console_sessions VALUES (?, ?, 0, ?, ?)",
            (token_digest("cookie"), DANA, SESSION_MS, csrf),
        )
        old.execute(
            "INSERT INTO console_notes (site, alert_id, kind, by, at_ms) "
            "VALUES (?, 'plume-1', 'acknowledged', ?, 500)",
            (A, DANA),
        )
        old.execute(
            "INSERT INTO console_audit (at_ms, who, action, site) VALUES (500, ?, 'x', ?)",
            (DANA, A),
        )
        old.execute("INSERT INTO console_used_links VALUES (?, 700)", (token_digest("spent"),))
        old.execute("INSERT INTO console_settings VALUES ('link_secret', ?)", (secret,))
    old.close()

    book = ConsoleBook(path)
    try:
        assert book.accounts.verify(DANA, PASSWORD) and book.accounts.roles(DANA) == {A: "operator"}
        me = Sessions(book).user("cookie", 1)
        assert me is not None and me.name == DANA and me.roles == {A: "operator"}
        ack = book.acknowledged(A, "plume-1")
        assert ack is not None and (ack.by, ack.at_ms, ack.via) == (DANA, 500, "console")
        assert [(e.who, e.action) for e in book.audit_log([A])] == [(DANA, "x")]
        assert book.link_used_at("spent") == 700 and book.link_secret() == secret
        # and it takes new lines
        assert book.acknowledge(A, "plume-1", JO, 900) == (ack, False)
        assert book.accounts.grant(DANA, B, "viewer") is None
        Sessions(book).failed(JO, "10.0.0.1", 1000)
        book.accounts.remove(DANA)
        assert book.accounts.all() == [] and Sessions(book).user("cookie", 1) is None
    finally:
        book.close()


@both
def test_a_silence_is_kept_covers_its_subjects_in_its_window_and_ends_once(
    book: ConsoleBook, other: ConsoleBook
) -> None:
    made = book.add_silence(
        Silence(0, A, "sensor", "turb-down", "", ("turb-down", "outfall-a"), "probe serviced",
                DANA, 1_000, 2_000, 10_000)
    )  # fmt: skip
    assert made.id > 0 and other.silence(A, made.id) == made
    # Another process (the delivery worker) sees it: inside its window, on its subjects only.
    assert other.silence_covering(A, "outfall-a", "turbidity_contrast", 2_000) == (
        f"silence #{made.id} of sensor turb-down by {DANA}: probe serviced"
    )
    assert other.silence_covering(A, "outfall-a", "turbidity_contrast", 1_999) is None
    assert other.silence_covering(A, "outfall-a", "turbidity_contrast", 10_000) is None
    assert other.silence_covering(A, "basin-a", "drain_time", 5_000) is None
    assert other.silence_covering(B, "outfall-a", "turbidity_contrast", 5_000) is None
    one_kind = other.add_silence(
        Silence(0, A, "practice", "trap-1", "sediment_capacity", ("trap-1",), "cleaned out", JO,
                1_000, 1_000, 5_000)
    )  # fmt: skip
    assert book.silence_covering(A, "trap-1", "sediment_capacity", 3_000) is not None
    assert book.silence_covering(A, "trap-1", "sensor_offline", 3_000) is None
    assert [s.id for s in book.silences(A)] == [one_kind.id, made.id]
    ended = other.end_silence(A, made.id, JO, 4_000)
    assert ended is not None and (ended.ended_ms, ended.ended_by) == (4_000, JO)
    assert book.end_silence(A, made.id, DANA, 4_500) is None, "ended once"
    assert book.silence_covering(A, "outfall-a", "turbidity_contrast", 5_000) is None
    assert [s.id for s in book.silences(A, since_ms=4_000)] == [one_kind.id]
    audit = [(e.action, e.who) for e in reversed(book.audit_log([A]))]
    assert audit == [("silence_created", DANA), ("silence_created", JO), ("silence_ended", JO)]
