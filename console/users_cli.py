"""``siltwatch users``: the console's accounts, in the store they log in to.

::

    siltwatch users add NAME --db STORE [--password-file FILE] [--role SITE:ROLE ...]
    siltwatch users grant NAME --db STORE --role SITE:ROLE [--role ...]
    siltwatch users revoke NAME --db STORE --site SITE [--site ...]
    siltwatch users passwd NAME --db STORE [--password-file FILE]
    siltwatch users remove NAME --db STORE
    siltwatch users list --db STORE

``STORE`` is the store's ``--db``: its SQLite file or a ``postgresql://`` URL.
Roles are per site: operator, qualified_inspector, officer, viewer (one per
person per site; granting another replaces it). Without ``--password-file`` the
password is asked for twice on the terminal; a password file holds it on its
first line. Passwords are stored as argon2 hashes (console/book.py). Every
change is a line of the console's audit log, by ``cli:<login name>``.
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from console.book import CONSOLE_ROLES, BookError, ConsoleBook
from ingest.store.from_url import is_postgres_url

EXIT_OK, EXIT_FAIL = 0, 1
_SITE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class UsageError(Exception):
    """Bad input to the command; the text is for the person typing it."""


def site_role(text: str) -> tuple[str, str]:
    """``SITE:ROLE`` → (site, role), or UsageError naming what is wrong."""
    site, sep, role = text.partition(":")
    if not sep or not _SITE_RE.fullmatch(site):
        raise UsageError(
            f"--role {text!r}: expected SITE:ROLE, e.g. lg-route9n:operator (the site's id "
            "from its [site] table)"
        )
    if role not in CONSOLE_ROLES:
        raise UsageError(f"--role {text!r}: the role must be one of {', '.join(CONSOLE_ROLES)}")
    return site, role


def read_password(path: str | None) -> str:
    if path is not None:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(
                f"{path}: cannot read the password file ({exc.strerror or exc})"
            ) from None
        if not lines or not lines[0]:
            raise UsageError(f"{path}: the password file is empty (the first line is the password)")
        return lines[0]
    if not sys.stdin.isatty():
        raise UsageError("no terminal to ask for the password: use --password-file FILE")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Again: ") != first:
        raise UsageError("the two passwords differ; nothing was changed")
    return first


def _actor() -> str:
    try:
        return "cli:" + os.getlogin()
    except OSError:
        return "cli:" + os.environ.get("USER", "unknown")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _open(args: argparse.Namespace, *, create: bool = False) -> ConsoleBook:
    """The book in ``--db``: a SQLite file (which must exist, except to add someone) or a
    ``postgresql://`` URL (whose database must exist; its console tables are made)."""
    if is_postgres_url(args.db):
        return ConsoleBook(str(args.db))
    db = Path(args.db)
    if not create and not db.exists():
        raise UsageError(f"{db}: no such store (the --db of 'siltwatch serve')")
    return ConsoleBook(db)


def _add(book: ConsoleBook, args: argparse.Namespace) -> str:
    roles = [site_role(r) for r in args.role]
    name = book.accounts.add(args.name, read_password(args.password_file), _now_ms())
    for site, role in roles:
        book.accounts.grant(name, site, role)
    book.audit(_now_ms(), _actor(), "user_added", detail=f"{name} {' '.join(args.role)}".strip())
    shown = ", ".join(f"{role} on {site}" for site, role in roles) or "no role yet"
    return f"added {name} ({shown})"


def _grant(book: ConsoleBook, args: argparse.Namespace) -> str:
    if not args.role:
        raise UsageError("give at least one --role SITE:ROLE")
    lines = []
    for site, role in (site_role(r) for r in args.role):
        before = book.accounts.grant(args.name, site, role)
        book.audit(_now_ms(), _actor(), "role_granted", site=site, detail=f"{args.name}: {role}")
        was = f" (was {before})" if before and before != role else ""
        lines.append(f"{args.name} is {role} on {site}{was}")
    return "\n".join(lines)


def _revoke(book: ConsoleBook, args: argparse.Namespace) -> str:
    if not args.site:
        raise UsageError("give at least one --site SITE")
    lines = []
    for site in args.site:
        role = book.accounts.revoke(args.name, site)
        book.audit(_now_ms(), _actor(), "role_revoked", site=site, detail=f"{args.name}: {role}")
        lines.append(f"{args.name} is no longer {role} on {site}")
    return "\n".join(lines)


def _passwd(book: ConsoleBook, args: argparse.Namespace) -> str:
    if not book.accounts.exists(args.name):
        raise BookError(f"no user {args.name!r}")
    book.accounts.set_password(args.name, read_password(args.password_file))
    book.audit(_now_ms(), _actor(), "password_changed", detail=args.name)
    return f"password of {args.name} changed"


def _remove(book: ConsoleBook, args: argparse.Namespace) -> str:
    book.accounts.remove(args.name)
    book.audit(_now_ms(), _actor(), "user_removed", detail=args.name)
    return f"removed {args.name} (their audit lines stay)"


def _list(book: ConsoleBook, _args: argparse.Namespace) -> str:
    users = book.accounts.all()
    if not users:
        return "no users yet: siltwatch users add NAME --db STORE --role SITE:ROLE"
    return "\n".join(
        f"{u.name}\t"
        + (", ".join(f"{site}:{role}" for site, role in u.roles.items()) or "(no role)")
        for u in users
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="siltwatch users",
        description="Manage the web console's accounts and their roles per site.",
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    roles = ", ".join(CONSOLE_ROLES)
    for action, helptext, run in (
        ("add", "add a person", _add),
        ("grant", "give a role on a site (replaces the role held there)", _grant),
        ("revoke", "take away the role on a site", _revoke),
        ("passwd", "set a new password", _passwd),
        ("remove", "delete the account and its sessions", _remove),
        ("list", "list people and their roles", _list),
    ):
        p = sub.add_parser(action, help=helptext)
        if action != "list":
            p.add_argument("name", metavar="NAME", help="the person's user name, e.g. 'Dana Ruiz'")
        p.add_argument(
            "--db",
            required=True,
            metavar="STORE",
            help="the store, as for serve: a SQLite file or a postgresql:// URL",
        )
        if action in ("add", "passwd"):
            p.add_argument("--password-file", metavar="FILE", help="read the password from FILE")
        if action in ("add", "grant"):
            p.add_argument("--role", action="append", default=[], metavar="SITE:ROLE",
                           help=f"a role on a site; ROLE is one of {roles}")  # fmt: skip
        if action == "revoke":
            p.add_argument("--site", action="append", default=[], metavar="SITE")
        p.set_defaults(run=run)
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        book = _open(args, create=args.action == "add")
    except (UsageError, BookError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAIL
    try:
        print(args.run(book, args))
    except (UsageError, BookError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAIL
    finally:
        book.close()
    return EXIT_OK
