"""Fixtures of the ingest tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.store import SqliteStore


@pytest.fixture
def store(sqlite_path: Path) -> Iterator[SqliteStore]:
    """An open store in the test's database file, closed after the test."""
    s = SqliteStore(sqlite_path)
    yield s
    s.close()
