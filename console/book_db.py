"""Where the console's book lives: the store's SQLite file or its PostgreSQL database.

The book (console/book.py) writes its statements once, in SQLite's spelling,
and this adapter runs them on either backend, so the two cannot drift apart
(the same translation as the record store's, ingest/store/postgres.py):

- :meth:`BookDb.execute` runs one statement *whole* under the book's lock and
  hands back its rows. On PostgreSQL the book's threads share one connection
  in autocommit mode, so a statement sent while another thread's transaction
  is open would silently join (and share the fate of) that transaction; on
  SQLite the same holds for the shared connection's ``BEGIN IMMEDIATE``. Taking
  the lock for every statement, reads too, rules that out on both.
- :meth:`BookDb.write` is one transaction under the lock: ``BEGIN IMMEDIATE``
  on SQLite (the write lock is taken first, so a check-then-write inside it
  cannot interleave with another process's), a transaction on PostgreSQL.
- :attr:`BookDb.integrity_errors` is what a broken unique key raises, to catch
  (an account that exists, an episode already acknowledged, a spent link).
- Binary columns (BLOB / BYTEA) come back as ``bytes`` on both.

psycopg (the ``postgres`` extra) is imported only when ``--db`` is a
``postgresql://`` URL, so a one-machine install never needs it.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.store.from_url import is_postgres_url

if TYPE_CHECKING:
    import psycopg

Row = tuple[Any, ...]


class BookDbError(Exception):
    """The book's database cannot be opened or set up; the text names it and says why."""


class Rows:
    """A statement's result, read in full under the lock: its rows and how many it changed.

    Shaped like a DB-API cursor (``fetchone``, ``fetchall``, iteration, ``rowcount``)
    so the book reads the same on both backends.
    """

    def __init__(self, rows: list[Row], rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount

    def fetchone(self) -> Any:  # a Row or None; Any as for a DB-API cursor (ingest Cursor)
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def value(self) -> Any:
        """The first column of the first row (a count), or None when there is no row."""
        return None if not self._rows else self._rows[0][0]

    def fetchall(self) -> list[Row]:
        rest = self._rows[self._next :]
        self._next = len(self._rows)
        return rest

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


def _plain(row: Sequence[Any]) -> Row:
    """A row with binary values as ``bytes`` (a driver may hand out a memoryview)."""
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)


class BookDb(ABC):
    """One connection to the book's tables, shared by the console's threads."""

    path: Path | None  # the SQLite file, or None for PostgreSQL
    where: str  # for messages: the file, or the URL without its password
    integrity_errors: tuple[type[Exception], ...]

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock

    @abstractmethod
    def execute(self, sql: str, args: Sequence[object] = ()) -> Rows:
        """Run one statement (SQLite spelling, ``?`` placeholders) under the lock."""

    @abstractmethod
    def write(self) -> AbstractContextManager[None]:
        """``with db.write():`` the statements inside commit together or not at all."""

    def ping(self) -> None:
        """Raise unless the database answers (the console's /healthz)."""
        self.execute("SELECT 1")

    @abstractmethod
    def close(self) -> None: ...


class SqliteBookDb(BookDb):
    """The book in the store's SQLite file: WAL, waits up to 30 s for another writer."""

    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: Path, lock: threading.RLock, schema: str) -> None:
        super().__init__(lock)
        self.path = path
        self.where = str(path)
        try:
            self.conn = sqlite3.connect(
                path, check_same_thread=False, timeout=30.0, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise BookDbError(f"{path}: cannot open the SQLite store ({exc})") from None
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.executescript(schema)
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise BookDbError(f"{path}: is not a usable siltwatch SQLite store ({exc})") from None

    def execute(self, sql: str, args: Sequence[object] = ()) -> Rows:
        with self.lock:
            cur = self.conn.execute(sql, tuple(args))
            return Rows([_plain(r) for r in cur.fetchall()], cur.rowcount)

    @contextmanager
    def write(self) -> Iterator[None]:
        with self.lock:
            if self.conn.in_transaction:  # nested: part of the transaction already open
                yield
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class PostgresBookDb(BookDb):
    """The book in the store's PostgreSQL database: one autocommit session for all threads."""

    def __init__(self, url: str, lock: threading.RLock, schema: str) -> None:
        super().__init__(lock)
        try:
            import psycopg

            from ingest.store.postgres import (
                claim_key,
                postgres_schema,
                postgres_sql,
                redacted,
                text_safe,
            )
        except ImportError as exc:
            raise BookDbError(
                f"--db postgresql://...: the PostgreSQL driver is missing ({exc}); "
                "install it with: pip install 'siltwatch[postgres]'"
            ) from None
        self._translate = postgres_sql
        self.text_safe = text_safe  # U+0000 stored as U+FFFD, as the store does
        self.path = None
        self.where = redacted(url)
        self.integrity_errors = (psycopg.errors.IntegrityError,)
        try:
            self.conn: psycopg.Connection[Row] = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise BookDbError(
                f"{self.where}: cannot open the PostgreSQL store ({_first_line(exc)})"
            ) from None
        try:
            # Two processes starting together (serve and `siltwatch users`) would race to
            # create the same tables; the advisory lock lets one do it, then the other.
            with self.conn.transaction():
                self.conn.execute(
                    "SELECT pg_advisory_xact_lock(%s)", (claim_key("console book schema"),)
                )
                self.conn.execute(postgres_schema(schema))
        except psycopg.Error as exc:
            self.conn.close()
            raise BookDbError(
                f"{self.where}: cannot set up the console's tables ({_first_line(exc)})"
            ) from None

    def execute(self, sql: str, args: Sequence[object] = ()) -> Rows:
        params = tuple(self.text_safe(a) for a in args)
        with self.lock:
            cur = self.conn.execute(self._translate(sql), params)
            rows = [_plain(r) for r in cur.fetchall()] if cur.description is not None else []
            return Rows(rows, cur.rowcount)

    @contextmanager
    def write(self) -> Iterator[None]:
        with self.lock, self.conn.transaction():  # nested: a savepoint
            yield

    def close(self) -> None:
        self.conn.close()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_book_db(db: Path | str, lock: threading.RLock, schema: str) -> BookDb:
    """The book's tables in ``--db``, created when missing: a SQLite file or a
    ``postgresql://`` URL (ingest/store/from_url.py reads ``--db`` the same way)."""
    if is_postgres_url(db):
        return PostgresBookDb(str(db), lock, schema)
    return SqliteBookDb(Path(db), lock, schema)
