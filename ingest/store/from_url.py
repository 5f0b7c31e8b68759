"""``--db`` to a store: a ``postgresql://`` URL opens PostgreSQL, anything else a SQLite file.

Why one function: every command that takes ``--db`` (serve, export, report,
the console) must read the option the same way, and the driver for
PostgreSQL (psycopg, the ``postgres`` extra) is only imported when a URL asks
for it, so a one-machine install never needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ingest.store.queries import SqlStore, StoreError
from ingest.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from ingest.store.postgres import PostgresStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(db: str | Path) -> bool:
    """True when ``--db`` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(db, str) and db.startswith(POSTGRES_SCHEMES)


def open_store(db: str | Path, *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL") -> SqlStore:
    """The store ``--db`` names, created or upgraded as needed (a writer's open).

    ``synchronous`` is SQLite's (``FULL`` for the live service); a PostgreSQL
    commit is as durable as its server's ``synchronous_commit``.
    """
    if is_postgres_url(db):
        return _postgres_store()(str(db))
    return SqliteStore(db, synchronous=synchronous)


def open_store_read_only(db: str | Path) -> SqlStore:
    """The store ``--db`` names, as a reader that never creates, migrates or writes."""
    if is_postgres_url(db):
        return _postgres_store().open_read_only(str(db))
    return SqliteStore.open_read_only(db)


def _postgres_store() -> type[PostgresStore]:
    """The PostgreSQL store class, or a StoreError saying which extra installs its driver."""
    try:
        from ingest.store.postgres import PostgresStore
    except ImportError as exc:
        raise StoreError(
            f"--db postgresql://...: the PostgreSQL driver is missing ({exc}); "
            "install it with: pip install 'siltwatch[postgres]'"
        ) from None
    return PostgresStore
