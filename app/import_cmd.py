"""``siltwatch import RECORDING --site SITE.toml --db STORE``: a recording into the store.

Kept apart from app/cli.py, which lists it in ``COMMANDS``; the import itself is
ingest/recordings/bulk_import.py (the service's own commit and engine, a chunk at
a time). Here: the options, the clock (the arrival time stored with every
reading), the progress on stderr (app/serving.py ``Progress``, the bar ``serve``'s
rebuild shows, with a plain line every ten per cent off a terminal) and what a person
reads at the end or after Ctrl-C: how far it got, and that running it again
continues.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAIL, EXIT_INTERRUPTED = 0, 1, 130


HELP = "load a recording into the store as the live service would have (resumable)"
DESCRIPTION = (
    "Store a recording's readings (CSV time,sensor,value, a JSONL capture, or the "
    "readings.parquet of siltwatch export) with the service's checks and dedupe, run the "
    "detections over them and store the alerts and duties. Interrupted, it leaves the store "
    "consistent; run again, it continues."
)


def add_import_parser(sub: Any) -> None:
    p = sub.add_parser("import", help=HELP, description=DESCRIPTION)
    p.add_argument(
        "recording",
        metavar="RECORDING",
        help="CSV (time,sensor,value), JSONL capture, or readings.parquet",
    )
    p.add_argument("--site", required=True, metavar="SITE.toml", help="the site configuration")
    p.add_argument(
        "--db",
        required=True,
        metavar="STORE",
        help="the store serve writes: a SQLite file or a postgresql:// URL",
    )
    p.add_argument(
        "--chunk", type=int, default=25_000, metavar="N",
        help="readings per commit (default 25,000; memory grows with it)",
    )  # fmt: skip
    p.set_defaults(func=cmd_import)


class UsageError(Exception):
    """An option is wrong; the message names it and what was expected."""


def cmd_import(args: argparse.Namespace) -> int:
    """Run the import; every refusal (site file, store, recording, option) as error lines."""
    from ingest.recordings.csv_rows import RecordingError
    from ingest.store.queries import StoreError
    from siltwatch.configerrors import ConfigError

    try:
        return _run(args)
    except (ConfigError, RecordingError) as exc:
        problems = exc.lines
    except (StoreError, UsageError) as exc:
        problems = [str(exc)]
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_FAIL


def _run(args: argparse.Namespace) -> int:
    from app.serving import Progress
    from ingest.recordings.bulk_import import Imported, import_recording
    from ingest.service import IngestService
    from ingest.store.from_url import open_store
    from siltwatch.config import load_site

    path = Path(args.recording)
    if args.chunk < 1:
        raise UsageError(f"--chunk: expected a positive number of readings, got {args.chunk}")
    site = load_site(Path(args.site))
    store = open_store(args.db)
    done = Imported()
    try:
        try:
            now = int(time.time() * 1000)  # the arrival time of every imported reading
            service = IngestService(site, store, say=lambda line: print(line, file=sys.stderr))
            rejected_before = store.rejection_count()
            progress = Progress(f"importing {path.name}", "readings")
            import_recording(path, service, now, progress=progress, done=done, chunk=args.chunk)
        except KeyboardInterrupt:
            held = store.reading_count(site.site.id)  # a chunk is committed whole or not at all
            print(
                f"\ninterrupted: the store is consistent and holds {held:,} readings of the "
                "site; run the same command again to continue",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        rejected = store.rejection_count() - rejected_before
        alerts, duties = len(store.alerts(site.site.id)), len(store.duties(site.site.id))
    finally:
        store.close()
    left = f"; {done.left_out:,} inspections, statuses and site-log entries left out" * bool(
        done.left_out
    )
    print(
        f"imported {path} into {args.db} (site {site.site.id!r}): {done.read:,} readings, "
        f"{done.stored:,} new, {done.skipped:,} already stored, {rejected:,} rejected "
        f"(conflicting values){left}; the store holds {alerts:,} alert episodes and "
        f"{duties:,} duties of the site"
    )
    return EXIT_OK
