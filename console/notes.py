"""What people wrote about an alert: acknowledgements, comments, corrective actions.

A small shared shape, so that the console's pages, the inspector's report and
the delivery worker's escalation check read the same records without knowing
where they are kept (console/book.py keeps them in the store's database: its SQLite file or
PostgreSQL database).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class NoteKind(StrEnum):
    ACKNOWLEDGED = "acknowledged"
    COMMENT = "comment"
    CORRECTIVE_ACTION = "corrective_action"


@dataclass(frozen=True)
class Note:
    """One thing a person recorded about an alert episode, with who and when (UTC ms)."""

    site: str
    alert_id: str
    kind: NoteKind
    by: str
    at_ms: int
    text: str = ""
    via: str = "console"  # console | link | sms


class NotesSource(Protocol):
    """Where the report and the pages read what was recorded about an alert."""

    def notes(self, site: str, alert_id: str) -> list[Note]:
        """Every note on the episode, oldest first."""
        ...
