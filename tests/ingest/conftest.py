"""Fixtures of the ingest tests.

``store`` is a SQLite file unless a test asks for the backends by name:
``@pytest.mark.parametrize("store_db", BACKENDS, indirect=True)`` runs it on
SQLite and on a fresh PostgreSQL database (the store contract: same answers).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.store_open import open_store
from ingest.store_sql import SqlStore

BACKENDS = ("sqlite", "postgres")


@pytest.fixture
def store_db(request: pytest.FixtureRequest, sqlite_path: Path) -> str:
    """The test's ``--db``: its SQLite file, or (parameter ``postgres``) a fresh database's URL."""
    backend = getattr(request, "param", "sqlite")
    if backend == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    assert backend == "sqlite", f"unknown store backend {backend!r}"
    return str(sqlite_path)


@pytest.fixture
def store(store_db: str) -> Iterator[SqlStore]:
    """An open store at ``store_db``, closed after the test."""
    s = open_store(store_db)
    yield s
    s.close()
