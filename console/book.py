"""The console's own tables, in the store's database: people, what they did, and proof.

design.md: the store is the truth. An acknowledgement that stops the officer's
escalation must survive a restart as surely as the reading that raised the
alert, so it is written to the same database (``console_*`` tables next to the
store's own, which stay untouched: the SQLite file, or the PostgreSQL database
a fleet's workers share) and read back by the delivery worker through
:meth:`ConsoleBook.acknowledged` (alerts/acks.py ``AckLookup``). The
statements are written once, in SQLite's spelling; console/book_db.py runs
them on either backend. ``user`` and ``by`` are reserved words in PostgreSQL,
so they are always quoted (``"user"``, ``"by"``), which SQLite reads the same.

What lives here:

- ``console_users`` / ``console_roles``: accounts (argon2 hashes) and one role
  per person per site (:class:`Accounts`);
- ``console_sessions`` / ``console_login_attempts``: sessions (only a sha256 of
  the cookie's token is kept) and failed logins for the rate limit (used by
  console/auth.py);
- ``console_audit``: who did what, when, to which site and alert — every login,
  logout, refused login, acknowledgement, comment, corrective action,
  inspection, site-log entry, link use, SMS acknowledgement and refused request;
- ``console_notes``: acknowledgements, comments and corrective actions
  (console/notes.py ``Note``); at most one acknowledgement per episode, held by
  a unique index so two people pressing the button at once cannot both win;
- ``console_used_links``: single-use acknowledgement links already spent (the
  sha256 of the token, not the token);
- ``console_once``: what the workers of a fleet do once between them (a site's
  daily digest: :meth:`ConsoleBook.first_time`);
- ``console_silences``: silences and maintenance windows (console/silences.py),
  never deleted (ending one early sets ``ended_ms``); the delivery side asks
  :meth:`ConsoleBook.silence_covering` (alerts/silences.py ``SilenceLookup``);
- ``console_settings``: the ``link_secret`` that signs acknowledgement links
  (alerts/acklinks.py), made once per store so the delivery worker and the
  console agree on it.

Every method that depends on time takes ``now_ms`` (the caller owns the clock).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from alerts.acks import Acknowledgement
from console.book_db import BookDb, BookDbError, open_book_db
from console.notes import Note, NoteKind
from console.silences import Silence

ConsoleRole = Literal["operator", "qualified_inspector", "officer", "viewer"]
CONSOLE_ROLES: tuple[str, ...] = get_args(ConsoleRole)

SCHEMA = """
CREATE TABLE IF NOT EXISTS console_users (
    name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS console_roles (
    "user" TEXT NOT NULL, site TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('operator', 'qualified_inspector', 'officer', 'viewer')),
    PRIMARY KEY ("user", site)
);
CREATE TABLE IF NOT EXISTS console_sessions (
    token_hash TEXT PRIMARY KEY, "user" TEXT NOT NULL, created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL, csrf_secret BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS console_login_attempts (
    id INTEGER PRIMARY KEY, "user" TEXT NOT NULL, ip TEXT NOT NULL, at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS console_login_attempts_at ON console_login_attempts (at_ms);
CREATE TABLE IF NOT EXISTS console_audit (
    id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, who TEXT NOT NULL, action TEXT NOT NULL,
    site TEXT NOT NULL DEFAULT '', alert_id TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS console_audit_site ON console_audit (site, at_ms);
CREATE TABLE IF NOT EXISTS console_notes (
    id INTEGER PRIMARY KEY, site TEXT NOT NULL, alert_id TEXT NOT NULL, kind TEXT NOT NULL,
    "by" TEXT NOT NULL, at_ms INTEGER NOT NULL, text TEXT NOT NULL DEFAULT '',
    via TEXT NOT NULL DEFAULT 'console'
);
CREATE INDEX IF NOT EXISTS console_notes_alert ON console_notes (site, alert_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS console_notes_one_ack
    ON console_notes (site, alert_id) WHERE kind = 'acknowledged';
CREATE TABLE IF NOT EXISTS console_used_links (
    token TEXT PRIMARY KEY, used_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS console_settings (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS console_once (key TEXT PRIMARY KEY, at_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS console_silences (
    id INTEGER PRIMARY KEY, site TEXT NOT NULL, scope TEXT NOT NULL, target TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT '', subjects TEXT NOT NULL, reason TEXT NOT NULL,
    "by" TEXT NOT NULL, created_ms INTEGER NOT NULL, start_ms INTEGER NOT NULL,
    end_ms INTEGER NOT NULL, ended_ms INTEGER, ended_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS console_silences_site ON console_silences (site, end_ms);
"""

NAME_MAX = 100
PASSWORD_MIN = 10
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._@'-]*")


class BookError(Exception):
    """An account change that cannot be made; the text says why, for the person typing."""


@dataclass(frozen=True)
class AuditEntry:
    """One line of the audit log: who did what, when (UTC ms), where."""

    at_ms: int
    who: str
    action: str
    site: str
    alert_id: str
    detail: str


@dataclass(frozen=True)
class UserInfo:
    """An account as ``siltwatch users list`` shows it."""

    name: str
    created_ms: int
    roles: dict[str, str]  # site -> role


def token_digest(token: str) -> str:
    """What is stored for a secret token (a session cookie, a spent link): its sha256."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def check_name(name: str) -> str:
    """A user name as typed, checked: letters, digits, spaces and ``._@'-``, at most 100."""
    name = name.strip()
    if not name or len(name) > NAME_MAX or _NAME_RE.fullmatch(name) is None:
        raise BookError(
            f"user name {name[:NAME_MAX]!r}: expected 1 to {NAME_MAX} letters, digits, spaces "
            "or . _ @ ' -, starting with a letter or digit (e.g. 'Dana Ruiz')"
        )
    return name


def check_role(role: str) -> ConsoleRole:
    if role not in CONSOLE_ROLES:
        raise BookError(f"role {role!r}: expected one of {', '.join(CONSOLE_ROLES)}")
    return role  # type: ignore[return-value]


class Accounts:
    """People, their argon2 password hashes, and their role on each site."""

    def __init__(self, db: BookDb) -> None:
        self.db = db
        self.hasher = PasswordHasher()
        self._dummy_hash: str | None = None

    def add(self, name: str, password: str, now_ms: int) -> str:
        name = check_name(name)
        hashed = self.hasher.hash(_checked_password(password))
        try:
            self.db.execute(
                "INSERT INTO console_users (name, password_hash, created_ms) VALUES (?, ?, ?)",
                (name, hashed, now_ms),
            )
        except self.db.integrity_errors:
            raise BookError(f"user {name!r} already exists") from None
        return name

    def set_password(self, name: str, password: str) -> None:
        """A new password; every session of ``name`` ends with the old one (a stolen
        session must not outlive the password change that was meant to stop it)."""
        hashed = self.hasher.hash(_checked_password(password))
        with self.db.write():
            cur = self.db.execute(
                "UPDATE console_users SET password_hash = ? WHERE name = ?", (hashed, name)
            )
            self.db.execute('DELETE FROM console_sessions WHERE "user" = ?', (name,))
        if cur.rowcount == 0:
            raise BookError(f"no user {name!r}")

    def remove(self, name: str) -> None:
        """Delete the account, its roles and its sessions (its audit lines stay)."""
        with self.db.write():
            cur = self.db.execute("DELETE FROM console_users WHERE name = ?", (name,))
            self.db.execute('DELETE FROM console_roles WHERE "user" = ?', (name,))
            self.db.execute('DELETE FROM console_sessions WHERE "user" = ?', (name,))
        if cur.rowcount == 0:
            raise BookError(f"no user {name!r}")

    def verify(self, name: str, password: str) -> bool:
        """Whether ``password`` is the user's; an unknown user costs the same time (no oracle)."""
        row = self.db.execute(
            "SELECT password_hash FROM console_users WHERE name = ?", (name,)
        ).fetchone()
        hashed = str(row[0]) if row is not None else self._dummy()
        try:
            ok = self.hasher.verify(hashed, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        if row is not None and ok and self.hasher.check_needs_rehash(hashed):  # same password
            self.db.execute(
                "UPDATE console_users SET password_hash = ? WHERE name = ?",
                (self.hasher.hash(password), name),
            )
        return row is not None and ok

    def _dummy(self) -> str:
        if self._dummy_hash is None:
            self._dummy_hash = self.hasher.hash(secrets.token_hex(16))
        return self._dummy_hash

    def exists(self, name: str) -> bool:
        row = self.db.execute("SELECT 1 FROM console_users WHERE name = ?", (name,)).fetchone()
        return row is not None

    def grant(self, name: str, site: str, role: str) -> str | None:
        """Give ``name`` ``role`` on ``site``; returns the role it replaces (one per site)."""
        role = check_role(role)
        with self.db.write():
            if not self.exists(name):
                raise BookError(f"no user {name!r}")
            before = self.roles(name).get(site)
            self.db.execute(
                'INSERT INTO console_roles ("user", site, role) VALUES (?, ?, ?) '
                'ON CONFLICT ("user", site) DO UPDATE SET role = excluded.role',
                (name, site, role),
            )
        return before

    def revoke(self, name: str, site: str) -> str:
        """Take away ``name``'s role on ``site``; returns the role removed."""
        with self.db.write():
            before = self.roles(name).get(site)
            if before is None:
                raise BookError(f"user {name!r} has no role on site {site!r}")
            self.db.execute('DELETE FROM console_roles WHERE "user" = ? AND site = ?', (name, site))
        return before

    def roles(self, name: str) -> dict[str, str]:
        """site -> role of ``name`` (empty for an unknown user)."""
        rows = self.db.execute(
            'SELECT site, role FROM console_roles WHERE "user" = ? ORDER BY site', (name,)
        )
        return {str(s): str(r) for s, r in rows}

    def all(self) -> list[UserInfo]:
        rows = self.db.execute("SELECT name, created_ms FROM console_users ORDER BY name")
        return [UserInfo(str(n), int(c), self.roles(str(n))) for n, c in rows.fetchall()]


def _checked_password(password: str) -> str:
    if len(password) < PASSWORD_MIN:
        raise BookError(f"the password must have at least {PASSWORD_MIN} characters")
    if password != password.strip():
        raise BookError("the password must not start or end with spaces")
    return password


class ConsoleBook:
    """The console's tables in the store's database; the delivery worker's AckLookup.

    ``db`` is the store's ``--db``: its SQLite file, or a ``postgresql://`` URL.
    ``path`` is the SQLite file (None on PostgreSQL); ``where`` names the
    database for messages (the URL without its password).
    """

    def __init__(self, db: Path | str) -> None:
        self.lock = threading.RLock()
        try:
            self.db = open_book_db(db, self.lock, SCHEMA)
        except BookDbError as exc:
            raise BookError(str(exc)) from None
        self.path: Path | None = self.db.path
        self.where = self.db.where
        self.accounts = Accounts(self.db)

    def ping(self) -> None:
        """Raise unless the book's database answers (the console's /healthz)."""
        self.db.ping()

    def close(self) -> None:
        self.db.close()

    # --- notes: acknowledgements, comments, corrective actions -------------------------

    def notes(self, site: str, alert_id: str) -> list[Note]:
        """Every note on the episode, oldest first (console/notes.py NotesSource)."""
        rows = self.db.execute(
            'SELECT kind, "by", at_ms, text, via FROM console_notes '
            "WHERE site = ? AND alert_id = ? ORDER BY at_ms, id",
            (site, alert_id),
        )
        return [
            Note(site, alert_id, NoteKind(str(k)), str(b), int(t), str(x), str(v))
            for k, b, t, x, v in rows
        ]

    def acknowledged(self, site: str, alert_id: str) -> Acknowledgement | None:
        """The first acknowledgement of the episode, or None (alerts/acks.py AckLookup)."""
        row = self.db.execute(
            'SELECT "by", at_ms, via FROM console_notes '
            "WHERE site = ? AND alert_id = ? AND kind = 'acknowledged'",
            (site, alert_id),
        ).fetchone()
        return None if row is None else Acknowledgement(str(row[0]), int(row[1]), str(row[2]))

    def acknowledgements(self, sites: Sequence[str]) -> dict[tuple[str, str], Acknowledgement]:
        """Every standing acknowledgement of the episodes of ``sites``, by (site, alert id),
        in one query: a list of alerts asks once for the page, not once a row."""
        if not sites:
            return {}
        marks = ", ".join("?" for _ in sites)
        rows = self.db.execute(
            'SELECT site, alert_id, "by", at_ms, via FROM console_notes '
            f"WHERE kind = 'acknowledged' AND site IN ({marks})",
            tuple(sites),
        )
        return {(str(s), str(a)): Acknowledgement(str(b), int(t), str(v)) for s, a, b, t, v in rows}

    def acknowledge(
        self, site: str, alert_id: str, by: str, now_ms: int, via: str = "console"
    ) -> tuple[Acknowledgement, bool]:
        """Record the acknowledgement unless one exists; (the one that stands, whether it is new)."""
        with self.lock:
            try:
                self.db.execute(
                    'INSERT INTO console_notes (site, alert_id, kind, "by", at_ms, via) '
                    "VALUES (?, ?, 'acknowledged', ?, ?, ?)",
                    (site, alert_id, by, now_ms, via),
                )
                new = True
            except self.db.integrity_errors:
                new = False
            ack = self.acknowledged(site, alert_id)
        assert ack is not None
        return ack, new

    def add_note(
        self, site: str, alert_id: str, kind: NoteKind, by: str, now_ms: int, text: str, via: str
    ) -> Note:
        """A comment or a corrective action (acknowledgements go through :meth:`acknowledge`)."""
        if kind is NoteKind.ACKNOWLEDGED:
            raise ValueError("use acknowledge() for acknowledgements: there is one per episode")
        self.db.execute(
            'INSERT INTO console_notes (site, alert_id, kind, "by", at_ms, text, via) '
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (site, alert_id, kind.value, by, now_ms, text, via),
        )
        return Note(site, alert_id, kind, by, now_ms, text, via)

    # --- silences and maintenance windows ------------------------------------------

    _SILENCE = (
        'SELECT id, site, scope, target, kind, subjects, reason, "by", created_ms, start_ms, '
        "end_ms, ended_ms, ended_by FROM console_silences"
    )

    @staticmethod
    def _silence(row: tuple[object, ...]) -> Silence:
        i, site, scope, target, kind, subjects, reason, by, created, start, end, ended, eby = row
        return Silence(
            int(str(i)), str(site), str(scope), str(target), str(kind),
            tuple(str(subjects).split()), str(reason), str(by), int(str(created)),
            int(str(start)), int(str(end)), None if ended is None else int(str(ended)), str(eby),
        )  # fmt: skip

    def add_silence(self, silence: Silence) -> Silence:
        """Store a new silence (its ``id`` is ignored) and its audit row, together."""
        s = silence
        with self.db.write():
            ident = self.db.execute(
                "INSERT INTO console_silences (site, scope, target, kind, subjects, reason, "
                '"by", created_ms, start_ms, end_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) '
                "RETURNING id",
                (s.site, s.scope, s.target, s.kind, " ".join(s.subjects), s.reason, s.by,
                 s.created_ms, s.start_ms, s.end_ms),
            ).value()  # fmt: skip
            stored = self.silence(s.site, int(ident))
            assert stored is not None
            self.audit(
                s.created_ms, s.by, "silence_created", site=s.site, detail=silence_words(stored)
            )
        return stored

    def silence(self, site: str, ident: int) -> Silence | None:
        rows = self.db.execute(self._SILENCE + " WHERE site = ? AND id = ?", (site, ident))
        found = rows.fetchone()
        return None if found is None else self._silence(found)

    def end_silence(self, site: str, ident: int, by: str, now_ms: int) -> Silence | None:
        """End a silence now (a window not begun yet is cancelled); None when there is no
        such silence or it already ended. Audited."""
        with self.db.write():
            cur = self.db.execute(
                "UPDATE console_silences SET ended_ms = ?, ended_by = ? "
                "WHERE site = ? AND id = ? AND ended_ms IS NULL AND end_ms > ?",
                (now_ms, by, site, ident, now_ms),
            )
            if cur.rowcount != 1:
                return None
            ended = self.silence(site, ident)
            assert ended is not None
            self.audit(now_ms, by, "silence_ended", site=site, detail=silence_words(ended))
        return ended

    def silences(self, site: str, *, since_ms: int | None = None) -> list[Silence]:
        """The site's silences, newest first; with ``since_ms`` only those lasting past it."""
        if since_ms is None:
            rows = self.db.execute(self._SILENCE + " WHERE site = ? ORDER BY id DESC", (site,))
        else:
            rows = self.db.execute(
                self._SILENCE + " WHERE site = ? AND end_ms > ? AND "
                "(ended_ms IS NULL OR ended_ms > ?) ORDER BY id DESC",
                (site, since_ms, since_ms),
            )
        return [self._silence(r) for r in rows]

    def silence_covering(self, site: str, subject: str, kind: str, at_ms: int) -> str | None:
        """The silence holding ``kind`` on ``subject`` at ``at_ms`` in words, or None
        (alerts/silences.py SilenceLookup; whether the kind may be held is asked there)."""
        rows = self.db.execute(
            self._SILENCE + " WHERE site = ? AND start_ms <= ? AND end_ms > ? ORDER BY id",
            (site, at_ms, at_ms),
        )
        for row in rows:
            silence = self._silence(row)
            if silence.covers(subject, kind, at_ms):
                return silence_words(silence)
        return None

    # --- the audit log ----------------------------------------------------------------

    def audit(
        self,
        now_ms: int,
        who: str,
        action: str,
        *,
        site: str = "",
        alert_id: str = "",
        detail: str = "",
    ) -> None:
        self.db.execute(
            "INSERT INTO console_audit (at_ms, who, action, site, alert_id, detail) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (now_ms, who, action, site, alert_id, detail[:2000]),
        )

    def audit_log(
        self, sites: Iterable[str], *, also_by: str | None = None, limit: int = 500
    ) -> list[AuditEntry]:
        """The newest entries first: those about ``sites``, and (``also_by``) a person's own
        site-less lines (their logins and logouts)."""
        wanted = sorted(set(sites))
        # PostgreSQL refuses an empty IN (); no site then matches nothing, as in SQLite.
        about = f"site IN ({','.join('?' * len(wanted))})" if wanted else "1 = 0"
        query = (
            "SELECT at_ms, who, action, site, alert_id, detail FROM console_audit WHERE " + about
        )
        args: list[object] = list(wanted)
        if also_by is not None:
            query += " OR (site = '' AND who = ?)"
            args.append(also_by)
        rows = self.db.execute(query + " ORDER BY at_ms DESC, id DESC LIMIT ?", (*args, limit))
        return [
            AuditEntry(int(t), str(w), str(a), str(s), str(i), str(d)) for t, w, a, s, i, d in rows
        ]

    # --- single-use links and the secret that signs them -------------------------------

    def link_used_at(self, token: str) -> int | None:
        row = self.db.execute(
            "SELECT used_at FROM console_used_links WHERE token = ?", (token_digest(token),)
        ).fetchone()
        return None if row is None else int(row[0])

    def spend_link(self, token: str, now_ms: int) -> bool:
        """Mark the link used; False when it already was (the second press loses)."""
        try:
            self.db.execute(
                "INSERT INTO console_used_links (token, used_at) VALUES (?, ?)",
                (token_digest(token), now_ms),
            )
        except self.db.integrity_errors:
            return False
        return True

    def first_time(self, key: str, now_ms: int) -> bool:
        """True for the first caller of ``key`` in this database, False ever after: what
        several workers must do once between them (a site's daily digest)."""
        try:
            self.db.execute("INSERT INTO console_once (key, at_ms) VALUES (?, ?)", (key, now_ms))
        except self.db.integrity_errors:
            return False
        return True

    def link_secret(self) -> bytes:
        """The key acknowledgement links are signed with: 32 random bytes, made once."""
        with self.lock:
            self.db.execute(
                "INSERT OR IGNORE INTO console_settings (key, value) VALUES ('link_secret', ?)",
                (secrets.token_bytes(32),),
            )
            value = self.db.execute(
                "SELECT value FROM console_settings WHERE key = 'link_secret'"
            ).value()
        return bytes(value)


def silence_words(s: Silence) -> str:
    """A silence in one line, for the audit log and the delivery side's log."""
    what = f"{s.scope} {s.target}" + (f" ({s.kind.replace('_', ' ')} only)" if s.kind else "")
    return f"silence #{s.id} of {what} by {s.by}: {s.reason}"
