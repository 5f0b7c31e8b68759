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
- **Throttling, never a lockout.** Failed logins are counted per account (any
  address) and per source address (any name) within :data:`WINDOW_MS`. Past
  :data:`MAX_FAILURES` for the account, or :data:`MAX_FAILURES_PER_IP` for the
  source, the next attempt must wait 1, 2, 4, ... s after the last failure, at
  most :data:`MAX_WAIT_S`; an attempt before then is answered 429 without
  checking the password. Strangers can slow an account, not lock it: a browser
  that has logged in as that person carries a signed device cookie
  (:data:`DEVICE_COOKIE`), and its attempts are counted on their own, so a
  flood of failures from elsewhere (or from the same ingress address) does not
  touch them. The source address is the TCP peer unless the console is told
  which proxies to trust (``--trusted-proxy``, console/server.py):
  ``X-Forwarded-For`` is believed only from those.
- **Unauthenticated writes are throttled too**: refused acknowledgement links,
  forged login forms and SMS codes that match nothing each write an audit row,
  so a source past :data:`MAX_REFUSALS_PER_SOURCE` of them is slowed the same way
  (:meth:`Sessions.source_wait_s`) and its further tries are answered 429 without
  a row.
- **A password change ends every session** of that person (console/book.py).
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from console.book import ConsoleBook, token_digest

SESSION_MS = 12 * 3_600_000
WINDOW_MS = 15 * 60_000
MAX_FAILURES = 5
MAX_FAILURES_PER_IP = 20
MAX_REFUSALS_PER_SOURCE = 10
MAX_WAIT_S = 60
DEVICE_COOKIE = "siltwatch_device"
DEVICE_COOKIE_S = 365 * 86_400
_DEVICE_KEY = "device:"
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

    # --- throttling -----------------------------------------------------------------

    def _wait_s(self, checks: Sequence[tuple[str, tuple[str, ...], int]], now_ms: int) -> int:
        """Seconds before the next try, the longest of ``checks`` (clause, params, free)."""
        wait_ms = 0
        for clause, params, free in checks:
            count, last = self.db.execute(
                f"SELECT count(*), max(at_ms) FROM console_login_attempts WHERE {clause} "
                "AND at_ms > ?",
                (*params, now_ms - WINDOW_MS),
            ).fetchone()
            if count and last is not None:
                wait_ms = max(wait_ms, int(last) + backoff_s(int(count), free) * 1000 - now_ms)
        return -(-wait_ms // 1000)

    def wait_s(self, user: str, ip: str, now_ms: int, device: str | None = None) -> int:
        """Seconds this login attempt must wait (0: check the password now).

        With a valid device cookie (``device``: its id) only that browser's own
        failures for ``user`` count; otherwise the account's and the source's.
        """
        if device is not None:
            return self._wait_s(
                [('"user" = ? AND ip = ?', (user, _DEVICE_KEY + device), MAX_FAILURES)], now_ms
            )
        return self._wait_s(
            [('"user" = ?', (user,), MAX_FAILURES), ("ip = ?", (ip,), MAX_FAILURES_PER_IP)],
            now_ms,
        )

    def blocked(self, user: str, ip: str, now_ms: int, device: str | None = None) -> bool:
        return self.wait_s(user, ip, now_ms, device) > 0

    def failed(self, user: str, ip: str, now_ms: int, device: str | None = None) -> None:
        with self.db.write():
            self.db.execute(
                "DELETE FROM console_login_attempts WHERE at_ms <= ?", (now_ms - WINDOW_MS,)
            )
            self.db.execute(
                'INSERT INTO console_login_attempts ("user", ip, at_ms) VALUES (?, ?, ?)',
                (user, ip if device is None else _DEVICE_KEY + device, now_ms),
            )

    def succeeded(self, user: str, ip: str, device: str | None = None) -> None:
        self.db.execute(
            'DELETE FROM console_login_attempts WHERE "user" = ? AND ip IN (?, ?)',
            (user, ip, _DEVICE_KEY + (device or "")),
        )

    def source_wait_s(self, kind: str, source: str, now_ms: int) -> int:
        """Seconds before ``source`` may try ``kind`` again (a link, an SMS code, a form)."""
        return self._wait_s(
            [('"user" = ? AND ip = ?', (kind, source), MAX_REFUSALS_PER_SOURCE)], now_ms
        )


def backoff_s(failures: int, free: int) -> int:
    """The wait after the last of ``failures``: none while under ``free``, then
    1, 2, 4, ... s, at most :data:`MAX_WAIT_S`: slowed, never locked out."""
    if failures < free:
        return 0
    return int(min(2 ** min(failures - free, 16), MAX_WAIT_S))


def device_cookie(key: bytes, user: str) -> str:
    """A new device cookie for ``user``: a random id and its MAC under the book's key."""
    ident = secrets.token_urlsafe(12)
    return f"{ident}.{_device_mac(key, user, ident)}"


def device_of(key: bytes, user: str, cookie: str | None) -> str | None:
    """The device id of a cookie genuinely issued to ``user`` on this console, else None."""
    if not cookie or "." not in cookie:
        return None
    ident, _, mac = cookie.partition(".")
    return ident if same_token(_device_mac(key, user, ident), mac) else None


def _device_mac(key: bytes, user: str, ident: str) -> str:
    return hmac.new(key, f"device:{user}\0{ident}".encode(), hashlib.sha256).hexdigest()


def login_form_token(key: bytes, cookie: str) -> str:
    """The login form's double-submit token for its random cookie."""
    return hmac.new(key, b"login:" + cookie.encode(), hashlib.sha256).hexdigest()
