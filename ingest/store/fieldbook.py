"""The field desk's records in the store: checklists, their photos, signatures, corrective actions.

An inspection done with the field desk (console/pages_field.py) is kept whole:
its checklist (siltwatch/checklist.py ``Checklist``) as the canonical JSON that
was signed, the photos as bytes next to it, and one corrective action per
finding that needs work. The engine still hears the inspection as an
``InspectionRecord`` (it completes duties); these tables are the record a
person reads, signs and hands over (Lake Lure 96.05(B)(17)(a),(b); Lake George
§148-10 A).

Why the rules below:

- ``idem_key`` is unique per site: the phone sends a queued submission again
  until it hears back, so the second arrival of the same key must find the
  first record, not make another (:meth:`FieldRecords.insert_field_record`).
- A signed record never changes (:meth:`FieldRecords.replace_unsigned` refuses
  it); an amendment is a new record whose ``amends`` names it.
- A photo is stored once per record under its own SHA-256, the id the signed
  content names, so the report can say whether the record is still intact.

The tables are part of the store's schema (:data:`FIELD_SCHEMA`, appended to
ingest/store/queries.py ``SCHEMA``: version 6, additive) and written in
SQLite's spelling like every other query, so PostgreSQL runs them translated.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

FIELD_SCHEMA = """
CREATE TABLE IF NOT EXISTS field_records (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, record_id TEXT NOT NULL, idem_key TEXT NOT NULL,
    t INTEGER NOT NULL, account TEXT NOT NULL, body TEXT NOT NULL, sha256 TEXT NOT NULL,
    signed_at INTEGER, amends TEXT, received_at INTEGER NOT NULL,
    UNIQUE (site, record_id), UNIQUE (site, idem_key)
);
CREATE TABLE IF NOT EXISTS field_photos (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, record_id TEXT NOT NULL, photo_id TEXT NOT NULL,
    content_type TEXT NOT NULL, width INTEGER NOT NULL, height INTEGER NOT NULL,
    data BLOB NOT NULL,
    UNIQUE (site, record_id, photo_id)
);
CREATE TABLE IF NOT EXISTS corrective_actions (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL, action_id TEXT NOT NULL, record_id TEXT NOT NULL,
    practice TEXT NOT NULL, finding TEXT NOT NULL, owner TEXT NOT NULL,
    created_at INTEGER NOT NULL, due_at INTEGER NOT NULL, rule TEXT NOT NULL,
    closed_at INTEGER, closed_by TEXT, closure_note TEXT, closure_photo TEXT,
    UNIQUE (site, action_id)
);
"""


class SignedRecord(Exception):
    """The record is signed: it cannot change; the text says by whom and when."""


@dataclass(frozen=True)
class Photo:
    """A checked photo (console/photos.py): its bytes as stored, metadata stripped."""

    data: bytes
    content_type: str
    width: int
    height: int

    @property
    def photo_id(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class FieldRecord:
    site: str
    record_id: str
    t: int
    account: str
    body: str  # the canonical JSON (siltwatch/checklist.py canonical_bytes)
    sha256: str  # of ``body`` when it was stored (and signed)
    signed_at: int | None
    amends: str | None
    received_at: int

    @property
    def intact(self) -> bool:
        """The content still hashes to what was signed."""
        return hashlib.sha256(self.body.encode()).hexdigest() == self.sha256


@dataclass(frozen=True)
class CorrectiveAction:
    site: str
    action_id: str
    record_id: str
    practice: str
    finding: str
    owner: str
    created_at: int
    due_at: int
    rule: str  # where the due date comes from (a pack citation or the site's default)
    closed_at: int | None = None
    closed_by: str | None = None
    closure_note: str | None = None
    closure_photo: str | None = None

    def overdue(self, now_ms: int) -> bool:
        return self.closed_at is None and now_ms > self.due_at


_RECORD_COLUMNS = "site, record_id, t, account, body, sha256, signed_at, amends, received_at"
_ACTION_COLUMNS = (
    "site, action_id, record_id, practice, finding, owner, created_at, due_at, rule, "
    "closed_at, closed_by, closure_note, closure_photo"
)


class FieldRecords(ABC):
    """The field desk's reads and writes; ingest/store/queries.py ``SqlStore`` mixes them in."""

    @abstractmethod
    def _execute(self, sql: str, args: Sequence[object] = ()) -> Any: ...

    @abstractmethod
    def _own_commit(self) -> AbstractContextManager[object]: ...

    def add_field_record(
        self,
        record: FieldRecord,
        idem_key: str,
        photos: Sequence[Photo],
        actions: Sequence[CorrectiveAction],
    ) -> str:
        """Store a record with its photos and corrective actions in one commit; the id of
        the record stored under ``idem_key`` (this one, or the one a first try stored)."""
        with self._own_commit():
            earlier = self.record_id_for_key(record.site, idem_key)
            if earlier is not None:
                return earlier
            self._execute(
                f"INSERT INTO field_records ({_RECORD_COLUMNS}, idem_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.site,
                    record.record_id,
                    record.t,
                    record.account,
                    record.body,
                    record.sha256,
                    record.signed_at,
                    record.amends,
                    record.received_at,
                    idem_key,
                ),
            )
            for photo in photos:
                self._insert_photo(record.site, record.record_id, photo)
            for action in actions:
                self._execute(
                    f"INSERT INTO corrective_actions ({_ACTION_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _action_values(action),
                )
        return record.record_id

    def _insert_photo(self, site: str, record_id: str, photo: Photo) -> None:
        self._execute(
            "INSERT OR IGNORE INTO field_photos "
            "(site, record_id, photo_id, content_type, width, height, data) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                site,
                record_id,
                photo.photo_id,
                photo.content_type,
                photo.width,
                photo.height,
                photo.data,
            ),
        )

    def record_id_for_key(self, site: str, idem_key: str) -> str | None:
        row = self._execute(
            "SELECT record_id FROM field_records WHERE site = ? AND idem_key = ?",
            (site, idem_key),
        ).fetchone()
        return None if row is None else str(row[0])

    def field_record(self, site: str, record_id: str) -> FieldRecord | None:
        row = self._execute(
            f"SELECT {_RECORD_COLUMNS} FROM field_records WHERE site = ? AND record_id = ?",
            (site, record_id),
        ).fetchone()
        return None if row is None else FieldRecord(*row)

    def field_records(
        self, site: str, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[FieldRecord]:
        """The site's field records by event time, optionally in ``[since, until)``."""
        rows = self._execute(
            f"SELECT {_RECORD_COLUMNS} FROM field_records WHERE site = ? "
            "AND t >= ? AND t < ? ORDER BY t, id",
            (site, since_ms if since_ms is not None else -(2**62), until_ms or 2**62),
        ).fetchall()
        return [FieldRecord(*r) for r in rows]

    def replace_unsigned(
        self, site: str, record_id: str, body: str, sha256: str, signed_at: int | None
    ) -> None:
        """Change a record not yet signed (SignedRecord for one that is, KeyError for none)."""
        with self._own_commit():
            stored = self.field_record(site, record_id)
            if stored is None:
                raise KeyError(record_id)
            if stored.signed_at is not None:
                raise SignedRecord(
                    f"record {record_id} was signed by {stored.account}; a signed record "
                    "cannot change: record an amendment instead"
                )
            self._execute(
                "UPDATE field_records SET body = ?, sha256 = ?, signed_at = ? "
                "WHERE site = ? AND record_id = ? AND signed_at IS NULL",
                (body, sha256, signed_at, site, record_id),
            )

    def field_photo(self, site: str, photo_id: str) -> Photo | None:
        row = self._execute(
            "SELECT data, content_type, width, height FROM field_photos "
            "WHERE site = ? AND photo_id = ? ORDER BY id LIMIT 1",
            (site, photo_id),
        ).fetchone()
        return None if row is None else Photo(bytes(row[0]), str(row[1]), int(row[2]), int(row[3]))

    def field_photo_ids(self, site: str, record_id: str) -> list[str]:
        rows = self._execute(
            "SELECT photo_id FROM field_photos WHERE site = ? AND record_id = ? ORDER BY id",
            (site, record_id),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def corrective_actions(self, site: str) -> list[CorrectiveAction]:
        rows = self._execute(
            f"SELECT {_ACTION_COLUMNS} FROM corrective_actions WHERE site = ? "
            "ORDER BY due_at, action_id",
            (site,),
        ).fetchall()
        return [CorrectiveAction(*r) for r in rows]

    def close_action(
        self, site: str, action_id: str, at_ms: int, by: str, note: str, photo: Photo
    ) -> bool:
        """Close an open action with a note and a photo; False when it is closed already."""
        with self._own_commit():
            cur = self._execute(
                "UPDATE corrective_actions SET closed_at = ?, closed_by = ?, closure_note = ?, "
                "closure_photo = ? WHERE site = ? AND action_id = ? AND closed_at IS NULL",
                (at_ms, by, note, photo.photo_id, site, action_id),
            )
            if not cur.rowcount:
                return False
            self._insert_photo(site, f"action:{action_id}", photo)
        return True


def _action_values(a: CorrectiveAction) -> tuple[object, ...]:
    return (
        a.site,
        a.action_id,
        a.record_id,
        a.practice,
        a.finding,
        a.owner,
        a.created_at,
        a.due_at,
        a.rule,
        a.closed_at,
        a.closed_by,
        a.closure_note,
        a.closure_photo,
    )
