"""Fixtures of the ingest tests.

``store`` is a SQLite file unless a test asks for the backends by name:
``@pytest.mark.parametrize("store_db", BACKENDS, indirect=True)`` runs it on
SQLite and on a fresh PostgreSQL database (the store contract: same answers).
``store_db`` and ``BACKENDS`` live in tests/conftest.py (the console's tests use
them too); ``BACKENDS`` is re-exported here for the ingest tests that import it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingest.store.from_url import open_store
from ingest.store.queries import SqlStore
from tests.conftest import BACKENDS as BACKENDS


@pytest.fixture
def store(store_db: str) -> Iterator[SqlStore]:
    """An open store at ``store_db``, closed after the test."""
    s = open_store(store_db)
    yield s
    s.close()
