"""``siltwatch export``: the options read, checked and turned into one export (ingest/outputs/export.py).

Every mistake is found before a file is written: an unknown table, a bound
that is not a date or time, ``--from`` not before ``--to``, a store that does
not exist (never created by looking), Parquet without pyarrow, a site file
that does not load. A site the store holds nothing of is a warning: its rows
are empty, the other sites export as usual.

Kept apart from app/cli.py. Building the parser imports nothing heavy
(every ``siltwatch`` command builds it); the export's modules are imported when
the command runs. So the option help names the tables and formats as text, and
a test holds them equal to ingest/outputs/export.py's.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when the command runs: building the parser stays light
    from ingest.outputs.export import Bound, SiteSlice
    from ingest.store.queries import SqlStore

EXIT_OK, EXIT_FAIL = 0, 1
FORMATS = ("csv", "parquet")  # ingest.outputs.export.ExportFormat
TABLES = (
    "readings",
    "alerts",
    "duties",
    "site_log",
    "rain_log",
    "field_records",
    "corrective_actions",
)  # ingest.outputs.export.TABLE_NAMES


class UsageError(Exception):
    """An option is wrong; the message names the option and what was expected."""


def add_export_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="STORE", help="the store siltwatch serve writes")
    p.add_argument(
        "--site",
        action="append",
        required=True,
        metavar="SITE.toml",
        help="a site configuration (repeatable: one file per table holds every site)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="where the table files go")
    for flag, dest, what in (
        ("--from", "date_from", "start (included): a local date YYYY-MM-DD, a local time, "),
        ("--to", "date_to", "end: a local date (the whole day included) or a time (excluded), "),
    ):
        p.add_argument(flag, dest=dest, metavar="DATE|ISO", help=what + "or a time with an offset")
    p.add_argument("--format", choices=FORMATS, default="csv", help="default: csv")
    p.add_argument(
        "--tables",
        metavar="LIST",
        help=f"comma-separated, from {','.join(TABLES)} (default: all)",
    )


def _bound(option: str, text: str | None) -> Bound | None:
    from ingest.outputs.export import parse_bound

    if text is None:
        return None
    try:
        return parse_bound(text)
    except ValueError:
        raise UsageError(
            f"{option}: expected a date YYYY-MM-DD or an ISO 8601 time "
            f"(2026-06-01T06:00, 2026-06-01T10:00Z), got {text!r}"
        ) from None


def _slices(args: argparse.Namespace) -> list[SiteSlice]:
    """Each site with its window; ConfigError or UsageError for a wrong file or range."""
    from ingest.outputs.export import SiteSlice, Window
    from siltwatch.config import SiteConfig, load_site

    start, end = _bound("--from", args.date_from), _bound("--to", args.date_to)
    sites: dict[str, tuple[str, SiteConfig]] = {}
    for name in args.site:
        site = load_site(Path(name))
        if site.site.id in sites:
            raise UsageError(
                f"--site {name}: site {site.site.id!r} is also {sites[site.site.id][0]}"
            )
        sites[site.site.id] = (name, site)
    parts = [SiteSlice(site, Window.of(start, end, site.site.zone)) for _, site in sites.values()]
    if any(p.window.empty for p in parts):
        raise UsageError(f"--from {args.date_from} is not before --to {args.date_to}")
    return parts


def _warn_absent(store: SqlStore, parts: Sequence[SiteSlice], files: Sequence[str]) -> None:
    held = store.sites()
    for part, name in zip(parts, files, strict=True):
        if part.id not in held:
            holds = ", ".join(held) or "nothing yet"
            print(
                f"warning: {store.where} holds nothing of site {part.id!r} ({name}); "
                f"it holds: {holds}. Its rows are empty.",
                file=sys.stderr,
            )


def run_export(args: argparse.Namespace) -> int:
    """``siltwatch export``: check everything, then write the tables and say what was written."""
    from ingest.outputs.export import (
        PARQUET_NEEDS,
        TABLE_NAMES,
        ExportFormat,
        Written,
        export_photos,
        export_tables,
        summary,
        tables_named,
    )
    from ingest.store.from_url import open_store_read_only
    from ingest.store.sqlite import StoreError
    from siltwatch.configerrors import ConfigError

    try:
        tables = tables_named(args.tables or ",".join(TABLE_NAMES))
        fmt = ExportFormat(args.format)
        if fmt is ExportFormat.PARQUET and importlib.util.find_spec("pyarrow") is None:
            raise UsageError(PARQUET_NEEDS)
        parts = _slices(args)
        store = open_store_read_only(args.db)  # a SQLite file or a postgresql:// URL
    except (ValueError, UsageError, StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except ConfigError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        return EXIT_FAIL
    try:
        _warn_absent(store, parts, args.site)
        written = export_tables(store, parts, Path(args.out), fmt, tables)
        photos = export_photos(store, parts, Path(args.out))
        if photos:  # the photos' folder is a line of the summary too: files, one a photo
            written.append(Written("photos", photos, Path(args.out) / "photos"))
    finally:
        store.close()
    sites = ", ".join(p.id for p in parts)
    print(f"exported {sites} as {fmt.value} to {args.out}:")
    print(summary(written))
    return EXIT_OK
