"""``siltwatch report``: the inspector's report of a site for a range of its local days.

``siltwatch report --site SITE.toml --db STORE --from DATE --to DATE --out FILE.html|FILE.pdf``
reads the store ``siltwatch serve`` writes, a SQLite file or a PostgreSQL URL (and
the console's notes in the same database, when the console has been used), builds the report
(console/report/document.py) and writes it as one self-contained HTML page, or prints
it to PDF with headless Chromium. It only reads the store: a running
``serve`` is not disturbed.

Kept apart from app/cli.py so the command line stays importable without
the server extra (jinja2, argon2): the CLI imports this module only when the
command runs, and says which extra to install when it cannot.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from datetime import UTC, date, datetime
from pathlib import Path

from console.book import BookError, ConsoleBook
from console.notes import NotesSource
from console.report.document import ReportError, build_report, render_pdf
from ingest.store.from_url import is_postgres_url, open_store_read_only
from ingest.store.queries import SqlStore, StoreError
from ingest.store.sqlite import SqliteStore
from siltwatch.config import load_site
from siltwatch.configerrors import ConfigError

EXIT_OK, EXIT_FAIL = 0, 1
FORMATS = {".html": "html", ".htm": "html", ".pdf": "pdf"}


class UsageError(Exception):
    """An option is wrong; the message names the option and what was expected."""


def parse_day(option: str, text: str) -> date:
    """A local day of the site, YYYY-MM-DD."""
    try:
        return datetime.strptime(text, "%Y-%m-%d").date()
    except ValueError:
        raise UsageError(
            f"{option}: expected a date YYYY-MM-DD (a local day of the site), got {text!r}"
        ) from None


def output_format(out: Path) -> str:
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise UsageError(f"--out: expected FILE.html or FILE.pdf, got {str(out)!r}")
    return fmt


def notes_in(store: SqlStore) -> NotesSource | None:
    """The console's notes in the store's database (its SQLite file or its PostgreSQL
    database), or None when the console never wrote there (the report then opens nothing
    that writes). A BookError when the database cannot say."""
    if isinstance(store, SqliteStore):
        found = store.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'console_notes'"
        ).fetchone()
        return ConsoleBook(store.path) if found else None
    # Only a PostgreSQL store gets here, so its driver is installed.
    import psycopg

    from ingest.store.postgres import PostgresStore

    if not isinstance(store, PostgresStore):
        raise TypeError(f"notes_in: no console book for a {type(store).__name__}")
    try:
        (table,) = store.db.execute("SELECT to_regclass('console_notes')").fetchone() or (None,)
    except psycopg.Error as exc:
        raise BookError(f"{store.where}: cannot look for the console's notes ({exc})") from None
    return ConsoleBook(store.url) if table is not None else None


def run_report(args: argparse.Namespace) -> int:
    """The command: check the options, build the report, write it; errors for people."""
    try:
        start = parse_day("--from", args.date_from)
        end = parse_day("--to", args.date_to)
        if end < start:
            raise UsageError(
                f"--to: {end} is before --from {start} (expected a later or equal day)"
            )
        out = Path(args.out)
        fmt = output_format(out)
        if not is_postgres_url(args.db) and not Path(args.db).is_file():
            raise UsageError(f"--db: {args.db}: no such store (the --db of siltwatch serve)")
        site = load_site(Path(args.site))
    except UsageError as exc:
        return _fail([str(exc)])
    except ConfigError as exc:
        return _fail(exc.lines)
    try:
        store = open_store_read_only(args.db)
    except StoreError as exc:
        return _fail([f"--db: {exc}"])
    try:
        notes = notes_in(store)
    except (BookError, sqlite3.DatabaseError) as exc:
        store.close()
        return _fail([f"--db: {exc}"])
    try:
        html = build_report(site, store, notes, start, end, generated_at=datetime.now(UTC))
        if fmt == "pdf":
            render_pdf(html, out)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(html, encoding="utf-8")
    except ReportError as exc:
        return _fail([str(exc)])
    finally:
        store.close()
        if isinstance(notes, ConsoleBook):
            notes.close()
    print(
        f"wrote the {fmt.upper()} report of site {site.site.id!r} for {start} .. {end} "
        f"(local days) to {out}"
    )
    return EXIT_OK


def _fail(lines: list[str]) -> int:
    for line in lines:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_FAIL
