"""Who is asking, and whether they may: sessions, CSRF tokens, the login rate limit, roles.

- **Sessions.** The cookie holds 32 random bytes (URL-safe); the book keeps only
  their sha256, so a copy of the store file opens no session. A session lasts
  :data:`SESSION_MS` from login; logout deletes it. The cookie is HttpOnly,
  SameSite=Lax (a link from an SMS or email opens the console with the session,
  while a form posted from another site carries no cookie) and Secure when the
  console's public URL is https.
- **CSRF.** Every form carries ``csrf``, the HMAC-SHA256 of the session's own
  random secret over a fixed label; every POST is checked against it with a
  constant-time comparison. The login form, which has no session yet, carries
  a double-submit token: the HMAC (under the book's link secret) of a random
  cookie set with the form.
- **Rate limit.** :data:`MAX_FAILURES` failed logins of one user name from one
  address within :data:`WINDOW_MS` (or :data:`MAX_FAILURES_PER_IP` from one
  address for any names) and further attempts are refused with 429 until the
  oldest failure leaves the window, without checking the password.
- **Roles** (per site): operator, qualified inspector and officer may acknowledge,
  comment and record corrective actions; operator and qualified inspector record
  inspections and site-log entries (the people who do the work, e.g. Lake Lure
  96.05(B)(17): the inspection is the permittee's); officer and operator read the
  audit log; a viewer reads.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from enum import StrEnum

from console.book import ConsoleBook, token_digest

SESSION_MS = 12 * 3_600_000
WINDOW_MS = 15 * 60_000
MAX_FAILURES = 5
MAX_FAILURES_PER_IP = 20
SESSION_COOKIE = "siltwatch_session"
LOGIN_COOKIE = "siltwatch_login"
_CSRF_LABEL = b"siltwatch console form"


class Permission(StrEnum):
    READ = "read"
    ACKNOWLEDGE = "acknowledge"  # also comment and corrective action
    RECORD = "record"  # inspections and site-log entries
    AUDIT = "audit"


PERMISSIONS: dict[str, frozenset[Permission]] = {
    "operator": frozenset(Permission),
    "qualified_inspector": frozenset({Permission.READ, Permission.ACKNOWLEDGE, Permission.RECORD}),
    "officer": frozenset({Permission.READ, Permission.ACKNOWLEDGE, Permission.AUDIT}),
    "viewer": frozenset({Permission.READ}),
}


@dataclass(frozen=True)
class SessionUser:
    """The person behind a request: name, role per site, and the session's CSRF token."""

    name: str
    roles: dict[str, str] = field(default_factory=dict)
    csrf: str = ""

    def may(self, site: str, permission: Permission) -> bool:
        role = self.roles.get(site)
        return role is not None and permission in PERMISSIONS.get(role, frozenset())

    def sites_where(self, permission: Permission) -> list[str]:
        return [site for site in self.roles if self.may(site, permission)]


def csrf_token(secret: bytes) -> str:
    return hmac.new(secret, _CSRF_LABEL, hashlib.sha256).hexdigest()


def same_token(expected: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


class Sessions:
    """Sessions and failed logins in the book; every call is given the time."""

    def __init__(self, book: ConsoleBook) -> None:
        self.book = book
        self.db = book.db

    def open(self, user: str, now_ms: int) -> str:
        """A new session for ``user``; returns the cookie's token (never stored as is)."""
        token = secrets.token_urlsafe(32)
        with self.db.write():
            self.db.execute("DELETE FROM console_sessions WHERE expires_ms <= ?", (now_ms,))
            self.db.execute(
                'INSERT INTO console_sessions (token_hash, "user", created_ms, expires_ms, '
                "csrf_secret) VALUES (?, ?, ?, ?, ?)",
                (token_digest(token), user, now_ms, now_ms + SESSION_MS, secrets.token_bytes(32)),
            )
        return token

    def user(self, token: str | None, now_ms: int) -> SessionUser | None:
        """The session's person, or None for no, an unknown or an expired token."""
        if not token:
            return None
        row = self.db.execute(
            'SELECT "user", csrf_secret FROM console_sessions '
            "WHERE token_hash = ? AND expires_ms > ?",
            (token_digest(token), now_ms),
        ).fetchone()
        if row is None:
            return None
        name = str(row[0])
        return SessionUser(name, self.book.accounts.roles(name), csrf_token(bytes(row[1])))

    def close(self, token: str) -> None:
        self.db.execute("DELETE FROM console_sessions WHERE token_hash = ?", (token_digest(token),))

    # --- the login rate limit ------------------------------------------------------------

    def blocked(self, user: str, ip: str, now_ms: int) -> bool:
        """Whether this user name from this address (or this address at all) must wait."""
        since = now_ms - WINDOW_MS
        mine = self.db.execute(
            'SELECT count(*) FROM console_login_attempts WHERE "user" = ? AND ip = ? AND at_ms > ?',
            (user, ip, since),
        ).value()
        anyone = self.db.execute(
            "SELECT count(*) FROM console_login_attempts WHERE ip = ? AND at_ms > ?", (ip, since)
        ).value()
        return int(mine) >= MAX_FAILURES or int(anyone) >= MAX_FAILURES_PER_IP

    def failed(self, user: str, ip: str, now_ms: int) -> None:
        with self.db.write():
            self.db.execute(
                "DELETE FROM console_login_attempts WHERE at_ms <= ?", (now_ms - WINDOW_MS,)
            )
            self.db.execute(
                'INSERT INTO console_login_attempts ("user", ip, at_ms) VALUES (?, ?, ?)',
                (user, ip, now_ms),
            )

    def succeeded(self, user: str, ip: str) -> None:
        self.db.execute(
            'DELETE FROM console_login_attempts WHERE "user" = ? AND ip = ?', (user, ip)
        )


def login_form_token(key: bytes, cookie: str) -> str:
    """The login form's double-submit token for its random cookie."""
    return hmac.new(key, b"login:" + cookie.encode(), hashlib.sha256).hexdigest()
