"""Opening the small SQLite files drivers and the agent keep their state in.

Why one helper: every durable file on the station must survive a power cut, so
all of them use WAL with ``synchronous=FULL`` (a committed transaction is on
the SD card before commit returns) and a busy timeout so the sampling,
publishing and GPIO threads can share one file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def open_state_db(path: Path | str, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit ``BEGIN``s)."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        str(path), timeout=30.0, isolation_level=None, check_same_thread=check_same_thread
    )
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn
